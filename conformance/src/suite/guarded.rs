//! What a holder writes only while it holds, each in one `multi` with a check of
//! its lock node (or with the delete of it): fenced writes, crash-detecting
//! sections, lock-delay markers, the record a forced break leaves.

use super::*;
use lock_client::{BreakError, BreakLock, BreakOutcome, FencedError, Writes};
use lock_core::{LockSpec, MultiResult, ZkError};

/// The markers a holder leaves in its lock directory (lock-core's names).
const SECTION_MARKER: &str = "zkl-section";
const DELAY_MARKER: &str = "zkl-delay";
const BREAK_RECORD: &str = "zkl-broken";

fn sorted(mut names: Vec<String>) -> Vec<String> {
    names.sort();
    names
}

/// Fenced writes apply while held; a failing write applies nothing; once an
/// administrator deletes the lock node, they fail with `NotHeld` and nothing is
/// written.
pub fn fenced_write_only_while_held(b: &Suite) {
    let (server, dir, admin) = shared(b, "fenced");
    let data = format!("{dir}-data");
    let c = connect(b, server);
    // Watching its node, the holder hears of the deletion below at once.
    let mut guard = lock(b, &c, Kind::WatchedMutex, &dir);

    let created = b.fenced_write(&guard, Writes::new().create(&data, b"v0"));
    assert_eq!(
        created,
        Ok(vec![MultiResult::Created { path: data.clone() }])
    );
    match b
        .fenced_write(&guard, Writes::new().set_data(&data, b"v1"))
        .as_deref()
    {
        Ok([MultiResult::SetData { stat }]) => assert_eq!(stat.version, 1, "{}", b.name()),
        other => panic!("{}: {other:?}", b.name()),
    }
    assert_eq!(admin.data(&data), Some((b"v1".to_vec(), 1)));

    let failing = Writes::new().set_data(&data, b"v2").create(&data, b"");
    assert_eq!(
        b.fenced_write(&guard, failing),
        Err(FencedError::Write {
            index: 1,
            error: ZkError::NodeExists
        })
    );
    assert_eq!(
        admin.data(&data),
        Some((b"v1".to_vec(), 1)),
        "a failed multi wrote"
    );

    assert!(admin.delete(guard.path()));
    expect_lost(b, &mut guard, LostReason::NodeDeleted);
    assert_eq!(
        b.fenced_write(&guard, Writes::new().set_data(&data, b"v3")),
        Err(FencedError::NotHeld)
    );
    assert_eq!(
        admin.data(&data),
        Some((b"v1".to_vec(), 1)),
        "written without the lock"
    );
    b.close(&c);
}

