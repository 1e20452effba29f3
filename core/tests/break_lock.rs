//! Breaking a lock (`Session::break_node`): the node inspected, and only that
//! one, is deleted; what became of it is said exactly; the broken holder learns
//! of it from ZooKeeper (its own-node watch, or its next request on the node).
mod harness;

use harness::*;
use lock_core::*;
use std::time::Duration;

fn retry_interval() -> Duration {
    Config::new(Duration::from_secs(10), 1).retry_interval
}

/// Starts a break of `node` expecting token `token`.
fn start_break(h: &mut H, node: &str, token: i64) -> LockId {
    let id =
        h.s.break_node(node, FencingToken(token), None, h.now)
            .unwrap();
    h.drain();
    id
}

/// Answers the break's read of `node` with a stat of `czxid` and `version`.
fn answer_read(h: &mut H, node: &str, czxid: i64, version: i32) {
    let r = h.next_req();
    assert_eq!(
        r.op,
        Op::GetData {
            path: node.into(),
            watch: false
        },
        "the break reads the node first, without a watch"
    );
    let stat = Stat {
        czxid,
        version,
        ephemeral_owner: 0x77,
        ..Stat::default()
    };
    h.reply(
        r.id,
        Ok(Reply::Data {
            data: Vec::new(),
            stat,
        }),
    );
}

/// Takes the break's delete, checking it is conditioned on `version`.
fn take_delete(h: &mut H, node: &str, version: i32) -> Request {
    let r = h.next_req();
    assert_eq!(
        r.op,
        Op::Delete {
            path: node.into(),
            version: Some(version)
        }
    );
    r
}

fn broken(h: &mut H) -> Vec<(String, BreakOutcome)> {
    h.take_events()
        .into_iter()
        .filter_map(|e| match e {
            LockEvent::Broken { node, outcome } => Some((node, outcome)),
            _ => None,
        })
        .collect()
}

#[test]
fn the_node_inspected_is_deleted_at_the_version_read() {
    let mut h = H::new();
    let node = format!("/l/{}", peer(NodeKind::Write, 1, 1));
    start_break(&mut h, &node, 500);
    answer_read(&mut h, &node, 500, 3);
    let delete = take_delete(&mut h, &node, 3);
    assert!(h.no_requests(), "one request at a time: {:?}", h.reqs);
    assert_eq!(broken(&mut h), [], "said before the delete was answered");
    h.reply(delete.id, Ok(Reply::Deleted));
    assert_eq!(broken(&mut h), [(node, BreakOutcome::Deleted)]);
    assert!(h.no_requests());
    assert!(h.s.is_idle(), "the task ended");
}

#[test]
fn another_node_of_the_same_name_is_not_deleted() {
    let mut h = H::new();
    let node = format!("/l/{}", peer(NodeKind::Write, 1, 1));
    start_break(&mut h, &node, 500);
    // The node of that name now was created by another transaction.
    answer_read(&mut h, &node, 777, 0);
    assert!(h.no_requests(), "deleted another node: {:?}", h.reqs);
    assert_eq!(broken(&mut h), [(node, BreakOutcome::AlreadyGone)]);
}

#[test]
fn a_node_gone_before_the_break_is_not_counted_as_broken() {
    let mut h = H::new();
    let node = format!("/l/{}", peer(NodeKind::Write, 1, 1));
    // Gone at the read.
    start_break(&mut h, &node, 500);
    h.answer_err(ZkError::NoNode);
    assert!(h.no_requests());
    assert_eq!(broken(&mut h), [(node.clone(), BreakOutcome::AlreadyGone)]);
    // Gone between the read and the delete.
    start_break(&mut h, &node, 500);
    answer_read(&mut h, &node, 500, 0);
    let delete = take_delete(&mut h, &node, 0);
    h.reply(delete.id, Err(ZkError::NoNode));
    assert_eq!(broken(&mut h), [(node, BreakOutcome::AlreadyGone)]);
}

