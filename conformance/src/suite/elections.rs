//! Elections a service can run forever: a leader cut off past its session timeout
//! loses its term before anyone else is elected, the next candidate leads once the
//! server expires the old session, and the old leader rejoins by itself on a new
//! session and can lead again.

use super::*;
use lock_client::{ElectionEvent, LockStatus};

/// The leader is blackholed until the server expires its session. Asserts, on
/// every binding: the old leader's `Lost` comes before the new leader's grant
/// (its status already says `Lost` when the new leader is elected, and the
/// sequence of the two observations agrees), the new leader's token is greater,
/// the old leader's next `leadership()` rejoins (no `SessionExpired`) on a new
/// session while still cut off, its old node is gone, and it leads again once the
/// new leader resigns. Prints the no-leader window: from the old leader's `Lost`
/// (as its thread saw it) to the new leader's grant, against the session timeout.
pub fn election_rejoins_after_the_leader_is_cut_off(b: &Suite) {
    let (server, path, admin) = shared(b, "election");
    let (ca, proxy) = connect_with_faults(b, server);
    // The candidate's session is not under test: it must survive the partition.
    let cb = b.client_on(server, BYSTANDER_SESSION_TIMEOUT);
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
/// long before the session timeout a crash would cost. The old term ends
/// `Lost(Closed)` and is not trusted at the moment the next candidate is told it
/// leads (never two trusted leaders); an observer on a third session sees the
/// change; the closed client's participant cannot rejoin (`Error::Closed`).
pub fn election_hands_over_at_once_on_close(b: &Suite) {
    let (server, path, admin) = shared(b, "handover");
    let long = BYSTANDER_SESSION_TIMEOUT;
    let (ca, cb, cc) = (
        b.client_on(server, long),
        b.client_on(server, long),
        b.client_on(server, long),
    );
    let mut ea = ca.election(path.clone(), "a");
    let la = b.leadership(&mut ea, SHORT).expect("a leads");
    let mut eb = cb.election(path.clone(), "b");
    admin.wait_children(&path, SHORT, &|c| c.len() == 2);
    let mut observer = b.observe_election(&cc, &path);
    assert_eq!(observer.leader().expect("a leader").id, b"a");
    assert_eq!(observer.participants(), 2);
    let (left, lb, elected_at, a_trusted_then) = thread::scope(|s| {
        let candidate = s.spawn(|| {
            let lb = b.leadership(&mut eb, LONG);
            // The moment b is told it leads, a must not be trusted.
            (lb, Instant::now(), la.is_trusted())
        });
        let left = Instant::now();
        b.close(&ca);
        let (lb, elected_at, a_trusted_then) = candidate.join().expect("candidate thread");
        (left, lb, elected_at, a_trusted_then)
    });
    let lb = lb.unwrap_or_else(|e| panic!("{}: b is elected: {e}", b.name()));
    assert!(!a_trusted_then, "{}: two trusted leaders", b.name());
    assert_eq!(b.leadership_lost(&la, SHORT), Some(LostReason::Closed));
    assert!(!ea.is_leader() && !la.is_trusted());
    assert!(eb.is_leader());
    assert!(lb.token() > la.token(), "{}: tokens must grow", b.name());
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
    // The observer may see nobody lead in between.
    loop {
        let leader = b.leader_changed(&mut observer, SHORT);
        match leader.as_ref().map(|l| l.id.as_slice()) {
            Some(b"b") => break,
            None => {}
            other => panic!("{}: observer saw {other:?} after the handover", b.name()),
        }
    }
    assert_eq!(observer.leader().expect("b").token, lb.token());
    assert_eq!(observer.participants(), 1);
    assert_eq!(b.leadership(&mut ea, SHORT).unwrap_err(), Error::Closed);
    b.resign(lb).expect("b resigns");
    assert_eq!(b.leader_changed(&mut observer, SHORT), None);
    drop(observer);
    b.close(&cb);
    b.close(&cc);
}

/// Three participants on three sessions and an observer on a fourth. Each
/// leader change wakes only the next participant (the third is not notified of
/// the first leader resigning, and watches only its predecessor); the observer
/// follows every change down to "nobody". A leader's second `leadership()` is a
/// usage error; a participant whose term ended rejoins at the back (a timed-out
/// wait keeps its candidacy); resigning through the participant releases its
/// `Leadership`; dropping a `Leadership` resigns.
pub fn election_hands_over_on_resign_with_an_observer_following(b: &Suite) {
    let (server, dir, admin) = shared(b, "election");
    let long = BYSTANDER_SESSION_TIMEOUT;
    let [ca, cb, cc, cd] = [(); 4].map(|()| b.client_on(server, long));
    let mut alpha = ca.election(dir.clone(), "alpha");
    let a_lead = b.leadership(&mut alpha, SHORT).expect("alpha leads");
    assert!(alpha.is_leader());
    assert_eq!(a_lead.status(), LockStatus::Held);
    assert!(a_lead.path().starts_with(&dir));
    assert_eq!(
        b.election_event(&mut alpha, SHORT),
        Some(ElectionEvent::Elected {
            token: a_lead.token(),
            path: a_lead.path().to_owned()
        })
    );
    assert!(matches!(
        b.leadership(&mut alpha, SHORT),
        Err(Error::Usage(_))
    ));
    // Joined in this order (each create reaches the server before the next).
    let mut beta = cb.election(dir.clone(), "beta");
    admin.wait_children(&dir, SHORT, &|c| c.len() == 2);
    let mut gamma = cc.election(dir.clone(), "gamma");
    admin.wait_children(&dir, SHORT, &|c| c.len() == 3);
    assert!(!beta.is_leader() && !gamma.is_leader());

    let mut observer = b.observe_election(&cd, &dir);
    let leader = observer.leader().cloned().expect("a leader");
    assert_eq!(
        (leader.id.as_slice(), leader.token),
        (&b"alpha"[..], a_lead.token())
    );
    assert_eq!(leader.path, a_lead.path());
    assert_eq!(observer.participants(), 3);

    // alpha resigns: beta leads.
    let (beta, b_lead) = thread::scope(|s| {
        let waiter = s.spawn(|| {
            let lead = b.leadership(&mut beta, LONG);
            (beta, lead)
        });
        b.resign(a_lead).expect("alpha resigns");
        waiter.join().expect("beta's thread")
    });
    let mut beta = beta;
    let b_lead = b_lead.unwrap_or_else(|e| panic!("{}: beta leads: {e}", b.name()));
    assert!(!alpha.is_leader());
    assert_eq!(
        b.election_event(&mut alpha, SHORT),
        Some(ElectionEvent::Resigned)
    );
    assert_eq!(b.election_event(&mut alpha, SHORT), None, "no term left");
    assert!(beta.is_leader());
    let seen = b.leader_changed(&mut observer, SHORT).expect("a leader");
    assert_eq!(
        (seen.id.as_slice(), seen.token),
        (&b"beta"[..], b_lead.token())
    );
    assert_eq!(observer.leader(), Some(&seen));
    assert_eq!(observer.participants(), 2);
    assert!(b_lead.token() > leader.token);
    assert!(matches!(
        b.leadership(&mut beta, SHORT),
        Err(Error::Usage(_))
    ));
    // A round trip on gamma's session: any notification sent to it before is in.
    assert_eq!(
        b.revoke(&cc, &format!("{dir}-nothing-here")),
        Ok(Vec::new())
    );
    let stats = b.stats(&cc).expect("stats");
    assert_eq!(
        stats.handoff_notifications,
        0,
        "{}: gamma was woken by alpha's resignation",
        b.name()
    );
    assert_eq!(
        stats.watches_set,
        1,
        "{}: gamma watches only its predecessor",
        b.name()
    );
    assert!(!gamma.is_leader());

    // alpha's term ended: it rejoins, behind gamma (the wait times out, the
    // candidacy stays).
    assert_eq!(
        b.leadership(&mut alpha, Duration::from_millis(100))
            .unwrap_err(),
        Error::Timeout
    );
    admin.wait_children(&dir, SHORT, &|c| c.len() == 3);
    assert!(!alpha.is_leader());

    // beta resigns through its participant, while holding its Leadership.
    let (gamma, g_lead) = thread::scope(|s| {
        let waiter = s.spawn(|| {
            let lead = b.leadership(&mut gamma, LONG);
            (gamma, lead)
        });
        b.resign_participant(beta);
        waiter.join().expect("gamma's thread")
    });
    assert_eq!(b_lead.status(), LockStatus::Released);
    let g_lead = g_lead.unwrap_or_else(|e| panic!("{}: gamma leads: {e}", b.name()));
    assert!(gamma.is_leader());
    assert!(g_lead.token() > b_lead.token());
    let seen = b.leader_changed(&mut observer, SHORT).expect("a leader");
    assert_eq!(seen.id, b"gamma");
    assert_eq!(b.stats(&cc).expect("stats").handoff_notifications, 1);

    // Dropping the Leadership resigns: alpha leads, then nobody.
    drop(g_lead);
    let a_lead = b.leadership(&mut alpha, SHORT).expect("alpha leads again");
    let seen = b.leader_changed(&mut observer, SHORT).expect("a leader");
    assert_eq!(
        (seen.id.as_slice(), seen.token),
        (&b"alpha"[..], a_lead.token())
    );
    drop(a_lead);
    assert_eq!(b.leader_changed(&mut observer, SHORT), None);
    assert_eq!(observer.participants(), 0);
    assert!(!alpha.is_leader());
    b.wait_idle(&ca).expect("idle");
    admin.wait_children(&dir, SHORT, &|c| c.is_empty());
    drop(observer);
    for client in [ca, cb, cc, cd] {
        b.close(&client);
    }
}
