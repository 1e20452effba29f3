//! Semaphores in Curator's and kazoo's layouts, request by request: the internal
//! mutex first, then the lease as the peer takes it, then the mutex released and the
//! lease node held (see `acquisition::lease`).

mod harness;

use harness::*;
use lock_core::*;

/// Answers the next request, which must be a create of `mode` under `prefix`; the
/// server appends `seq` to sequential names. Returns the created path.
fn answer_create_in(h: &mut H, prefix: &str, mode: CreateMode, seq: Option<i32>) -> String {
    let r = h.next_req();
    let Op::Create { path, mode: m, .. } = &r.op else {
        panic!("expected a create under {prefix}, got {:?}", r.op)
    };
    assert!(path.starts_with(prefix), "{path} not under {prefix}");
    assert_eq!(*m, mode, "mode of {path}");
    let path = match seq {
        Some(seq) => format!("{path}{seq:010}"),
        None => path.clone(),
    };
    h.czxid += 1;
    let stat = Stat {
        czxid: h.czxid,
        ephemeral_owner: SID,
        ..Stat::default()
    };
    h.reply(
        r.id,
        Ok(Reply::Created {
            path: path.clone(),
            stat: Some(stat),
        }),
    );
    path
}

/// Answers the next request, a listing of `dir` (with a children watch if
/// `watch`), with `names`.
fn answer_list_of(h: &mut H, dir: &str, watch: bool, names: &[&str]) {
    let r = h.next_req();
    match (&r.op, watch) {
        (Op::GetChildren { path }, false) | (Op::WatchChildren { path }, true) => {
            assert_eq!(path, dir)
        }
        (other, _) => panic!("expected a listing of {dir} (watch {watch}), got {other:?}"),
    }
    let names = names.iter().map(|s| s.to_string()).collect();
    h.reply(r.id, Ok(Reply::Children(names)));
}

fn expect_delete(h: &mut H, path: &str) {
    let r = h.next_req();
    assert_eq!(
        r.op,
        Op::Delete {
            path: path.to_owned(),
            version: None
        }
    );
    h.reply(r.id, Ok(Reply::Deleted));
}

/// Takes the internal mutex uncontended; returns its node's path.
fn take_mutex(h: &mut H, dir: &str) -> String {
    let mutex = answer_create_in(
        h,
        &format!("{dir}/"),
        CreateMode::EphemeralSequential,
        Some(0),
    );
    answer_list_of(h, dir, false, &[&name_of(&mutex)]);
    mutex
}

#[test]
fn curator_layout_queues_in_locks_and_holds_a_lease() {
    let mut h = H::new();
    h.acquire(LockSpec::semaphore("/s", 2).scheme(NameScheme::Curator));
    let mutex = take_mutex(&mut h, "/s/locks");
    assert!(name_of(&mutex).contains("-lock-"), "{mutex}");
    assert!(h.take_events().is_empty(), "the mutex is no permit");
    // Holding the mutex: our lease node, then the pool, in one burst.
    let lease = answer_create_in(
        &mut h,
        "/s/leases/_c_",
        CreateMode::EphemeralSequential,
        Some(7),
    );
    assert!(name_of(&lease).contains("-lease-0000000007"), "{lease}");
    let names::ParsedName { attempt, .. } = names::parse_name(&name_of(&lease)).unwrap();
    assert_eq!(
        names::parse_name(&name_of(&mutex)).unwrap().attempt,
        attempt
    );
    // Curator counts every lease node, its own included: 2 of 2 is in.
    answer_list_of(
        &mut h,
        "/s/leases",
        true,
        &["_c_other-lease-0000000003", &name_of(&lease)],
    );
    match &h.take_events()[..] {
        [LockEvent::Acquired(g)] => {
            assert_eq!(g.path, lease);
            assert_eq!(g.sequence, 7);
            assert_eq!(g.token, FencingToken(h.czxid));
        }
        other => panic!("expected the lease, got {other:?}"),
    }
    // The mutex goes at once, as Curator releases it once leased.
    expect_delete(&mut h, &mutex);
    assert!(h.no_requests());
}

