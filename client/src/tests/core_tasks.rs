//! A one-shot core task runs through the link, returns its event and leaves no
//! slot. (Participants and deadlocks against a server: the conformance suite's
//! `participants_in_queue_order_and_self_deadlock`.)

use super::{connected, poll_once, ready, requests};
use crate::blocking::block_on_until;
use crate::*;
use lock_core::Op;
use std::pin::pin;
use std::time::Instant;

#[test]
fn participants_run_a_core_task_and_return_its_event_or_refuse_a_bad_path() {
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
    let found = ready(inspect.as_mut());
    assert!(found.holders.is_empty() && found.waiters.is_empty());
    assert!(locks.shared().with(|s| s.locks.is_empty()));
    assert!(matches!(
        block_on_until(locks.participants("relative"), Some(Instant::now())),
        Some(Err(e)) if e.is_invalid_path()
    ));
}
