//! The one error policy of the tasks that own no node (inspect, revoke, observe,
//! deadlock scan): an unknown outcome or an ending session is retried, any other
//! answer stops the task with that error, a reply of the wrong kind too.
mod harness;

use harness::*;
use lock_core::*;

type Start = fn(&mut Session, Timestamp) -> Result<LockId, UsageError>;

/// Each task kind, started on `/l`.
const TASKS: [(&str, Start); 4] = [
    ("inspect", |s, now| s.inspect("/l", now)),
    ("revoke", |s, now| s.revoke("/l", now)),
    ("observe", |s, now| s.observe("/l", now)),
    ("deadlocks", |s, now| s.deadlocks("/l", now)),
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
    let retry = Config::new(std::time::Duration::from_secs(10), 1).retry_interval;
    for (name, task) in TASKS {
        for error in [
            ZkError::ConnectionLoss,
            ZkError::OperationTimeout,
            ZkError::SessionExpired,
        ] {
            let mut h = H::new();
            start(&mut h, task);
            let first = h.answer_err(error.clone());
            h.reqs.clear();
            assert_eq!(failures(&mut h), [], "{name} after {error:?}");
            h.advance(retry);
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
            ZkError::Other("unsupported operation".into()),
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
        // Every task starts with a listing: a data reply is a binding's mistake.
        assert!(
            matches!(r.op, Op::GetChildren { .. } | Op::WatchChildren { .. }),
            "{name}: {:?}",
            r.op
        );
        h.reply(
            r.id,
            Ok(Reply::Data {
                data: Vec::new(),
                stat: Stat::default(),
            }),
        );
        let failed = failures(&mut h);
        assert!(
            matches!(failed.as_slice(), [FailReason::Zk(ZkError::Other(_))]),
            "{name}: {failed:?}"
        );
    }
}
