//! Minimal reproductions of bugs the fuzzers found (see `fuzz/README.md`). Each test
//! names the fuzz target and the contract it broke.

mod harness;
use harness::*;
use lock_core::*;

/// fuzz `session`: "lock1 has no terminal event after Closed (Waiting)".
/// An acquisition made before the first `Connected` never reached a session; when the
/// client was closed it was neither failed nor dropped, so it never ended and the
/// closed session tracked it forever.
#[test]
fn acquisition_made_before_connect_fails_when_the_client_closes() {
    let mut h = H::unconnected();
    let id = h.acquire(LockSpec::write("/a"));
    assert!(h.no_requests(), "nothing is sent before Connected");
    h.session(SessionEvent::Closed);
    assert_eq!(h.events, vec![(id, LockEvent::Failed(FailReason::Closed))]);
    assert_eq!(h.s.state(id), None);
    assert!(h.s.is_idle(), "a closed session keeps nothing");
}

/// fuzz `session`: "delete of /x/0016583171, not a node of ours".
/// A create reply naming a path other than the one asked for (here in another
/// directory, with no participant name) was adopted as our node and, when the
/// acquisition failed, deleted: the core deleted a node that was not its own. It must
/// never adopt it; ours, if the create was applied, is found by attempt id.
#[test]
fn a_created_path_that_is_not_ours_is_never_adopted_nor_deleted() {
    let mut h = H::served(&["/a", "/x/0016583171"]);
    let id = h.acquire(LockSpec::write("/a"));
    let create = h.apply_unanswered();
    let ours = h.ours("/a")[0].clone();
    h.reply(
        create.id,
        Ok(Reply::Created {
            path: "/x/0016583171".into(),
            stat: Some(Stat::default()),
        }),
    );
    assert!(matches!(
        h.take_events()[..],
        [LockEvent::Failed(FailReason::Zk(_))]
    ));
    assert_eq!(h.s.state(id), None);
    // The pipelined listing is no longer awaited; cleanup looks for ours by attempt id.
    let served = ops(&h.serve());
    assert!(
        served.ends_with(&[Op::GetChildren { path: "/a".into() }, delete_of(&ours)]),
        "only our own node is deleted: {served:?}"
    );
    assert!(h.exists("/x/0016583171") && !h.exists(&ours));
    assert!(h.s.is_idle());
}

/// fuzz `session`: "after cancelling everything and serving honestly, 1 tasks are still
/// tracked". A waiter timed out with its create in flight (cleanup waits for the create's
/// reply); the reply came back of the wrong type, which set the create "done" without a
/// node and did not continue the cleanup: the acquisition was tracked forever (and a node
/// the create may have made was forgotten). Now the outcome counts as unknown and the
/// node is looked for by attempt id.
#[test]
fn a_reply_of_the_wrong_type_to_a_create_in_cleanup_does_not_wedge_the_acquisition() {
    let mut h = H::served(&["/a"]);
    let id = h.acquire(LockSpec::write("/a"));
    let create = h.apply_unanswered();
    let ours = h.ours("/a")[0].clone();
    h.run(|s, now| s.cancel(id, now));
    h.expect_events([LockEvent::Failed(FailReason::Cancelled)]);
    h.reply(create.id, Ok(Reply::Stat(Stat::default())));
    let served = ops(&h.serve());
    assert!(
        served.ends_with(&[Op::GetChildren { path: "/a".into() }, delete_of(&ours)]),
        "{served:?}"
    );
    assert!(h.s.is_idle());
}

/// Found while fixing the above: a reply of the wrong type to a listing or to the
/// getData on our own node left nothing awaited, so a waiter (or a grant waiting for
/// its token) stalled for good. Now it is retried.
#[test]
fn a_reply_of_the_wrong_type_to_a_listing_is_retried() {
    let mut h = H::served(&["/a"]);
    h.acquire(LockSpec::write("/a"));
    h.serve_one();
    let list = h.next_req();
    h.reply(list.id, Ok(Reply::Deleted));
    // Nothing else is awaited (a plain lock reads not its own node); the retry
    // lists again.
    assert!(h.no_requests());
    assert!(h.take_events().is_empty());
    h.advance(std::time::Duration::from_secs(1));
    assert!(h
        .reqs
        .iter()
        .any(|r| matches!(r.op, Op::GetChildren { .. })));
    h.serve();
    h.acquired();
}

/// fuzz `session`: "Acquired for lock3 while Disconnected". A waiter whose watched
/// predecessor's deletion notice arrived after the connection had dropped (late
/// delivery is legal: the notice was queued before the disconnect) was granted at
/// once: `Acquired` while disconnected, trusted, with no `Suspended` to follow, so it
/// would stay trusted even if the session expired meanwhile. Now it waits for the
/// listing after the reconnect.
#[test]
fn a_late_deletion_notice_while_disconnected_does_not_grant() {
    let (mut h, id, node, peer) = H::queued("/f");
    h.disconnect();
    h.delete_node(&peer);
    h.watch(&peer, WatchKind::NodeDeleted);
    assert!(h.take_events().is_empty(), "no grant while disconnected");
    assert_eq!(h.s.state(id), Some(LockState::Waiting));
    h.connect(h.sid);
    // The listing decides (the stat is known from the create: no read needed).
    assert!(matches!(h.serve()[0].op, Op::GetChildren { .. }));
    let g = h.acquired();
    assert_eq!(&*g.path, node);
}

/// fuzz `simulation`: "WriterBesideHolder: c1 lock2 (Semaphore { permits: 3 }) acquired
/// /a/b beside c1 lock1 Write". A semaphore counted a lower write lock (or leader) on
/// the same path as one of its n permits and held beside it, although the writer
/// holds exclusively. Now a lower exclusive participant blocks a semaphore outright;
/// it watches that one, and holds once it is gone (and fewer than n remain below).
#[test]
fn a_semaphore_does_not_hold_beside_a_lower_writer() {
    let mut h = H::served(&["/s"]);
    let w = h.peer_joins("/s", NodeKind::Write, 1);
    let r = h.peer_joins("/s", NodeKind::Read, 2);
    let (id, node) = h.served_acquire(LockSpec::semaphore("/s", 3));
    assert!(h.take_events().is_empty(), "blocked by the writer");
    assert_eq!(h.s.state(id), Some(LockState::Waiting));
    let watched = h.watched();
    assert!(
        watched.contains(&w) && !watched.contains(&r),
        "only the writer is watched"
    );
    h.delete_node(&w);
    let g = h.acquired();
    assert_eq!(&*g.path, node);
}

/// fuzz `session`: "lock2 waits at rest but nothing blocks it". A watch firing of
/// another kind than a deletion or a data change (here a spurious `NodeCreated`) on
/// the node a waiter watched took the waiter out of the watch index without setting
/// the watch again; the server's watch on that path (re-armed by the node's own
/// holder in the same session) later delivered the deletion to nobody, and the
/// waiter waited behind a node that was gone. Now any such firing re-arms the watch.
#[test]
fn a_spurious_firing_on_a_watched_blocker_does_not_lose_its_deletion() {
    let (mut h, id, node, peer) = H::queued("/w");
    h.watch(&peer, WatchKind::NodeCreated);
    // The watch is set again...
    assert_eq!(
        ops(&h.serve()),
        [Op::GetData {
            path: peer.clone(),
            watch: true
        }]
    );
    assert!(h.take_events().is_empty());
    assert_eq!(h.s.state(id), Some(LockState::Waiting));
    // ...so the deletion reaches the waiter.
    h.delete_node(&peer);
    let g = h.acquired();
    assert_eq!(&*g.path, node);
}
