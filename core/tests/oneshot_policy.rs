//! The one error policy of the tasks that own no node (inspect, revoke, observe,
//! deadlock scan, break): an unknown outcome or an ending session is retried, any
//! other answer stops the task with that error, a reply of the wrong kind too; a
//! cancel or the session's close stops it; a bad path is refused.
mod harness;

use harness::*;
use lock_core::*;

type Start = fn(&mut Session, Timestamp) -> Result<LockId, UsageError>;

/// Each task kind, started on `/l`.
const TASKS: [(&str, Start); 5] = [
    ("inspect", |s, now| s.inspect("/l", now)),
    ("revoke", |s, now| s.revoke("/l", now)),
    ("observe", |s, now| s.observe("/l", now)),
    ("deadlocks", |s, now| s.deadlocks("/l", now)),
    ("break", |s, now| {
        s.break_node("/l/n", FencingToken(500), None, now)
    }),
];

fn start(h: &mut H, task: Start) -> LockId {
    let id = task(&mut h.s, h.now).unwrap();
    h.drain();
    id
}

fn failures(h: &mut H) -> Vec<FailReason> {
    h.take_events()
        .into_iter()
        .filter_map(|e| match e {
            LockEvent::Failed(reason) => Some(reason),
            _ => None,
        })
        .collect()
}

#[test]
fn unknown_outcomes_and_ending_sessions_are_retried_by_every_task() {
    for (name, task) in TASKS {
        for error in [
            ZkError::ConnectionLoss,
            ZkError::OperationTimeout,
            ZkError::SessionExpired,
        ] {
            let mut h = H::new();
            let retry = h.s.config().retry_interval;
            start(&mut h, task);
            let first = h.answer_err(error.clone());
            h.reqs.clear();
            assert_eq!(failures(&mut h), [], "{name} after {error:?}");
            h.advance(retry / 2);
            assert!(
                h.no_requests(),
                "{name} asks again before the retry interval"
            );
            h.advance(retry / 2);
            assert_eq!(
                h.reqs.front().map(|r| &r.op),
                Some(&first.op),
                "{name} asks again after {error:?}"
            );
        }
    }
}

#[test]
fn a_final_answer_stops_every_task_with_that_error() {
    for (name, task) in TASKS {
        for error in [
            ZkError::NoAuth,
            ZkError::BadArguments,
            ZkError::Unimplemented,
            ZkError::AuthFailed,
            ZkError::Other("a client's own failure".into()),
        ] {
            let mut h = H::new();
            start(&mut h, task);
            h.answer_err(error.clone());
            assert_eq!(
                failures(&mut h),
                [FailReason::Zk(error.clone())],
                "{name} after {error:?}"
            );
        }
    }
}

#[test]
fn a_reply_of_the_wrong_kind_stops_every_task() {
    for (name, task) in TASKS {
        let mut h = H::new();
        start(&mut h, task);
        let r = h.next_req();
        // Every task starts with a read: a sync's reply is a binding's mistake.
        assert!(
            matches!(
                r.op,
                Op::GetChildren { .. } | Op::WatchChildren { .. } | Op::GetData { .. }
            ),
            "{name}: {:?}",
            r.op
        );
        h.reply(r.id, Ok(Reply::Synced));
        let failed = failures(&mut h);
        assert!(
            matches!(failed.as_slice(), [FailReason::Zk(ZkError::Other(_))]),
            "{name}: {failed:?}"
        );
    }
}

#[test]
fn every_task_ends_at_a_cancel_or_the_close_and_refuses_a_bad_path() {
    for (name, task) in TASKS {
        let mut h = H::new();
        let id = start(&mut h, task);
        h.run(|s, now| s.cancel(id, now));
        assert_eq!(failures(&mut h), [FailReason::Cancelled], "{name}");
        start(&mut h, task);
        h.session(SessionEvent::Closed);
        assert_eq!(failures(&mut h), [FailReason::Closed], "{name}");
    }
    let mut h = H::new();
    let bad = "relative";
    assert!(h.s.break_node(bad, FencingToken(1), None, h.now).is_err());
    assert!(h.s.inspect(bad, h.now).is_err());
    h.drain();
    assert!(h.no_requests());
}

#[test]
fn an_inspection_whose_listing_failed_does_not_report_an_empty_queue_meanwhile() {
    let mut h = H::served(&["/l"]);
    h.peer_joins("/l", NodeKind::Write, 1);
    h.run(|s, now| s.inspect("/l", now));
    // The listing's outcome is unknown: a retry is due.
    let list = h.answer_err(ZkError::ConnectionLoss);
    assert_eq!(list.op, Op::GetChildren { path: "/l".into() });
    // The semaphore layouts' listings answer meanwhile: nothing is known of the
    // queue yet, so nothing is reported.
    h.serve();
    assert_eq!(h.take_events(), [], "finished without its listing");
    h.advance(h.s.config().retry_interval);
    h.serve();
    assert_eq!(h.participants().holders.len(), 1);
}

#[test]
fn a_revocation_that_could_not_ask_one_holder_asks_again_before_it_reports() {
    let mut h = H::served(&["/l"]);
    // Two readers hold: each is asked.
    h.peer_joins("/l", NodeKind::Read, 1);
    h.peer_joins("/l", NodeKind::Read, 2);
    h.run(|s, now| s.revoke("/l", now));
    h.serve_one();
    let first = h.answer_err(ZkError::ConnectionLoss);
    h.serve();
    assert_eq!(
        h.take_events(),
        [],
        "reported without asking {:?}",
        first.op
    );
    h.advance(h.s.config().retry_interval);
    h.serve();
    let events = h.take_events();
    assert!(
        matches!(&events[..], [LockEvent::RevocationSent { nodes }] if nodes.len() == 2),
        "{events:?}"
    );
}

#[test]
fn a_deadlock_scan_with_a_failed_read_does_not_conclude_meanwhile() {
    // The root: one lock directory with two participants.
    let mut h = H::served(&["/l/a"]);
    h.peer_joins("/l/a", NodeKind::Write, 1);
    h.peer_joins("/l/a", NodeKind::Write, 2);
    h.run(|s, now| s.deadlocks("/l", now));
    assert_eq!(h.serve_one().op, Op::GetChildren { path: "/l".into() });
    h.serve_one();
    // One participant's read fails; the other answers.
    h.answer_err(ZkError::ConnectionLoss);
    h.serve_one();
    // The pass is not over (a scan confirms a first pass with a second one): it
    // starts over when the retry is due, not now from a graph missing a node.
    assert!(
        h.no_requests(),
        "went on without one participant: {:?}",
        h.reqs
    );
    h.expect_events([]);
    h.advance(h.s.config().retry_interval);
    assert_eq!(
        h.next_req().op,
        Op::GetChildren { path: "/l".into() },
        "the retry starts the pass over"
    );
}
