//! A holder asked to let go: revocation by another session (the holder decides),
//! a revoked waiter (it fails), and a lease that ends the hold by itself.

use super::*;
use lock_client::{FencedError, LockStatus, Writes};
use lock_core::LockSpec;

/// A revocable holder is asked by another session (`revoke` on the lock path
/// names exactly its node), sees `RevocationRequested`, releases, and the
/// revoker's waiter gets the lock; with nothing left to revoke, the answer is
/// empty.
pub fn revocation_round_trip(b: &Suite) {
    let (server, dir, admin) = shared(b, "revoke");
    let (a, c) = (connect(b, server), connect(b, server));
    let mut held = b
        .acquire(&a, LockSpec::write(&dir).revocable(), SHORT)
        .expect("lock");
    assert!(!held.is_revocation_requested());
    let waiter = b.start(&c, Kind::Mutex, &dir).expect("start the waiter");
    admin.wait_children(&dir, SHORT, &|c| c.len() == 2);

    let asked = b.revoke(&c, &dir).expect("revoke");
    assert_eq!(
        asked,
        vec![held.path().to_owned()],
        "only the holder is asked"
    );
    assert_eq!(
        next_event(b, &mut held, SHORT),
        LockEvent::RevocationRequested
    );
    assert!(held.is_revocation_requested());
    // Already requested: answered at the first look, the event having been read.
    assert_eq!(b.revocation_requested(&held, Duration::ZERO), Some(Ok(())));
    assert_eq!(held.status(), LockStatus::Held, "the holder decides");
    assert_eq!(
        admin.data(held.path()).map(|(data, _)| data),
        Some(b"__REVOKE__".to_vec())
    );

    let token = held.token().0;
    b.release(held).expect("release");
    let next = b
        .finish(waiter, SHORT)
        .expect("the revoker's waiter acquires");
    assert!(next.token().0 > token);
    assert_eq!(admin.children(&dir), vec![name_of(next.path())]);
    b.release(next).expect("release");
    assert_eq!(b.revoke(&c, &dir), Ok(Vec::new()), "nothing to revoke");
    b.close(&a);
    b.close(&c);
}

/// Revoking a revocable waiter by its node path: its acquisition fails with the
/// typed `Error::Revoked` and its node is gone; the holder is untouched.
pub fn revoking_a_waiter_fails_it_and_leaves_no_node(b: &Suite) {
    let (server, dir, admin) = shared(b, "revoke-waiter");
    let (a, c) = (connect(b, server), connect(b, server));
    let held = lock(b, &a, Kind::Mutex, &dir);
    let waiter = b
        .start_spec(&c, LockSpec::write(&dir).revocable())
        .expect("start the waiter");
    let children = admin.wait_children(&dir, SHORT, &|c| c.len() == 2);
    let holder = name_of(held.path());
    let waiting = children.iter().find(|n| **n != holder).expect("the waiter");
    let target = format!("{dir}/{waiting}");

    assert_eq!(b.revoke(&a, &target), Ok(vec![target.clone()]));
    assert_eq!(b.finish(waiter, SHORT).map(drop), Err(Error::Revoked));
    b.wait_idle(&c).expect("idle");
    assert_eq!(
        admin.children(&dir),
        vec![holder],
        "the revoked waiter left a node"
    );
    assert_eq!(held.status(), LockStatus::Held);
    assert!(!held.is_revocation_requested());
    b.release(held).expect("release");
    b.close(&a);
    b.close(&c);
}

/// A lease: the holder loses the lock after `max_hold` (`Lost(LeaseExpired)`),
/// its node is deleted, the next waiter acquires (not before), and the expired
/// guard neither writes nor releases.
pub fn lease_expires_and_next_waiter_acquires(b: &Suite) {
    let max_hold = Duration::from_secs(1);
    // Clocks read on two threads: a little slack for when each is read.
    let early = max_hold - Duration::from_millis(50);
    let (server, dir, admin) = shared(b, "lease");
    let (a, c) = (connect(b, server), connect(b, server));
    let mut guard = b
        .acquire(&a, LockSpec::write(&dir).max_hold(max_hold), SHORT)
        .expect("lock");
    let granted = Instant::now();
    let (lost_at, (acquired_at, next)) = thread::scope(|s| {
        // The waiter reads the clock itself, the moment it is granted.
        let waiter = s.spawn(|| {
            let next = b.lock(&c, Kind::Mutex, &dir, Wait::Timeout(SHORT));
            (Instant::now(), next.expect("the next waiter acquires"))
        });
        admin.wait_children(&dir, SHORT, &|c| c.len() == 2);
        expect_lost(b, &mut guard, LostReason::LeaseExpired);
        let lost_at = Instant::now();
        (lost_at, waiter.join().expect("waiter thread"))
    });
    assert!(lost_at - granted >= early, "lease ended early");
    assert!(acquired_at - granted >= early, "the waiter got in early");
    eprintln!(
        "{}: lease lost {:?} and the waiter acquired {:?} after the grant",
        b.name(),
        lost_at - granted,
        acquired_at - granted
    );
    assert!(next.token().0 > guard.token().0);
    assert_eq!(guard.status(), LockStatus::Lost(LostReason::LeaseExpired));
    assert_eq!(
        b.fenced_write(&guard, Writes::new().delete(format!("{dir}-x"))),
        Err(FencedError::NotHeld)
    );
    assert_eq!(b.release(guard), Err(Error::Lost(LostReason::LeaseExpired)));
    assert_eq!(admin.children(&dir), vec![name_of(next.path())]);
    b.release(next).expect("release");
    b.close(&a);
    b.close(&c);
}
