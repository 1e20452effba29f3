//! One test per row of the failure table (README, "What happens when things fail"), driven by hand.

mod harness;
use harness::*;
use lock_core::*;
use std::time::Duration;

#[test]
fn disconnected_while_waiting_keeps_waiting() {
    let mut h = H::new();
    let (id, _, _) = waiting(&mut h, "/f");
    h.session(SessionEvent::Disconnected {
        since_contact: Duration::ZERO,
    });
    assert!(h.take_events().is_empty());
    assert_eq!(h.s.state(id), Some(LockState::Waiting));
    assert!(h.no_requests(), "nothing is sent while disconnected");
}

#[test]
fn disconnected_while_holding_suspends() {
    let mut h = H::new();
    let (id, _) = h.held("/f", 0);
    h.session(SessionEvent::Disconnected {
        since_contact: Duration::ZERO,
    });
    assert_eq!(h.take_events(), vec![LockEvent::Suspended]);
    assert_eq!(h.s.state(id), Some(LockState::Suspended));
}

#[test]
fn reconnected_same_session_waiting_relists_and_rewatches() {
    let mut h = H::new();
    let (_, node, ppath) = waiting(&mut h, "/f");
    h.session(SessionEvent::Disconnected {
        since_contact: Duration::ZERO,
    });
    h.session(SessionEvent::Connected { session_id: SID });
    let p = name_of(&ppath);
    h.answer_list(&[&p, &name_of(&node)]);
    h.answer_data(&node, SID);
    h.answer_data(&ppath, 42);
    assert!(h.take_events().is_empty());
    h.watch(&ppath, WatchKind::NodeDeleted);
    assert!(matches!(h.take_events()[..], [LockEvent::Acquired(_)]));
}

#[test]
fn reconnected_same_session_holding_verifies_then_resumes() {
    let mut h = H::new();
    let (id, node) = h.held("/f", 0);
    h.session(SessionEvent::Disconnected {
        since_contact: Duration::ZERO,
    });
    h.session(SessionEvent::Connected { session_id: SID });
    assert_eq!(h.take_events(), vec![LockEvent::Suspended]);
    h.answer_data(&node, SID);
    assert_eq!(h.take_events(), vec![LockEvent::Resumed]);
    assert_eq!(h.s.state(id), Some(LockState::Held));
}

#[test]
fn reconnected_holding_but_node_gone_is_lost() {
    let mut h = H::new();
    h.held("/f", 0);
    h.session(SessionEvent::Disconnected {
        since_contact: Duration::ZERO,
    });
    h.session(SessionEvent::Connected { session_id: SID });
    h.take_events();
    h.answer_err(ZkError::NoNode);
    assert_eq!(
        h.take_events(),
        vec![LockEvent::Lost(LostReason::NodeDeleted)]
    );
}

#[test]
fn reconnected_holding_but_node_owned_by_another_session_is_lost() {
    let mut h = H::new();
    let (_, node) = h.held("/f", 0);
    h.session(SessionEvent::Disconnected {
        since_contact: Duration::ZERO,
    });
    h.session(SessionEvent::Connected { session_id: SID });
    h.take_events();
    h.answer_data(&node, SID + 1);
    assert_eq!(
        h.take_events(),
        vec![LockEvent::Lost(LostReason::NodeNotOwned)]
    );
}

#[test]
fn suspended_past_the_grace_is_lost_and_the_stale_node_is_deleted_if_the_session_lives() {
    let mut h = H::new();
    let (_, node) = h.held("/f", 0);
    h.session(SessionEvent::Disconnected {
        since_contact: Duration::ZERO,
    });
    assert_eq!(h.take_events(), vec![LockEvent::Suspended]);
    h.advance(Duration::from_millis(8999));
    assert!(h.take_events().is_empty());
    // Session timeout 10 s, less the default margin of 1 s.
    h.advance(Duration::from_millis(1));
    assert_eq!(
        h.take_events(),
        vec![LockEvent::Lost(LostReason::SuspendedTooLong)]
    );
    // The session turns out alive: the stale node goes at once.
    h.session(SessionEvent::Connected { session_id: SID });
    let r = h.next_req();
    assert_eq!(
        r.op,
        Op::Delete {
            path: node,
            version: None
        }
    );
    h.reply(r.id, Ok(Reply::Deleted));
    assert!(h.s.is_idle());
    assert!(
        h.take_events().is_empty(),
        "nothing after the terminal event"
    );
}