#[test]
fn curator_layout_waits_on_the_pool_with_the_mutex_held() {
    let mut h = H::new();
    let id = h.acquire(LockSpec::semaphore("/s", 1).scheme(NameScheme::Curator));
    let mutex = take_mutex(&mut h, "/s/locks");
    let lease = answer_create_in(
        &mut h,
        "/s/leases/",
        CreateMode::EphemeralSequential,
        Some(2),
    );
    let other = "_c_a8a4cbf4-2d5a-4a3b-9f5c-0d1e2f3a4b5c-lease-0000000001";
    answer_list_of(&mut h, "/s/leases", true, &[other, &name_of(&lease)]);
    assert!(
        h.take_events().is_empty(),
        "2 lease nodes of 1 permit: wait"
    );
    assert!(
        h.no_requests(),
        "the pool's children watch does the waiting"
    );
    assert_eq!(h.s.state(id), Some(LockState::Waiting));
    // The holder leaves: look again.
    h.watch("/s/leases", WatchKind::NodeChildrenChanged);
    answer_list_of(&mut h, "/s/leases", true, &[&name_of(&lease)]);
    assert!(matches!(h.take_events()[..], [LockEvent::Acquired(_)]));
    expect_delete(&mut h, &mutex);
}

#[test]
fn curator_layout_try_only_gives_up_both_nodes_on_a_full_pool() {
    let mut h = H::new();
    h.acquire(
        LockSpec::semaphore("/s", 1)
            .scheme(NameScheme::Curator)
            .try_only(),
    );
    let mutex = take_mutex(&mut h, "/s/locks");
    let lease = answer_create_in(
        &mut h,
        "/s/leases/",
        CreateMode::EphemeralSequential,
        Some(2),
    );
    answer_list_of(
        &mut h,
        "/s/leases",
        true,
        &["_c_x-lease-0000000001", &name_of(&lease)],
    );
    assert_eq!(
        h.take_events(),
        vec![LockEvent::Failed(FailReason::WouldBlock)]
    );
    let mut deleted: Vec<String> = (0..2)
        .map(|_| match h.next_req().op {
            Op::Delete { path, .. } => path,
            other => panic!("expected deletes, got {other:?}"),
        })
        .collect();
    deleted.sort();
    let mut expected = vec![mutex, lease];
    expected.sort();
    assert_eq!(deleted, expected);
}

#[test]
fn kazoo_layout_checks_the_count_then_counts_before_creating() {
    let mut h = H::new();
    h.acquire(LockSpec::semaphore("/s", 2).scheme(NameScheme::Kazoo));
    let mutex = take_mutex(&mut h, "/s-__lock__");
    assert!(name_of(&mutex).contains("__lock__"), "{mutex}");
    // The pool's permit count: missing, so the pool is created carrying ours.
    let r = h.next_req();
    assert_eq!(
        r.op,
        Op::GetData {
            path: "/s".into(),
            watch: false
        }
    );
    h.reply(r.id, Err(ZkError::NoNode));
    let r = h.next_req();
    assert_eq!(
        r.op,
        Op::Create {
            path: "/s".into(),
            data: b"2".to_vec(),
            mode: CreateMode::Persistent
        }
    );
    h.reply(
        r.id,
        Ok(Reply::Created {
            path: "/s".into(),
            stat: None,
        }),
    );
    // kazoo counts first: one lease of 2, room.
    answer_list_of(&mut h, "/s", true, &["0123456789abcdef0123456789abcdef"]);
    let lease = answer_create_in(&mut h, "/s/", CreateMode::Ephemeral, None);
    let attempt = names::parse_kazoo_lease(&name_of(&lease)).expect("a kazoo lease name");
    assert_eq!(
        names::parse_name(&name_of(&mutex)).unwrap().attempt,
        attempt
    );
    match &h.take_events()[..] {
        [LockEvent::Acquired(g)] => assert_eq!(g.path, lease),
        other => panic!("expected the lease, got {other:?}"),
    }
    expect_delete(&mut h, &mutex);
}

#[test]
fn kazoo_layout_refuses_another_stored_count_and_leaves_nothing() {
    let mut h = H::new();
    h.acquire(LockSpec::semaphore("/s", 2).scheme(NameScheme::Kazoo));
    let mutex = take_mutex(&mut h, "/s-__lock__");
    let r = h.next_req();
    h.reply(
        r.id,
        Ok(Reply::Data {
            data: b"3".to_vec(),
            stat: Stat::default(),
        }),
    );
    assert_eq!(
        h.take_events(),
        vec![LockEvent::Failed(FailReason::PermitsMismatch {
            ours: 2,
            theirs: 3
        })]
    );
    expect_delete(&mut h, &mutex);
    assert!(h.no_requests());
}

#[test]
fn kazoo_layout_full_pool_waits_without_creating() {
    let mut h = H::new();
    h.acquire(LockSpec::semaphore("/s", 1).scheme(NameScheme::Kazoo));
    take_mutex(&mut h, "/s-__lock__");
    let r = h.next_req();
    h.reply(
        r.id,
        Ok(Reply::Data {
            data: b"1".to_vec(),
            stat: Stat::default(),
        }),
    );
    answer_list_of(&mut h, "/s", true, &["0123456789abcdef0123456789abcdef"]);
    assert!(h.no_requests() && h.take_events().is_empty());
    h.watch("/s", WatchKind::NodeChildrenChanged);
    answer_list_of(&mut h, "/s", true, &[]);
    answer_create_in(&mut h, "/s/", CreateMode::Ephemeral, None);
    assert!(matches!(h.take_events()[..], [LockEvent::Acquired(_)]));
}

