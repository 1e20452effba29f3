//! Owners: named in the node, and a self-deadlock refused before any request.

use super::{connected, grant, poll_once, requests};
use crate::blocking::block_on_until;
use crate::*;
use lock_core::Op;
use std::pin::pin;
use std::task::Poll;
use std::time::{Duration, Instant};

#[test]
fn owners_reach_the_node_and_a_self_deadlock_is_refused_without_a_request() {
    let (locks, mut link) = connected();
    let worker = locks.with_owner("worker-1");
    assert_eq!(worker.owner(), Some("worker-1"));
    assert_eq!(locks.owner(), None);
    let mutex = worker
        .mutex("/locks/o")
        .detect_deadlocks(Duration::from_secs(1));
    let mut lock = pin!(mutex.lock());
    assert!(poll_once(lock.as_mut()).is_pending());
    let sent = requests(&mut link);
    let Op::Create { data, .. } = &sent[0].op else {
        panic!("{:?}", sent[0].op)
    };
    assert!(
        data.windows(8).any(|w| w == b"worker-1"),
        "the owner is written into the node: {data:?}"
    );
    grant(&mut link, &sent, 7);
    let Poll::Ready(Ok(guard)) = poll_once(lock.as_mut()) else {
        panic!("not granted")
    };
    // The same owner waiting behind itself: refused at once, nothing sent.
    let again = block_on_until(
        worker.mutex("/locks/o").lock(),
        Some(Instant::now() + Duration::from_secs(5)),
    );
    let Some(Err(Error::SelfDeadlock { path, owner, held })) = again else {
        panic!("{again:?}")
    };
    assert_eq!((path.as_str(), owner.as_str()), ("/locks/o", "worker-1"));
    assert_eq!(held, NodeKind::Write);
    assert!(requests(&mut link).is_empty());
    // An explicit owner on the lock object overrides the client's: no refusal.
    let other = worker.mutex("/locks/o").owner("worker-2");
    let mut wait = pin!(other.lock());
    assert!(poll_once(wait.as_mut()).is_pending());
    assert!(!requests(&mut link).is_empty());
    drop(guard);
}
