//! Held locks are trusted only while the ensemble's leader is proven to hear the
//! session (`Config::sync_interval`, see `lock_core::contact`): a follower cut off
//! from the leader keeps answering reads and pings, so those prove nothing.

mod harness;

use harness::*;
use lock_core::*;
use std::time::Duration;

const T: Duration = Duration::from_secs(10);
const STEP: Duration = Duration::from_millis(100);

/// T = 10 s: margin 1 s, syncs every 500 ms while a lock is held, touch bound
/// 3.33 s, suspension 1 s before.
fn connected() -> H {
    let mut config = Config::new(T, 1);
    config.sync_interval = Some(Config::default_sync_interval(T));
    H::served_with(config, &["/c"])
}

/// Answers every queued sync (the leader hears us) and the read with a watch a
/// holder sends on its own node with its first sync; other requests stay queued.
fn answer_syncs(h: &mut H) -> usize {
    h.serve_where(|op| matches!(op, Op::Sync { .. } | Op::GetData { watch: true, .. }))
        .iter()
        .filter(|r| matches!(r.op, Op::Sync { .. }))
        .count()
}

/// Drops every queued sync unanswered (the follower cannot reach the leader).
fn drop_syncs(h: &mut H) {
    h.reqs.retain(|r| !matches!(r.op, Op::Sync { .. }));
}

/// A follower that may have lost the leader: 100 ms pass; syncs wait in `hung`
/// while `leader` is false and are answered (late, in order) once it is true;
/// reads are answered at once either way (an inspection every 200 ms keeps the
/// holder busy). Returns the events.
fn follower_step(h: &mut H, leader: bool, hung: &mut Vec<Request>) -> Vec<LockEvent> {
    h.advance(STEP);
    if h.now.as_millis() % 200 == 0 && h.s.state(LockId(1)) == Some(LockState::Held) {
        h.run(|s, now| s.inspect("/c", now));
    }
    let mut left = Vec::new();
    loop {
        if leader {
            for r in hung.drain(..) {
                h.reply(r.id, Ok(Reply::Synced));
            }
        }
        let Some(r) = h.reqs.pop_front() else { break };
        match &r.op {
            Op::Sync { .. } if !leader => hung.push(r),
            Op::Sync { .. } | Op::GetChildren { .. } | Op::GetData { .. } => h.answer(&r),
            _ => left.push(r),
        }
    }
    h.reqs.extend(left);
    h.take_events()
        .into_iter()
        .filter(|e| !matches!(e, LockEvent::Participants(_)))
        .collect()
}

fn held(h: &mut H) -> String {
    h.held_on(LockSpec::write("/c")).1
}

#[test]
fn a_healthy_session_syncs_once_an_interval_and_stays_trusted() {
    let mut h = connected();
    let node = held(&mut h);
    let syncs = healthy(&mut h, 600);
    // 60 s at two syncs a second, and nothing else (left unanswered).
    assert!((118..=121).contains(&syncs), "{syncs} syncs");
    assert!(h.no_requests(), "{:?}", h.reqs);
    assert_eq!(h.s.state(LockId(1)), Some(LockState::Held), "{node}");
}

#[test]
fn a_cut_off_follower_that_answers_reads_does_not_keep_a_lock_trusted() {
    let mut h = connected();
    let node = held(&mut h);
    let mut hung = Vec::new();
    // Healthy for 20 s: the leader hears us.
    for _ in 0..200 {
        assert!(follower_step(&mut h, true, &mut hung).is_empty());
    }
    // The cut: syncs hang, reads are still answered.
    let cut = h.now;
    let (mut suspended, mut lost) = (None, None);
    for _ in 0..200 {
        for e in follower_step(&mut h, false, &mut hung) {
            match e {
                LockEvent::Suspended => suspended = Some(h.now),
                LockEvent::Lost(LostReason::SuspendedTooLong) => lost = Some(h.now),
                other => panic!("unexpected {other:?}"),
            }
        }
        if lost.is_some() {
            break;
        }
    }
    let (suspended, lost) = (suspended.expect("suspended"), lost.expect("lost"));
    // The leader may expire the session one T after the last activity it heard
    // of, which is before the cut: lost at least the margin (1 s) before that.
    assert!(
        lost - cut <= T - Duration::from_secs(1),
        "lost {:?} after the cut",
        lost - cut
    );
    assert_eq!(
        lost - suspended,
        Duration::from_secs(1),
        "the suspension lead"
    );
    // In steady state the proof trails by under T/3 + 2 intervals: not lost much
    // earlier than it must be either.
    assert!(
        lost - cut >= Duration::from_secs(4),
        "lost {:?} after the cut",
        lost - cut
    );
    // Our node is deleted at once, in case the session lives on.
    assert!(matches!(&h.next_req().op, Op::Delete { path, .. } if *path == node));
}