#[test]
fn suspended_waiter_keeps_waiting_past_the_grace() {
    let mut h = H::new();
    let (id, _, _) = waiting(&mut h, "/f");
    h.session(SessionEvent::Disconnected {
        since_contact: Duration::ZERO,
    });
    h.advance(Duration::from_secs(30));
    assert!(h.take_events().is_empty());
    assert_eq!(h.s.state(id), Some(LockState::Waiting));
}

#[test]
fn session_expired_fails_waiters_and_loses_holders() {
    let mut h = H::new();
    let (held, _) = h.held("/a", 0);
    let (wait, _, _) = waiting(&mut h, "/b");
    h.session(SessionEvent::Disconnected {
        since_contact: Duration::ZERO,
    });
    h.take_events();
    h.session(SessionEvent::Expired);
    let ev = std::mem::take(&mut h.events);
    assert!(ev.contains(&(held, LockEvent::Lost(LostReason::SessionExpired))));
    assert!(ev.contains(&(wait, LockEvent::Failed(FailReason::SessionExpired))));
    assert_eq!(ev.len(), 2);
    assert!(
        h.s.is_idle(),
        "ephemeral nodes died with the session: nothing to clean"
    );
    assert!(h.no_requests());
}

#[test]
fn a_new_session_id_after_reconnect_counts_as_expiry() {
    let mut h = H::new();
    let (held, node) = h.held("/a", 0);
    h.session(SessionEvent::Disconnected {
        since_contact: Duration::ZERO,
    });
    h.take_events();
    h.session(SessionEvent::Connected {
        session_id: SID + 5,
    });
    assert_eq!(
        h.events,
        vec![(held, LockEvent::Lost(LostReason::SessionExpired))]
    );
    // The old session may live on in the server: its node goes, from the new one.
    let r = h.next_req();
    assert_eq!(
        r.op,
        Op::Delete {
            path: node,
            version: None
        }
    );
    h.reply(r.id, Err(ZkError::NoNode));
    assert!(h.no_requests());
    // The session keeps working on the new id.
    h.events.clear();
    h.acquire(LockSpec::write("/a"));
    let node = h.answer_create(1);
    h.answer_list(&[&name_of(&node)]);
    match &h.take_events()[..] {
        [LockEvent::Acquired(g)] => assert_eq!(g.session_id, SID + 5),
        other => panic!("{other:?}"),
    }
}

#[test]
fn own_node_deleted_while_holding_is_lost() {
    let mut h = H::new();
    let (_, node) = h.held_watched("/f", 0);
    h.watch(&node, WatchKind::NodeDeleted);
    assert_eq!(
        h.take_events(),
        vec![LockEvent::Lost(LostReason::NodeDeleted)]
    );
    assert!(h.s.is_idle());
}

#[test]
fn own_node_deleted_while_waiting_fails() {
    let mut h = H::new();
    let (_, node, _) = waiting(&mut h, "/f");
    h.watch(&node, WatchKind::NodeDeleted);
    assert_eq!(
        h.take_events(),
        vec![LockEvent::Failed(FailReason::NodeDeleted)]
    );
    assert!(h.s.is_idle());
}

#[test]
fn create_lost_with_the_connection_adopts_the_node_found_by_attempt_id() {
    let mut h = H::new();
    h.acquire(LockSpec::write("/c"));
    let create = h.next_req();
    let Op::Create { path: prefix, .. } = create.op.clone() else {
        panic!()
    };
    h.session(SessionEvent::Disconnected {
        since_contact: Duration::ZERO,
    });
    h.reqs.clear();
    h.session(SessionEvent::Connected { session_id: SID });
    // The create had been applied: the listing shows our name.
    let ours = format!("{}0000000003", name_of(&prefix));
    h.answer_list(&[&peer(NodeKind::Write, 9, 4), &ours]);
    let node = format!("/c/{ours}");
    h.answer_data(&node, SID);
    match &h.take_events()[..] {
        [LockEvent::Acquired(g)] => assert_eq!(g.path, node),
        other => panic!("{other:?}"),
    }
    assert!(h.no_requests(), "adopted, not created again");
    // The late reply of the old create is stale.
    h.reply(create.id, Ok(Reply::Deleted));
    assert_eq!(h.s.stats().stale_replies, 1);
}

