//! Held locks are trusted only while the ensemble's leader is proven to hear the
//! session (`Config::sync_interval`, see `lock_core::contact`): a follower cut off
//! from the leader keeps answering reads and pings, so those prove nothing.

mod harness;

use harness::*;
use lock_core::*;
use std::time::Duration;

const T: Duration = Duration::from_secs(10);
const STEP: Duration = Duration::from_millis(100);

/// T = 10 s: margin 1 s, syncs every 1 s, touch bound 3.33 s, suspension 1 s before.
fn connected() -> H {
    let mut config = Config::new(T, 1);
    config.sync_interval = Some(Config::default_sync_interval(T));
    let mut h = H::unconnected();
    h.s = Session::new(config);
    h.session(SessionEvent::Connected { session_id: SID });
    h
}

/// Answers every queued sync (the leader hears us); other requests stay queued.
fn answer_syncs(h: &mut H) -> usize {
    let (syncs, rest): (Vec<_>, Vec<_>) = h
        .reqs
        .drain(..)
        .partition(|r| matches!(r.op, Op::Sync { .. }));
    h.reqs.extend(rest);
    for r in &syncs {
        h.reply(r.id, Ok(Reply::Synced));
    }
    syncs.len()
}

/// Drops every queued sync unanswered (the follower cannot reach the leader).
fn drop_syncs(h: &mut H) {
    h.reqs.retain(|r| !matches!(r.op, Op::Sync { .. }));
}

/// A follower that may have lost the leader: 100 ms pass; syncs wait in `hung`
/// while `leader` is false and are answered (late, in order) once it is true;
/// reads of `node` are answered at once either way (an inspection every 200 ms
/// keeps the holder busy). Returns the events.
fn follower_step(h: &mut H, node: &str, leader: bool, hung: &mut Vec<Request>) -> Vec<LockEvent> {
    h.advance(STEP);
    if h.now.as_millis() % 200 == 0 && h.s.state(LockId(1)) == Some(LockState::Held) {
        h.s.inspect("/c", h.now).unwrap();
        h.drain();
    }
    let mut left = Vec::new();
    loop {
        if leader {
            for r in hung.drain(..) {
                h.reply(r.id, Ok(Reply::Synced));
            }
        }
        let Some(r) = h.reqs.pop_front() else { break };
        let result = match &r.op {
            Op::Sync { .. } if !leader => {
                hung.push(r);
                continue;
            }
            Op::Sync { .. } => Ok(Reply::Synced),
            Op::GetChildren { .. } => Ok(Reply::Children(vec![name_of(node)])),
            Op::GetData { .. } => Ok(Reply::Data {
                data: vec![],
                stat: Stat {
                    ephemeral_owner: SID,
                    czxid: 101,
                    ..Stat::default()
                },
            }),
            _ => {
                left.push(r);
                continue;
            }
        };
        h.reply(r.id, result);
    }
    h.reqs.extend(left);
    h.take_events()
        .into_iter()
        .filter(|e| !matches!(e, LockEvent::Participants(_)))
        .collect()
}

fn held(h: &mut H) -> String {
    let (_, node) = h.held("/c", 0);
    node
}

#[test]
fn a_healthy_session_syncs_once_an_interval_and_stays_trusted() {
    let mut h = connected();
    let node = held(&mut h);
    let mut syncs = 0;
    for _ in 0..600 {
        h.advance(STEP);
        syncs += answer_syncs(&mut h);
        assert!(h.take_events().is_empty(), "at {:?}", h.now);
        assert!(h.no_requests(), "{:?}", h.reqs);
    }
    // 60 s at one sync a second.
    assert!((58..=61).contains(&syncs), "{syncs} syncs");
    assert_eq!(h.s.state(LockId(1)), Some(LockState::Held), "{node}");
}

#[test]
fn a_cut_off_follower_that_answers_reads_does_not_keep_a_lock_trusted() {
    let mut h = connected();
    let node = held(&mut h);
    let mut hung = Vec::new();
    // Healthy for 20 s: the leader hears us.
    for _ in 0..200 {
        assert!(follower_step(&mut h, &node, true, &mut hung).is_empty());
    }
    // The cut: syncs hang, reads are still answered.
    let cut = h.now;
    let (mut suspended, mut lost) = (None, None);
    for _ in 0..200 {
        for e in follower_step(&mut h, &node, false, &mut hung) {
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
    let node = held(&mut h);
    let mut hung = Vec::new();
    for _ in 0..100 {
        assert!(follower_step(&mut h, &node, true, &mut hung).is_empty());
    }
    let mut suspended = false;
    for _ in 0..100 {
        if follower_step(&mut h, &node, false, &mut hung) == vec![LockEvent::Suspended] {
            suspended = true;
            break;
        }
    }
    assert!(suspended);
    // The follower reaches the leader again before the lock is lost: the hung
    // sync is answered, the next one proves the reads answered meanwhile, our
    // node is checked and the lock resumes.
    let events: Vec<_> = (0..5)
        .flat_map(|_| follower_step(&mut h, &node, true, &mut hung))
        .collect();
    assert_eq!(events, vec![LockEvent::Resumed]);
    assert_eq!(h.s.state(LockId(1)), Some(LockState::Held));
    for _ in 0..300 {
        assert!(follower_step(&mut h, &node, true, &mut hung).is_empty());
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
    assert_eq!(h.take_events(), vec![LockEvent::Suspended]);
    // Proven at the connect (0): lost at T - margin = 9 s, not 5 + 9 = 14 s.
    h.advance(Duration::from_secs(4) - Duration::from_millis(1));
    assert!(h.take_events().is_empty());
    h.advance(Duration::from_millis(1));
    assert_eq!(
        h.take_events(),
        vec![LockEvent::Lost(LostReason::SuspendedTooLong)]
    );
}

#[test]
fn a_grant_without_fresh_proof_is_suspended_at_once() {
    let mut h = connected();
    for _ in 0..85 {
        h.advance(STEP);
        drop_syncs(&mut h);
    }
    let id = h.acquire(LockSpec::write("/c"));
    let node = h.answer_create(0);
    h.answer_list(&[&name_of(&node)]);
    let events = h.take_events();
    assert!(
        matches!(&events[..], [LockEvent::Acquired(_), LockEvent::Suspended]),
        "{events:?}"
    );
    assert_eq!(h.s.state(id), Some(LockState::Suspended));
}

#[test]
fn reconnecting_proves_contact_and_resumes() {
    let mut h = connected();
    let node = held(&mut h);
    for _ in 0..30 {
        h.advance(STEP);
        answer_syncs(&mut h);
    }
    h.session(SessionEvent::Disconnected {
        since_contact: Duration::from_millis(500),
    });
    assert_eq!(h.take_events(), vec![LockEvent::Suspended]);
    h.advance(Duration::from_secs(2));
    h.session(SessionEvent::Connected { session_id: SID });
    h.answer_plain_read(&node, SID);
    assert_eq!(h.take_events(), vec![LockEvent::Resumed]);
    // Trusted for a whole T - margin from the reconnect, with syncs answered.
    for _ in 0..100 {
        h.advance(STEP);
        answer_syncs(&mut h);
        assert!(h.take_events().is_empty());
    }
}

#[test]
fn without_a_sync_interval_nothing_is_sent() {
    let mut h = H::new();
    held(&mut h);
    for _ in 0..300 {
        h.advance(STEP);
        assert!(h.no_requests());
        assert!(h.take_events().is_empty());
    }
}
