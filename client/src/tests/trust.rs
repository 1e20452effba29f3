//! What the handles say of a held lock's trust, on a manual clock: once the
//! trust deadline has passed they say so, before the link has handled it.

use super::*;
use std::sync::Arc;

/// Grants the acquisition whose requests the link has now, at the clock's now.
fn grant_now(link: &mut Link, clock: &ManualClock, czxid: i64) {
    let sent = requests(link);
    queue_at(link, &sent, czxid, vec![], clock.now());
}

/// A client on `clock` holding the mutex `/l`.
fn held_on(clock: &Arc<ManualClock>) -> (LockClient, Link, LockGuard) {
    let (locks, mut link) = proving_on(clock.clone());
    let mut pending = locks.mutex("/l").start().unwrap();
    grant_now(&mut link, clock, 5);
    let guard = ready(std::pin::Pin::new(&mut pending));
    (locks, link, guard)
}

#[test]
fn a_guard_past_its_deadline_is_suspended_before_the_link_runs() {
    let clock = ManualClock::new();
    let (_locks, mut link, guard) = held_on(&clock);
    let until = guard.trusted_until().expect("a grant proves contact");
    assert!(until > clock.now());

    clock.set(until - Duration::from_millis(1));
    assert_eq!(guard.status(), LockStatus::Held);
    assert!(guard.is_trusted());

    // The deadline passes and the link has not run (a process just continued
    // from a pause): every reading says so, and they agree.
    clock.set(until);
    assert_eq!(guard.status(), LockStatus::Suspended);
    assert!(!guard.is_trusted());
    assert_eq!(guard.trusted_until(), Some(until));
    assert!(format!("{guard:?}").contains("Suspended"), "{guard:?}");

    // The link gets to the deadline: the lock is lost, with the driver's reason.
    clock.set(until + Duration::from_secs(5));
    link.handle_timeout(clock.now());
    assert_eq!(
        guard.status(),
        LockStatus::Lost(lock_core::LostReason::SuspendedTooLong)
    );
    assert!(!guard.is_trusted());
    assert_eq!(guard.trusted_until(), None);
}

#[test]
fn a_renewed_proof_keeps_a_guard_trusted_past_the_first_deadline() {
    let clock = ManualClock::new();
    let (_locks, mut link, guard) = held_on(&clock);
    let first = guard.trusted_until().unwrap();
    // The link's syncs go and are answered (a proof from an unknown server
    // counts a third of T late): the deadline moves, and the guard is trusted
    // at the old one.
    for _ in 0..12 {
        clock.set(clock.now() + Duration::from_millis(500));
        link.handle_timeout(clock.now());
        for sent in requests(&mut link) {
            if matches!(sent.op, Op::Sync { .. }) {
                link.handle_reply(sent.id, Ok(Reply::Synced), clock.now());
            }
        }
    }
    let renewed = guard.trusted_until().unwrap();
    assert!(renewed > first, "{first:?} -> {renewed:?}");
    clock.set(first);
    assert!(guard.is_trusted());
    clock.set(renewed);
    assert!(!guard.is_trusted());
}

#[test]
fn a_leadership_past_its_deadline_is_not_trusted_before_the_link_runs() {
    let clock = ManualClock::new();
    let (locks, mut link) = proving_on(clock.clone());
    let mut election = locks.election("/e", "a");
    let leadership = {
        let mut leading = Box::pin(election.leadership());
        assert!(poll_once(leading.as_mut()).is_pending());
        grant_now(&mut link, &clock, 5);
        ready(leading.as_mut())
    };
    assert!(leadership.is_trusted() && election.is_leader());
    let until = leadership.trusted_until().unwrap();
    clock.set(until);
    assert_eq!(leadership.status(), LockStatus::Suspended);
    assert!(!leadership.is_trusted());
    assert!(!election.is_leader());
    assert_eq!(leadership.trusted_until(), Some(until));
}

#[test]
fn a_multi_guard_past_its_deadline_is_suspended_before_the_link_runs() {
    let clock = ManualClock::new();
    let (locks, mut link) = proving_on(clock.clone());
    let multi = locks.multi(["/a", "/b"]);
    let guard = {
        let mut locking = Box::pin(multi.lock());
        for czxid in [5, 6] {
            assert!(poll_once(locking.as_mut()).is_pending());
            grant_now(&mut link, &clock, czxid);
        }
        ready(locking.as_mut())
    };
    assert!(guard.is_trusted());
    let until = guard.parts()[0].trusted_until().unwrap();
    clock.set(until);
    assert_eq!(guard.status(), LockStatus::Suspended);
    assert!(!guard.is_trusted());
}

#[test]
fn a_held_lock_is_not_trusted_once_the_client_closes_before_the_link_runs() {
    let clock = ManualClock::new();
    let (locks, mut link, guard) = held_on(&clock);
    assert!(guard.is_trusted());
    let mut close = std::pin::pin!(locks.close());
    assert!(poll_once(close.as_mut()).is_pending());
    // The binding has not fed `Closed` yet, and may close the session first: the
    // server then deletes the node and grants it to another session.
    assert!(!guard.is_trusted());
    assert_eq!(guard.status(), LockStatus::Suspended);
    link.handle_session(SessionEvent::Closed, clock.now());
    assert_eq!(guard.status(), LockStatus::Lost(LostReason::Closed));
}
