//! Each recipe's rule against a model server: who holds, who is watched, what it
//! costs.

mod harness;
use harness::*;
use lock_core::*;

/// A plain lock's uncontended cycle is create + getChildren + delete: no read of
/// its own node, no watch on it, so its release notifies nobody.
#[test]
fn uncontended_write_is_one_round_trip_then_one_delete_and_token_is_czxid() {
    let mut h = H::served(&["/locks/a"]);
    let id = h.acquire(LockSpec::write("/locks/a"));
    // Create and GetChildren leave together, before any reply.
    assert_eq!(h.reqs.len(), 2);
    assert!(matches!(h.reqs[0].op, Op::Create { .. }));
    assert!(matches!(&h.reqs[1].op, Op::GetChildren { path } if path == "/locks/a"));
    h.serve();
    let node = h.ours("/locks/a")[0].clone();
    let czxid = h.zk().model.stat(&node).unwrap().czxid;
    let g = h.acquired();
    assert_eq!(&*g.path, node);
    assert_eq!(g.token, FencingToken(czxid));
    assert_eq!(g.sequence, 0);
    assert_eq!(g.session_id, h.sid);
    assert_eq!(h.s.stats().requests, 2);
    let sid = h.sid;
    assert!(h.zk().model.watches_of(sid).is_empty());
    h.run(|s, now| s.release(id, now));
    assert_eq!(ops(&h.serve()), vec![delete_of(&node)]);
    h.expect_events([LockEvent::Released]);
    assert_eq!(h.s.stats().requests, 3);
    assert!(h.s.is_idle());
    assert_eq!(h.s.release(id, h.now), Err(UsageError::UnknownLock(id)));
}

#[test]
fn write_waits_on_closest_lower_only_and_hands_off_without_a_request() {
    let mut h = H::served(&["/l"]);
    let p1 = h.peer_joins("/l", NodeKind::Read, 1);
    let p2 = h.peer_joins("/l", NodeKind::Write, 2);
    h.acquire(LockSpec::write("/l"));
    h.serve_one();
    h.peer_joins("/l", NodeKind::Write, 3);
    h.serve();
    let node = h.ours("/l")[0].clone();
    // Watches only the closest lower participant (herd-free). Two are cached, so
    // its deletion will lead to a listing (which shows our node): no own watch.
    assert_eq!(h.watched(), vec![p2.clone()]);
    assert!(h.take_events().is_empty());
    // p2 goes while p1 is still cached as lower: one fresh listing (not a check per
    // cached node) shows p1 alive: watch it, and now our own node too, since
    // p1's deletion alone will grant us.
    h.delete_node(&p2);
    assert!(matches!(ops(&h.serve())[0], Op::GetChildren { .. }));
    assert_eq!(h.watched(), vec![p1.clone(), node.clone()]);
    assert!(h.take_events().is_empty());
    // p1 goes: nothing lower is cached, we hold with no request at all (the
    // handoff needs no round trip).
    h.delete_node(&p1);
    h.acquired();
    // Nothing at all: the watch set on our node while we waited stays (a break
    // under the holder is heard at once).
    assert!(h.no_requests(), "{:?} ({node})", h.reqs);
    assert_eq!(h.watched(), vec![node]);
}

#[test]
fn stale_cache_costs_one_listing_not_a_check_per_node() {
    let mut h = H::served(&["/l"]);
    let lower: Vec<String> = (1..=5)
        .map(|n| h.peer_joins("/l", NodeKind::Write, n))
        .collect();
    h.acquire(LockSpec::write("/l"));
    h.serve_one();
    h.serve_one();
    // All five are gone when we look at the closest one.
    for path in &lower {
        h.delete_node(path);
    }
    let served = h.serve();
    assert_eq!(served[0].op.path(), lower[4]);
    // Four stale candidates remain cached: one listing shows they are all gone.
    assert!(matches!(
        served[1..],
        [Request {
            op: Op::GetChildren { .. },
            ..
        }]
    ));
    h.acquired();
    // Granted from a listing, with no watch on our node to drop.
    assert!(h.watched().is_empty());
}

