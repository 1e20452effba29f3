//! Rows of the failure table (README, "What happens when things fail") through the
//! simulator with both client profiles, where the simulated network and client
//! library matter: when a cut is noticed, expiry, requests lost or applied with a
//! reset. (Each row's own scenario against the core: lock-core's
//! `tests/failures.rs`; a holder cut off hearing `Lost` before another session
//! holds, and a waiter re-listing after a lost notification: the checker, in every
//! randomized workload.) Every test ends by checking that
//! nothing is left behind (no orphan node) and the invariants held throughout.

use lock_core::{FailReason, LockEvent, LockId, LockSpec, LockState, LostReason};
use lock_sim::{ClientId, InFlight, Latency, Profile, Sim, SimConfig};
use std::time::Duration;

mod support;
use support::holder_and_waiter;

const T: Duration = Duration::from_secs(3);
const PROFILES: [Profile; 2] = [Profile::KeepsWatches, Profile::LosesWatchesNewSession];
const LOCK: &str = "/locks/row";

fn sim(seed: u64) -> Sim {
    Sim::new(
        SimConfig::new(seed)
            .latency(Latency::between(
                Duration::from_millis(1),
                Duration::from_millis(4),
            ))
            .trace(true),
    )
}

/// Ends every acquisition ([`Sim::wind_down`]) and checks nothing is left behind.
fn finish(sim: &mut Sim, locks: &[(ClientId, LockId)]) {
    if let Err(v) = sim.wind_down(locks) {
        sim.trace_log().iter().for_each(|e| eprintln!("{e}"));
        panic!("{v}");
    }
    assert!(
        sim.children(LOCK).is_empty(),
        "left behind under {LOCK}: {:?}",
        sim.children(LOCK)
    );
}

// Row: Disconnected -> waiting: keep waiting; holding: Suspended (within 2/3 of the
// session timeout of the last contact).
#[test]
fn disconnected_waiter_keeps_waiting_and_holder_is_suspended() {
    for profile in PROFILES {
        let mut sim = sim(11);
        let ((a, la), (b, lb)) = holder_and_waiter(&mut sim, profile, LockSpec::write(LOCK), T);
        // A silent partition, shorter than the session timeout, for both.
        let t0 = sim.now();
        sim.partition(a, T / 2);
        sim.partition(b, T / 2);
        sim.run_until(|s| !s.holds(a, la)).unwrap();
        assert_eq!(sim.lock_events(a, la).last(), Some(&LockEvent::Suspended));
        let suspended_at = sim.events(a).last().unwrap().at;
        assert!(
            suspended_at - t0 <= T * 2 / 3,
            "suspended after {:?}",
            suspended_at - t0
        );
        sim.run_for(T / 2).unwrap();
        assert_eq!(
            sim.lock_events(b, lb),
            vec![],
            "{profile:?}: the waiter heard nothing"
        );
        assert_eq!(sim.state(b, lb), Some(LockState::Waiting));
        // After the partition the waiter still waits, and gets the lock in turn.
        sim.settle().unwrap();
        assert!(sim.holds(a, la), "{profile:?}: the holder resumed");
        sim.release(a, la).unwrap();
        sim.run_until(|s| s.holds(b, lb)).unwrap();
        finish(&mut sim, &[(a, la), (b, lb)]);
    }
}

// Row: Session expired, or a different session id after reconnect -> waiting:
// Failed(SessionExpired); holding: Lost(SessionExpired). The KeepsWatches client is
// told `Expired`; the other profile silently comes back with a new session id.
#[test]
fn session_expiry_loses_the_held_and_fails_the_waiting() {
    for profile in PROFILES {
        for partitioned in [false, true] {
            let mut sim = sim(16);
            let a = sim.add_client(profile, T);
            let b = sim.add_client(profile, T);
            let la = sim.acquire(a, LockSpec::write(LOCK)).unwrap();
            sim.settle().unwrap();
            let la2 = sim.acquire(a, LockSpec::read(LOCK)).unwrap();
            let lb = sim.acquire(b, LockSpec::write(LOCK)).unwrap();
            sim.settle().unwrap();
            let old = sim.session_id(a);
            if partitioned {
                // Longer than the session timeout: the server expires it.
                sim.partition(a, T * 2);
            } else {
                sim.expire_session(a);
            }
            sim.run_until(|s| s.holds(b, lb)).unwrap();
            sim.settle().unwrap();
            assert_ne!(sim.session_id(a), old, "{profile:?}: a new session");
            assert!(sim.session_id(a).is_some());
            let ev = sim.lock_events(a, la);
            // Partitioned, the suspension grace (the session timeout) may run out
            // before the client can reconnect and learn of the expiry.
            let lost = if partitioned && ev[2] == LockEvent::Lost(LostReason::SuspendedTooLong) {
                LostReason::SuspendedTooLong
            } else {
                LostReason::SessionExpired
            };
            assert_eq!(
                ev[1..],
                [LockEvent::Suspended, LockEvent::Lost(lost)],
                "{profile:?} partitioned={partitioned}"
            );
            assert_eq!(
                sim.lock_events(a, la2),
                vec![LockEvent::Failed(FailReason::SessionExpired)],
                "{profile:?} partitioned={partitioned}"
            );
            // The new session works.
            let la3 = sim.acquire(a, LockSpec::write(LOCK)).unwrap();
            finish(&mut sim, &[(a, la), (a, la2), (b, lb), (a, la3)]);
            assert!(matches!(sim.outcome(a, la3), Some(LockEvent::Released)));
        }
    }
}

// Row: Create fails with ConnectionLoss -> after reconnect, find our node by attempt
// id; adopt it, else create again.
#[test]
fn create_lost_with_the_connection_is_adopted_or_made_again() {
    for profile in PROFILES {
        for in_flight in [InFlight::Applied, InFlight::Lost, InFlight::First(1)] {
            let mut sim = sim(18);
            let a = sim.add_client(profile, T);
            let b = sim.add_client(profile, T);
            let la = sim.acquire(a, LockSpec::write(LOCK)).unwrap();
            sim.settle().unwrap();
            // b's create (and listing) are in flight when the connection drops.
            let lb = sim.acquire(b, LockSpec::write(LOCK)).unwrap();
            assert_eq!(sim.requests_in_flight(b), 2);
            sim.disconnect_with(b, in_flight);
            let applied = !matches!(in_flight, InFlight::Lost);
            assert_eq!(sim.owned_nodes(b, LOCK).len(), usize::from(applied));
            let before = sim.owned_nodes(b, LOCK);
            sim.settle().unwrap();
            let after = sim.owned_nodes(b, LOCK);
            assert_eq!(
                after.len(),
                1,
                "{profile:?} {in_flight:?}: exactly one node: {after:?}"
            );
            if applied {
                assert_eq!(
                    after, before,
                    "{profile:?} {in_flight:?}: adopted, not made again"
                );
            }
            assert_eq!(sim.state(b, lb), Some(LockState::Waiting));
            sim.release(a, la).unwrap();
            sim.run_until(|s| s.holds(b, lb)).unwrap();
            assert_eq!(&*sim.grant(b, lb).unwrap().path, after[0]);
            finish(&mut sim, &[(a, la), (b, lb)]);
        }
    }
}