#[test]
fn a_suspended_lock_resumes_when_the_leader_hears_us_again() {
    let mut h = connected();
    held(&mut h);
    let mut hung = Vec::new();
    for _ in 0..100 {
        assert!(follower_step(&mut h, true, &mut hung).is_empty());
    }
    let mut suspended = false;
    for _ in 0..100 {
        if follower_step(&mut h, false, &mut hung) == vec![LockEvent::Suspended] {
            suspended = true;
            break;
        }
    }
    assert!(suspended);
    // The follower reaches the leader again before the lock is lost: the hung
    // sync is answered, the next one proves the reads answered meanwhile, our
    // node is checked and the lock resumes.
    let events: Vec<_> = (0..5)
        .flat_map(|_| follower_step(&mut h, true, &mut hung))
        .collect();
    assert_eq!(events, vec![LockEvent::Resumed]);
    assert_eq!(h.s.state(LockId(1)), Some(LockState::Held));
    for _ in 0..300 {
        assert!(follower_step(&mut h, true, &mut hung).is_empty());
    }
}

#[test]
fn a_disconnection_loses_by_the_proven_contact_when_that_is_older() {
    let mut h = connected();
    held(&mut h);
    // 5 s of hung syncs, then the binding reports a disconnection with a fresh
    // last contact (the follower answered pings until just now).
    for _ in 0..50 {
        h.advance(STEP);
        drop_syncs(&mut h);
    }
    h.session(SessionEvent::Disconnected {
        since_contact: Duration::ZERO,
    });
    // Proven at the connect (0): lost at T - margin = 9 s, not 5 + 9 = 14 s.
    h.lost_exactly_after(Duration::from_secs(4));
}

#[test]
fn a_grant_without_fresh_proof_waits_for_one() {
    let mut h = connected();
    for _ in 0..85 {
        h.advance(STEP);
        drop_syncs(&mut h);
    }
    let id = acquire_answered(&mut h);
    // Not reported held: nothing proves the leader heard us in the last 8 s.
    h.expect_events([]);
    assert_eq!(h.s.state(id), Some(LockState::Waiting));
    // Syncs go out at once; held once one proves the create reached the leader
    // (sent a touch bound, 3.33 s, after it was answered).
    let waited = proven_within(&mut h, 60);
    assert!(
        waited >= T / 3 && waited <= T / 3 + Duration::from_millis(600),
        "{waited:?}"
    );
    assert_eq!(h.s.state(id), Some(LockState::Held));
}

#[test]
fn reconnecting_proves_contact_and_resumes() {
    let mut h = connected();
    let node = held(&mut h);
    healthy(&mut h, 30);
    h.disconnect_after(Duration::from_millis(500));
    h.expect_events([LockEvent::Suspended]);
    h.advance(Duration::from_secs(2));
    h.connect(h.sid);
    assert!(matches!(&h.serve_one().op, Op::GetData { path, .. } if *path == node));
    h.expect_events([LockEvent::Resumed]);
    // Trusted for a whole T - margin from the reconnect, with syncs answered.
    healthy(&mut h, 100);
}

#[test]
fn without_a_sync_interval_nothing_is_sent() {
    let mut h = H::served(&["/c"]);
    held(&mut h);
    idle(&mut h, 300);
    h.expect_events([]);
}

/// Acquires `/c`, its create and listing answered (not the syncs).
fn acquire_answered(h: &mut H) -> LockId {
    let id = h.acquire(LockSpec::write("/c"));
    h.serve_one();
    h.serve_one();
    id
}

/// Answers the syncs 100 ms at a time until the lock is reported held, at most
/// `steps`; returns how long that took.
fn proven_within(h: &mut H, steps: usize) -> Duration {
    let from = h.now;
    for _ in 0..steps {
        h.advance(STEP);
        answer_syncs(h);
        if !h.events.is_empty() {
            h.acquired();
            return h.now - from;
        }
    }
    panic!("not held {steps} steps on")
}