#[test]
fn create_lost_with_the_connection_creates_again_when_not_found() {
    let mut h = H::new();
    h.acquire(LockSpec::write("/c"));
    h.answer_err(ZkError::ConnectionLoss);
    h.session(SessionEvent::Disconnected {
        since_contact: Duration::ZERO,
    });
    h.reqs.clear();
    h.session(SessionEvent::Connected { session_id: SID });
    h.answer_list(&[]);
    let node = h.answer_create(0);
    h.answer_list(&[&name_of(&node)]);
    assert!(matches!(h.take_events()[..], [LockEvent::Acquired(_)]));
}

#[test]
fn duplicate_nodes_of_one_attempt_are_deleted_keeping_the_oldest() {
    let mut h = H::new();
    h.acquire(LockSpec::write("/c"));
    let Op::Create { path: prefix, .. } = h.next_req().op else {
        panic!()
    };
    h.session(SessionEvent::Disconnected {
        since_contact: Duration::ZERO,
    });
    h.reqs.clear();
    h.session(SessionEvent::Connected { session_id: SID });
    let a = format!("{}0000000003", name_of(&prefix));
    let b = format!("{}0000000005", name_of(&prefix));
    h.answer_list(&[&b, &a]);
    let r = h.next_req();
    assert_eq!(
        r.op,
        Op::Delete {
            path: format!("/c/{b}"),
            version: None
        }
    );
    h.answer_data(&format!("/c/{a}"), SID);
    match &h.take_events()[..] {
        [LockEvent::Acquired(g)] => assert_eq!(g.sequence, 3),
        other => panic!("{other:?}"),
    }
}

#[test]
fn cancel_while_the_create_is_in_flight_deletes_the_node_when_it_appears() {
    let mut h = H::new();
    let id = h.acquire(LockSpec::write("/c"));
    h.s.cancel(id, h.now).unwrap();
    h.drain();
    assert_eq!(
        h.take_events(),
        vec![LockEvent::Failed(FailReason::Cancelled)]
    );
    let node = h.answer_create(1);
    h.answer_list(&[&name_of(&node)]); // ignored: we no longer want it
    let r = h.next_req();
    assert_eq!(
        r.op,
        Op::Delete {
            path: node,
            version: None
        }
    );
    h.reply(r.id, Ok(Reply::Deleted));
    assert!(h.s.is_idle());
    assert!(h.take_events().is_empty());
}

#[test]
fn cancel_after_a_lost_create_finds_the_node_by_attempt_id_and_deletes_it() {
    let mut h = H::new();
    let id = h.acquire(LockSpec::write("/c"));
    let Op::Create { path: prefix, .. } = h.next_req().op else {
        panic!()
    };
    h.session(SessionEvent::Disconnected {
        since_contact: Duration::ZERO,
    });
    h.reqs.clear();
    h.s.cancel(id, h.now).unwrap();
    h.drain();
    assert_eq!(
        h.take_events(),
        vec![LockEvent::Failed(FailReason::Cancelled)]
    );
    assert!(!h.s.is_idle(), "the node may exist: cleanup pending");
    h.session(SessionEvent::Connected { session_id: SID });
    let ours = format!("{}0000000000", name_of(&prefix));
    h.answer_list(&[&ours]);
    let r = h.next_req();
    assert_eq!(
        r.op,
        Op::Delete {
            path: format!("/c/{ours}"),
            version: None
        }
    );
    h.reply(r.id, Err(ZkError::ConnectionLoss));
    // Retried while the session lives.
    h.session(SessionEvent::Disconnected {
        since_contact: Duration::ZERO,
    });
    h.session(SessionEvent::Connected { session_id: SID });
    let r = h.next_req();
    assert!(matches!(r.op, Op::Delete { .. }));
    h.reply(r.id, Ok(Reply::Deleted));
    assert!(h.s.is_idle());
}

