//! Distributed deadlock detection (lock-core's `deadlock` module) on the simulated
//! server: randomized cycles (each broken in time by its youngest candidate, one
//! true victim), the cost of detection, on-demand scans. (Scripted two- and
//! three-party cycles, across recipes: the conformance suite's `deadlock.rs`.)

mod support;

use lock_core::{LockEvent, LockSpec};
use lock_sim::{ClientId, Profile, Sim};
use std::time::Duration;
use support::{env_u64, run_deadlock_schedules, sim_1ms as sim};

const T: Duration = Duration::from_secs(10);
const AFTER: Duration = Duration::from_millis(100);

/// 2-4 owners on 2-3 sessions each take 2-4 of 4 locks (a quarter of them reads)
/// in random order, hold them, release them, with every fault (disconnects,
/// partitions, expiries, admin deletes, revocations, lost notifications) for one
/// session timeout, then drain; the global-view checks run after every step (see
/// `lock_sim::DeadlockWorkload`). About 250 steps per schedule: 10,000 schedules
/// take ~70 s of CPU in debug, ~35 s on two idle cores.
/// `LOCK_SIM_DEADLOCK_SCHEDULES=n` (default 10,000), `LOCK_SIM_DEADLOCK_SEED=s`
/// runs one schedule and prints its trace on failure.
#[test]
fn random_deadlocks_are_broken_in_time_with_one_true_victim_each() {
    let n = env_u64("LOCK_SIM_DEADLOCK_SCHEDULES").unwrap_or(10_000);
    let w = lock_sim::DeadlockWorkload::default();
    run_deadlock_schedules("deadlock", "random_deadlocks", &w, (0..n).collect());
}

/// Without faults the bound is the protocol's own: the youngest member's next
/// chase after every member published (at most `2 * detect_after` after the cycle
/// closed), plus a chase of at most 2 round trips per owner and a confirmation
/// round trip (6 ms each way at most here).
#[test]
fn without_faults_deadlocks_are_broken_within_two_detect_periods_and_the_chase() {
    let mut w = lock_sim::DeadlockWorkload::default();
    w.faults = lock_sim::FaultConfig::none();
    w.bound = w.detect_after * 2 + Duration::from_millis(12) * 10;
    let n = env_u64("LOCK_SIM_DEADLOCK_SCHEDULES").map_or(500, |n| n / 20);
    let seeds = ((1 << 32)..(1 << 32) + n).collect();
    run_deadlock_schedules("deadlock", "without_faults", &w, seeds);
}

/// B waits behind A, which waits for nothing, for `wait`; B holds another lock
/// meanwhile. A plain wait is no deadlock, however long: B is granted when A lets
/// go, having seen none. Returns B's requests from its waiting acquisition to the
/// grant, its setData requests and its chase count.
fn waiter_cost(detect: bool, wait: Duration) -> (u64, u64, u64) {
    let mut sim = sim(4);
    let a = sim.add_client(Profile::KeepsWatches, T);
    let b = sim.add_client(Profile::KeepsWatches, T);
    let with = |s: LockSpec| if detect { s.detect_deadlocks(AFTER) } else { s };
    let ay = sim
        .acquire(a, with(LockSpec::write("/d/y").owner("A")))
        .unwrap();
    let _bz = sim
        .acquire(b, with(LockSpec::write("/d/z").owner("B")))
        .unwrap();
    sim.settle().unwrap();
    sim.reset_counters();
    let by = sim
        .acquire(b, with(LockSpec::write("/d/y").owner("B")))
        .unwrap();
    sim.run_for(wait).unwrap();
    sim.release(a, ay).unwrap();
    sim.run_until(|s| s.holds(b, by)).unwrap();
    sim.settle().unwrap();
    assert_eq!(sim.core(b).stats().deadlocks_seen, 0);
    let c = sim.counters(b);
    (
        c.requests(),
        c.requests_of(lock_sim::OpKind::SetData),
        sim.core(b).stats().deadlock_chases,
    )
}

#[test]
fn detection_costs_nothing_below_detect_after_and_a_chase_per_period_above() {
    // Shorter than detect_after: not one request more.
    let (plain, _, _) = waiter_cost(false, AFTER / 2);
    let (detecting, sets, chases) = waiter_cost(true, AFTER / 2);
    assert_eq!((detecting, sets, chases), (plain, 0, 0));
    // Ten periods: the wait published on the held node and withdrawn at the grant
    // (2 setData), and one chase per period, each a listing of /d/y and a read of
    // the two nodes there (ours and A's, a dead end: A waits nowhere).
    let (plain, _, _) = waiter_cost(false, AFTER * 10 + AFTER / 2);
    let (detecting, sets, chases) = waiter_cost(true, AFTER * 10 + AFTER / 2);
    assert_eq!(sets, 2);
    assert_eq!(chases, 10);
    assert_eq!(detecting - plain, sets + 3 * chases);
    println!(
        "waiting {:?} with detect_after {AFTER:?}: {plain} requests without detection, {detecting} with \
         ({sets} setData, {chases} chases of 3 reads)",
        AFTER * 10 + AFTER / 2
    );
}

fn scan(sim: &mut Sim, c: ClientId, root: &str) -> Vec<Vec<lock_core::CycleNode>> {
    let id = sim.deadlocks(c, root).unwrap();
    sim.run_until(|s| s.outcome(c, id).is_some()).unwrap();
    match sim.outcome(c, id) {
        Some(LockEvent::Deadlocks { cycles }) => cycles.clone(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_on_demand_scan_finds_a_cycle_through_a_kazoo_named_owner_and_nothing_else() {
    let mut sim = sim(5);
    let a = sim.add_client(Profile::KeepsWatches, T);
    let b = sim.add_client(Profile::KeepsWatches, T);
    let admin = sim.add_client(Profile::KeepsWatches, T);
    let kazoo = |p: &str| {
        LockSpec::exclusive(p)
            .scheme(lock_core::NameScheme::Kazoo)
            .owner("K")
    };
    // A third lock with a plain queue, no cycle.
    let q1 = sim.acquire(a, LockSpec::write("/s/q").owner("Q1")).unwrap();
    let _kx = sim.acquire(a, kazoo("/s/x")).unwrap();
    let _by = sim.acquire(b, LockSpec::write("/s/y").owner("B")).unwrap();
    sim.settle().unwrap();
    let _q2 = sim.acquire(b, LockSpec::write("/s/q").owner("Q2")).unwrap();
    let _ky = sim.acquire(a, kazoo("/s/y")).unwrap();
    let _bx = sim.acquire(b, LockSpec::write("/s/x").owner("B")).unwrap();
    sim.settle().unwrap();
    let cycles = scan(&mut sim, admin, "/s");
    assert_eq!(cycles.len(), 1, "{cycles:?}");
    let c = &cycles[0];
    assert_eq!(c.len(), 4, "{c:?}");
    let mut owners: Vec<_> = c.iter().map(|n| n.owner.clone().unwrap()).collect();
    owners.sort();
    assert_eq!(owners, ["B", "B", "K", "K"]);
    assert!(c
        .iter()
        .all(|n| n.node.starts_with("/s/x/") || n.node.starts_with("/s/y/")));
    // Nothing under another root, nothing once the cycle is gone.
    assert!(scan(&mut sim, admin, "/s/q").is_empty());
    sim.release(a, q1).unwrap();
    sim.settle().unwrap();
    sim.cancel(b, _bx).unwrap();
    sim.settle().unwrap();
    assert!(scan(&mut sim, admin, "/s").is_empty());
}
