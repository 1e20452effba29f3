//! The ZooKeeper model on its own: naming, versions, containers, sessions, watches,
//! multi, path validation — the server's rules, checked one by one.

use lock_core::{CreateMode, MultiOp, MultiResult, WatchKind, ZkError};
use lock_sim::{Notification, WatchType, ZkModel, CONTAINER_OWNER, NO_SESSION};

fn kinds(n: &[Notification]) -> Vec<(i64, &str, WatchKind)> {
    n.iter()
        .map(|n| (n.session, n.path.as_str(), n.kind))
        .collect()
}

fn seq_create(zk: &mut ZkModel, s: i64, prefix: &str) -> String {
    zk.create(s, prefix, b"", CreateMode::EphemeralSequential)
        .unwrap()
        .0
}

#[test]
fn sequential_names_use_the_parents_cversion_formatted_like_the_server_and_wrap() {
    let mut zk = ZkModel::new();
    let s = zk.create_session();
    zk.create(s, "/l", b"", CreateMode::Persistent).unwrap();
    assert_eq!(seq_create(&mut zk, s, "/l/n-"), "/l/n-0000000000");
    assert_eq!(seq_create(&mut zk, s, "/l/n-"), "/l/n-0000000001");
    // A delete moves pzxid, not cversion: numbers are not reused.
    zk.delete(s, "/l/n-0000000001", None).unwrap();
    assert_eq!(seq_create(&mut zk, s, "/l/n-"), "/l/n-0000000002");
    // Any child create counts, sequential or not.
    zk.create(s, "/l/plain", b"", CreateMode::Ephemeral)
        .unwrap();
    assert_eq!(seq_create(&mut zk, s, "/l/n-"), "/l/n-0000000004");
    // A sequential path may end in '/': the name is the number alone.
    assert_eq!(seq_create(&mut zk, s, "/l/"), "/l/0000000005");
    assert_eq!(zk.stat("/l").unwrap().cversion, 6);
    // The sequence wraps at 2^31 (new names: the old ones are still there).
    zk.set_cversion("/l", i32::MAX - 1).unwrap();
    assert_eq!(seq_create(&mut zk, s, "/l/w-"), "/l/w-2147483646");
    assert_eq!(seq_create(&mut zk, s, "/l/w-"), "/l/w-2147483647");
    assert_eq!(seq_create(&mut zk, s, "/l/w-"), "/l/w--2147483648");
    assert_eq!(seq_create(&mut zk, s, "/l/w-"), "/l/w--2147483647");
    zk.set_cversion("/l", -1).unwrap();
    assert_eq!(seq_create(&mut zk, s, "/l/w-"), "/l/w--000000001");
    assert_eq!(seq_create(&mut zk, s, "/l/w-"), "/l/w-0000000000");
    // A wrapped counter can collide with a live node: the server says NodeExists.
    zk.set_cversion("/l", i32::MAX).unwrap();
    assert_eq!(
        zk.create(s, "/l/w-", b"", CreateMode::EphemeralSequential),
        Err(ZkError::NodeExists)
    );
}

#[test]
fn create_and_delete_errors_follow_the_server() {
    let mut zk = ZkModel::new();
    let s = zk.create_session();
    assert_eq!(
        zk.create(s, "/a/b", b"", CreateMode::Persistent),
        Err(ZkError::NoNode)
    );
    zk.create(s, "/a", b"", CreateMode::Persistent).unwrap();
    assert_eq!(
        zk.create(s, "/a", b"", CreateMode::Persistent),
        Err(ZkError::NodeExists)
    );
    assert_eq!(
        zk.create(s, "/", b"", CreateMode::Persistent),
        Err(ZkError::NodeExists)
    );
    zk.create(s, "/a/e", b"", CreateMode::Ephemeral).unwrap();
    assert_eq!(
        zk.create(s, "/a/e/x", b"", CreateMode::Persistent),
        Err(ZkError::NoChildrenForEphemerals)
    );
    assert_eq!(
        zk.create(s, "/a/e/x", b"", CreateMode::EphemeralSequential),
        Err(ZkError::NoChildrenForEphemerals)
    );
    assert_eq!(zk.delete(s, "/a", None), Err(ZkError::NotEmpty));
    assert_eq!(zk.delete(s, "/a/missing", None), Err(ZkError::NoNode));
    assert_eq!(zk.delete(s, "/a/e", Some(3)), Err(ZkError::BadVersion));
    zk.delete(s, "/a/e", Some(0)).unwrap();
    zk.delete(s, "/a", None).unwrap();
    for reserved in ["/", "/zookeeper", "/zookeeper/quota"] {
        assert_eq!(
            zk.delete(s, reserved, None),
            Err(ZkError::BadArguments),
            "{reserved}"
        );
    }
    // Administrators have no session: no ephemerals.
    assert_eq!(
        zk.create(NO_SESSION, "/x", b"", CreateMode::Ephemeral),
        Err(ZkError::BadArguments)
    );
    // A dead session can do nothing.
    zk.expire_session(s);
    assert_eq!(
        zk.create(s, "/y", b"", CreateMode::Persistent),
        Err(ZkError::SessionExpired)
    );
}