/// `steps` of 100 ms in which the session sends nothing.
fn idle(h: &mut H, steps: usize) {
    for _ in 0..steps {
        h.advance(STEP);
        assert!(h.no_requests(), "idle at {:?}: {:?}", h.now, h.reqs);
    }
}

/// Runs `steps` of 100 ms answering every sync; returns how many there were.
fn healthy(h: &mut H, steps: usize) -> usize {
    let mut syncs = 0;
    for _ in 0..steps {
        h.advance(STEP);
        syncs += answer_syncs(h);
        assert!(h.take_events().is_empty(), "at {:?}", h.now);
    }
    syncs
}

/// A lock granted to a session that was idle for longer than its proof lasts,
/// on an ensemble member whose tick is known: not reported held until a sync,
/// sent at once, proves the grant's requests reached the leader, about a tick
/// later.
#[test]
fn a_grant_on_an_idle_session_is_proven_by_syncs_sent_at_once() {
    let mut h = connected();
    let tick = Duration::from_millis(200);
    h.s.learn_server(ServerRole::Member { tick_time: tick }, h.now);
    idle(&mut h, 300);
    let id = acquire_answered(&mut h);
    h.expect_events([]);
    let waited = proven_within(&mut h, 20);
    // The create and the listing (confirming the member's tick) are proven by a
    // sync sent a tick after they were answered.
    assert!(
        waited <= tick + Duration::from_millis(300),
        "acquired {waited:?} after the grant"
    );
    assert_eq!(h.s.state(id), Some(LockState::Held));
    assert!(healthy(&mut h, 100) > 10);
}

/// The server stops answering at `cut` and the binding reports the disconnection
/// at its read timeout (2T/3); returns when the held lock is lost, if it is before
/// `reconnect_at`, else whether it resumed after reconnecting then.
fn outage(h: &mut H, node: &str, reconnect_at: Duration) -> Result<(), Duration> {
    let cut = h.now;
    let read_timeout = T * 2 / 3;
    let mut disconnected = false;
    loop {
        h.advance(STEP);
        drop_syncs(h);
        if !disconnected && h.now - cut >= read_timeout {
            disconnected = true;
            h.disconnect_after(read_timeout);
        }
        for e in h.take_events() {
            match e {
                LockEvent::Suspended => {}
                LockEvent::Lost(_) => return Err(h.now - cut),
                other => panic!("unexpected {other:?}"),
            }
        }
        if h.now - cut >= reconnect_at {
            break;
        }
    }
    h.connect(h.sid);
    assert!(matches!(&h.serve_one().op, Op::GetData { path, .. } if *path == node));
    h.expect_events([LockEvent::Resumed]);
    Ok(())
}

#[test]
fn a_standalone_server_lets_a_held_lock_survive_an_outage_of_0_85_t() {
    let start = |learned: Option<ServerRole>| {
        let mut h = connected();
        if let Some(role) = learned {
            h.s.learn_server(role, h.now);
        }
        let node = held(&mut h);
        healthy(&mut h, 50);
        (h, node)
    };
    // Learned standalone: proof trails by at most an interval (T/20): lost no
    // sooner than T - margin - interval = 8.5 s into the outage.
    let (mut h, node) = start(Some(ServerRole::Standalone));
    outage(&mut h, &node, Duration::from_millis(8400)).expect("survives 8.4 s");
    healthy(&mut h, 100);
    let (mut h, node) = start(Some(ServerRole::Standalone));
    let lost = outage(&mut h, &node, T).expect_err("lost before the session can expire");
    assert!(
        lost >= Duration::from_millis(8500) && lost <= T - Duration::from_secs(1),
        "lost {lost:?} in"
    );
    // Unknown server: today's bound, a touch bound and intervals less.
    let (mut h, node) = start(None);
    let lost = outage(&mut h, &node, T).expect_err("lost");
    assert!(lost < Duration::from_millis(6000), "lost {lost:?} in");
}

#[test]
fn a_known_tick_lets_a_held_lock_on_an_ensemble_member_survive_longer() {
    // tick 200 ms: proof trails by under a tick, its bucket and an interval
    // (about 0.75 s): lost no sooner than about 8.2 s in (0.82 T), against 5 s or
    // so when the tick is unknown.
    let member = ServerRole::Member {
        tick_time: Duration::from_millis(200),
    };
    let mut h = connected();
    h.s.learn_server(member, h.now);
    let node = held(&mut h);
    healthy(&mut h, 50);
    outage(&mut h, &node, Duration::from_millis(8000)).expect("survives 8 s");
    // Forgotten with the connection: learned again on the new one.
    h.s.learn_server(member, h.now);
    healthy(&mut h, 100);
    let lost = outage(&mut h, &node, T).expect_err("lost");
    assert!(lost >= Duration::from_millis(8100), "lost {lost:?} in");
}

