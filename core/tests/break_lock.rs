//! Breaking a lock (`Session::break_node`): the node inspected, and only that
//! one, is deleted; what became of it is said exactly; the broken holder learns
//! of it from ZooKeeper (its own-node watch, or its next request on the node).
mod harness;

use harness::*;
use lock_core::*;

/// A served scenario with a peer's node in `/l`; returns it and its token.
fn peer_node() -> (H, String, i64) {
    let mut h = H::served(&["/l"]);
    let node = h.peer_joins("/l", NodeKind::Write, 1);
    let czxid = h.zk().model.stat(&node).unwrap().czxid;
    (h, node, czxid)
}

/// Starts a break of `node` expecting token `token`.
fn start_break(h: &mut H, node: &str, token: i64) -> LockId {
    h.run(|s, now| s.break_node(node, FencingToken(token), None, now))
}

/// Serves the break's read of `node`, which sets no watch.
fn serve_read(h: &mut H, node: &str) {
    assert_eq!(
        h.serve_one().op,
        read_of(node, false),
        "the break reads the node first, without a watch"
    );
}

/// The break's delete, conditioned on `version`.
fn delete_at(node: &str, version: i32) -> Op {
    Op::Delete {
        path: node.into(),
        version: Some(version),
    }
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
    let (mut h, node, token) = peer_node();
    h.set_node_data(&node, b"published");
    start_break(&mut h, &node, token);
    serve_read(&mut h, &node);
    assert_eq!(h.reqs.len(), 1, "one request at a time: {:?}", h.reqs);
    assert_eq!(h.reqs[0].op, delete_at(&node, 1));
    assert_eq!(broken(&mut h), [], "said before the delete was answered");
    h.serve();
    assert_eq!(broken(&mut h), [(node.clone(), BreakOutcome::Deleted)]);
    assert!(!h.exists(&node));
    assert!(h.s.is_idle(), "the task ended");
}

/// Gone at the read, or replaced by a node of the same name (another
/// transaction's, which stays): nothing is deleted.
#[test]
fn a_node_gone_before_the_break_is_not_counted_as_broken() {
    for replaced in [false, true] {
        let (mut h, node, token) = peer_node();
        h.delete_node(&node);
        if replaced {
            h.peer_creates(&node, &[], CreateMode::Ephemeral);
        }
        start_break(&mut h, &node, token);
        assert_eq!(h.serve().len(), 1, "the read alone");
        assert_eq!(broken(&mut h), [(node.clone(), BreakOutcome::AlreadyGone)]);
        assert_eq!(h.exists(&node), replaced, "deleted another node");
    }
    // Gone between the read and the delete.
    let (mut h, node, token) = peer_node();
    start_break(&mut h, &node, token);
    serve_read(&mut h, &node);
    h.delete_node(&node);
    h.serve();
    assert_eq!(broken(&mut h), [(node, BreakOutcome::AlreadyGone)]);
}

#[test]
fn a_node_written_meanwhile_is_read_again_and_its_token_still_decides() {
    let (mut h, node, token) = peer_node();
    start_break(&mut h, &node, token);
    serve_read(&mut h, &node);
    // Its holder published (or a revocation request came) since the read.
    h.set_node_data(&node, b"published");
    assert_eq!(h.serve_one().op, delete_at(&node, 0));
    assert_eq!(broken(&mut h), []);
    serve_read(&mut h, &node);
    assert_eq!(ops(&h.serve()), [delete_at(&node, 1)]);
    assert_eq!(broken(&mut h), [(node, BreakOutcome::Deleted)]);
}

#[test]
fn a_delete_whose_answer_was_lost_makes_a_later_absence_uncertain() {
    // The delete's reply says the connection was lost.
    let (mut h, node, token) = peer_node();
    start_break(&mut h, &node, token);
    serve_read(&mut h, &node);
    h.lose_reply();
    assert_eq!(broken(&mut h), [], "the outcome is unknown");
    h.advance(h.s.config().retry_interval);
    h.serve();
    assert_eq!(
        broken(&mut h),
        [(node.clone(), BreakOutcome::GoneUncertain)]
    );

    // The connection dropped with the delete in flight (its reply forgotten).
    let (mut h, node, token) = peer_node();
    start_break(&mut h, &node, token);
    serve_read(&mut h, &node);
    h.apply_unanswered();
    h.reconnect();
    h.serve();
    assert_eq!(broken(&mut h), [(node, BreakOutcome::GoneUncertain)]);
}

/// The holder and the breaker share one session: the break's delete is still
/// the holder's loss. (A plain holder learns at its release, as after any
/// deletion: failures.rs, release_of_a_node_deleted_by_someone_else_is_lost.)
#[test]
fn a_holder_watching_its_node_is_lost_at_once() {
    let (mut h, holder, node) = H::holding(LockSpec::write("/l").watch_node());
    let token = h.zk().model.stat(&node).unwrap().czxid;
    start_break(&mut h, &node, token);
    h.serve();
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
}

