//! Property tests of the ZooKeeper model: whatever sequence of operations, sessions
//! and reaper passes, the tree stays consistent, ephemerals belong to live sessions,
//! sequence numbers parse and a failed `multi` changes nothing.

use lock_core::{CreateMode, MultiOp, ZkError};
use lock_sim::{ZkModel, NO_SESSION};
use proptest::prelude::*;

const PATHS: [&str; 6] = ["/a", "/a/b", "/a/b/c", "/x", "/x/y", "/a/e"];

#[derive(Clone, Debug)]
enum Step {
    Create(usize, usize, u8),
    Delete(usize, usize),
    SetData(usize, usize),
    Multi(usize, Vec<(u8, usize)>),
    Expire(usize),
    NewSession,
    Reap,
    GetData(usize, usize),
}

fn step() -> impl Strategy<Value = Step> {
    let p = 0..PATHS.len();
    prop_oneof![
        4 => (0..3usize, p.clone(), 0..4u8).prop_map(|(s, p, m)| Step::Create(s, p, m)),
        2 => (0..3usize, p.clone()).prop_map(|(s, p)| Step::Delete(s, p)),
        1 => (0..3usize, p.clone()).prop_map(|(s, p)| Step::SetData(s, p)),
        2 => (0..3usize, prop::collection::vec((0..4u8, p.clone()), 1..4))
            .prop_map(|(s, ops)| Step::Multi(s, ops)),
        1 => (0..3usize).prop_map(Step::Expire),
        1 => Just(Step::NewSession),
        1 => Just(Step::Reap),
        1 => (0..3usize, p).prop_map(|(s, p)| Step::GetData(s, p)),
    ]
}

fn mode(m: u8) -> CreateMode {
    match m {
        0 => CreateMode::Persistent,
        1 => CreateMode::Ephemeral,
        2 => CreateMode::EphemeralSequential,
        _ => CreateMode::Container,
    }
}

fn check_consistent(zk: &ZkModel) {
    for path in zk.paths() {
        let info = zk.get(path).unwrap();
        let children = zk.children(path).unwrap();
        assert_eq!(info.stat.num_children as usize, children.len(), "{path}");
        for c in &children {
            let child = if path == "/" {
                format!("/{c}")
            } else {
                format!("{path}/{c}")
            };
            assert!(zk.contains(&child), "{child} listed but missing");
        }
        if path != "/" {
            let (parent, name) = path.rsplit_once('/').unwrap();
            let parent = if parent.is_empty() { "/" } else { parent };
            assert!(
                zk.children(parent).unwrap().contains(&name.to_owned()),
                "{path} orphaned"
            );
        }
        let owner = info.stat.ephemeral_owner;
        if matches!(
            info.mode,
            CreateMode::Ephemeral | CreateMode::EphemeralSequential
        ) {
            assert!(
                zk.session_is_alive(owner),
                "{path} owned by dead {owner:#x}"
            );
            assert!(children.is_empty(), "ephemeral {path} has children");
            assert!(zk.ephemerals(owner).contains(&path.to_owned()));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn the_tree_stays_consistent(steps in prop::collection::vec(step(), 1..60)) {
        let mut zk = ZkModel::new();
        let mut sessions = [zk.create_session(), zk.create_session(), NO_SESSION];
        for s in steps {
            let z = zk.zxid();
            match s {
                Step::Create(si, p, m) => {
                    let r = zk.create(sessions[si], PATHS[p], b"d", mode(m));
                    if let Ok((path, stat)) = r {
                        prop_assert_eq!(stat.czxid, z + 1);
                        if mode(m) == CreateMode::EphemeralSequential {
                            let seq = &path[PATHS[p].len()..];
                            prop_assert_eq!(
                                lock_core::names::parse_sequence(seq).map(|v| format!("{v:010}")),
                                Some(seq.to_owned())
                            );
                        }
                    }
                }
                Step::Delete(si, p) => { let _ = zk.delete(sessions[si], PATHS[p], None); }
                Step::SetData(si, p) => { let _ = zk.set_data(sessions[si], PATHS[p], b"x", None); }
                Step::Multi(si, ops) => {
                    let ops: Vec<MultiOp> = ops.into_iter().map(|(k, p)| match k {
                        0 => MultiOp::Create { path: PATHS[p].into(), data: vec![], mode: CreateMode::Persistent },
                        1 => MultiOp::Delete { path: PATHS[p].into(), version: None },
                        2 => MultiOp::SetData { path: PATHS[p].into(), data: vec![1], version: None },
                        _ => MultiOp::Check { path: PATHS[p].into(), version: Some(0) },
                    }).collect();
                    let before = zk.clone();
                    match zk.multi(sessions[si], &ops) {
                        Ok(results) => prop_assert_eq!(results.len(), ops.len()),
                        Err(ZkError::MultiFailed { index, .. }) => {
                            prop_assert!((index as usize) < ops.len());
                            prop_assert_eq!(zk.dump("/"), before.dump("/"));
                            prop_assert_eq!(zk.watch_count(), before.watch_count());
                            prop_assert!(!zk.has_notifications() || before.has_notifications());
                        }
                        Err(e) => prop_assert_eq!(e, ZkError::SessionExpired),
                    }
                }
                Step::Expire(si) => { zk.expire_session(sessions[si]); }
                Step::NewSession => {
                    sessions.rotate_left(1);
                    sessions[2] = zk.create_session();
                }
                Step::Reap => {
                    for p in zk.reap_containers() {
                        prop_assert!(!zk.contains(&p));
                    }
                }
                Step::GetData(si, p) => {
                    let _ = zk.get_data(sessions[si], PATHS[p], true);
                    prop_assert_eq!(zk.zxid(), z, "reads are not transactions");
                }
            }
            prop_assert!(zk.zxid() >= z);
            check_consistent(&zk);
            zk.take_notifications();
        }
    }
}