/// A plain, uncontended hold sets no watch on its node at first (the cycle stays
/// create, list, delete). Once it outlives a sync interval it watches its node,
/// once, with the sync: from then on a deletion under it (an operator's break)
/// is `Lost(NodeDeleted)` at once. A hold shorter than the interval sends nothing.
#[test]
fn a_hold_that_outlives_a_sync_interval_watches_its_node_once() {
    let mut h = connected();
    let (id, node) = h.held_on(LockSpec::write("/c"));
    h.run(|s, now| s.release(id, now));
    assert_eq!(ops(&h.serve()), [delete_of(&node)], "a short hold");
    h.expect_events([LockEvent::Released]);

    let mut h = connected();
    let node2 = held(&mut h);
    let mut reads = 0;
    for _ in 0..30 {
        h.advance(STEP);
        reads += h
            .reqs
            .iter()
            .filter(|r| r.op == read_of(&node2, true))
            .count();
        answer_syncs(&mut h);
        assert!(h.no_requests(), "{:?}", h.reqs);
    }
    assert_eq!(reads, 1, "one watched read over 3 s of hold ({node})");
    h.delete_node(&node2);
    h.expect_events([LockEvent::Lost(LostReason::NodeDeleted)]);
}

/// An idle session sends nothing. A lock taken after it was idle for 0.5-0.9 T
/// or 6 T (no fault at all): its grant is reported once, on a proof that lasts
/// until the session renews it, and the holder hears nothing else for 2 T (no
/// `Suspended` right after the grant, no `Lost`). Idle longer than the proof
/// allows, the grant waits for the renewal instead of being reported on a proof
/// about to run out. Released, the session stops syncing.
#[test]
fn a_lock_taken_after_an_idle_spell_is_never_suspended_on_a_sound_connection() {
    for tenths in [5, 6, 7, 8, 9, 60] {
        let mut h = connected();
        idle(&mut h, tenths * 10);
        let id = acquire_answered(&mut h);
        let waited = proven_within(&mut h, 200);
        // Nothing else for 2 T from the acquisition.
        assert!(healthy(&mut h, 200 - waited.as_millis() as usize / 100) >= 3);
        assert_eq!(h.s.state(id), Some(LockState::Held), "idle {tenths}/10 T");
        h.run(|s, now| s.release(id, now));
        assert!(matches!(h.serve_one().op, Op::Delete { .. }));
        answer_syncs(&mut h);
        assert!(h.take_events().contains(&LockEvent::Released));
        idle(&mut h, 600);
    }
}

/// The waiter one notification can let in keeps the session's proof of contact
/// fresh while it waits, however long: the grant the notification brings is
/// reported at once (no round trip) and stays trusted.
#[test]
fn a_waiter_next_in_line_is_granted_at_once_after_a_long_wait_and_stays_trusted() {
    let mut h = connected();
    let (id, _, blocker) = h.waiting_on("/c");
    // 60 s of waiting at two syncs a second.
    let syncs = healthy(&mut h, 600);
    assert!(
        (118..=121).contains(&syncs),
        "{syncs} syncs while next in line"
    );
    h.delete_node(&blocker);
    h.acquired();
    healthy(&mut h, 200);
    assert_eq!(h.s.state(id), Some(LockState::Held));
}

/// A waiter farther back sends nothing of its own; it starts proving contact
/// once one blocker is left in front of it.
#[test]
fn only_the_waiter_next_in_line_pays_for_syncs() {
    let mut h = connected();
    h.peer_joins("/c", NodeKind::Write, 1);
    let second = h.peer_joins("/c", NodeKind::Write, 2);
    let (id, _) = h.served_acquire(LockSpec::write("/c"));
    // Second in line: nothing of its own.
    idle(&mut h, 300);
    // The blocker behind the first leaves: the queue is listed again and the
    // first is watched.
    h.delete_node(&second);
    h.serve();
    assert!(healthy(&mut h, 100) >= 18);
    assert_eq!(h.s.state(id), Some(LockState::Waiting));
}