#[test]
fn a_node_written_meanwhile_is_read_again_and_its_token_still_decides() {
    let mut h = H::new();
    let node = format!("/l/{}", peer(NodeKind::Write, 1, 1));
    start_break(&mut h, &node, 500);
    answer_read(&mut h, &node, 500, 0);
    let delete = take_delete(&mut h, &node, 0);
    // Its holder published (or a revocation request came) since the read.
    h.reply(delete.id, Err(ZkError::BadVersion));
    assert_eq!(broken(&mut h), []);
    answer_read(&mut h, &node, 500, 1);
    let delete = take_delete(&mut h, &node, 1);
    h.reply(delete.id, Ok(Reply::Deleted));
    assert_eq!(broken(&mut h), [(node, BreakOutcome::Deleted)]);
}

#[test]
fn a_delete_whose_answer_was_lost_makes_a_later_absence_uncertain() {
    // The delete's reply says the connection was lost.
    let mut h = H::new();
    let node = format!("/l/{}", peer(NodeKind::Write, 1, 1));
    start_break(&mut h, &node, 500);
    answer_read(&mut h, &node, 500, 0);
    let delete = take_delete(&mut h, &node, 0);
    h.reply(delete.id, Err(ZkError::ConnectionLoss));
    assert_eq!(broken(&mut h), [], "the outcome is unknown");
    h.advance(retry_interval());
    h.answer_err(ZkError::NoNode);
    assert_eq!(
        broken(&mut h),
        [(node.clone(), BreakOutcome::GoneUncertain)]
    );

    // The connection dropped with the delete in flight (its reply forgotten).
    let mut h = H::new();
    start_break(&mut h, &node, 500);
    answer_read(&mut h, &node, 500, 0);
    take_delete(&mut h, &node, 0);
    h.session(SessionEvent::Disconnected {
        since_contact: Duration::ZERO,
    });
    h.session(SessionEvent::Connected { session_id: SID });
    h.answer_err(ZkError::NoNode);
    assert_eq!(broken(&mut h), [(node, BreakOutcome::GoneUncertain)]);
}

#[test]
fn the_one_shot_policy_applies() {
    let node = format!("/l/{}", peer(NodeKind::Write, 1, 1));
    // An unknown outcome of the read is asked again after the retry interval.
    let mut h = H::new();
    start_break(&mut h, &node, 500);
    let first = h.answer_err(ZkError::ConnectionLoss);
    assert!(h.no_requests());
    h.advance(retry_interval() / 2);
    assert!(h.no_requests(), "asked again before the retry interval");
    h.advance(retry_interval() / 2);
    assert_eq!(h.next_req().op, first.op);
    // A final answer stops it with that error.
    let mut h = H::new();
    start_break(&mut h, &node, 500);
    h.answer_err(ZkError::NoAuth);
    assert_eq!(
        h.take_events(),
        [LockEvent::Failed(FailReason::Zk(ZkError::NoAuth))]
    );
    // A reply of the wrong kind too.
    let mut h = H::new();
    start_break(&mut h, &node, 500);
    let r = h.next_req();
    h.reply(r.id, Ok(Reply::Children(vec![])));
    let events = h.take_events();
    assert!(
        matches!(
            &events[..],
            [LockEvent::Failed(FailReason::Zk(ZkError::Other(_)))]
        ),
        "{events:?}"
    );
    // Cancelled, and closed with the session.
    let mut h = H::new();
    let id = start_break(&mut h, &node, 500);
    h.s.cancel(id, h.now).unwrap();
    h.drain();
    assert_eq!(h.take_events(), [LockEvent::Failed(FailReason::Cancelled)]);
    let mut h = H::new();
    start_break(&mut h, &node, 500);
    h.session(SessionEvent::Closed);
    assert_eq!(h.take_events(), [LockEvent::Failed(FailReason::Closed)]);
    // An invalid path is refused before anything is sent.
    let mut h = H::new();
    assert!(h
        .s
        .break_node("relative", FencingToken(1), None, h.now)
        .is_err());
    h.drain();
    assert!(h.no_requests());
}