/// The server's path rules (`PathUtils.validatePath`): a bad path is
/// `BadArguments` for writes and reads alike.
#[test]
fn bad_paths_are_bad_arguments() {
    let mut zk = ZkModel::new();
    let s = zk.create_session();
    for p in [
        "",
        "a",
        "/a/",
        "//",
        "/a//b",
        "/.",
        "/a/.",
        "/a/..",
        "/./a",
        "/a/./b",
        "/a/../b",
        "/a\u{0}",
        "/\u{1}",
        "/\u{e000}",
        "/😀",
    ] {
        assert_eq!(
            zk.create(s, p, b"", CreateMode::Persistent),
            Err(ZkError::BadArguments),
            "{p:?}"
        );
        assert_eq!(
            zk.get_data(s, p, false),
            Err(ZkError::BadArguments),
            "{p:?}"
        );
    }
    for ok in ["/a.b", "/...", "/..c", "/日本"] {
        assert!(
            zk.create(s, ok, b"", CreateMode::Persistent).is_ok(),
            "{ok}"
        );
    }
    // A sequential create may end in '/': the server appends the sequence number.
    let seq = CreateMode::EphemeralSequential;
    assert_eq!(
        zk.create(s, "/a.b/", b"", seq).map(|(p, _)| p),
        Ok("/a.b/0000000000".into())
    );
    assert_eq!(zk.create(s, "/a.b//", b"", seq), Err(ZkError::BadArguments));
}

#[test]
fn stats_versions_and_zxids() {
    let mut zk = ZkModel::new();
    let s = zk.create_session();
    let z0 = zk.zxid();
    let (_, st) = zk.create(s, "/a", b"xy", CreateMode::Persistent).unwrap();
    assert_eq!(
        (st.czxid, st.mzxid, st.version, st.data_length),
        (z0 + 1, z0 + 1, 0, 2)
    );
    assert_eq!(st.ephemeral_owner, 0);
    let st = zk.set_data(s, "/a", b"xyz", Some(0)).unwrap();
    assert_eq!(
        (st.czxid, st.mzxid, st.version, st.data_length),
        (z0 + 1, z0 + 2, 1, 3)
    );
    assert_eq!(zk.set_data(s, "/a", b"", Some(0)), Err(ZkError::BadVersion));
    // A failed write still consumes a zxid, as on the server; reads do not.
    assert_eq!(zk.zxid(), z0 + 3);
    zk.get_data(s, "/a", false).unwrap();
    zk.get_children(s, "/a", false).unwrap();
    assert_eq!(zk.zxid(), z0 + 3);
    let (_, st) = zk.create(s, "/a/e", b"", CreateMode::Ephemeral).unwrap();
    assert_eq!(st.ephemeral_owner, s);
    let parent = zk.get("/a").unwrap();
    assert_eq!((parent.stat.num_children, parent.stat.cversion), (1, 1));
    assert_eq!(parent.pzxid, st.czxid);
    let (_, st) = zk.create(s, "/c", b"", CreateMode::Container).unwrap();
    assert_eq!(st.ephemeral_owner, CONTAINER_OWNER);
}