#[test]
fn a_reconnect_in_the_lease_step_finds_the_lease_again() {
    let mut h = H::new();
    h.acquire(LockSpec::semaphore("/s", 1).scheme(NameScheme::Curator));
    let mutex = take_mutex(&mut h, "/s/locks");
    // Our lease create is sent, the connection drops before its reply.
    let create = h.next_req();
    let Op::Create { path: prefix, .. } = &create.op else {
        panic!("expected the lease create, got {:?}", create.op)
    };
    let lease = format!("{prefix}0000000004");
    h.reqs.clear();
    h.session(SessionEvent::Disconnected {
        since_contact: std::time::Duration::ZERO,
    });
    h.session(SessionEvent::Connected { session_id: SID });
    // The mutex is confirmed ours, then the pool listed (not a second create).
    answer_list_of(&mut h, "/s/locks", false, &[&name_of(&mutex)]);
    answer_list_of(&mut h, "/s/leases", true, &[&name_of(&lease)]);
    // Ours: the mutex goes, and the lease, adopted from the listing, is granted
    // once its stat (the token, the owning session) is read.
    expect_delete(&mut h, &mutex);
    assert!(h.take_events().is_empty());
    h.answer_data(&lease, SID);
    match &h.take_events()[..] {
        [LockEvent::Acquired(g)] => assert_eq!(g.path, lease),
        other => panic!("expected the lease, got {other:?}"),
    }
    assert!(h.no_requests());
}

#[test]
fn session_expiry_in_the_lease_step_fails_and_deletes_nothing() {
    let mut h = H::new();
    let id = h.acquire(LockSpec::semaphore("/s", 1).scheme(NameScheme::Kazoo));
    take_mutex(&mut h, "/s-__lock__");
    h.reqs.clear();
    h.session(SessionEvent::Expired);
    assert_eq!(
        h.take_events(),
        vec![LockEvent::Failed(FailReason::SessionExpired)]
    );
    h.session(SessionEvent::Connected {
        session_id: SID + 1,
    });
    assert!(h.no_requests(), "the expired session's nodes are gone");
    assert_eq!(h.s.state(id), None);
}

#[test]
fn deadlock_detection_on_a_peer_layout_is_refused() {
    let mut h = H::new();
    let spec = LockSpec::semaphore("/s", 2)
        .scheme(NameScheme::Kazoo)
        .owner("w")
        .detect_deadlocks(std::time::Duration::from_secs(1));
    assert!(matches!(
        h.s.acquire(spec, h.now),
        Err(UsageError::Unsupported(_))
    ));
}

/// Answers a plain read of `path` with `data`, owned by session `owner`, token
/// `czxid`.
fn answer_read_of(h: &mut H, path: &str, data: &[u8], owner: i64, czxid: i64) {
    let r = h.next_req();
    assert_eq!(
        r.op,
        Op::GetData {
            path: path.to_owned(),
            watch: false
        }
    );
    let stat = Stat {
        czxid,
        ephemeral_owner: owner,
        ..Stat::default()
    };
    h.reply(
        r.id,
        Ok(Reply::Data {
            data: data.to_vec(),
            stat,
        }),
    );
}

fn curator_name(n: u32, marker: &str, seq: i32) -> String {
    format!("_c_{n:08x}-0000-4000-8000-000000000000-{marker}{seq:010}")
}

