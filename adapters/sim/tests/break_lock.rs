//! Breaking a stuck lock (`LockClient::break_lock`) on the in-process server,
//! through the real API: the holder inspected (and only it) deleted, the broken
//! holder told, the next waiter granted. (Refused unless forced, and the forced
//! break's record: the conformance suite's `forced_break_leaves_its_record`; a
//! plain holder learning at its next fenced write or release: zklock's
//! `cli/tests/break_lock.rs`.) Every wait has a generous bound that turns a hang
//! into a failure.

use lock_client::{BreakError, BreakLock, BreakOutcome, Error};
use lock_core::LostReason;
use lock_sim::Server;
use std::time::Duration;

const BOUND: Duration = Duration::from_secs(10);

#[test]
fn several_holders_need_a_node_and_a_named_waiter_can_be_broken() {
    let server = Server::new();
    let (a, b, c, admin) = (
        server.client(),
        server.client(),
        server.client(),
        server.client(),
    );
    // Nothing there.
    assert_eq!(
        admin.break_lock_blocking("/locks/r", BreakLock::holder().force()),
        Err(Error::Break(BreakError::NobodyHolds {
            path: "/locks/r".into()
        }))
    );
    let r1 = a.rwlock("/locks/r").read().lock_blocking().unwrap();
    let r2 = b.rwlock("/locks/r").read().lock_blocking().unwrap();
    let mut writer = c.rwlock("/locks/r").write().start().unwrap();
    assert!(writer.queue_watch().changed_blocking().is_some());
    let name = |path: &str| path.rsplit('/').next().unwrap().to_owned();

    // Two readers hold: name one.
    match admin.break_lock_blocking("/locks/r", BreakLock::holder().force()) {
        Err(Error::Break(BreakError::SeveralHolders { holders, .. })) => {
            assert_eq!(holders, [name(r1.path()), name(r2.path())])
        }
        other => panic!("{other:?}"),
    }
    // A name that takes no part: the participants are named.
    match admin.break_lock_blocking("/locks/r", BreakLock::node("nobody-0000000009").force()) {
        Err(Error::Break(BreakError::NoSuchNode { participants, .. })) => {
            assert_eq!(participants.len(), 3)
        }
        other => panic!("{other:?}"),
    }
    // The waiting writer, named by its full path: the readers stay; it fails
    // at its next look at the queue (when a reader leaves: two blockers ahead,
    // it does not watch its own node).
    let waiting = admin.participants_blocking("/locks/r").unwrap().waiters[0].clone();
    let broken = admin
        .break_lock_blocking(
            "/locks/r",
            BreakLock::node(format!("/locks/r/{}", waiting.node)).force(),
        )
        .unwrap();
    assert!(!broken.held);
    assert_eq!(broken.outcome, BreakOutcome::Deleted);
    assert!(r1.is_trusted() && r2.is_trusted());
    r2.release_blocking().unwrap();
    assert_eq!(
        writer
            .wait_timeout_blocking(BOUND)
            .expect("told in time")
            .err(),
        Some(Error::NodeDeleted)
    );
    // One reader, by name.
    admin
        .break_lock_blocking("/locks/r", BreakLock::node(name(r1.path())).force())
        .unwrap();
    assert_eq!(
        r1.release_blocking(),
        Err(Error::Lost(LostReason::NodeDeleted))
    );
    assert_eq!(
        server.children("/locks/r").unwrap_or_default(),
        ["zkl-broken"],
        "only the record of the last break"
    );
}

#[test]
fn a_break_leaves_the_crash_marker_so_the_next_holder_sees_an_unclean_end() {
    let server = Server::new();
    let (holder, next, admin) = (server.client(), server.client(), server.client());
    let stuck = holder
        .mutex("/locks/s")
        .detect_crashes()
        .lock_blocking()
        .unwrap();
    stuck.open_section_blocking().unwrap();
    admin
        .break_lock_blocking("/locks/s", BreakLock::holder().force())
        .unwrap();
    let granted = next
        .mutex("/locks/s")
        .detect_crashes()
        .lock_blocking()
        .unwrap();
    assert!(
        granted.previous_holder_crashed(),
        "the break removed the holder's crash marker"
    );
    granted.release_blocking().unwrap();
}
