//! Minimal reproductions of bugs the fuzzers found (see `fuzz/README.md`). Each test
//! names the fuzz target and the contract it broke.

mod harness;
use harness::*;
use lock_core::*;

/// fuzz `session`: an acquisition made before the first `Connected` ends when
/// the client closes, or the closed session tracks it forever.
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

/// fuzz `session`: a create reply naming a path other than the one asked for
/// is not our node (deleting it would delete someone else's); ours, if the
/// create was applied, is found by attempt id.
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

/// fuzz `session`: a cleanup waiting for its create's reply, which comes of the
/// wrong type, counts the create's outcome as unknown and looks for the node by
/// attempt id, instead of being tracked forever.
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

/// A reply of the wrong type to a waiter's listing leaves nothing awaited: it is
/// retried, or the waiter stalls for good.
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

/// fuzz `session`: a predecessor's deletion notice delivered after the
/// connection dropped (legal: it was queued before) does not grant while
/// disconnected, where nothing would suspend the grant if the session expired:
/// the listing after the reconnect decides.
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

/// fuzz `simulation` ("WriterBesideHolder"): a lower exclusive participant
/// blocks a semaphore outright, not as one of its permits; it watches that one.
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

/// fuzz `session`: a firing of another kind than a deletion or a data change
/// (a spurious `NodeCreated`) on a waiter's blocker sets the watch again, or the
/// blocker's deletion reaches nobody and the waiter waits behind a node gone.
#[test]
fn a_spurious_firing_on_a_watched_blocker_does_not_lose_its_deletion() {
    let (mut h, id, node, peer) = H::queued("/w");
    h.watch(&peer, WatchKind::NodeCreated);
    assert_eq!(ops(&h.serve()), [read_of(&peer, true)]);
    assert!(h.take_events().is_empty());
    assert_eq!(h.s.state(id), Some(LockState::Waiting));
    h.delete_node(&peer);
    let g = h.acquired();
    assert_eq!(&*g.path, node);
}