#[test]
fn a_holder_watching_its_node_is_lost_at_once_a_plain_one_at_its_release() {
    // The holder and the breaker share the harness's session: the server's
    // answers are played by hand, as they would come.
    let mut h = H::new();
    let (holder, node) = h.held_watched("/l", 1);
    let token = h.czxid;
    start_break(&mut h, &node, token);
    answer_read(&mut h, &node, token, 0);
    let delete = take_delete(&mut h, &node, 0);
    h.reply(delete.id, Ok(Reply::Deleted));
    h.watch(&node, WatchKind::NodeDeleted);
    let events = h.take_events();
    assert!(
        events.contains(&LockEvent::Lost(LostReason::NodeDeleted)),
        "{events:?}"
    );
    assert!(events.contains(&LockEvent::Broken {
        node: node.clone(),
        outcome: BreakOutcome::Deleted
    }));
    assert_eq!(h.s.state(holder), None, "the lost lock is over");

    // A plain holder (no watch on its node) hears nothing until it asks: its
    // release finds the node gone and reports the lock lost, not released.
    let mut h = H::new();
    let (holder, node) = h.held("/l", 1);
    let token = h.czxid;
    start_break(&mut h, &node, token);
    answer_read(&mut h, &node, token, 0);
    let delete = take_delete(&mut h, &node, 0);
    h.reply(delete.id, Ok(Reply::Deleted));
    assert_eq!(
        broken(&mut h),
        [(node.clone(), BreakOutcome::Deleted)],
        "and nothing else"
    );
    h.s.release(holder, h.now).unwrap();
    h.drain();
    h.answer_err(ZkError::NoNode);
    assert_eq!(h.take_events(), [LockEvent::Lost(LostReason::NodeDeleted)]);
}

/// With a record, the delete goes in one `multi` with the record's create; a
/// record left by an earlier break is set instead (the failed `multi` applied
/// nothing, the delete goes again with the `setData`); an inspection then
/// reports the last break.
#[test]
fn a_break_with_a_record_leaves_it_in_the_same_multi() {
    let mut h = H::new();
    let name = peer(NodeKind::Write, 1, 1);
    let node = format!("/l/{name}");
    let record = BreakRecord {
        session: 0x77,
        by: Some("ops@db1"),
    };
    h.s.break_node(&node, FencingToken(500), Some(record), h.now)
        .unwrap();
    h.drain();
    answer_read(&mut h, &node, 500, 3);
    let data = |r: &Request| match &r.op {
        Op::Multi(ops) => ops
            .iter()
            .find_map(|op| match op {
                MultiOp::Create { data, .. } | MultiOp::SetData { data, .. } => Some(data.clone()),
                _ => None,
            })
            .unwrap(),
        other => panic!("expected a multi, got {other:?}"),
    };
    let first = h.next_req();
    let Op::Multi(ops) = &first.op else {
        panic!("{first:?}")
    };
    assert_eq!(
        ops[0],
        MultiOp::Delete {
            path: node.clone(),
            version: Some(3)
        }
    );
    assert!(
        matches!(&ops[1], MultiOp::Create { path, mode: CreateMode::Persistent, .. } if path == "/l/zkl-broken"),
        "{ops:?}"
    );
    let stored = data(&first);
    // The record exists from an earlier break: nothing applied, set it instead.
    h.reply(
        first.id,
        Err(ZkError::MultiFailed {
            index: 1,
            error: Box::new(ZkError::NodeExists),
        }),
    );
    let second = h.next_req();
    let Op::Multi(ops) = &second.op else {
        panic!("{second:?}")
    };
    assert!(
        matches!(&ops[1], MultiOp::SetData { path, version: None, .. } if path == "/l/zkl-broken"),
        "{ops:?}"
    );
    assert_eq!(data(&second), stored);
    assert_eq!(broken(&mut h), []);
    h.reply(second.id, Ok(Reply::Multi(vec![])));
    assert_eq!(broken(&mut h), [(node.clone(), BreakOutcome::Deleted)]);

    // An inspection reads the record back.
    h.s.inspect("/l", h.now).unwrap();
    h.drain();
    let list = h.next_req();
    h.reply(list.id, Ok(Reply::Children(vec!["zkl-broken".into()])));
    // Peers' semaphore layouts are looked for too: none here.
    let mut read = None;
    while let Some(r) = h.reqs.pop_front() {
        match r.op {
            Op::GetChildren { .. } => h.reply(r.id, Err(ZkError::NoNode)),
            _ => read = Some(r),
        }
    }
    let read = read.expect("the record's read");
    assert_eq!(
        read.op,
        Op::GetData {
            path: "/l/zkl-broken".into(),
            watch: false
        }
    );
    let stat = Stat {
        mtime: 1_700_000_000_000,
        ..Stat::default()
    };
    h.reply(read.id, Ok(Reply::Data { data: stored, stat }));
    let who = h
        .take_events()
        .into_iter()
        .find_map(|e| match e {
            LockEvent::Participants(p) => Some(p),
            _ => None,
        })
        .expect("participants");
    assert_eq!(who.foreign, 0, "the record is no foreign node");
    let last = who.last_break.expect("the last break");
    assert_eq!(last.node, name);
    assert_eq!(last.token, FencingToken(500));
    assert_eq!(last.session, 0x77);
    assert_eq!(last.by.as_deref(), Some("ops@db1"));
    assert_eq!(last.at, 1_700_000_000_000);
}

