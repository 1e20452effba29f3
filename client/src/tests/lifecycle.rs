//! A lock's life against the scripted link: wake-ups both ways, cancelling by
//! dropping, the blocking twins, closing, slots going with their handles, and a
//! pending lock waited for or cancelled.

use super::{connected, grant, peer, poll_once, queue_at, ready, requests, SID};
use crate::blocking::block_on_until;
use crate::*;
use lock_core::{Op, SessionEvent};
use std::pin::pin;
use std::task::Poll;
use std::time::{Duration, Instant};

#[test]
fn a_lock_wakes_the_link_and_its_grant_wakes_the_future() {
    let (locks, mut link) = connected();
    let mutex = locks.mutex("/locks/a");
    let mut lock = pin!(mutex.lock());
    assert!(poll_once(lock.as_mut()).is_pending());
    // The handle called the core and woke the link: create + list, pipelined.
    assert!(poll_once(std::pin::pin!(
        std::future::poll_fn(|cx| link.poll_wake(cx))
    ))
    .is_ready());
    let sent = requests(&mut link);
    assert_eq!(sent.len(), 2);
    let node = grant(&mut link, &sent, 42);
    let guard = ready(lock.as_mut());
    assert_eq!(guard.token(), FencingToken(42));
    assert_eq!(guard.path(), node);
    assert_eq!(guard.status(), LockStatus::Held);
    // Dropping the guard releases in the background.
    drop(guard);
    let sent = requests(&mut link);
    assert!(sent
        .iter()
        .any(|r| matches!(&r.op, Op::Delete { path, .. } if *path == node)));
}

#[test]
fn a_dropped_lock_future_cancels() {
    let (locks, mut link) = connected();
    let mutex = locks.mutex("/locks/b");
    {
        let mut lock = pin!(mutex.lock());
        assert!(poll_once(lock.as_mut()).is_pending());
    }
    assert!(!requests(&mut link).is_empty());
    assert!(locks.shared().with(|s| s.locks.is_empty()));
}

#[test]
fn blocking_twins_wait_for_the_binding() {
    let (locks, mut link) = connected();
    let driver = std::thread::spawn(move || {
        // A threaded binding: wait, drain, answer.
        loop {
            assert!(link.wait(Some(Instant::now() + Duration::from_secs(10))));
            let sent = requests(&mut link);
            if let Some(create) = sent.iter().position(|r| matches!(r.op, Op::Create { .. })) {
                grant(&mut link, &sent[create..], 7);
                return link;
            }
        }
    });
    let guard = locks.mutex("/locks/c").lock_blocking().unwrap();
    assert_eq!(guard.token(), FencingToken(7));
    let link = driver.join().unwrap();
    drop(guard);
    // The binding goes: the session ends for every handle.
    drop(link);
    assert!(matches!(
        locks.mutex("/locks/c").try_lock_blocking(),
        Err(Error::Closed)
    ));
    assert_eq!(
        block_on_until(locks.wait_idle(), Some(Instant::now())),
        Some(Err(Error::Closed))
    );
    locks.close_blocking();
}

#[test]
fn closing_ends_waiting_locks_through_the_core() {
    let (locks, mut link) = connected();
    let mutex = locks.mutex("/locks/d");
    let mut lock = pin!(mutex.lock());
    assert!(poll_once(lock.as_mut()).is_pending());
    let mut close = pin!(locks.close());
    assert!(poll_once(close.as_mut()).is_pending());
    assert!(link.is_closed());
    link.handle_session(SessionEvent::Closed, Instant::now());
    assert!(matches!(
        poll_once(lock.as_mut()),
        Poll::Ready(Err(Error::Closed))
    ));
    assert!(
        poll_once(close.as_mut()).is_pending(),
        "until the link goes"
    );
    drop(link);
    assert!(poll_once(close.as_mut()).is_ready());
}

#[test]
fn the_last_handle_closes_the_link() {
    let (locks, link) = connected();
    let mutex = locks.mutex("/locks/e");
    drop(locks);
    assert!(!link.is_closed(), "a lock object is a handle");
    drop(mutex);
    assert!(link.is_closed());
}

