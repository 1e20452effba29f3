//! Downgrade in the core: the owner of a read/write lock's held write half takes
//! the read half without queueing behind its own write node (Curator's rule), and
//! fails at once when a writer of someone else queued between the two.
mod harness;

use harness::*;
use lock_core::*;

/// The owner "t" holds the write half of `/rw`.
fn writer_holds() -> (H, LockId, String) {
    H::holding(LockSpec::write("/rw").owner("t"))
}

#[test]
fn the_write_holder_takes_the_read_half_at_its_first_listing_and_keeps_it_after_releasing_the_write(
) {
    let (mut h, write, w) = writer_holds();
    // Not refused as a self-deadlock: a downgrade. Our write node is lower and
    // held: it does not block us.
    let (read, r) = h.served_acquire(LockSpec::read("/rw").owner("t"));
    assert_eq!(*h.acquired().path, r);
    assert!(h.watched().is_empty(), "no watch on our own write");
    assert_eq!(h.s.state(read), Some(LockState::Held));
    // Release the write: the read stays held.
    h.run(|s, now| s.release(write, now));
    assert_eq!(ops(&h.serve()), [delete_of(&w)]);
    h.expect_events([LockEvent::Released]);
    assert_eq!(h.s.state(read), Some(LockState::Held));
    assert_eq!(h.s.state(write), None);
}

/// Another owner's read waits behind "t"'s write, as any read behind a write.
/// (A mutex held by "t" is no write half: its owner's read of the same path is
/// refused, recipes::an_owner_never_waits_behind_its_own_node.)
#[test]
fn another_owners_read_still_queues_behind_the_write() {
    let (mut h, _, w) = writer_holds();
    let (_, r) = h.served_acquire(LockSpec::read("/rw").owner("u"));
    assert!(h.take_events().is_empty(), "waiting");
    let mut expected = vec![r, w];
    expected.sort();
    assert_eq!(h.watched(), expected);
}

/// Another session's writer waits for our write, and we would wait for it: a
/// self-deadlock at once (a try: busy), no watch set, and our read node goes.
#[test]
fn a_writer_queued_between_the_write_and_the_read_makes_the_downgrade_fail_at_once() {
    let self_deadlock = FailReason::SelfDeadlock {
        path: "/rw".into(),
        owner: "t".into(),
        held: NodeKind::Write,
    };
    for (spec, failed) in [
        (LockSpec::read("/rw").owner("t"), self_deadlock),
        (
            LockSpec::read("/rw").owner("t").try_only(),
            FailReason::WouldBlock,
        ),
    ] {
        let (mut h, _, _) = writer_holds();
        h.peer_joins("/rw", NodeKind::Write, 9);
        let read = h.acquire(spec);
        let served = ops(&h.serve());
        h.expect_events([LockEvent::Failed(failed)]);
        assert!(
            matches!(
                served[..],
                [Op::Create { .. }, Op::GetChildren { .. }, Op::Delete { .. }]
            ),
            "{served:?}"
        );
        assert!(h.watched().is_empty());
        assert_eq!(h.ours("/rw").len(), 1, "the write alone");
        assert_eq!(h.s.state(read), None);
    }
}

#[test]
fn a_read_started_after_the_write_was_released_is_an_ordinary_read() {
    let (mut h, write, _) = writer_holds();
    h.run(|s, now| s.release(write, now));
    h.serve();
    h.take_events();
    // Another session's writer queued meanwhile: the read waits for it (no
    // downgrade is in play), it does not fail.
    h.peer_joins("/rw", NodeKind::Write, 9);
    h.served_acquire(LockSpec::read("/rw").owner("t"));
    assert!(h.take_events().is_empty(), "waiting");
}