#[test]
fn readers_share_and_wait_only_for_the_closest_lower_write() {
    let mut h = H::served(&["/rw"]);
    let w = h.peer_joins("/rw", NodeKind::Write, 1);
    h.peer_joins("/rw", NodeKind::Read, 2);
    h.peer_joins("/rw", NodeKind::Read, 3);
    let (_, node) = h.served_acquire(LockSpec::read("/rw"));
    // The watch goes to the write, past the lower reads.
    assert_eq!(h.watched(), vec![w.clone(), node.clone()]);
    assert!(h.take_events().is_empty());
    h.delete_node(&w);
    h.acquired();
    assert!(h.no_requests(), "{:?} ({node})", h.reqs);
}

#[test]
fn semaphore_watches_its_window_and_wakes_on_out_of_order_release() {
    let mut h = H::served(&["/sem"]);
    let [a, b, c] = [1, 2, 3].map(|n| h.peer_joins("/sem", NodeKind::Semaphore, n));
    let (_, node) = h.served_acquire(LockSpec::semaphore("/sem", 2));
    // 3 lower, 2 permits: watch the 2 closest (b and c); no own watch yet (one
    // release cannot grant us from the cache).
    assert_eq!(h.watched(), vec![b.clone(), c.clone()]);
    // b (a holder) releases before a: a and c may still be lower, one too many: list.
    h.delete_node(&b);
    assert!(h.take_events().is_empty());
    assert!(matches!(ops(&h.serve())[0], Op::GetChildren { .. }));
    // c is still watched; a joins the window. Now one release grants us: our own
    // node is watched too.
    assert_eq!(h.watched(), vec![a, c.clone(), node]);
    // c goes (cancelled waiter): a alone is lower, fewer than 2: we hold.
    h.delete_node(&c);
    h.acquired();
}

#[test]
fn foreign_children_are_ignored_and_counted() {
    let mut h = H::served(&[
        "/l",
        "/l/readme",
        "/l/leases",
        "/l/config",
        "/l/zkl-section",
    ]);
    h.held_on(LockSpec::write("/l"));
    // zklock's own marker is neither a participant nor counted as foreign.
    assert_eq!(h.s.stats().foreign_children, 3);
}

/// A sequential child of no known scheme (here ZooKeeper's own lock recipe,
/// `x-<session>-<seq>`) blocks as an exclusive participant: taking it for foreign
/// would make two holders if it is a lock. A higher one does not block.
#[test]
fn unknown_sequential_children_block_as_exclusive_participants() {
    for spec in [LockSpec::write("/l"), LockSpec::read("/l")] {
        let mut h = H::served(&["/l"]);
        let unknown = h.peer_named("/l", "x-72057594037927936-");
        h.acquire(spec);
        h.serve_one();
        h.peer_named("/l", "x-72057594037927937-");
        h.serve();
        // One blocker cached: our own node is watched, and the blocker.
        let mut expected = vec![h.ours("/l")[0].clone(), unknown.clone()];
        expected.sort();
        assert_eq!(h.watched(), expected);
        assert!(h.take_events().is_empty(), "waits for {unknown}");
        h.delete_node(&unknown);
        h.acquired();
    }
}

/// go-zookeeper's `Lock` node (`_c_<hex32>-lock-<seq>`) blocks a lock of every
/// scheme: before Go's names were known it was foreign, and a Go holder and a
/// zklock holder held together.
#[test]
fn go_zookeeper_holder_blocks_every_scheme() {
    for scheme in [
        NameScheme::Native,
        NameScheme::Curator,
        NameScheme::Kazoo,
        NameScheme::Go,
    ] {
        let mut h = H::served(&["/g"]);
        h.peer_named("/g", "_c_9f86d081884c7d659a2feaa0c55ad015-lock-");
        h.acquire(LockSpec::exclusive("/g").scheme(scheme).try_only());
        h.serve();
        let events = h.take_events();
        assert!(
            matches!(events[..], [LockEvent::Failed(FailReason::WouldBlock)]),
            "{scheme:?}: {events:?}"
        );
    }
}

