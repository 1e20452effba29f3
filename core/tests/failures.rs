//! One test per row of the failure table (README, "What happens when things fail"),
//! against a model server: each scenario states only what goes wrong.

mod harness;
use harness::*;
use lock_core::*;
use std::time::Duration;

/// A waiter has no hold to lose: no grace runs out for it.
#[test]
fn disconnected_while_waiting_keeps_waiting_past_the_grace() {
    let (mut h, id, _, _) = H::queued("/f");
    h.disconnect();
    h.advance(Duration::from_secs(30));
    assert!(h.take_events().is_empty());
    assert_eq!(h.s.state(id), Some(LockState::Waiting));
    assert!(h.no_requests(), "nothing is sent while disconnected");
}

/// The server forgot our watches with the connection: the predecessor's leaving
/// reaches us only because the waiter listed and watched again.
#[test]
fn reconnected_same_session_waiting_relists_and_rewatches() {
    let (mut h, _, _, peer) = H::queued("/f");
    h.reconnect();
    assert!(matches!(ops(&h.serve())[0], Op::GetChildren { .. }));
    assert!(h.take_events().is_empty());
    h.delete_node(&peer);
    h.serve();
    h.acquired();
}

/// A plain holder set no watch on its node (a firing handed to it is not its):
/// the check every reconnect makes finds the node gone, and watches it from
/// then on.
#[test]
fn reconnected_holding_but_node_gone_is_lost() {
    let (mut h, _, node) = H::holding(LockSpec::write("/f"));
    h.delete_node(&node);
    h.watch(&node, WatchKind::NodeDeleted);
    assert!(h.take_events().is_empty(), "no watch was set");
    h.disconnect();
    h.expect_events([LockEvent::Suspended]);
    h.connect(h.sid);
    let check = read_of(&node, true);
    assert_eq!(h.serve_one().op, check);
    h.expect_events([LockEvent::Lost(LostReason::NodeDeleted)]);
}

/// No honest server says this: the node's read names another session.
#[test]
fn reconnected_holding_but_node_owned_by_another_session_is_lost() {
    let (mut h, _, node) = H::holding(LockSpec::write("/f"));
    h.reconnect();
    h.take_events();
    let read = h.next_req();
    assert!(matches!(&read.op, Op::GetData { path, .. } if *path == node));
    let stat = Stat {
        ephemeral_owner: h.sid + 1,
        ..Stat::default()
    };
    h.reply(read.id, Ok(Reply::Data { data: vec![], stat }));
    h.expect_events([LockEvent::Lost(LostReason::NodeNotOwned)]);
}

#[test]
fn suspended_past_the_grace_is_lost_and_the_stale_node_is_deleted_if_the_session_lives() {
    let (mut h, _, node) = H::holding(LockSpec::write("/f"));
    h.disconnect();
    // Session timeout 10 s, less the default margin of 1 s.
    h.lost_exactly_after(Duration::from_secs(9));
    // The session turns out alive: the stale node goes at once.
    h.connect(h.sid);
    assert_eq!(ops(&h.serve()), vec![delete_of(&node)]);
    assert!(!h.exists(&node));
    assert!(h.s.is_idle());
    assert!(
        h.take_events().is_empty(),
        "nothing after the terminal event"
    );
}

/// Expired or closed, the session loses its holders and fails its waiters with
/// its reason. Nothing is left to clean: the ephemeral nodes died with an
/// expired session, and a closed one can send nothing (nor start new work).
#[test]
fn session_expired_or_closed_fails_waiters_and_loses_holders() {
    for closed in [false, true] {
        let mut h = H::served(&["/a", "/b"]);
        let (held, _) = h.held_on(LockSpec::write("/a"));
        let (wait, _, _) = h.waiting_on("/b");
        let (lost, failed) = if closed {
            h.session(SessionEvent::Closed);
            let refused = h.s.acquire(LockSpec::write("/a"), h.now);
            assert_eq!(refused, Err(UsageError::Closed));
            (LostReason::Closed, FailReason::Closed)
        } else {
            h.disconnect();
            h.take_events();
            h.expire();
            (LostReason::SessionExpired, FailReason::SessionExpired)
        };
        let ev = std::mem::take(&mut h.events);
        assert!(ev.contains(&(held, LockEvent::Lost(lost))), "{ev:?}");
        assert!(ev.contains(&(wait, LockEvent::Failed(failed))), "{ev:?}");
        assert_eq!(ev.len(), 2);
        assert!(h.s.is_idle(), "closed: {closed}");
        assert!(h.no_requests());
    }
}