/// A delete whose outcome is unknown (answered with a connection loss, or in flight
/// when the connection dropped) may have been applied: it is sent again after the
/// reconnect, and that one's `NoNode` is the release's own.
#[test]
fn release_with_connection_loss_retries_after_reconnect_and_no_node_counts_as_released() {
    for answered in [true, false] {
        let mut h = H::new();
        let (id, node) = h.held("/r", 0);
        h.s.release(id, h.now).unwrap();
        h.drain();
        if answered {
            h.answer_err(ZkError::ConnectionLoss);
        }
        h.session(SessionEvent::Disconnected {
            since_contact: Duration::ZERO,
        });
        h.reqs.clear();
        assert!(
            h.take_events().is_empty(),
            "a releasing lock is not suspended"
        );
        h.session(SessionEvent::Connected { session_id: SID });
        let r = h.next_req();
        assert_eq!(
            r.op,
            Op::Delete {
                path: node,
                version: None
            }
        );
        h.reply(r.id, Err(ZkError::NoNode));
        assert_eq!(h.take_events(), vec![LockEvent::Released], "{answered}");
        assert!(h.s.is_idle());
    }
}

/// A plain holder does not watch its node: one deleted by someone else is found at
/// the release, whose delete (the first, so not an earlier one of ours) finds
/// nothing. The hold ended before the user knew: the release says it was lost.
#[test]
fn release_of_a_node_deleted_by_someone_else_is_lost() {
    let mut h = H::new();
    let (id, node) = h.held("/r", 0);
    h.s.release(id, h.now).unwrap();
    h.drain();
    let r = h.next_req();
    assert_eq!(
        r.op,
        Op::Delete {
            path: node,
            version: None
        }
    );
    h.reply(r.id, Err(ZkError::NoNode));
    assert_eq!(
        h.take_events(),
        vec![LockEvent::Lost(LostReason::NodeDeleted)]
    );
    assert!(h.no_requests());
    assert!(h.s.is_idle());
}

#[test]
fn release_while_expired_counts_as_released() {
    let mut h = H::new();
    let (id, _) = h.held("/r", 0);
    h.s.release(id, h.now).unwrap();
    h.drain();
    h.session(SessionEvent::Expired);
    assert_eq!(h.take_events(), vec![LockEvent::Released]);
}

#[test]
fn closed_session_ends_everything_and_refuses_new_work() {
    let mut h = H::new();
    let (held, _) = h.held("/a", 0);
    let (wait, _, _) = waiting(&mut h, "/b");
    h.session(SessionEvent::Closed);
    let ev = std::mem::take(&mut h.events);
    assert!(ev.contains(&(held, LockEvent::Lost(LostReason::Closed))));
    assert!(ev.contains(&(wait, LockEvent::Failed(FailReason::Closed))));
    assert_eq!(
        h.s.acquire(LockSpec::write("/a"), h.now),
        Err(UsageError::Closed)
    );
    assert!(h.s.is_idle());
}

#[test]
fn own_node_deleted_while_disconnected_is_judged_after_the_reconnect() {
    let mut h = H::new();
    let (_, node) = h.held("/f", 0);
    h.session(SessionEvent::Disconnected {
        since_contact: Duration::ZERO,
    });
    assert_eq!(h.take_events(), vec![LockEvent::Suspended]);
    // A late firing: the session may have expired meanwhile.
    h.watch(&node, WatchKind::NodeDeleted);
    assert!(h.take_events().is_empty());
    h.session(SessionEvent::Expired);
    assert_eq!(
        h.take_events(),
        vec![LockEvent::Lost(LostReason::SessionExpired)]
    );
}

