//! The one-shot core tasks (participants, deadlocks) run through the link and
//! return their event.

use super::{connected, poll_once, requests};
use crate::blocking::block_on_until;
use crate::*;
use lock_core::{Op, Reply};
use std::pin::pin;
use std::task::Poll;
use std::time::Instant;

#[test]
fn participants_and_deadlocks_run_a_core_task_and_return_its_event() {
    let (locks, mut link) = connected();
    let mut inspect = pin!(locks.participants("/locks/none"));
    assert!(poll_once(inspect.as_mut()).is_pending());
    let sent = requests(&mut link);
    assert!(matches!(&sent[0].op, Op::GetChildren { path, .. } if path == "/locks/none"));
    // The lock directory and the semaphore layouts' directories beside it: none exists.
    assert_eq!(sent.len(), 4, "{sent:?}");
    for r in &sent {
        link.handle_reply(r.id, Err(ZkError::NoNode), Instant::now());
    }
    let Poll::Ready(Ok(found)) = poll_once(inspect.as_mut()) else {
        panic!("no participants")
    };
    assert!(found.holders.is_empty() && found.waiters.is_empty());
    assert!(locks.shared().with(|s| s.locks.is_empty()));

    let mut scan = pin!(locks.deadlocks("/locks"));
    assert!(poll_once(scan.as_mut()).is_pending());
    // An empty root: every listing answers nothing.
    let mut rounds = 0;
    let cycles = loop {
        if let Poll::Ready(result) = poll_once(scan.as_mut()) {
            break result.unwrap();
        }
        let sent = requests(&mut link);
        assert!(!sent.is_empty() && rounds < 10, "the scan stalled");
        for r in &sent {
            let reply = match &r.op {
                Op::GetChildren { .. } => Ok(Reply::Children(vec![])),
                _ => Err(ZkError::NoNode),
            };
            link.handle_reply(r.id, reply, Instant::now());
        }
        rounds += 1;
    };
    assert!(cycles.is_empty());
    assert!(matches!(
        block_on_until(locks.participants("relative"), Some(Instant::now())),
        Some(Err(e)) if e.is_invalid_path()
    ));
}