#[test]
fn a_new_session_id_after_reconnect_counts_as_expiry() {
    let (mut h, held, node) = H::holding(LockSpec::write("/a"));
    h.disconnect();
    h.take_events();
    let new_sid = h.new_session();
    assert_eq!(
        h.events,
        vec![(held, LockEvent::Lost(LostReason::SessionExpired))]
    );
    // The old session may live on in the server: its node goes, from the new one.
    assert_eq!(ops(&h.serve()), vec![delete_of(&node)]);
    assert!(!h.exists(&node));
    // The session keeps working on the new id.
    h.events.clear();
    h.served_acquire(LockSpec::write("/a"));
    let g = h.acquired();
    assert_eq!(g.session_id, new_sid);
}

#[test]
fn own_node_deleted_loses_a_holder_and_fails_a_waiter() {
    let (holder, _, held) = H::holding(LockSpec::write("/f").watch_node());
    let (waiter, _, queued, _) = H::queued("/f");
    for (mut h, node, event) in [
        (holder, held, LockEvent::Lost(LostReason::NodeDeleted)),
        (waiter, queued, LockEvent::Failed(FailReason::NodeDeleted)),
    ] {
        h.delete_node(&node);
        h.expect_events([event]);
        h.serve();
        assert!(h.s.is_idle());
    }
}

#[test]
fn create_lost_with_the_connection_adopts_the_node_found_by_attempt_id() {
    let mut h = H::served(&["/c"]);
    h.acquire(LockSpec::write("/c"));
    // The create is applied, its reply lost with the connection.
    let create = h.apply_unanswered();
    h.peer_joins("/c", NodeKind::Write, 9);
    h.reconnect();
    let served = h.serve();
    let node = h.ours("/c")[0].clone();
    let g = h.acquired();
    assert_eq!(&*g.path, node);
    assert!(
        !served.iter().any(|r| matches!(r.op, Op::Create { .. })),
        "adopted, not created again"
    );
    // The late reply of the old create is stale: counted, and ignored.
    h.reply(create.id, Ok(Reply::Deleted));
    assert_eq!(h.s.stats().stale_replies, 1);
    assert!(h.take_events().is_empty() && h.no_requests());
}

#[test]
fn create_lost_with_the_connection_creates_again_when_not_found() {
    let mut h = H::served(&["/c"]);
    h.acquire(LockSpec::write("/c"));
    h.answer_err(ZkError::ConnectionLoss);
    h.reconnect();
    let served = h.serve();
    assert!(served.iter().any(|r| matches!(r.op, Op::Create { .. })));
    h.acquired();
}

#[test]
fn duplicate_nodes_of_one_attempt_are_deleted_keeping_the_oldest() {
    let mut h = H::served(&["/c"]);
    h.acquire(LockSpec::write("/c"));
    // The create is applied twice (sent again by the client library), no reply.
    let create = h.apply_unanswered();
    h.peer_joins("/c", NodeKind::Write, 9);
    h.apply(&create.op).unwrap();
    let [oldest, newest] = &h.ours("/c")[..] else {
        panic!()
    };
    h.reconnect();
    assert!(ops(&h.serve()).contains(&delete_of(newest)));
    assert!(h.exists(oldest) && !h.exists(newest));
    let g = h.acquired();
    assert_eq!(&*g.path, *oldest);
}

#[test]
fn cancel_while_the_create_is_in_flight_deletes_the_node_when_it_appears() {
    let mut h = H::served(&["/c"]);
    let id = h.acquire(LockSpec::write("/c"));
    h.run(|s, now| s.cancel(id, now));
    h.expect_events([LockEvent::Failed(FailReason::Cancelled)]);
    // The create and the listing are answered (the listing ignored: we no longer
    // want the lock), then the node is deleted.
    let served = h.serve();
    assert!(matches!(served[2].op, Op::Delete { .. }), "{served:?}");
    assert!(h.children("/c").is_empty());
    assert!(h.s.is_idle());
    assert!(h.take_events().is_empty());
}