#[test]
fn a_listing_that_overtakes_the_create_is_repeated_after_the_create_reply() {
    // Bindings without per-session FIFO (the blocking `zookeeper` crate) may answer
    // the listing before the create: the acquisition must not hang.
    let mut h = H::new();
    h.acquire(LockSpec::write("/o"));
    let create = h.next_req();
    let list = h.next_req();
    h.reply(list.id, Ok(Reply::Children(vec![])));
    let Op::Create { path, .. } = &create.op else {
        panic!()
    };
    let node = format!("{path}0000000000");
    let stat = Stat {
        czxid: 5,
        ephemeral_owner: SID,
        ..Stat::default()
    };
    h.reply(
        create.id,
        Ok(Reply::Created {
            path: node.clone(),
            stat: Some(stat),
        }),
    );
    let mut saw_list = false;
    while let Some(r) = h.reqs.pop_front() {
        match &r.op {
            Op::GetChildren { .. } => {
                saw_list = true;
                h.reply(r.id, Ok(Reply::Children(vec![name_of(&node)])));
            }
            Op::GetData { .. } => h.reply(r.id, Ok(Reply::Data { data: vec![], stat })),
            other => panic!("{other:?}"),
        }
    }
    assert!(saw_list);
    assert!(matches!(h.take_events()[..], [LockEvent::Acquired(_)]));
}

#[test]
fn a_listing_handed_over_before_its_create_reply_costs_no_extra_read() {
    // The server answered the create first (the listing shows our node), but the
    // binding handed us the listing first: the create's reply, right behind,
    // brings the stat; no read of our own node is sent for it.
    let mut h = H::new();
    h.acquire(LockSpec::write("/r"));
    let create = h.next_req();
    let list = h.next_req();
    let Op::Create { path, .. } = &create.op else {
        panic!()
    };
    let node = format!("{path}0000000000");
    h.reply(list.id, Ok(Reply::Children(vec![name_of(&node)])));
    assert!(h.no_requests(), "{:?}", h.reqs);
    assert!(h.take_events().is_empty(), "no token yet");
    let stat = Stat {
        czxid: 6,
        ephemeral_owner: SID,
        ..Stat::default()
    };
    h.reply(
        create.id,
        Ok(Reply::Created {
            path: node.clone(),
            stat: Some(stat),
        }),
    );
    let events = h.take_events();
    assert!(
        matches!(&events[..], [LockEvent::Acquired(g)] if g.token == FencingToken(6) && g.path == node),
        "{events:?}"
    );
    assert!(h.no_requests());
    assert_eq!(h.s.stats().requests, 2);
}

/// A plain lock's uncontended cycle is create + getChildren + delete: no read of
/// its own node, no watch on it, so its release notifies nobody.
#[test]
fn plain_lock_cycle_is_three_requests_and_leaves_no_watch() {
    let mut h = H::new();
    let id = h.acquire(LockSpec::write("/p"));
    let node = h.answer_create(0);
    h.answer_list(&[&name_of(&node)]);
    assert!(matches!(h.take_events()[..], [LockEvent::Acquired(_)]));
    assert!(h.no_requests(), "held after two requests: {:?}", h.reqs);
    h.s.release(id, h.now).unwrap();
    h.drain();
    let r = h.next_req();
    assert!(matches!(&r.op, Op::Delete { path, .. } if *path == node));
    assert!(h.no_requests());
    h.reply(r.id, Ok(Reply::Deleted));
    assert_eq!(h.take_events(), vec![LockEvent::Released]);
    assert_eq!(h.s.stats().requests, 3);
}

/// With `watch_node`, the watch set while waiting is kept through the hold.
#[test]
fn watch_node_keeps_the_watch_set_while_waiting() {
    let mut h = H::new();
    h.acquire(LockSpec::write("/k").watch_node());
    let node = h.answer_create(2);
    let p = peer(NodeKind::Write, 1, 1);
    h.answer_list(&[&p, &name_of(&node)]);
    // Watched from the create on (the read went out behind the listing).
    h.answer_watch(&node, SID);
    h.answer_watch(&format!("/k/{p}"), 42);
    h.watch(&format!("/k/{p}"), WatchKind::NodeDeleted);
    assert!(matches!(h.take_events()[..], [LockEvent::Acquired(_)]));
    assert!(h.no_requests(), "the watch stays: {:?}", h.reqs);
    h.watch(&node, WatchKind::NodeDeleted);
    assert_eq!(
        h.take_events(),
        vec![LockEvent::Lost(LostReason::NodeDeleted)]
    );
}