/// Uncontended: the holder's client is closed inside a section (no release); the
/// next holder learns of it from the listing of its acquisition (same request
/// count as a plain lock), repairs, and a clean release (one request: the section
/// closes in the same multi as the delete) leaves nothing to report.
pub fn crash_in_section_detected_uncontended(b: &Suite) {
    let (server, dir, admin) = shared(b, "crash");
    // Long sessions: few syncs to blur the request counts.
    let a = b.client_on(server, BYSTANDER_SESSION_TIMEOUT);
    let c = b.client_on(server, BYSTANDER_SESSION_TIMEOUT);
    let detecting = || LockSpec::write(&dir).detect_crashes();

    let guard = b.acquire(&a, detecting(), SHORT).expect("lock");
    assert!(!guard.previous_holder_crashed());
    b.section(&guard, true).expect("open a section");
    assert!(admin.children(&dir).contains(&SECTION_MARKER.to_owned()));
    b.close(&a); // dies inside the section
    drop(guard);

    // Sections need crash detection.
    let plain = lock(b, &c, Kind::Mutex, &format!("{dir}-no-detection"));
    assert!(matches!(b.section(&plain, true), Err(Error::Usage(_))));
    b.release(plain).expect("release");

    let before = b.stats(&c).expect("stats").requests;
    let guard = b.acquire(&c, detecting(), SHORT).expect("lock");
    let crash_cost = b.stats(&c).expect("stats").requests - before;
    assert!(
        guard.previous_holder_crashed(),
        "{}: the crash inside the section went unseen",
        b.name()
    );
    b.section(&guard, false).expect("repaired");
    assert!(!admin.children(&dir).contains(&SECTION_MARKER.to_owned()));
    b.section(&guard, true).expect("open a section");
    let before = b.stats(&c).expect("stats").requests;
    b.release(guard).expect("release");
    let release_cost = b.stats(&c).expect("stats").requests - before;
    assert_eq!(
        release_cost,
        1,
        "{}: release took more than one request",
        b.name()
    );
    assert!(
        admin.children(&dir).is_empty(),
        "marker or node left by a clean release"
    );

    let guard = b.acquire(&c, detecting(), SHORT).expect("lock");
    assert!(
        !guard.previous_holder_crashed(),
        "a clean release reported as a crash"
    );
    b.release(guard).expect("release");

    // A plain lock on an existing directory (a persistent node), for comparison.
    let plain_dir = format!("{dir}-plain");
    let maker = lock(b, &c, Kind::Mutex, &format!("{dir}-maker"));
    b.fenced_write(&maker, Writes::new().create(&plain_dir, b""))
        .expect("the plain directory");
    b.release(maker).expect("release");
    let before = b.stats(&c).expect("stats").requests;
    let guard = lock(b, &c, Kind::Mutex, &plain_dir);
    let plain_cost = b.stats(&c).expect("stats").requests - before;
    assert_eq!(
        crash_cost,
        plain_cost,
        "{}: crash detection cost requests on the uncontended path",
        b.name()
    );
    b.release(guard).expect("release");
    b.close(&c);
}

/// Contended: the holder's guard is dropped inside a section (as by a panic
/// unwinding through it) while another session waits: the waiter's grant reports
/// the crash. Then a clean release inside a section, with a waiter: no crash.
pub fn crash_in_section_detected_contended(b: &Suite) {
    let (server, dir, admin) = shared(b, "crash-contended");
    let (a, c) = (connect(b, server), connect(b, server));
    let detecting = || LockSpec::write(&dir).detect_crashes();

    let guard = b.acquire(&a, detecting(), SHORT).expect("lock");
    b.section(&guard, true).expect("open a section");
    let waiter = b.start_spec(&c, detecting()).expect("start");
    admin.wait_children(&dir, SHORT, &|c| c.len() == 3); // holder, marker, waiter
    drop(guard);
    let c_guard = b.finish(waiter, SHORT).expect("the waiter holds");
    assert!(
        c_guard.previous_holder_crashed(),
        "{}: the dropped section went unseen",
        b.name()
    );
    b.wait_idle(&a).expect("idle");
    assert_eq!(
        admin.children(&dir),
        sorted(vec![name_of(c_guard.path()), SECTION_MARKER.to_owned()])
    );

    b.section(&c_guard, true).expect("takes the section over");
    let waiter = b.start_spec(&a, detecting()).expect("start");
    admin.wait_children(&dir, SHORT, &|c| c.len() == 3);
    b.release(c_guard).expect("release");
    let a_guard = b.finish(waiter, SHORT).expect("the waiter holds");
    assert!(
        !a_guard.previous_holder_crashed(),
        "{}: a clean release reported as a crash",
        b.name()
    );
    assert_eq!(admin.children(&dir), vec![name_of(a_guard.path())]);
    b.release(a_guard).expect("release");
    b.close(&a);
    b.close(&c);
}