#[test]
fn cancel_after_a_lost_create_finds_the_node_by_attempt_id_and_deletes_it() {
    let mut h = H::served(&["/c"]);
    let id = h.acquire(LockSpec::write("/c"));
    h.apply_unanswered();
    h.disconnect();
    h.run(|s, now| s.cancel(id, now));
    h.expect_events([LockEvent::Failed(FailReason::Cancelled)]);
    assert!(!h.s.is_idle(), "the node may exist: cleanup pending");
    h.connect(h.sid);
    assert!(matches!(h.serve_one().op, Op::GetChildren { .. }));
    let ours = format!("/c/{}", h.children("/c")[0]);
    assert_eq!(h.answer_err(ZkError::ConnectionLoss).op, delete_of(&ours));
    // Retried while the session lives.
    h.reconnect();
    assert_eq!(ops(&h.serve()), vec![delete_of(&ours)]);
    assert!(h.children("/c").is_empty());
    assert!(h.s.is_idle());
}

/// A delete whose outcome is unknown (answered with a connection loss, or in flight
/// when the connection dropped) may have been applied: it is sent again after the
/// reconnect, and that one's `NoNode` is the release's own.
#[test]
fn release_with_connection_loss_retries_after_reconnect_and_no_node_counts_as_released() {
    for answered in [true, false] {
        let (mut h, id, node) = H::holding(LockSpec::write("/r"));
        h.run(|s, now| s.release(id, now));
        if answered {
            h.lose_reply();
        } else {
            h.apply_unanswered();
        }
        h.disconnect();
        assert!(
            h.take_events().is_empty(),
            "a releasing lock is not suspended"
        );
        h.connect(h.sid);
        assert_eq!(ops(&h.serve()), vec![delete_of(&node)]);
        assert_eq!(h.take_events(), vec![LockEvent::Released], "{answered}");
        assert!(h.s.is_idle());
    }
}

/// A plain holder does not watch its node: one deleted by someone else is found at
/// the release, whose delete (the first, so not an earlier one of ours) finds
/// nothing. The hold ended before the user knew: the release says it was lost.
#[test]
fn release_of_a_node_deleted_by_someone_else_is_lost() {
    let (mut h, id, node) = H::holding(LockSpec::write("/r"));
    h.delete_node(&node);
    h.run(|s, now| s.release(id, now));
    assert_eq!(ops(&h.serve()), vec![delete_of(&node)]);
    h.expect_events([LockEvent::Lost(LostReason::NodeDeleted)]);
    assert!(h.s.is_idle());
}

#[test]
fn release_while_expired_counts_as_released() {
    let (mut h, id, _) = H::holding(LockSpec::write("/r"));
    h.run(|s, now| s.release(id, now));
    h.expire();
    h.expect_events([LockEvent::Released]);
}

#[test]
fn own_node_deleted_while_disconnected_is_judged_after_the_reconnect() {
    let (mut h, _, node) = H::holding(LockSpec::write("/f").watch_node());
    h.disconnect();
    h.expect_events([LockEvent::Suspended]);
    // A late firing, handed over by the binding: the session may have expired
    // meanwhile.
    h.watch(&node, WatchKind::NodeDeleted);
    assert!(h.take_events().is_empty());
    h.expire();
    h.expect_events([LockEvent::Lost(LostReason::SessionExpired)]);
}

#[test]
fn a_listing_that_overtakes_the_create_is_repeated_after_the_create_reply() {
    // Bindings without per-session FIFO (the blocking `zookeeper` crate) may answer
    // the listing before the create: the acquisition must not hang.
    let mut h = H::served(&["/o"]);
    h.acquire(LockSpec::write("/o"));
    let create = h.next_req();
    h.serve_one();
    h.answer(&create);
    let served = h.serve();
    assert!(served
        .iter()
        .any(|r| matches!(r.op, Op::GetChildren { .. })));
    h.acquired();
}

