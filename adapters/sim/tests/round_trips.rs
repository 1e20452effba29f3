//! The performance heart of the design at scale, in request counters: one waiter
//! woken per release whatever the sessions, and a reaper racing the creates. (One
//! round trip to acquire, no request on handoff, the order across the sequence
//! wrap and the token as the node's czxid: lock-core's `tests/recipes.rs`; a reaped
//! directory's counter restarting while zxids grow: `tests/model.rs`.)

mod support;

use lock_core::{LockId, LockSpec};
use lock_sim::{ClientId, Latency, OpKind, Profile, Sim, SimConfig};
use std::time::Duration;
use support::sim_1ms as sim;

const T: Duration = Duration::from_secs(2);

#[test]
fn a_reaper_racing_the_first_create_is_survived() {
    // The reaper runs every millisecond: a lock directory emptied by a release may
    // vanish between a client's listing and its create; the core re-creates it.
    let mut sim = Sim::new(
        SimConfig::new(6)
            .latency(Latency::between(
                Duration::from_micros(100),
                Duration::from_millis(2),
            ))
            .reap_interval(Some(Duration::from_millis(1))),
    );
    let clients: Vec<ClientId> = (0..4)
        .map(|_| sim.add_client(Profile::KeepsWatches, T))
        .collect();
    for _round in 0..30 {
        let mut locks: Vec<(ClientId, LockId)> = clients
            .iter()
            .map(|&c| (c, sim.acquire(c, LockSpec::write("/r/a/b")).unwrap()))
            .collect();
        while !locks.is_empty() {
            sim.run_until(|s| locks.iter().any(|&(c, l)| s.holds(c, l)))
                .unwrap();
            let k = locks.iter().position(|&(c, l)| sim.holds(c, l)).unwrap();
            let (c, l) = locks.remove(k);
            sim.release(c, l).unwrap();
        }
        sim.run_until_idle().unwrap();
    }
    assert!(
        sim.total_counters().requests_of(OpKind::Create) > 30 * 4,
        "parents were re-created"
    );
    sim.check_quiescent().unwrap();
}

/// Drains a queue of `waiters` behind one holder, spread over `sessions` sessions,
/// releasing each holder as soon as it holds. Returns (requests per acquisition,
/// waiter wake-ups per release) over the drain.
fn drain_queue(sessions: usize, waiters: usize) -> (f64, f64) {
    let mut sim = sim(7);
    let clients: Vec<ClientId> = (0..sessions)
        .map(|_| sim.add_client(Profile::KeepsWatches, T))
        .collect();
    sim.settle().unwrap();
    let queue: Vec<(ClientId, LockId)> = (0..=waiters)
        .map(|i| {
            let c = clients[i % sessions];
            let l = sim.acquire(c, LockSpec::write("/locks/queue")).unwrap();
            // Queue order is creation order: let each create land before the next.
            sim.settle().unwrap();
            (c, l)
        })
        .collect();
    sim.settle().unwrap();
    sim.reset_counters();
    let woken = |sim: &Sim| -> u64 {
        clients
            .iter()
            .map(|&c| sim.core(c).stats().handoff_notifications)
            .sum()
    };
    let woken_before = woken(&sim);
    for (k, &(c, l)) in queue.iter().enumerate() {
        sim.run_until(|s| s.holds(c, l)).unwrap();
        assert!(
            queue[k + 1..].iter().all(|&(c2, l2)| !sim.holds(c2, l2)),
            "FIFO order"
        );
        sim.release(c, l).unwrap();
    }
    sim.wind_down(&[]).unwrap();
    let requests = sim.total_counters().requests() as f64;
    let acquisitions = queue.len() as f64;
    (
        requests / acquisitions,
        (woken(&sim) - woken_before) as f64 / waiters as f64,
    )
}

#[test]
fn one_release_wakes_one_waiter_whatever_the_sessions_it_shares() {
    // Every waiter of a session shares its watches: a release must still reach
    // only the waiter that watches the deleted node, not every waiter of that
    // session (which then re-listed: O(n²) requests to drain one session's queue);
    // with a session per 10 waiters, the herd of the naive recipe.
    for sessions in [1, 4, 100] {
        let (requests, woken) = drain_queue(sessions, 1_000);
        assert_eq!(woken, 1.0, "{sessions} session(s): wake-ups per release");
        // Per acquisition in a deep queue: the predecessor's delete, then one
        // listing (the cached lower set still names long-gone nodes).
        assert!(
            requests <= 2.5,
            "{sessions} session(s): {requests:.2} requests per acquisition"
        );
    }
}