/// Lock-delay: the holder keeps a marker for its hold; after its end without a
/// release (its client closed) the next holder is granted no sooner than the
/// delay after it found the lock free; after a clean release, at once, and the
/// last clean release takes the marker with it.
pub fn lock_delay_follows_an_unclean_end_only(b: &Suite) {
    const DELAY: Duration = Duration::from_millis(1500);
    let (server, dir, admin) = shared(b, "lock-delay");
    let (a, c, d) = (connect(b, server), connect(b, server), connect(b, server));
    let delayed = || LockSpec::write(&dir).lock_delay(DELAY);

    let held = b.acquire(&a, delayed(), SHORT).expect("lock");
    assert!(admin.children(&dir).contains(&DELAY_MARKER.to_owned()));
    let waiter = b.start_spec(&c, delayed()).expect("start");
    admin.wait_children(&dir, SHORT, &|c| c.len() == 3); // holder, marker, waiter
    let ended = Instant::now();
    b.close(&a); // no release: an unclean end
    drop(held);
    let guard = b.finish(waiter, SHORT + DELAY).expect("the waiter holds");
    let waited = ended.elapsed();
    assert!(
        waited >= DELAY,
        "{}: granted {waited:?} after an unclean end, within the {DELAY:?} delay",
        b.name()
    );

    let waiter = b.start_spec(&d, delayed()).expect("start");
    admin.wait_children(&dir, SHORT, &|c| c.len() == 3);
    let released = Instant::now();
    b.release(guard).expect("release");
    let next = b.finish(waiter, SHORT).expect("the waiter holds");
    let waited = released.elapsed();
    assert!(
        waited < DELAY,
        "{}: a clean release delayed the next holder ({waited:?})",
        b.name()
    );
    b.release(next).expect("release");
    assert!(
        admin.children(&dir).is_empty(),
        "a clean release takes the marker with it"
    );
    b.close(&c);
    b.close(&d);
}

/// Breaking a wedged holder: refused unless forced, naming the holder and
/// touching nothing; forced, its node is deleted (the holder hears it), the
/// waiter is granted, and the break's record (in the same `multi` as the delete)
/// says whose node, which token and who broke it.
pub fn forced_break_leaves_its_record(b: &Suite) {
    let (server, dir, admin) = shared(b, "break");
    let (holder, waiter, operator) = (connect(b, server), connect(b, server), connect(b, server));
    let holder = holder.with_owner("wedged");
    let mut stuck = lock(b, &holder, Kind::WatchedMutex, &dir);
    let pending = b.start(&waiter, Kind::Mutex, &dir).expect("start");
    admin.wait_children(&dir, SHORT, &|c| c.len() == 2);

    match b.break_lock(&operator, &dir, BreakLock::holder()) {
        Err(Error::Break(BreakError::NotForced { target, held: true })) => {
            assert_eq!(format!("{}/{}", target.dir, target.node), stuck.path());
            assert_eq!(target.owner.as_deref(), Some("wedged"));
            assert_eq!(Some(target.session), holder.session_id());
            assert_eq!(target.token, stuck.token());
        }
        other => panic!("{}: a break without force: {other:?}", b.name()),
    }
    assert!(b.is_trusted(&stuck), "a refused break touched the holder");
    assert_eq!(admin.children(&dir).len(), 2, "a refused break deleted");
    let broken = b
        .break_lock(
            &operator,
            &dir,
            BreakLock::holder().force().by("ops@conformance"),
        )
        .expect("a forced break");
    assert_eq!(broken.outcome, BreakOutcome::Deleted);
    assert_eq!(broken.participant.token, stuck.token());
    expect_lost(b, &mut stuck, LostReason::NodeDeleted);
    let granted = b.finish(pending, SHORT).expect("the waiter holds");
    assert!(granted.token() > stuck.token());
    assert_eq!(
        admin.children(&dir),
        sorted(vec![name_of(granted.path()), BREAK_RECORD.to_owned()])
    );
    let last = b
        .participants(&operator, &dir)
        .expect("participants")
        .last_break
        .unwrap_or_else(|| panic!("{}: no record of the break", b.name()));
    assert_eq!(last.node, name_of(stuck.path()));
    assert_eq!(last.token, stuck.token());
    assert_eq!(Some(last.session), holder.session_id());
    assert_eq!(last.by.as_deref(), Some("ops@conformance"));
    b.release(granted).expect("release");
    for client in [holder, waiter, operator] {
        b.close(&client);
    }
}