#[test]
fn a_listing_handed_over_before_its_create_reply_costs_no_extra_read() {
    // The server answered the create first (the listing shows our node), but the
    // binding handed us the listing first: the create's reply, right behind,
    // brings the stat; no read of our own node is sent for it.
    let mut h = H::served(&["/r"]);
    h.acquire(LockSpec::write("/r"));
    let (create, created) = h.apply_front();
    h.serve_one();
    assert!(h.no_requests(), "{:?}", h.reqs);
    assert!(h.take_events().is_empty(), "no token yet");
    let Ok(Reply::Created {
        path: node,
        stat: Some(stat),
    }) = created.clone()
    else {
        panic!("{created:?}")
    };
    h.reply(create.id, created);
    let g = h.acquired();
    assert_eq!((g.token, &*g.path), (FencingToken(stat.czxid), &*node));
    assert!(h.no_requests());
    assert_eq!(h.s.stats().requests, 2);
}

/// With `watch_node`, the watch set while waiting is kept through the hold.
#[test]
fn watch_node_keeps_the_watch_set_while_waiting() {
    let mut h = H::served(&["/k"]);
    let peer = h.peer_joins("/k", NodeKind::Write, 1);
    let (_, node) = h.served_acquire(LockSpec::write("/k").watch_node());
    h.delete_node(&peer);
    h.serve();
    h.acquired();
    h.delete_node(&node);
    h.expect_events([LockEvent::Lost(LostReason::NodeDeleted)]);
}

/// An administrator deletes a waiting node, then its predecessor leaves: the
/// waiter must not take the lock from its cache (the one queued behind it would
/// hold too). The news of its own node comes first: it was asked for first.
#[test]
fn a_waiter_whose_node_was_deleted_never_takes_the_lock() {
    let (mut h, _, node, peer) = H::queued("/d");
    h.delete_node(&node);
    h.delete_node(&peer);
    h.expect_events([LockEvent::Failed(FailReason::NodeDeleted)]);
}

/// The client gave up a session the server may still hold (the blocking crate's
/// hazard): locks end as after an expiry, and on the next session the old nodes
/// are deleted, a held one by path and one whose create's reply never came by
/// attempt id, so the queue does not wait a session timeout for the server.
#[test]
fn an_abandoned_session_s_nodes_are_deleted_from_the_next_one() {
    let mut h = H::served(&["/a", "/b"]);
    let (held, node) = h.held_on(LockSpec::write("/a"));
    let waiting = h.acquire(LockSpec::write("/b"));
    h.apply_unanswered();
    h.reqs.clear();
    h.session(SessionEvent::Abandoned);
    assert_eq!(
        h.events,
        vec![
            (held, LockEvent::Lost(LostReason::SessionExpired)),
            (waiting, LockEvent::Failed(FailReason::SessionExpired)),
        ]
    );
    assert!(h.no_requests(), "nothing is sent without a session");
    assert!(!h.s.is_idle(), "the old nodes are still to delete");
    let unknown = format!("/b/{}", h.children("/b")[0]);
    h.new_session();
    let served = ops(&h.serve());
    assert!(
        served.contains(&Op::GetChildren { path: "/b".into() }),
        "the unknown create is looked for"
    );
    assert!(served.contains(&delete_of(&node)), "{served:?}");
    assert!(served.contains(&delete_of(&unknown)), "{served:?}");
    assert!(h.children("/a").is_empty() && h.children("/b").is_empty());
    assert!(h.s.is_idle());
}

/// A held lock hears `Disconnected` some time after the server last heard from the
/// session; the server may expire the session one session timeout after that.
fn suspended_after(since_contact: Duration, config: Config) -> (H, LockId, String) {
    let mut h = H::served_with(config, &["/f"]);
    let (id, node) = h.held_on(LockSpec::write("/f"));
    h.session(SessionEvent::Disconnected { since_contact });
    (h, id, node)
}

