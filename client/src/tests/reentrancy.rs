//! Owner reentrancy (`Mutex::reentrant`) against a scripted link: counted holds on
//! one node, no request on re-entry, the node released when the count reaches 0.

use super::{connected, grant, poll_once, ready, requests};
use crate::*;
use std::pin::pin;
use std::task::Poll;

#[test]
fn the_owner_reenters_with_no_request_and_the_node_goes_with_the_last_hold() {
    let (locks, mut link) = connected();
    let job = locks.with_owner("worker-1").mutex("/locks/r").reentrant();
    let mut lock = pin!(job.lock());
    assert!(poll_once(lock.as_mut()).is_pending());
    let sent = requests(&mut link);
    let node = grant(&mut link, &sent, 9);
    let outer = ready(lock.as_mut());
    assert_eq!(outer.holds(), 1);
    // Re-entered (through another reentrant Mutex on the same path and owner):
    // ready at once, the same node and token, nothing sent.
    let again = locks.with_owner("worker-1").mutex("/locks/r").reentrant();
    let inner = ready(pin!(again.lock()));
    let third = ready(pin!(job.try_lock())).expect("try_lock re-enters");
    assert!(requests(&mut link).is_empty(), "a re-entry sends nothing");
    assert_eq!(
        (inner.path(), inner.token()),
        (node.as_str(), outer.token())
    );
    assert_eq!(outer.holds(), 3);
    // Inner holds go (release or drop, in any order): the node stays.
    ready(pin!(inner.release()));
    drop(outer);
    assert!(requests(&mut link).is_empty(), "still held by one guard");
    assert_eq!(third.holds(), 1);
    assert_eq!(third.status(), LockStatus::Held);
    // The last one releases the node.
    drop(third);
    let sent = requests(&mut link);
    assert!(
        sent.iter()
            .any(|r| matches!(&r.op, lock_core::Op::Delete { path, .. } if *path == node)),
        "{sent:?}"
    );
}

#[test]
fn without_opt_in_or_without_an_owner_there_is_no_reentry() {
    let (locks, mut link) = connected();
    let worker = locks.with_owner("worker-1");
    let first = worker.mutex("/locks/s");
    let mut lock = pin!(first.lock());
    assert!(poll_once(lock.as_mut()).is_pending());
    let sent = requests(&mut link);
    grant(&mut link, &sent, 5);
    let guard = ready(lock.as_mut());
    // A plain mutex: today's self-deadlock refusal stays.
    let plain = poll_once(pin!(worker.mutex("/locks/s").lock()));
    assert!(
        matches!(plain, Poll::Ready(Err(Error::SelfDeadlock { .. }))),
        "{plain:?}"
    );
    // A reentrant mutex of another owner is not a re-entry: it queues.
    let other = locks.with_owner("worker-2").mutex("/locks/s").reentrant();
    let mut wait = pin!(other.lock());
    assert!(poll_once(wait.as_mut()).is_pending());
    assert!(!requests(&mut link).is_empty());
    // Reentrancy needs an owner.
    let ownerless = poll_once(pin!(locks.mutex("/locks/t").reentrant().lock()));
    assert!(
        matches!(
            ownerless,
            Poll::Ready(Err(Error::Usage(lock_core::UsageError::Unsupported(_))))
        ),
        "{ownerless:?}"
    );
    drop(guard);
}

#[test]
fn a_grant_is_reentered_even_before_its_first_guard_is_handed_out() {
    let (locks, mut link) = connected();
    let job = locks.with_owner("worker-1").mutex("/locks/u").reentrant();
    let mut first = Box::pin(job.lock());
    assert!(poll_once(first.as_mut()).is_pending());
    let sent = requests(&mut link);
    let node = grant(&mut link, &sent, 9);
    // Granted, but the first future has not been polled since: a second task of
    // the same owner re-enters (rather than being refused as a self-deadlock).
    let second = ready(pin!(job.lock()));
    assert!(requests(&mut link).is_empty());
    // The first future is dropped before handing out its guard: the node stays,
    // the second guard holds it.
    drop(first);
    assert!(requests(&mut link).is_empty(), "still held by the second");
    assert_eq!(second.status(), LockStatus::Held);
    assert_eq!(second.holds(), 1);
    drop(second);
    let sent = requests(&mut link);
    assert!(
        sent.iter()
            .any(|r| matches!(&r.op, lock_core::Op::Delete { path, .. } if *path == node)),
        "{sent:?}"
    );
    // And when the first is polled in time, both count.
    let mut first = Box::pin(job.lock());
    assert!(poll_once(first.as_mut()).is_pending());
    let sent = requests(&mut link);
    grant(&mut link, &sent, 10);
    let second = ready(pin!(job.lock()));
    let first = ready(first.as_mut());
    assert_eq!((first.holds(), second.token()), (2, first.token()));
}
