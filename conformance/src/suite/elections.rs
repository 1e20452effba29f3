//! Elections a service can run forever: a leader cut off past its session timeout
//! loses its term before anyone else is elected, the next candidate leads once the
//! server expires the old session, and the old leader rejoins by itself on a new
//! session and can lead again.

use super::*;
use lock_client::LockStatus;

/// The leader is blackholed until the server expires its session. Asserts, on
/// every binding: the old leader's `Lost` comes before the new leader's grant
/// (its status already says `Lost` when the new leader is elected, and the
/// sequence of the two observations agrees), the new leader's token is greater,
/// the old leader's next `leadership()` rejoins (no `SessionExpired`) on a new
/// session while still cut off, its old node is gone, and it leads again once the
/// new leader resigns. Prints the no-leader window: from the old leader's `Lost`
/// (as its thread saw it) to the new leader's grant, against the session timeout.
pub fn election_rejoins_after_the_leader_is_cut_off(b: &Suite) {
    let server = b.env().shared();
    let path = unique_path("election");
    let admin = server.admin();
    let (ca, proxy) = connect_with_faults(b, server);
    // The candidate's session is not under test: it must survive the partition.
    let cb = connect_with(b, server, BYSTANDER_SESSION_TIMEOUT);
    let t = ca.session_timeout();
    let mut ea = ca.election(path.clone(), "a");
    let la = b
        .leadership(&mut ea, SHORT)
        .unwrap_or_else(|e| panic!("{}: a leads: {e}", b.name()));
    let old_session = la.grant().session_id;
    let old_node = name_of(la.path());
    let mut eb = cb.election(path.clone(), "b");
    admin.wait_children(&path, SHORT, &|c| c.len() == 2);
    assert!(!eb.is_leader(), "{}: b leads while a does", b.name());

    let seq = AtomicU64::new(0);
    proxy.blackhole();
    let cut = Instant::now();
    let (lost, lost_at, lost_seq, lb, elected_at, elected_seq, a_status_then) =
        thread::scope(|s| {
            let (seq, la) = (&seq, &la);
            let holder = s.spawn(move || {
                let lost = b.leadership_lost(la, LONG);
                (lost, Instant::now(), seq.fetch_add(1, Ordering::SeqCst))
            });
            let lb = b
                .leadership(&mut eb, LONG)
                .unwrap_or_else(|e| panic!("{}: b is elected after a's expiry: {e}", b.name()));
            let elected_at = Instant::now();
            let elected_seq = seq.fetch_add(1, Ordering::SeqCst);
            // Read where the binding's thread wrote it, whatever the holder's
            // thread has got round to: the term must be over already.
            let a_status_then = la.status();
            let (lost, lost_at, lost_seq) = holder.join().expect("holder thread");
            (
                lost,
                lost_at,
                lost_seq,
                lb,
                elected_at,
                elected_seq,
                a_status_then,
            )
        });
    let lost = lost.unwrap_or_else(|| panic!("{}: a never heard it lost", b.name()));
    assert!(
        matches!(
            lost,
            LostReason::SuspendedTooLong | LostReason::SessionExpired
        ),
        "{}: lost for {lost:?}",
        b.name()
    );
    assert!(
        matches!(a_status_then, LockStatus::Lost(_)),
        "{}: b was elected while a's term was {a_status_then:?} (two trusted leaders)",
        b.name()
    );
    assert!(
        lost_seq < elected_seq,
        "{}: b's election was seen before a's loss",
        b.name()
    );
    assert!(lb.token() > la.token(), "{}: tokens must grow", b.name());
    let window = elected_at.saturating_duration_since(lost_at);
    println!(
        "{}: no-leader window {window:?} = {:.2} T (T = {t:?}; a lost {lost:?} {:?} after the cut, b elected {:?} after it)",
        b.name(),
        window.as_secs_f64() / t.as_secs_f64(),
        lost_at - cut,
        elected_at - cut,
    );
    // Generous: the server expires the session about T after the last contact it
    // heard, and a loaded machine adds its delays.
    assert!(
        window < 2 * t + SHORT,
        "{}: no leader for {window:?} after a's loss (T = {t:?})",
        b.name()
    );

    // The old leader's supervision loop calls `leadership()` again at once, while
    // still cut off: it rejoins on the next session, it does not fail.
    drop(la);
    let (tx, rx) = std::sync::mpsc::channel();
    thread::scope(|s| {
        let ea = &mut ea;
        s.spawn(move || {
            let _ = tx.send(b.leadership(ea, LONG));
        });
        proxy.heal();
        // a's old node went with its session; its new one queues behind b's.
        let children =
            admin.wait_children(&path, LONG, &|c| c.len() == 2 && !c.contains(&old_node));
        assert_eq!(children.len(), 2);
        assert!(
            rx.try_recv().is_err(),
            "{}: a leads again while b leads",
            b.name()
        );
        let b_token = lb.token();
        b.resign(lb).expect("b resigns");
        let again = rx
            .recv_timeout(LONG)
            .expect("an answer")
            .unwrap_or_else(|e| panic!("{}: a rejoins and leads again: {e}", b.name()));
        assert_ne!(
            again.grant().session_id,
            old_session,
            "{}: a new session",
            b.name()
        );
        assert!(again.token() > b_token, "{}: tokens must grow", b.name());
        b.resign(again).expect("a resigns");
    });
    b.wait_idle(&ca).expect("idle");
    admin.wait_children(&path, SHORT, &|c| c.is_empty());
    b.close(&ca);
    b.close(&cb);
}

/// A leader that closes its client hands over at once: the next candidate leads
/// long before the session timeout a crash would cost.
pub fn election_hands_over_at_once_on_close(b: &Suite) {
    let server = b.env().shared();
    let path = unique_path("handover");
    let admin = server.admin();
    let long = BYSTANDER_SESSION_TIMEOUT;
    let (ca, cb) = (connect_with(b, server, long), connect_with(b, server, long));
    let mut ea = ca.election(path.clone(), "a");
    let la = b.leadership(&mut ea, SHORT).expect("a leads");
    let mut eb = cb.election(path.clone(), "b");
    admin.wait_children(&path, SHORT, &|c| c.len() == 2);
    let (left, lb, elected_at) = thread::scope(|s| {
        let candidate = s.spawn(|| {
            let lb = b.leadership(&mut eb, LONG);
            (lb, Instant::now())
        });
        let left = Instant::now();
        b.close(&ca);
        let (lb, elected_at) = candidate.join().expect("candidate thread");
        (left, lb, elected_at)
    });
    let lb = lb.unwrap_or_else(|e| panic!("{}: b is elected: {e}", b.name()));
    assert!(matches!(la.status(), LockStatus::Lost(_)));
    let window = elected_at - left;
    println!(
        "{}: handover on close took {window:?} (T = {long:?})",
        b.name()
    );
    assert!(
        window < long / 2,
        "{}: b led {window:?} after a closed (T = {long:?}): a session-timeout gap",
        b.name()
    );
    b.resign(lb).expect("b resigns");
    b.close(&cb);
}