/// A loss is counted from the last contact, not from the report: reported 3 s
/// after it, the server could expire the session 7 s from now, so the lock is
/// lost a margin (1 s) before that, at 6 s. The margin is configurable, a
/// shorter grace ends the suspension first, and a longer one never outlasts the
/// session.
#[test]
fn lost_is_counted_from_the_last_contact_by_the_margin_or_the_grace() {
    let secs = Duration::from_secs;
    // (margin, grace, since the last contact, lost after)
    for (margin, grace, since, lost) in [
        (None, None, 3, 6),
        (Some(secs(4)), None, 1, 5),
        (None, Some(secs(2)), 1, 2),
        // A grace longer than the session is capped: lost before the server
        // could expire the session.
        (None, Some(secs(60)), 2, 7),
    ] {
        let mut config = Config::new(secs(10), 1);
        (config.expiry_margin, config.suspended_grace) = (margin, grace);
        let (mut h, _, _) = suspended_after(secs(since), config);
        h.lost_exactly_after(secs(lost));
    }
}

#[test]
fn a_disconnection_reported_too_late_for_the_window_loses_at_once() {
    // The server may already have expired the session (or will within the margin).
    let config = Config::new(Duration::from_secs(10), 1);
    let (mut h, _, _) = suspended_after(Duration::from_millis(9500), config);
    h.expect_events([
        LockEvent::Suspended,
        LockEvent::Lost(LostReason::SuspendedTooLong),
    ]);
}

/// A disconnected holder is suspended; reconnected on the same session within
/// the window, it resumes once its node is verified on the new connection.
#[test]
fn a_reconnect_within_the_window_resumes() {
    let config = Config::new(Duration::from_secs(10), 1);
    let (mut h, id, node) = suspended_after(Duration::from_secs(3), config);
    h.expect_events([LockEvent::Suspended]);
    assert_eq!(h.s.state(id), Some(LockState::Suspended));
    h.advance(Duration::from_millis(5900));
    h.connect(h.sid);
    assert!(h.take_events().is_empty(), "not trusted before the check");
    assert!(matches!(&h.serve()[0].op, Op::GetData { path, .. } if *path == node));
    h.expect_events([LockEvent::Resumed]);
    assert_eq!(h.s.state(id), Some(LockState::Held));
    h.advance(Duration::from_secs(60));
    assert!(h.take_events().is_empty(), "no Lost after a resume");
}

#[test]
fn progress_reports_the_node_created_the_place_and_the_participant_waited_for() {
    let (h, id, node, peer) = H::queued("/f");
    assert_eq!(
        h.progress,
        vec![
            (id, Progress::Created { node: node.clone() }),
            (
                id,
                Progress::Queued {
                    node,
                    place: QueuePlace::new(1, None)
                }
            ),
            (id, Progress::QueuedBehind { node: peer }),
        ]
    );
}

/// The place is reported as soon as the first look does not grant, and again,
/// with no request of its own, whenever it changes: behind three, then two
/// once the closest one left (the cache is deeper than the window, so a
/// notification brings a listing, which shows the rest).
#[test]
fn progress_reports_the_place_again_when_it_changes() {
    let mut h = H::served(&["/q"]);
    let ahead: Vec<String> = (1..=3)
        .map(|n| h.peer_joins("/q", NodeKind::Write, n))
        .collect();
    let (id, node) = h.served_acquire(LockSpec::write("/q"));
    let places = |h: &H| -> Vec<usize> {
        h.progress
            .iter()
            .filter_map(|(lock, p)| match p {
                Progress::Queued { node: n, place } if *lock == id => {
                    assert_eq!(n, &node);
                    Some(place.position)
                }
                _ => None,
            })
            .collect()
    };
    assert_eq!(places(&h), vec![3]);
    // The closest one leaves; the next listing shows the other two.
    h.delete_node(&ahead[2]);
    h.serve();
    assert_eq!(places(&h), vec![3, 2]);
    assert_eq!(h.s.state(id), Some(LockState::Waiting));
}

/// A session made for the timeout asked for (20 s), then reconfigured to the one
/// the server granted (4 s) before its `Connected`: a held lock is lost by the 4 s
/// clock (less the default margin, 400 ms), not the 20 s one.
#[test]
fn reconfigured_before_connecting_times_locks_by_the_granted_timeout() {
    let mut h = H::served_unconnected(Config::new(Duration::from_secs(20), 1), &["/f"]);
    h.s.reconfigure(Config::new(Duration::from_secs(4), 1));
    h.connect(h.sid);
    h.held_on(LockSpec::write("/f"));
    h.disconnect();
    h.lost_exactly_after(Duration::from_millis(3600));
}