/// A client library without `multi` refuses the recorded delete before sending
/// it: the delete goes again alone, unrecorded, and the break happens.
#[test]
fn without_multi_the_break_goes_unrecorded() {
    let mut h = H::new();
    let node = format!("/l/{}", peer(NodeKind::Write, 1, 1));
    let record = BreakRecord {
        session: 0x77,
        by: None,
    };
    h.s.break_node(&node, FencingToken(500), Some(record), h.now)
        .unwrap();
    h.drain();
    answer_read(&mut h, &node, 500, 3);
    let multi = h.next_req();
    assert!(matches!(multi.op, Op::Multi(_)), "{multi:?}");
    h.reply(
        multi.id,
        Err(ZkError::Other("multi unsupported by this client".into())),
    );
    let delete = take_delete(&mut h, &node, 3);
    h.reply(delete.id, Ok(Reply::Deleted));
    assert_eq!(broken(&mut h), [(node, BreakOutcome::Deleted)]);
}

/// Without `watch_node`, a firing on the holder's node is not the holder's (an
/// uncontended grant set no watch): the deletion is found by the check every
/// reconnect makes, which watches the node from then on.
#[test]
fn plain_holder_notices_a_deleted_node_at_the_next_reconnect_check() {
    let mut h = H::new();
    let (_, node) = h.held("/p", 0);
    h.watch(&node, WatchKind::NodeDeleted);
    assert!(h.take_events().is_empty(), "no watch was set");
    h.session(SessionEvent::Disconnected {
        since_contact: Duration::ZERO,
    });
    assert_eq!(h.take_events(), vec![LockEvent::Suspended]);
    h.session(SessionEvent::Connected { session_id: SID });
    let r = h.next_req();
    assert_eq!(
        r.op,
        Op::GetData {
            path: node.clone(),
            watch: true
        },
        "the check after a reconnect watches the node"
    );
    h.reply(r.id, Err(ZkError::NoNode));
    assert_eq!(
        h.take_events(),
        vec![LockEvent::Lost(LostReason::NodeDeleted)]
    );
}

/// A waiter watches its own node (sent before the peer watch) and keeps the
/// watch once granted: no `RemoveWatch`, and a deletion under the holder (an
/// operator's break) is `Lost(NodeDeleted)` at once. Its own release fires the
/// watch too, ahead of the delete's reply: that firing is not a loss.
#[test]
fn waiter_keeps_the_watch_on_its_node_when_granted() {
    let mut h = H::new();
    let (id, node, ppath) = waiting(&mut h, "/w");
    h.watch(&ppath, WatchKind::NodeDeleted);
    assert!(matches!(h.take_events()[..], [LockEvent::Acquired(_)]));
    assert!(h.no_requests(), "nothing sent at the grant: {:?}", h.reqs);
    h.s.release(id, h.now).unwrap();
    h.drain();
    let r = h.next_req();
    assert!(matches!(r.op, Op::Delete { .. }));
    h.watch(&node, WatchKind::NodeDeleted);
    assert!(h.take_events().is_empty(), "our own delete is no loss");
    h.reply(r.id, Ok(Reply::Deleted));
    assert_eq!(h.take_events(), vec![LockEvent::Released]);

    // The same grant, then the node deleted by someone else while held.
    let mut h = H::new();
    let (_, node, ppath) = waiting(&mut h, "/w");
    h.watch(&ppath, WatchKind::NodeDeleted);
    assert!(matches!(h.take_events()[..], [LockEvent::Acquired(_)]));
    h.watch(&node, WatchKind::NodeDeleted);
    assert_eq!(
        h.take_events(),
        vec![LockEvent::Lost(LostReason::NodeDeleted)]
    );
}
