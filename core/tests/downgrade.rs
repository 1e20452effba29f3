//! Downgrade in the core: the owner of a read/write lock's held write half takes
//! the read half without queueing behind its own write node (Curator's rule), and
//! fails at once when a writer of someone else queued between the two.
mod harness;

use harness::*;
use lock_core::*;

/// The owner "t" holds the write half of `/rw` (node seq 1).
fn writer_holds(h: &mut H) -> (LockId, String) {
    h.held_spec(LockSpec::write("/rw").owner("t"), 1)
}

#[test]
fn the_write_holder_takes_the_read_half_at_its_first_listing_and_keeps_it_after_releasing_the_write(
) {
    let mut h = H::new();
    let (write, w) = writer_holds(&mut h);
    // Not refused as a self-deadlock: a downgrade.
    let read = h.acquire(LockSpec::read("/rw").owner("t"));
    let r = h.answer_create(2);
    // Our write node is lower and held: it does not block us.
    h.answer_list(&[&name_of(&w), &name_of(&r)]);
    let events = h.take_events();
    assert!(
        matches!(&events[..], [LockEvent::Acquired(g)] if g.path == r),
        "{events:?}"
    );
    assert!(h.no_requests(), "no watch on our own write: {:?}", h.reqs);
    assert_eq!(h.s.state(read), Some(LockState::Held));
    // Release the write: the read stays held.
    h.s.release(write, h.now).unwrap();
    h.drain();
    let del = h.next_req();
    assert_eq!(
        del.op,
        Op::Delete {
            path: w.clone(),
            version: None
        }
    );
    h.reply(del.id, Ok(Reply::Deleted));
    assert_eq!(h.take_events(), vec![LockEvent::Released]);
    assert_eq!(h.s.state(read), Some(LockState::Held));
    assert_eq!(h.s.state(write), None);
}

#[test]
fn another_owner_or_a_mutex_holder_still_queues_behind_the_write() {
    // Another owner's read waits behind "t"'s write, as any read behind a write.
    let mut h = H::new();
    let (_, w) = writer_holds(&mut h);
    h.acquire(LockSpec::read("/rw").owner("u"));
    let r = h.answer_create(2);
    h.answer_list(&[&name_of(&w), &name_of(&r)]);
    assert!(h.take_events().is_empty(), "waiting");
    h.answer_watch(&r, SID);
    h.answer_watch(&w, SID);
    assert!(h.no_requests());
    // A mutex (not a read/write lock's write half) held by "t": the read half of
    // the same path would wait for it forever, so it is refused as before.
    let mut h = H::new();
    h.held_spec(LockSpec::exclusive("/m").owner("t"), 1);
    let refused = h.s.acquire(LockSpec::read("/m").owner("t"), h.now);
    assert!(
        matches!(refused, Err(UsageError::SelfDeadlock { .. })),
        "{refused:?}"
    );
}

#[test]
fn a_writer_queued_between_the_write_and_the_read_makes_the_downgrade_fail_at_once() {
    let mut h = H::new();
    let (_, w) = writer_holds(&mut h);
    let read = h.acquire(LockSpec::read("/rw").owner("t"));
    let r = h.answer_create(3);
    // Another session's writer (seq 2) waits for our write; we would wait for it.
    let between = peer(NodeKind::Write, 9, 2);
    h.answer_list(&[&name_of(&w), &between, &name_of(&r)]);
    let events = h.take_events();
    assert_eq!(
        events,
        vec![LockEvent::Failed(FailReason::SelfDeadlock {
            path: "/rw".into(),
            owner: "t".into(),
            held: NodeKind::Write
        })]
    );
    // No watch was set; our read node goes.
    let del = h.next_req();
    assert_eq!(
        del.op,
        Op::Delete {
            path: r.clone(),
            version: None
        }
    );
    h.reply(del.id, Ok(Reply::Deleted));
    assert!(h.no_requests());
    assert_eq!(h.s.state(read), None);
}

#[test]
fn a_try_only_downgrade_behind_a_queued_writer_finds_the_lock_busy() {
    let mut h = H::new();
    let (_, w) = writer_holds(&mut h);
    h.acquire(LockSpec::read("/rw").owner("t").try_only());
    let r = h.answer_create(3);
    let between = peer(NodeKind::Write, 9, 2);
    h.answer_list(&[&name_of(&w), &between, &name_of(&r)]);
    assert_eq!(
        h.take_events(),
        vec![LockEvent::Failed(FailReason::WouldBlock)]
    );
}

#[test]
fn a_read_started_after_the_write_was_released_is_an_ordinary_read() {
    let mut h = H::new();
    let (write, w) = writer_holds(&mut h);
    h.s.release(write, h.now).unwrap();
    h.drain();
    let del = h.next_req();
    h.reply(del.id, Ok(Reply::Deleted));
    h.take_events();
    // Another session's writer queued meanwhile: the read waits for it (no
    // downgrade is in play), it does not fail.
    h.acquire(LockSpec::read("/rw").owner("t"));
    let r = h.answer_create(3);
    let other = peer(NodeKind::Write, 9, 2);
    h.answer_list(&[&other, &name_of(&r)]);
    assert!(h.take_events().is_empty(), "waiting");
    let _ = w;
}