/// With a record, the delete goes in one `multi` with the record's create; a
/// record left by an earlier break is set instead (the failed `multi` applied
/// nothing, the delete goes again with the `setData`); an inspection then
/// reports the last break.
#[test]
fn a_break_with_a_record_leaves_it_in_the_same_multi() {
    const RECORD: &str = "/l/zkl-broken";
    let (mut h, node, token) = peer_node();
    h.peer_creates(RECORD, b"an earlier break", CreateMode::Persistent);
    let record = BreakRecord {
        session: 0x77,
        by: Some("ops@db1"),
    };
    h.run(|s, now| s.break_node(&node, FencingToken(token), Some(record), now));
    serve_read(&mut h, &node);
    let data = |op: &Op| match op {
        Op::Multi(ops) => ops
            .iter()
            .find_map(|op| match op {
                MultiOp::Create { data, .. } | MultiOp::SetData { data, .. } => Some(data.clone()),
                _ => None,
            })
            .unwrap(),
        other => panic!("expected a multi, got {other:?}"),
    };
    let [Op::Multi(first), Op::Multi(second)] = &ops(&h.serve())[..] else {
        panic!("two multis")
    };
    assert_eq!(
        first[0],
        MultiOp::Delete {
            path: node.clone(),
            version: Some(0)
        }
    );
    assert!(
        matches!(&first[1], MultiOp::Create { path, mode: CreateMode::Persistent, .. } if path == RECORD),
        "{first:?}"
    );
    // The record exists from an earlier break: nothing applied, set it instead.
    assert!(
        matches!(&second[1], MultiOp::SetData { path, version: None, .. } if path == RECORD),
        "{second:?}"
    );
    let stored = data(&Op::Multi(first.clone()));
    assert_eq!(data(&Op::Multi(second.clone())), stored);
    assert_eq!(broken(&mut h), [(node.clone(), BreakOutcome::Deleted)]);
    let record = h.zk().model.get(RECORD).unwrap();
    assert_eq!(record.data, stored);

    // An inspection reads the record back (and looks for peers' semaphore
    // layouts: none here).
    let who = h.inspected("/l");
    assert_eq!(who.foreign, 0, "the record is no foreign node");
    let last = who.last_break.expect("the last break");
    assert_eq!(last.node, name_of(&node));
    assert_eq!(last.token, FencingToken(token));
    assert_eq!(last.session, 0x77);
    assert_eq!(last.by.as_deref(), Some("ops@db1"));
    assert_eq!(last.at, record.stat.mtime);
}

/// A client library without `multi` refuses the recorded delete before sending
/// it: the delete goes again alone, unrecorded, and the break happens.
#[test]
fn without_multi_the_break_goes_unrecorded() {
    let (mut h, node, token) = peer_node();
    let record = BreakRecord {
        session: 0x77,
        by: None,
    };
    h.run(|s, now| s.break_node(&node, FencingToken(token), Some(record), now));
    serve_read(&mut h, &node);
    let multi = h.next_req();
    assert!(matches!(multi.op, Op::Multi(_)), "{multi:?}");
    h.reply(multi.id, Err(ZkError::Unimplemented));
    assert_eq!(ops(&h.serve()), [delete_at(&node, 0)]);
    assert_eq!(broken(&mut h), [(node, BreakOutcome::Deleted)]);
    assert!(!h.exists("/l/zkl-broken"));
}

/// A waiter watches its own node (sent before the peer watch) and keeps the
/// watch once granted: no `RemoveWatch`, and a deletion under the holder (an
/// operator's break) is `Lost(NodeDeleted)` at once. Its own release fires the
/// watch too, ahead of the delete's reply: that firing is not a loss.
#[test]
fn waiter_keeps_the_watch_on_its_node_when_granted() {
    let (mut h, id, _, peer) = H::queued("/w");
    h.delete_node(&peer);
    h.acquired();
    assert!(h.no_requests(), "nothing sent at the grant: {:?}", h.reqs);
    h.run(|s, now| s.release(id, now));
    let (delete, deleted) = h.apply_front();
    assert!(matches!(delete.op, Op::Delete { .. }));
    h.deliver();
    assert!(h.take_events().is_empty(), "our own delete is no loss");
    h.reply(delete.id, deleted);
    h.expect_events([LockEvent::Released]);

    // The same grant, then the node deleted by someone else while held.
    let (mut h, _, node, peer) = H::queued("/w");
    h.delete_node(&peer);
    h.acquired();
    h.delete_node(&node);
    h.expect_events([LockEvent::Lost(LostReason::NodeDeleted)]);
}