#[test]
fn inspection_shows_a_curator_semaphores_leases_and_queue() {
    let mut h = H::new();
    h.s.inspect("/s", h.now).unwrap();
    h.drain();
    let (l1, l2, l3) = (
        curator_name(1, "lease-", 1),
        curator_name(2, "lease-", 2),
        curator_name(3, "lease-", 3),
    );
    let (q1, q2) = (curator_name(4, "lock-", 5), curator_name(5, "lock-", 6));
    answer_list_of(&mut h, "/s", false, &["locks", "leases"]);
    answer_list_of(&mut h, "/s/locks", false, &[&q2, &q1]);
    answer_list_of(&mut h, "/s/leases", false, &[&l3, &l1, &l2]);
    answer_list_of(&mut h, "/s-__lock__", false, &[]);
    // Two holders (sessions 71, 72); the queue head (session 73) has added its
    // lease and waits for room; another waits behind it.
    answer_read_of(&mut h, &format!("/s/locks/{q2}"), b"", 74, 21);
    answer_read_of(&mut h, &format!("/s/locks/{q1}"), b"", 73, 20);
    answer_read_of(&mut h, &format!("/s/leases/{l3}"), b"", 73, 13);
    answer_read_of(&mut h, &format!("/s/leases/{l1}"), b"", 71, 11);
    answer_read_of(&mut h, &format!("/s/leases/{l2}"), b"", 72, 12);
    let events = h.take_events();
    let [LockEvent::Participants(p)] = &events[..] else {
        panic!("{events:?}")
    };
    let names = |v: &[Participant]| v.iter().map(|p| p.node.clone()).collect::<Vec<_>>();
    assert_eq!(names(&p.holders), [l1.clone(), l2.clone()]);
    assert_eq!(names(&p.waiters), [l3.clone(), q2.clone()]);
    assert_eq!(p.waiters[0].waits_for, [l1, l2]);
    assert_eq!(p.waiters[1].waits_for, [l3]);
    assert_eq!(p.waiters[1].dir, "/s/locks");
    assert!(p
        .holders
        .iter()
        .all(|h| h.dir == "/s/leases" && h.kind == NodeKind::Semaphore));
    assert_eq!(p.foreign, 0, "the layout's directories are not foreign");
}

#[test]
fn inspection_shows_a_kazoo_semaphores_leases_queue_and_count() {
    let mut h = H::new();
    h.s.inspect("/s", h.now).unwrap();
    h.drain();
    let lease = "0123456789abcdef0123456789abcdef";
    let queued = "fedcba9876543210fedcba9876543210__lock__0000000004";
    answer_list_of(&mut h, "/s", false, &[lease]);
    answer_list_of(&mut h, "/s/locks", false, &[]);
    answer_list_of(&mut h, "/s/leases", false, &[]);
    answer_list_of(&mut h, "/s-__lock__", false, &[queued]);
    answer_read_of(&mut h, &format!("/s/{lease}"), b"worker-1", 71, 11);
    answer_read_of(&mut h, "/s", b"1", 0, 1);
    answer_read_of(
        &mut h,
        &format!("/s-__lock__/{queued}"),
        b"worker-2",
        72,
        12,
    );
    let events = h.take_events();
    let [LockEvent::Participants(p)] = &events[..] else {
        panic!("{events:?}")
    };
    assert_eq!(p.holders.len(), 1);
    assert_eq!(
        (
            p.holders[0].node.as_str(),
            p.holders[0].owner.as_deref(),
            p.holders[0].permits
        ),
        (lease, Some("worker-1"), Some(1))
    );
    assert_eq!(p.waiters.len(), 1);
    assert_eq!(p.waiters[0].dir, "/s-__lock__");
    assert_eq!(p.waiters[0].waits_for, [lease]);
    assert_eq!(p.foreign, 0);
}

/// A binding may hand over a listing before the reply of a create the server
/// answered first: the listing shows our kazoo lease, we hold it, and the create's
/// late reply (the same fixed path) must not make us delete the node we hold.
#[test]
fn a_late_create_reply_never_deletes_the_held_kazoo_lease() {
    let mut h = H::new();
    h.acquire(LockSpec::semaphore("/s", 2).scheme(NameScheme::Kazoo));
    let mutex = take_mutex(&mut h, "/s-__lock__");
    let r = h.next_req();
    h.reply(
        r.id,
        Ok(Reply::Data {
            data: b"2".to_vec(),
            stat: Stat::default(),
        }),
    );
    answer_list_of(&mut h, "/s", true, &[]);
    let create = h.next_req();
    let Op::Create { path: lease, .. } = create.op.clone() else {
        panic!("expected the lease create, got {:?}", create.op)
    };
    // Our own create fires the pool's children watch: a new listing goes out.
    h.watch("/s", WatchKind::NodeChildrenChanged);
    let list = h.next_req();
    assert_eq!(list.op, Op::WatchChildren { path: "/s".into() });
    // Delivered first: the listing, showing our lease.
    h.reply(list.id, Ok(Reply::Children(vec![name_of(&lease)])));
    expect_delete(&mut h, &mutex);
    // Adopted from the listing: its stat is read before the grant.
    h.answer_data(&lease, SID);
    assert!(matches!(h.take_events()[..], [LockEvent::Acquired(_)]));
    // Then the create's reply.
    h.czxid += 1;
    let stat = Stat {
        czxid: h.czxid,
        ephemeral_owner: SID,
        ..Stat::default()
    };
    h.reply(
        create.id,
        Ok(Reply::Created {
            path: lease.clone(),
            stat: Some(stat),
        }),
    );
    assert!(h.no_requests(), "the held lease must stay: {:?}", h.reqs);
}