#[test]
fn containers_are_reaped_once_used_and_empty_and_restart_their_counter() {
    let mut zk = ZkModel::new();
    let s = zk.create_session();
    zk.create(s, "/app", b"", CreateMode::Container).unwrap();
    zk.create(s, "/app/l", b"", CreateMode::Container).unwrap();
    // Never used (cversion 0 for /app/l): not reaped; /app has a child.
    assert!(zk.reap_containers().is_empty());
    assert_eq!(seq_create(&mut zk, s, "/app/l/n-"), "/app/l/n-0000000000");
    assert_eq!(seq_create(&mut zk, s, "/app/l/n-"), "/app/l/n-0000000001");
    assert!(zk.reap_containers().is_empty(), "not empty yet");
    zk.expire_session(s);
    // The reaper takes the emptied container; its parent goes on the next pass.
    assert_eq!(zk.reap_containers(), vec!["/app/l".to_owned()]);
    assert_eq!(zk.reap_containers(), vec!["/app".to_owned()]);
    assert!(zk.reap_containers().is_empty());
    // Re-created, the counter starts again at 0 (but zxids keep growing).
    let s = zk.create_session();
    let before = zk.zxid();
    zk.create(s, "/app", b"", CreateMode::Container).unwrap();
    zk.create(s, "/app/l", b"", CreateMode::Container).unwrap();
    let (p, st) = zk
        .create(s, "/app/l/n-", b"", CreateMode::EphemeralSequential)
        .unwrap();
    assert_eq!(p, "/app/l/n-0000000000");
    assert!(st.czxid > before);
    // Persistent nodes are never reaped.
    zk.create(s, "/keep", b"", CreateMode::Persistent).unwrap();
    zk.create(s, "/keep/x", b"", CreateMode::Persistent)
        .unwrap();
    zk.delete(s, "/keep/x", None).unwrap();
    zk.reap_containers();
    assert!(zk.contains("/keep"));
}

#[test]
fn expiry_deletes_ephemerals_and_fires_other_sessions_watches() {
    let mut zk = ZkModel::new();
    let (a, b) = (zk.create_session(), zk.create_session());
    zk.create(a, "/l", b"", CreateMode::Persistent).unwrap();
    let na = seq_create(&mut zk, a, "/l/n-");
    let nb = seq_create(&mut zk, b, "/l/n-");
    zk.create(a, "/l/keep", b"", CreateMode::Persistent)
        .unwrap();
    zk.get_data(b, &na, true).unwrap();
    zk.get_data(a, &nb, true).unwrap();
    zk.get_children(b, "/l", true).unwrap();
    zk.take_notifications();
    let z = zk.zxid();
    assert_eq!(zk.expire_session(a), vec![na.clone()]);
    assert_eq!(zk.zxid(), z + 1, "one transaction");
    assert!(!zk.session_is_alive(a));
    assert_eq!(
        zk.children("/l").unwrap(),
        vec!["keep".to_owned(), "n-0000000001".to_owned()]
    );
    // b hears of the deletion; a's own watch died with it.
    assert_eq!(
        kinds(&zk.take_notifications()),
        vec![
            (b, na.as_str(), WatchKind::NodeDeleted),
            (b, "/l", WatchKind::NodeChildrenChanged)
        ]
    );
    assert!(!zk.has_watch(a, WatchType::Data, &nb));
    assert!(zk.expire_session(a).is_empty(), "expiring twice is a no-op");
    zk.close_session(b);
    assert_eq!(zk.children("/l").unwrap(), vec!["keep".to_owned()]);
}