#[test]
fn slots_go_with_their_handles_whatever_ends_them() {
    let (locks, mut link) = connected();
    let now = Instant::now();
    // A try-only lock that finds the lock busy: refused, and forgotten.
    let mutex = locks.mutex("/locks/g");
    let mut attempt = pin!(mutex.try_lock());
    assert!(poll_once(attempt.as_mut()).is_pending());
    let sent = requests(&mut link);
    queue_at(&mut link, &sent, 9, vec![peer(1)], now);
    assert!(matches!(poll_once(attempt.as_mut()), Poll::Ready(Ok(None))));
    assert!(locks.shared().with(|s| s.locks.is_empty()));
    // A guard whose loss was read, then released through `release` (it watches
    // its node, to hear of the deletion).
    let watched = mutex.clone().watch_node();
    let mut lock = pin!(watched.lock());
    assert!(poll_once(lock.as_mut()).is_pending());
    // The try-only node's delete, then the new create and listing.
    let sent = requests(&mut link);
    let create = sent
        .iter()
        .position(|r| matches!(r.op, Op::Create { .. }))
        .expect("a create");
    let node = grant(&mut link, &sent[create..], 10);
    let guard = ready(lock.as_mut());
    link.handle_watch(node, lock_core::WatchKind::NodeDeleted, now);
    assert_eq!(
        guard.next_event_timeout_blocking(Duration::from_secs(5)),
        Some(LockEvent::Lost(LostReason::NodeDeleted))
    );
    assert_eq!(guard.status(), LockStatus::Lost(LostReason::NodeDeleted));
    assert_eq!(
        guard.release_blocking(),
        Err(Error::Lost(LostReason::NodeDeleted))
    );
    assert!(locks.shared().with(|s| s.locks.is_empty()));
}

#[test]
fn a_pending_lock_is_waited_for_with_a_timeout_or_cancelled_from_elsewhere() {
    let (locks, mut link) = connected();
    let mut pending = locks.mutex("/locks/h").start().unwrap();
    let sent = requests(&mut link);
    assert_eq!(sent.len(), 2, "started at once: create + list");
    assert!(pending.wait_timeout_blocking(Duration::ZERO).is_none());
    grant(&mut link, &sent, 11);
    let guard = pending
        .wait_timeout_blocking(Duration::from_secs(5))
        .expect("granted")
        .unwrap();
    assert_eq!(guard.token(), FencingToken(11));
    assert!(matches!(
        pending.wait_timeout_blocking(Duration::ZERO),
        Some(Err(Error::Cancelled))
    ));
    // Another waits behind it, and is cancelled from another thread.
    let waiter = locks.mutex("/locks/h").start().unwrap();
    let stop = waiter.canceller();
    std::thread::spawn(move || stop.cancel()).join().unwrap();
    assert!(matches!(waiter.wait_blocking(), Err(Error::Cancelled)));
    drop(guard);
}

/// The session ended and the next one opened before the election saw the
/// error: waiting for the *new* session to change would wait for ever.
#[test]
fn a_candidacy_failed_by_a_dead_session_rejoins_on_a_session_opened_meanwhile() {
    let (locks, mut link) = connected();
    let mut election = locks.election("/e", "a");
    let mut leading = Box::pin(election.leadership());
    assert!(poll_once(leading.as_mut()).is_pending());
    let sent = requests(&mut link);
    assert!(matches!(sent[0].op, Op::Create { .. }), "{:?}", sent[0].op);
    let now = Instant::now();
    // The create is answered for the dead session, then the binding reports
    // the expiry and the next session, all before the election looks.
    link.handle_reply(sent[0].id, Err(lock_core::ZkError::SessionExpired), now);
    link.handle_session(SessionEvent::Expired, now);
    link.handle_session(
        SessionEvent::Connected {
            session_id: SID + 1,
        },
        now,
    );
    let _ = requests(&mut link);
    assert!(poll_once(leading.as_mut()).is_pending());
    let rejoined = requests(&mut link);
    assert!(
        rejoined.iter().any(|r| matches!(r.op, Op::Create { .. })),
        "joined again on the new session: {rejoined:?}"
    );
}