/// An administrator deletes a waiting node, then its predecessor leaves: the
/// waiter must not take the lock from its cache (the one queued behind it would
/// hold too). The news of its own node comes first: it was asked for first.
#[test]
fn a_waiter_whose_node_was_deleted_never_takes_the_lock() {
    let mut h = H::new();
    let (_, node, ppath) = waiting(&mut h, "/d");
    h.watch(&node, WatchKind::NodeDeleted);
    h.watch(&ppath, WatchKind::NodeDeleted);
    assert_eq!(
        h.take_events(),
        vec![LockEvent::Failed(FailReason::NodeDeleted)]
    );
}

/// The client gave up a session the server may still hold (the blocking crate's
/// hazard): locks end as after an expiry, and on the next session the old nodes
/// are deleted, a held one by path and one whose create's reply never came by
/// attempt id, so the queue does not wait a session timeout for the server.
#[test]
fn an_abandoned_session_s_nodes_are_deleted_from_the_next_one() {
    let mut h = H::new();
    let (held, node) = h.held("/a", 0);
    let waiting = h.acquire(LockSpec::write("/b"));
    let create = h.next_req();
    let _list = h.next_req();
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
    h.session(SessionEvent::Connected {
        session_id: SID + 7,
    });
    let mut deleted = Vec::new();
    let mut listed = false;
    while let Some(r) = h.reqs.pop_front() {
        match &r.op {
            Op::Delete { path, .. } => {
                deleted.push(path.clone());
                h.reply(r.id, Ok(Reply::Deleted));
            }
            Op::GetChildren { path } => {
                assert_eq!(path, "/b");
                listed = true;
                // The old session's create was applied: its node is found by name.
                let Op::Create { path: prefix, .. } = &create.op else {
                    panic!()
                };
                let name = format!("{}0000000003", name_of(prefix));
                h.reply(r.id, Ok(Reply::Children(vec![name])));
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(listed, "the unknown create is looked for");
    deleted.sort();
    assert_eq!(deleted.len(), 2, "{deleted:?}");
    assert_eq!(deleted[0], node);
    assert!(deleted[1].starts_with("/b/"), "{deleted:?}");
    assert!(h.s.is_idle());
}

/// A held lock hears `Disconnected` some time after the server last heard from the
/// session; the server may expire the session one session timeout after that.
fn suspended_after(since_contact: Duration, config: Config) -> (H, String) {
    let mut h = H::unconnected();
    h.s = Session::new(config);
    h.session(SessionEvent::Connected { session_id: SID });
    let (_, node) = h.held("/f", 0);
    h.session(SessionEvent::Disconnected { since_contact });
    (h, node)
}

/// Suspended now, lost exactly `after` from now (not a millisecond earlier).
fn lost_exactly_after(h: &mut H, after: Duration) {
    assert_eq!(h.take_events(), vec![LockEvent::Suspended]);
    h.advance(after - Duration::from_millis(1));
    assert!(h.take_events().is_empty(), "lost before {after:?}");
    h.advance(Duration::from_millis(1));
    assert_eq!(
        h.take_events(),
        vec![LockEvent::Lost(LostReason::SuspendedTooLong)]
    );
}

#[test]
fn lost_is_counted_from_the_last_contact_not_from_the_report() {
    // Reported 3 s after the last contact: the server could expire the session
    // 7 s from now, so the lock is lost a margin (1 s) before that, at 6 s.
    let config = Config::new(Duration::from_secs(10), 1);
    let (mut h, _) = suspended_after(Duration::from_secs(3), config);
    lost_exactly_after(&mut h, Duration::from_millis(6000));
}

#[test]
fn a_disconnection_reported_too_late_for_the_window_loses_at_once() {
    // The server may already have expired the session (or will within the margin).
    let config = Config::new(Duration::from_secs(10), 1);
    let (mut h, _) = suspended_after(Duration::from_millis(9500), config);
    assert_eq!(
        h.take_events(),
        vec![
            LockEvent::Suspended,
            LockEvent::Lost(LostReason::SuspendedTooLong)
        ]
    );
}

#[test]
fn the_expiry_margin_is_configurable() {
    let mut config = Config::new(Duration::from_secs(10), 1);
    config.expiry_margin = Some(Duration::from_secs(4));
    let (mut h, _) = suspended_after(Duration::from_secs(1), config);
    lost_exactly_after(&mut h, Duration::from_millis(5000));
}

#[test]
fn a_shorter_grace_ends_the_suspension_first() {
    let mut config = Config::new(Duration::from_secs(10), 1);
    config.suspended_grace = Some(Duration::from_secs(2));
    let (mut h, _) = suspended_after(Duration::from_secs(1), config);
    lost_exactly_after(&mut h, Duration::from_millis(2000));
}

#[test]
fn a_longer_grace_never_outlasts_the_session() {
    // A grace longer than the session timeout is capped: the lock is lost before
    // the server could expire the session, whatever the grace says.
    let mut config = Config::new(Duration::from_secs(10), 1);
    config.suspended_grace = Some(Duration::from_secs(60));
    let (mut h, _) = suspended_after(Duration::from_secs(2), config);
    assert_eq!(h.take_events(), vec![LockEvent::Suspended]);
    h.advance(Duration::from_secs(7));
    assert_eq!(
        h.take_events(),
        vec![LockEvent::Lost(LostReason::SuspendedTooLong)]
    );
}

#[test]
fn a_reconnect_within_the_window_resumes() {
    let config = Config::new(Duration::from_secs(10), 1);
    let (mut h, node) = suspended_after(Duration::from_secs(3), config);
    assert_eq!(h.take_events(), vec![LockEvent::Suspended]);
    h.advance(Duration::from_millis(5900));
    h.session(SessionEvent::Connected { session_id: SID });
    // The node is verified on the new connection before the lock is trusted again.
    h.answer_data(&node, SID);
    assert_eq!(h.take_events(), vec![LockEvent::Resumed]);
    h.advance(Duration::from_secs(60));
    assert!(h.take_events().is_empty(), "no Lost after a resume");
}

#[test]
fn progress_reports_the_node_created_the_place_and_the_participant_waited_for() {
    let mut h = H::new();
    let (id, node, ppath) = waiting(&mut h, "/f");
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
            (id, Progress::QueuedBehind { node: ppath }),
        ]
    );
}

/// The place is reported as soon as the first look does not grant, and again,
/// with no request of its own, whenever it changes: behind three, then two
/// once the closest one left (the cache is deeper than the window, so a
/// notification brings a listing, which shows the rest).
#[test]
fn progress_reports_the_place_again_when_it_changes() {
    let mut h = H::new();
    let id = h.acquire(LockSpec::write("/q"));
    let node = h.answer_create(4);
    let ahead: Vec<String> = (1..=3)
        .map(|i| peer(NodeKind::Write, i, i as i32))
        .collect();
    let mut listing: Vec<&str> = ahead.iter().map(String::as_str).collect();
    let own = name_of(&node);
    listing.push(&own);
    h.answer_list(&listing);
    let closest = format!("/q/{}", ahead[2]);
    h.answer_watch(&closest, 42);
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
    h.watch(&closest, WatchKind::NodeDeleted);
    let mut listing: Vec<&str> = ahead[..2].iter().map(String::as_str).collect();
    listing.push(&own);
    h.answer_list(&listing);
    assert_eq!(places(&h), vec![3, 2]);
    assert_eq!(h.s.state(id), Some(LockState::Waiting));
}

/// A session made for the timeout asked for (20 s), then reconfigured to the one
/// the server granted (4 s) before its `Connected`: a held lock is lost by the 4 s
/// clock (less the default margin, 400 ms), not the 20 s one.
#[test]
fn reconfigured_before_connecting_times_locks_by_the_granted_timeout() {
    let mut h = H::unconnected();
    h.s = Session::new(Config::new(Duration::from_secs(20), 1));
    h.s.reconfigure(Config::new(Duration::from_secs(4), 1));
    h.session(SessionEvent::Connected { session_id: SID });
    h.held("/f", 0);
    h.session(SessionEvent::Disconnected {
        since_contact: Duration::ZERO,
    });
    assert_eq!(h.take_events(), vec![LockEvent::Suspended]);
    h.advance(Duration::from_millis(3599));
    assert!(h.take_events().is_empty());
    h.advance(Duration::from_millis(1));
    assert_eq!(
        h.take_events(),
        vec![LockEvent::Lost(LostReason::SuspendedTooLong)]
    );
}