#[test]
fn data_watches_fire_once_on_change_or_delete() {
    let mut zk = ZkModel::new();
    let (a, b) = (zk.create_session(), zk.create_session());
    zk.create(a, "/n", b"", CreateMode::Persistent).unwrap();
    zk.get_data(b, "/n", true).unwrap();
    zk.get_data(b, "/n", true).unwrap(); // one registration
    zk.exists(b, "/n", true).unwrap(); // same table: still one
    assert_eq!(zk.watch_count(), 1);
    zk.set_data(a, "/n", b"1", None).unwrap();
    zk.set_data(a, "/n", b"2", None).unwrap();
    assert_eq!(
        kinds(&zk.take_notifications()),
        vec![(b, "/n", WatchKind::NodeDataChanged)]
    );
    zk.get_data(b, "/n", true).unwrap();
    zk.delete(a, "/n", None).unwrap();
    assert_eq!(
        kinds(&zk.take_notifications()),
        vec![(b, "/n", WatchKind::NodeDeleted)]
    );
    // getData on a missing node leaves no watch; exists does.
    assert_eq!(zk.get_data(b, "/n", true), Err(ZkError::NoNode));
    assert_eq!(zk.watch_count(), 0);
    assert_eq!(zk.exists(b, "/n", true), Ok(None));
    zk.create(a, "/n", b"", CreateMode::Persistent).unwrap();
    assert_eq!(
        kinds(&zk.take_notifications()),
        vec![(b, "/n", WatchKind::NodeCreated)]
    );
    // Administrators leave no watches.
    zk.get_data(NO_SESSION, "/n", true).unwrap();
    assert_eq!(zk.watch_count(), 0);
}

#[test]
fn child_watches_fire_on_child_changes_and_on_the_nodes_deletion() {
    let mut zk = ZkModel::new();
    let (a, b) = (zk.create_session(), zk.create_session());
    zk.create(a, "/p", b"", CreateMode::Persistent).unwrap();
    zk.get_children(b, "/p", true).unwrap();
    zk.set_data(a, "/p", b"x", None).unwrap();
    assert!(
        zk.take_notifications().is_empty(),
        "data changes do not fire child watches"
    );
    zk.create(a, "/p/c", b"", CreateMode::Persistent).unwrap();
    zk.create(a, "/p/d", b"", CreateMode::Persistent).unwrap();
    assert_eq!(
        kinds(&zk.take_notifications()),
        vec![(b, "/p", WatchKind::NodeChildrenChanged)]
    );
    zk.get_children(b, "/p", true).unwrap();
    zk.delete(a, "/p/c", None).unwrap();
    assert_eq!(
        kinds(&zk.take_notifications()),
        vec![(b, "/p", WatchKind::NodeChildrenChanged)]
    );
    // Data and child watch on one node: its deletion fires once per session.
    zk.delete(a, "/p/d", None).unwrap();
    zk.get_children(b, "/p", true).unwrap();
    zk.get_data(b, "/p", true).unwrap();
    zk.take_notifications();
    zk.delete(a, "/p", None).unwrap();
    assert_eq!(
        kinds(&zk.take_notifications()),
        vec![(b, "/p", WatchKind::NodeDeleted)]
    );
    assert_eq!(zk.get_children(b, "/p", true), Err(ZkError::NoNode));
    assert_eq!(zk.watch_count(), 0);
}

#[test]
fn set_watches_after_reconnect_fires_what_changed_since_the_last_zxid_seen() {
    let mut zk = ZkModel::new();
    let (a, b) = (zk.create_session(), zk.create_session());
    for p in ["/same", "/changed", "/gone", "/kids"] {
        zk.create(a, p, b"", CreateMode::Persistent).unwrap();
    }
    let seen = zk.zxid();
    // While b was away:
    zk.set_data(a, "/changed", b"1", None).unwrap();
    zk.delete(a, "/gone", None).unwrap();
    zk.create(a, "/kids/k", b"", CreateMode::Persistent)
        .unwrap();
    zk.create(a, "/born", b"", CreateMode::Persistent).unwrap();
    zk.take_notifications();
    let data: Vec<String> = ["/same", "/changed", "/gone"].map(String::from).to_vec();
    let exist: Vec<String> = vec!["/born".into(), "/unborn".into()];
    let child: Vec<String> = vec!["/kids".into(), "/same".into()];
    zk.set_watches(b, seen, &data, &exist, &child);
    assert_eq!(
        kinds(&zk.take_notifications()),
        vec![
            (b, "/changed", WatchKind::NodeDataChanged),
            (b, "/gone", WatchKind::NodeDeleted),
            (b, "/born", WatchKind::NodeCreated),
            (b, "/kids", WatchKind::NodeChildrenChanged),
        ]
    );
    // The unchanged ones are set again.
    assert!(zk.has_watch(b, WatchType::Data, "/same"));
    assert!(zk.has_watch(b, WatchType::Data, "/unborn"));
    assert!(zk.has_watch(b, WatchType::Child, "/same"));
    assert_eq!(zk.watches_of(b).len(), 3);
    zk.remove_watches(b);
    assert_eq!(zk.watch_count(), 0);
}

