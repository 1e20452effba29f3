//! One test per row of the failure table (README, "What happens when things fail"), run through the
//! simulator with both client profiles. Every test ends by checking that nothing is
//! left behind (no orphan node) and the invariants held throughout.

use lock_core::{FailReason, LockEvent, LockId, LockSpec, LockState, LostReason, Timestamp};
use lock_sim::{ClientConfig, ClientId, InFlight, Latency, Profile, Sim, SimConfig};
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

fn is_acquired(e: &LockEvent) -> bool {
    matches!(e, LockEvent::Acquired(_))
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

// Row: Reconnected, same session -> holding: verify own node then Resumed.
#[test]
fn reconnected_holder_verifies_its_node_and_resumes() {
    for profile in PROFILES {
        for in_flight in [InFlight::Applied, InFlight::Lost] {
            let mut sim = sim(12);
            let ((a, la), (b, lb)) = holder_and_waiter(&mut sim, profile, LockSpec::write(LOCK), T);
            let session = sim.session_id(a);
            sim.disconnect_with(a, in_flight);
            assert_eq!(sim.lock_events(a, la).last(), Some(&LockEvent::Suspended));
            sim.settle().unwrap();
            assert_eq!(sim.session_id(a), session, "same session");
            let ev = sim.lock_events(a, la);
            assert!(is_acquired(&ev[0]), "{ev:?}");
            assert_eq!(
                ev[1..],
                [LockEvent::Suspended, LockEvent::Resumed],
                "{profile:?}"
            );
            assert!(sim.holds(a, la) && !sim.holds(b, lb));
            finish(&mut sim, &[(a, la), (b, lb)]);
        }
    }
}

// Row: Reconnected, same session -> holding: own node gone -> Lost.
#[test]
fn reconnected_holder_whose_node_is_gone_is_lost() {
    for profile in PROFILES {
        let mut sim = sim(13);
        let ((a, la), (b, lb)) = holder_and_waiter(&mut sim, profile, LockSpec::write(LOCK), T);
        let node = sim.grant(a, la).unwrap().path.to_string();
        sim.partition(a, T / 2);
        sim.run_until(|s| !s.holds(a, la)).unwrap();
        // While it is away, an administrator deletes its node: the waiter moves up.
        sim.admin_delete(&node).unwrap();
        sim.run_until(|s| s.holds(b, lb)).unwrap();
        sim.settle().unwrap();
        let ev = sim.lock_events(a, la);
        assert_eq!(
            ev[1..],
            [
                LockEvent::Suspended,
                LockEvent::Lost(LostReason::NodeDeleted)
            ],
            "{profile:?}"
        );
        finish(&mut sim, &[(a, la), (b, lb)]);
    }
}

// Row: Reconnected, same session -> waiting: re-list and re-watch (watches may have
// been lost). The release notification is lost in flight with the connection.
#[test]
fn reconnected_waiter_relists_after_losing_the_release_notification() {
    for profile in PROFILES {
        let mut sim = sim(14);
        let ((a, la), (b, lb)) = holder_and_waiter(&mut sim, profile, LockSpec::write(LOCK), T);
        sim.release(a, la).unwrap();
        sim.run_until(|s| s.notifications_in_flight(b) > 0).unwrap();
        assert_eq!(sim.lose_notifications(b), 1);
        assert!(sim.counters(b).notifications_lost >= 1);
        assert_eq!(sim.state(b, lb), Some(LockState::Waiting), "{profile:?}");
        sim.settle().unwrap();
        assert!(
            sim.holds(b, lb),
            "{profile:?}: the re-listing found the lock free"
        );
        finish(&mut sim, &[(a, la), (b, lb)]);
    }
}

// Row: Suspended longer than the grace -> holding: Lost(SuspendedTooLong); if the
// session later turns out alive, delete the stale node at once. Waiting: keep waiting.
#[test]
fn suspended_too_long_is_lost_and_the_stale_node_deleted() {
    for profile in PROFILES {
        let mut sim = sim(15);
        let a = sim.add_client_with(ClientConfig::new(profile, T).suspended_grace(T / 4));
        let b = sim.add_client(profile, T);
        let la = sim.acquire(a, LockSpec::write(LOCK)).unwrap();
        sim.settle().unwrap();
        // A second acquisition of the same client waits behind the first.
        let la2 = sim.acquire(a, LockSpec::write(LOCK)).unwrap();
        sim.settle().unwrap();
        let lb = sim.acquire(b, LockSpec::write(LOCK)).unwrap();
        sim.settle().unwrap();
        let stale = sim.grant(a, la).unwrap().path.to_string();
        let session = sim.session_id(a);
        // Down for more than the grace but less than the session timeout.
        sim.disconnect(a);
        sim.delay_reconnect(a, T / 2);
        sim.run_for(T / 4 + Duration::from_millis(1)).unwrap();
        assert_eq!(
            sim.lock_events(a, la)[1..],
            [
                LockEvent::Suspended,
                LockEvent::Lost(LostReason::SuspendedTooLong)
            ],
            "{profile:?}"
        );
        assert_eq!(sim.lock_events(a, la2), vec![], "the waiter keeps waiting");
        assert!(
            sim.get(&stale).is_some(),
            "still there: the session lives on the server"
        );
        sim.settle().unwrap();
        assert_eq!(sim.session_id(a), session);
        assert!(
            sim.get(&stale).is_none(),
            "{profile:?}: deleted at once on reconnect"
        );
        // The next in line (a's own second acquisition) holds, then b.
        assert!(sim.holds(a, la2), "{profile:?}");
        finish(&mut sim, &[(a, la), (a, la2), (b, lb)]);
    }
}

/// When `client`'s acquisition `lock` first reported an event matching `pick`.
fn first_at(sim: &Sim, c: ClientId, l: LockId, pick: fn(&LockEvent) -> bool) -> Option<Timestamp> {
    sim.events(c)
        .iter()
        .find(|r| r.lock == l && pick(&r.event))
        .map(|r| r.at)
}

// Row: Suspended past the point where the server could expire the session ->
// holding: `Lost`, before any other session can be granted the lock. Over many
// seeds (the client notices the partition at a random moment within 2/3 of the
// session timeout), for every recipe that excludes.
#[test]
fn a_partitioned_holder_hears_lost_before_another_session_holds() {
    let specs = [
        LockSpec::write(LOCK),
        LockSpec::leader(LOCK, b"a".to_vec()),
        LockSpec::semaphore(LOCK, 1),
    ];
    for profile in PROFILES {
        for (k, spec) in specs.iter().enumerate() {
            for seed in 0..40 {
                let mut sim = sim(1000 + seed);
                let ((a, la), (b, lb)) = holder_and_waiter(&mut sim, profile, spec.clone(), T);
                let cut = sim.now();
                sim.partition(a, T * 3);
                sim.run_until(|s| s.holds(b, lb)).unwrap();
                let lost = first_at(&sim, a, la, |e| matches!(e, LockEvent::Lost(_)))
                    .expect("a lost its lock");
                let granted = first_at(&sim, b, lb, is_acquired).expect("b holds");
                assert!(
                    lost < granted,
                    "{profile:?} spec {k} seed {seed}: lost at {lost:?}, other grant at {granted:?}"
                );
                // And no earlier than the server could really have expired it,
                // less the margin (a tenth of the session timeout).
                assert!(
                    lost - cut >= T - T / 10,
                    "lost {:?} after the cut",
                    lost - cut
                );
                finish(&mut sim, &[(a, la), (b, lb)]);
            }
        }
    }
}

// Row: a short cut that heals within the window -> holding: `Suspended`, then
// `Resumed`, never `Lost`.
#[test]
fn a_short_partition_suspends_then_resumes() {
    for profile in PROFILES {
        for seed in 0..40 {
            let mut sim = sim(2000 + seed);
            let a = sim.add_client(profile, T);
            let la = sim.acquire(a, LockSpec::write(LOCK)).unwrap();
            sim.settle().unwrap();
            sim.partition(a, T / 2);
            sim.run_for(T * 2).unwrap();
            let seen = sim.lock_events(a, la);
            assert!(
                seen.ends_with(&[LockEvent::Suspended, LockEvent::Resumed]) || seen.len() == 1, // healed before the client noticed
                "{profile:?} seed {seed}: {seen:?}"
            );
            assert!(sim.holds(a, la));
            finish(&mut sim, &[(a, la)]);
        }
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

// Row: Own node deleted by someone else -> waiting: re-evaluate, Failed if gone;
// holding with `watch_node`: Lost(NodeDeleted) at once (a plain holder hears of it
// at its next reconnect: `reconnected_holder_whose_node_is_gone_is_lost`).
#[test]
fn own_node_deleted_fails_the_waiter_and_loses_the_holder() {
    for profile in PROFILES {
        let mut sim = sim(17);
        let a = sim.add_client(profile, T);
        let b = sim.add_client(profile, T);
        let la = sim.acquire(a, LockSpec::write(LOCK).watch_node()).unwrap();
        sim.settle().unwrap();
        // The waiter is plain: it watches its node while it waits all the same.
        let lb = sim.acquire(b, LockSpec::write(LOCK)).unwrap();
        sim.settle().unwrap();
        let c = sim.add_client(profile, T);
        let lc = sim.acquire(c, LockSpec::write(LOCK)).unwrap();
        sim.settle().unwrap();
        // The waiter's node goes.
        let nb = sim.owned_nodes(b, LOCK);
        assert_eq!(nb.len(), 1);
        sim.admin_delete(&nb[0]).unwrap();
        sim.settle().unwrap();
        assert_eq!(
            sim.lock_events(b, lb),
            vec![LockEvent::Failed(FailReason::NodeDeleted)],
            "{profile:?}"
        );
        // The holder's node goes: lost, and the next waiter (c) moves up.
        let na = sim.grant(a, la).unwrap().path.to_string();
        sim.admin_delete(&na).unwrap();
        sim.settle().unwrap();
        assert_eq!(
            sim.lock_events(a, la)[1..],
            [LockEvent::Lost(LostReason::NodeDeleted)],
            "{profile:?}"
        );
        assert!(sim.holds(c, lc));
        finish(&mut sim, &[(a, la), (b, lb), (c, lc)]);
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

// Row: Cancel / timeout / drop while waiting -> delete own node (also one whose
// create is still in flight or was lost); retry while the session lives.
#[test]
fn cancel_while_the_create_is_in_flight_or_unanswered_leaves_no_node() {
    for profile in PROFILES {
        for (seed, away) in [(19, false), (20, true)] {
            let mut sim = sim(seed);
            let ((a, la), (b, lb)) = holder_and_waiter(&mut sim, profile, LockSpec::write(LOCK), T);
            let lb2 = sim.acquire(b, LockSpec::write(LOCK)).unwrap();
            if away {
                // The create reaches the server, its reply is lost; the user
                // cancels while the client is away.
                sim.disconnect_with(b, InFlight::Applied);
                sim.delay_reconnect(b, T / 3);
                assert_eq!(sim.owned_nodes(b, LOCK).len(), 2);
            } else {
                assert_eq!(sim.requests_in_flight(b), 2, "create and listing in flight");
            }
            sim.cancel(b, lb2).unwrap();
            assert_eq!(
                sim.lock_events(b, lb2),
                vec![LockEvent::Failed(FailReason::Cancelled)]
            );
            sim.settle().unwrap();
            assert_eq!(
                sim.owned_nodes(b, LOCK).len(),
                1,
                "{profile:?} away: {away}: only the first acquisition's"
            );
            finish(&mut sim, &[(a, la), (b, lb), (b, lb2)]);
        }
    }
}

#[test]
fn timeout_while_waiting_fails_at_the_deadline_and_deletes_the_node() {
    for profile in PROFILES {
        let mut sim = sim(21);
        let a = sim.add_client(profile, T);
        let b = sim.add_client(profile, T);
        let la = sim.acquire(a, LockSpec::write(LOCK)).unwrap();
        sim.settle().unwrap();
        let deadline = sim.now() + Duration::from_millis(500);
        let lb = sim
            .acquire(b, LockSpec::write(LOCK).deadline(deadline))
            .unwrap();
        sim.run_until(|s| s.outcome(b, lb).is_some()).unwrap();
        assert_eq!(sim.now(), deadline, "failed exactly at the deadline");
        assert_eq!(
            sim.lock_events(b, lb),
            vec![LockEvent::Failed(FailReason::Timeout)]
        );
        sim.settle().unwrap();
        assert!(sim.owned_nodes(b, LOCK).is_empty(), "{profile:?}");
        finish(&mut sim, &[(a, la), (b, lb)]);
    }
}

#[test]
fn cancelled_waiter_on_a_dropping_connection_retries_the_delete_while_the_session_lives() {
    for profile in PROFILES {
        let mut sim = sim(22);
        let ((a, la), (b, lb)) = holder_and_waiter(&mut sim, profile, LockSpec::write(LOCK), T);
        sim.cancel(b, lb).unwrap();
        // The delete is lost with the connection, twice.
        sim.disconnect_with(b, InFlight::Lost);
        sim.run_until(|s| s.requests_in_flight(b) > 0).unwrap();
        sim.disconnect_with(b, InFlight::Lost);
        sim.settle().unwrap();
        assert!(sim.owned_nodes(b, LOCK).is_empty(), "{profile:?}");
        finish(&mut sim, &[(a, la), (b, lb)]);
    }
}

// Row: Release with ConnectionLoss -> retry after reconnect; NoNode counts as released.
#[test]
fn release_lost_with_the_connection_is_retried_and_no_node_counts_as_released() {
    for profile in PROFILES {
        for in_flight in [InFlight::Lost, InFlight::Applied] {
            let mut sim = sim(23);
            let ((a, la), (b, lb)) = holder_and_waiter(&mut sim, profile, LockSpec::write(LOCK), T);
            sim.release(a, la).unwrap();
            assert_eq!(sim.requests_in_flight(a), 1, "the delete");
            sim.disconnect_with(a, in_flight);
            sim.settle().unwrap();
            assert_eq!(
                sim.outcome(a, la),
                Some(&LockEvent::Released),
                "{profile:?} {in_flight:?}"
            );
            assert!(sim.owned_nodes(a, LOCK).is_empty());
            assert!(sim.holds(b, lb));
            finish(&mut sim, &[(a, la), (b, lb)]);
        }
    }
}

// Closing a client ends everything it had.
#[test]
fn closing_a_client_ends_its_locks() {
    for profile in PROFILES {
        let mut sim = sim(24);
        let ((a, la), (b, lb)) = holder_and_waiter(&mut sim, profile, LockSpec::write(LOCK), T);
        let la2 = sim.acquire(a, LockSpec::write(LOCK)).unwrap();
        sim.settle().unwrap();
        sim.close(a);
        assert_eq!(
            sim.outcome(a, la),
            Some(&LockEvent::Lost(LostReason::Closed))
        );
        assert_eq!(
            sim.outcome(a, la2),
            Some(&LockEvent::Failed(FailReason::Closed))
        );
        sim.run_until(|s| s.holds(b, lb)).unwrap();
        assert!(sim.acquire(a, LockSpec::write(LOCK)).is_err());
        finish(&mut sim, &[(b, lb)]);
    }
}