/// go-zookeeper has only a mutex: other recipes in its scheme are refused before
/// anything is sent, as is the read-only `Other` scheme.
#[test]
fn go_scheme_is_for_the_mutex_only() {
    let mut h = H::new();
    for spec in [
        LockSpec::read("/g"),
        LockSpec::write("/g"),
        LockSpec::semaphore("/g", 2),
        LockSpec::leader("/g", "me"),
    ] {
        let e = h.s.acquire(spec.scheme(NameScheme::Go), h.now).unwrap_err();
        assert!(
            matches!(
                e,
                UsageError::NoLayout {
                    scheme: NameScheme::Go,
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(e.to_string().contains("go-zookeeper's Lock"), "{e}");
    }
    let e =
        h.s.acquire(LockSpec::exclusive("/g").scheme(NameScheme::Other), h.now)
            .unwrap_err();
    assert!(matches!(e, UsageError::NoLayout { .. }), "{e:?}");
    h.drain();
    assert!(h.no_requests());
    h.acquire(LockSpec::exclusive("/g").scheme(NameScheme::Go));
    let (path, _) = h.next_create();
    assert!(
        path.starts_with("/g/_c_") && path.ends_with("-lock-"),
        "{path}"
    );
}

#[test]
fn curator_and_kazoo_participants_block_a_native_lock() {
    let mut h = H::served(&["/mixed"]);
    h.peer_named("/mixed", "_c_a8a4cbf4-2d5a-4a3b-9f5c-0d1e2f3a4b5c-lock-");
    let kazoo = h.peer_named("/mixed", "3f2504e04f8911d39a0c0305e82c3301__lock__");
    h.served_acquire(LockSpec::write("/mixed"));
    // Two blockers cached: a notification leads to a listing, so no own watch.
    assert_eq!(h.watched(), vec![kazoo]);
    assert!(h.take_events().is_empty());
}

#[test]
fn scheme_selects_the_created_name() {
    // Curator's mutex and its read/write lock name exclusive nodes differently; its
    // readers count only `__WRIT__` nodes as writers, so the write half of a
    // read/write lock must be `__WRIT__` (a `lock-` writer would be invisible to them).
    for (spec, scheme, marker) in [
        (LockSpec::exclusive("/x"), NameScheme::Curator, "-lock-"),
        (LockSpec::write("/x"), NameScheme::Curator, "-__WRIT__"),
        (LockSpec::read("/x"), NameScheme::Curator, "-__READ__"),
        (LockSpec::leader("/x", "me"), NameScheme::Curator, "-latch-"),
        (LockSpec::exclusive("/x"), NameScheme::Kazoo, "__lock__"),
        (LockSpec::write("/x"), NameScheme::Kazoo, "__lock__"),
        (LockSpec::read("/x"), NameScheme::Kazoo, "__rlock__"),
        (LockSpec::exclusive("/x"), NameScheme::Native, "-write-"),
        (LockSpec::write("/x"), NameScheme::Native, "-write-"),
        (LockSpec::leader("/x", "me"), NameScheme::Native, "-lead-"),
    ] {
        let mut h = H::new();
        h.acquire(spec.clone().scheme(scheme));
        let (path, _) = h.next_create();
        assert!(path.ends_with(marker), "{spec:?}: {path}");
    }
}

#[test]
fn a_curator_rwlock_writer_blocks_and_is_blocked_by_curator_readers() {
    // A zklock writer in Curator's read/write lock queues behind a Curator reader and
    // its node is what Curator's readers look for.
    let mut h = H::served(&["/rw"]);
    let reader = h.peer_named("/rw", "_c_a8a4cbf4-2d5a-4a3b-9f5c-0d1e2f3a4b5c-__READ__");
    let (_, node) = h.served_acquire(LockSpec::write("/rw").scheme(NameScheme::Curator));
    assert!(node.contains("-__WRIT__"), "{node}");
    assert!(h.watched().contains(&reader), "{:?}", h.watched());
    assert!(h.take_events().is_empty(), "must wait for the reader");
}

#[test]
fn wraparound_orders_max_before_min() {
    let mut h = H::served(&["/w"]);
    // The directory's sequence counter is about to wrap.
    h.zk().model.set_cversion("/w", i32::MAX).unwrap();
    let before = h.peer_joins("/w", NodeKind::Write, 1);
    let (_, node) = h.served_acquire(LockSpec::write("/w"));
    assert!(node.ends_with("-2147483648"), "{node}");
    h.peer_joins("/w", NodeKind::Write, 2);
    // 2147483647 was created before -2147483648: we wait for it.
    assert!(h.watched().contains(&before), "{:?}", h.watched());
    assert!(h.take_events().is_empty());
}

#[test]
fn missing_directory_creates_containers_then_the_node_in_one_burst() {
    let mut h = H::served(&[]);
    h.acquire(LockSpec::write("/a/b/c"));
    let containers: Vec<String> = h
        .serve()
        .into_iter()
        .filter_map(|r| match r.op {
            Op::Create {
                path,
                mode: CreateMode::Container,
                ..
            } => Some(path),
            _ => None,
        })
        .collect();
    assert_eq!(containers, vec!["/a", "/a/b", "/a/b/c"]);
    h.acquired();
}

#[test]
fn try_only_fails_with_would_block_and_removes_its_node() {
    let mut h = H::served(&["/t"]);
    h.peer_joins("/t", NodeKind::Write, 1);
    h.acquire(LockSpec::write("/t").try_only());
    h.serve_one();
    let node = h.ours("/t")[0].clone();
    h.serve_one();
    h.expect_events([LockEvent::Failed(FailReason::WouldBlock)]);
    assert_eq!(ops(&h.serve()), vec![delete_of(&node)]);
    assert!(h.s.is_idle());
}

#[test]
fn missing_stat_on_create_is_fetched_before_granting() {
    let mut h = H::served(&["/n"]);
    h.acquire(LockSpec::write("/n"));
    // A client library that returns no stat with the created path.
    let (create, created) = h.apply_front();
    let Ok(Reply::Created {
        path,
        stat: Some(stat),
    }) = created
    else {
        panic!()
    };
    h.reply(create.id, Ok(Reply::Created { path, stat: None }));
    h.serve_one();
    assert!(h.take_events().is_empty(), "no token yet");
    assert!(matches!(h.serve_one().op, Op::GetData { .. }));
    let g = h.acquired();
    assert_eq!(g.token, FencingToken(stat.czxid));
}

/// Input the core cannot send is refused with a typed error before anything
/// is sent. Too large for one request, it must never leave: the server drops a
/// connection that sends more than jute.maxbuffer, and every reconnect would
/// send it (and drop) again.
#[test]
fn bad_input_is_refused_with_typed_errors() {
    let mut h = H::new();
    let now = h.now;
    let huge_path = format!("/{}", "p".repeat(1_100_000));
    for p in ["rel", "/a/", "/a//b", "/zookeeper/x", "/", &huge_path] {
        assert!(
            matches!(
                h.s.acquire(LockSpec::write(p), now),
                Err(UsageError::InvalidPath { .. })
            ),
            "{p:.20}"
        );
    }
    assert!(matches!(
        h.s.observe(&huge_path, now),
        Err(UsageError::InvalidPath { .. })
    ));
    assert!(matches!(
        h.s.revoke(&huge_path, now),
        Err(UsageError::InvalidPath { .. })
    ));
    let room = Config::default().max_data_len("/a").unwrap();
    assert!(room < MAX_DATA_LEN, "path, name and framing take room too");
    assert_eq!(
        h.s.acquire(LockSpec::write("/a").data(vec![0u8; room + 1]), now),
        Err(UsageError::DataTooLarge {
            len: room + 1,
            max: room
        })
    );
    assert_eq!(
        h.s.acquire(LockSpec::semaphore("/a", 0), now),
        Err(UsageError::ZeroPermits)
    );
    assert_eq!(
        h.s.acquire(LockSpec::leader("/a", ""), now),
        Err(UsageError::EmptyParticipant)
    );
    assert_eq!(
        h.s.release(LockId(999), now),
        Err(UsageError::UnknownLock(LockId(999)))
    );
    h.drain();
    assert!(h.no_requests(), "refused input must send nothing");
    // Data that fits is sent, and its create fits in one packet.
    let id = h.acquire(LockSpec::write("/a").data(vec![0u8; room]));
    let create = h.next_req();
    assert!(create.op.encoded_len() + ACL_ALLOWANCE <= MAX_DATA_LEN);
    assert_eq!(h.s.release(id, h.now), Err(UsageError::NotHeld(id)));
}

/// Features a recipe or a peer's layout has no place for are refused, each for
/// its own reason, before anything is sent.
#[test]
fn unsupported_combinations_are_refused_with_their_reason() {
    let after = std::time::Duration::from_secs(1);
    let delay = after;
    let go = LockSpec::exclusive("/d").scheme(NameScheme::Go);
    let exclusive = "needs an exclusive recipe";
    // go-zookeeper's `Lock` fails on a child whose name does not end in a number.
    let no_markers = "go-zookeeper's Lock cannot read";
    // Curator's nodes carry no owner; kazoo's carry it as the node's data.
    let no_owner_in_nodes = "needs NameScheme::Native, or NameScheme::Kazoo without data";
    let mut h = H::new();
    for (spec, why) in [
        (LockSpec::read("/d").detect_crashes(), exclusive),
        (LockSpec::read("/d").lock_delay(delay), exclusive),
        (LockSpec::semaphore("/d", 3).lock_delay(delay), exclusive),
        (go.clone().lock_delay(delay), no_markers),
        (go.clone().detect_crashes(), no_markers),
        (
            LockSpec::write("/d").detect_deadlocks(after),
            "needs an owner",
        ),
        (
            LockSpec::exclusive("/d")
                .owner("o")
                .scheme(NameScheme::Curator)
                .detect_deadlocks(after),
            no_owner_in_nodes,
        ),
        (
            LockSpec::exclusive("/d")
                .owner("o")
                .scheme(NameScheme::Kazoo)
                .data("host-1")
                .detect_deadlocks(after),
            no_owner_in_nodes,
        ),
        (
            LockSpec::semaphore("/d", 2)
                .scheme(NameScheme::Kazoo)
                .owner("o")
                .detect_deadlocks(after),
            "deadlock detection on a semaphore",
        ),
    ] {
        let refused = h.s.acquire(spec.clone(), h.now);
        assert!(
            matches!(refused, Err(UsageError::Unsupported(w)) if w.contains(why)),
            "{spec:?}: {refused:?}"
        );
    }
    h.drain();
    assert!(h.no_requests() && h.s.is_idle());
    assert!(h.s.acquire(go, h.now).is_ok(), "the plain Go mutex is fine");
}

#[test]
fn requests_are_acquired_before_connect_and_sent_on_connect() {
    let mut h = H::unconnected();
    h.acquire(LockSpec::write("/q"));
    assert!(h.no_requests());
    h.session(SessionEvent::Connected { session_id: SID });
    assert!(matches!(h.next_req().op, Op::Create { .. }));
}

#[test]
fn a_deadline_fails_with_timeout_and_removes_the_node() {
    let mut h = H::served(&["/d"]);
    h.peer_joins("/d", NodeKind::Write, 1);
    let deadline = h.now + std::time::Duration::from_secs(1);
    let (_, node) = h.served_acquire(LockSpec::write("/d").deadline(deadline));
    assert_eq!(h.s.poll_timeout(), Some(deadline));
    h.advance(std::time::Duration::from_secs(1));
    h.expect_events([LockEvent::Failed(FailReason::Timeout)]);
    assert!(ops(&h.serve()).contains(&delete_of(&node)));
}

#[test]
fn a_fenced_write_too_large_on_a_bad_path_or_while_disconnected_is_refused() {
    let (mut h, id, _) = H::holding(LockSpec::write("/a"));
    let big = vec![MultiOp::SetData {
        path: "/data".into(),
        data: vec![0; MAX_DATA_LEN],
        version: None,
    }];
    assert!(matches!(
        h.s.fenced_write(id, big, h.now),
        Err(UsageError::RequestTooLarge { .. })
    ));
    let bad = vec![MultiOp::Delete {
        path: "data".into(),
        version: None,
    }];
    assert!(matches!(
        h.s.fenced_write(id, bad, h.now),
        Err(UsageError::InvalidPath { .. })
    ));
    h.drain();
    assert!(h.no_requests(), "refused writes send nothing");
    h.disconnect();
    assert_eq!(
        h.s.fenced_write(id, vec![], h.now),
        Err(UsageError::NotHeld(id))
    );
}

#[test]
fn an_owner_never_waits_behind_its_own_node() {
    let mut h = H::served(&["/rw", "/m"]);
    let now = h.now;
    // A read lock held by owner "t" cannot be upgraded by "t": refused at once.
    h.held_on(LockSpec::read("/rw").owner("t"));
    let upgrade = h.s.acquire(LockSpec::write("/rw").owner("t"), now);
    assert_eq!(
        upgrade,
        Err(UsageError::SelfDeadlock {
            path: "/rw".into(),
            owner: "t".into(),
            held: NodeKind::Read
        })
    );
    h.drain();
    assert!(h.no_requests(), "refused at once, with no request");
    // Another owner, no owner, a second read, or a try (which cannot wait) queue as usual.
    for spec in [
        LockSpec::write("/rw").owner("u"),
        LockSpec::write("/rw"),
        LockSpec::read("/rw").owner("t"),
        LockSpec::write("/rw").owner("t").try_only(),
    ] {
        assert!(h.s.acquire(spec.clone(), now).is_ok(), "{spec:?}");
    }
    // A mutex is not re-entrant for its owner, and a write holder cannot wait for
    // the read half behind itself either.
    let mut h = H::served(&["/m"]);
    h.held_on(LockSpec::exclusive("/m").owner("t"));
    for spec in [LockSpec::exclusive("/m"), LockSpec::read("/m")] {
        assert!(
            matches!(
                h.s.acquire(spec.clone().owner("t"), now),
                Err(UsageError::SelfDeadlock {
                    held: NodeKind::Write,
                    ..
                })
            ),
            "{spec:?}"
        );
    }
}

#[test]
fn a_native_semaphore_refuses_a_participant_with_another_permit_count() {
    // permits=1 and permits=5 on one path would let 5 in beside the one that
    // believes it is alone: the newcomer is refused and its node removed.
    let mut h = H::served(&["/s"]);
    let other = h.peer_named(
        "/s",
        &names::semaphore_node_prefix(NameScheme::Native, AttemptId(9), 1),
    );
    assert!(other.contains("-sem1-"), "{other}");
    let id = h.acquire(LockSpec::semaphore("/s", 5));
    h.serve_one();
    let node = h.ours("/s")[0].clone();
    assert!(node.contains("-sem5-"), "{node}");
    h.serve();
    let events = h.events.clone();
    assert!(
        events.contains(&(
            id,
            LockEvent::Failed(FailReason::PermitsMismatch { ours: 5, theirs: 1 })
        )),
        "{events:?}"
    );
    assert!(!h.exists(&node), "the refused node is removed");
    // The same count, or a participant from before counts were recorded, is fine.
    let mut h = H::served(&["/s"]);
    let legacy = h.peer_joins("/s", NodeKind::Semaphore, 9);
    assert_eq!(names::parse_name(&name_of(&legacy)).unwrap().permits, None);
    h.held_on(LockSpec::semaphore("/s", 5));
}

/// A watch set before our own node's read can fire before that read is answered
/// (here: a semaphore's window keeps `c` watched across a listing). A grant from
/// the cache then waits for the read: our node may be gone.
#[test]
fn a_cache_grant_waits_for_the_news_of_our_own_node() {
    for own_node_there in [true, false] {
        let mut h = H::served(&["/sem"]);
        let [_, b, c] = [1, 2, 3].map(|n| h.peer_joins("/sem", NodeKind::Semaphore, n));
        let (_, node) = h.served_acquire(LockSpec::semaphore("/sem", 2));
        h.delete_node(&b);
        h.serve_one();
        assert_eq!(h.reqs[0].op, read_of(&node, true));
        // c (still watched from before) goes before the read is answered.
        h.delete_node(&c);
        assert!(
            h.take_events().is_empty(),
            "no grant before our node is seen"
        );
        if !own_node_there {
            h.delete_node(&node);
        }
        h.serve();
        if own_node_there {
            h.acquired();
        } else {
            h.expect_events([LockEvent::Failed(FailReason::NodeDeleted)]);
        }
    }
}