#[test]
fn multi_is_all_or_nothing_with_the_first_error() {
    let mut zk = ZkModel::new();
    let (a, b) = (zk.create_session(), zk.create_session());
    zk.create(a, "/m", b"", CreateMode::Persistent).unwrap();
    zk.get_children(b, "/m", true).unwrap();
    let before = zk.clone();
    let ops = vec![
        MultiOp::Create {
            path: "/m/x".into(),
            data: vec![],
            mode: CreateMode::Persistent,
        },
        MultiOp::SetData {
            path: "/m".into(),
            data: b"d".to_vec(),
            version: None,
        },
        MultiOp::Check {
            path: "/m/x".into(),
            version: Some(0),
        },
        MultiOp::Delete {
            path: "/m/nope".into(),
            version: None,
        },
        MultiOp::Check {
            path: "/m/also-missing".into(),
            version: None,
        },
    ];
    let err = zk.multi(a, &ops).unwrap_err();
    assert_eq!(
        err,
        ZkError::MultiFailed {
            index: 3,
            error: Box::new(ZkError::NoNode)
        }
    );
    assert_eq!(zk.children("/m"), before.children("/m"));
    assert_eq!(zk.get("/m").unwrap().data, b"");
    assert_eq!(zk.stat("/m"), before.stat("/m"));
    assert!(zk.take_notifications().is_empty(), "nothing fired");
    assert!(
        zk.has_watch(b, WatchType::Child, "/m"),
        "the watch is still set"
    );
    // All valid: applied in one transaction.
    let ops = vec![
        MultiOp::Create {
            path: "/m/s-".into(),
            data: vec![],
            mode: CreateMode::EphemeralSequential,
        },
        MultiOp::Create {
            path: "/m/s-".into(),
            data: vec![],
            mode: CreateMode::EphemeralSequential,
        },
        MultiOp::SetData {
            path: "/m".into(),
            data: b"d".to_vec(),
            version: Some(0),
        },
        MultiOp::Check {
            path: "/m/s-0000000000".into(),
            version: Some(0),
        },
        MultiOp::Delete {
            path: "/m/s-0000000001".into(),
            version: None,
        },
    ];
    let z = zk.zxid();
    let r = zk.multi(a, &ops).unwrap();
    assert_eq!(zk.zxid(), z + 1);
    assert_eq!(
        r[0],
        MultiResult::Created {
            path: "/m/s-0000000000".into()
        }
    );
    assert_eq!(
        r[1],
        MultiResult::Created {
            path: "/m/s-0000000001".into()
        }
    );
    assert!(matches!(r[2], MultiResult::SetData { .. }));
    assert_eq!(
        (r[3].clone(), r[4].clone()),
        (MultiResult::Checked, MultiResult::Deleted)
    );
    assert_eq!(zk.stat("/m/s-0000000000").unwrap().czxid, z + 1);
    assert_eq!(zk.ephemerals(a), vec!["/m/s-0000000000".to_owned()]);
    assert_eq!(
        kinds(&zk.take_notifications()),
        vec![(b, "/m", WatchKind::NodeChildrenChanged)]
    );
}

#[test]
fn dump_shows_the_tree() {
    let mut zk = ZkModel::new();
    let s = zk.create_session();
    zk.create(s, "/l", b"", CreateMode::Container).unwrap();
    seq_create(&mut zk, s, "/l/n-");
    let d = zk.dump("/l");
    assert!(d.contains("/l czxid=") && d.contains("container"), "{d}");
    assert!(
        d.contains("  /l/n-0000000000") && d.contains("owner="),
        "{d}"
    );
}
