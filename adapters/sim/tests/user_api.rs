//! The randomized schedules of `tests/workload.rs`, `tests/features/` and
//! `tests/deadlock.rs` with every client driven through lock-client's user API
//! ([`Workload::through_lock_client`]): a `LockClient` and its `Link` on a virtual
//! clock, the pending acquisitions, guard event streams, releases, section calls,
//! fenced writes, revocation requests and election observers polled only when
//! their wakers are woken. The invariant checker sees what the user sees; lost
//! wake-ups and guard statuses that contradict their events are violations too.
//! Each test runs its fixed schedules and a twentieth as many that change from
//! run to run.
//!
//! Environment (as in `tests/workload.rs`):
//! * `LOCK_SIM_USER_SCHEDULES=n`: fixed schedules per workload (default 300);
//! * `LOCK_SIM_SEED=s`: first seed (default 0), to explore other schedules;
//! * `SIM_SEED_BASE=b`: where each test's changing seeds come from (`.ci/run`
//!   sets it from the commit; default: today's date), printed;
//! * `LOCK_SIM_USER_REPLAY=s` (with `LOCK_SIM_WORKLOAD=exclusive|read_write|
//!   semaphore|leader|mixed|harsh|sections|fenced|features|liveness`): replays one schedule
//!   and prints its trace
//!   (`cargo test -p lock-sim --test user_api replay -- --nocapture`).

#[macro_use]
mod support;

use lock_core::{LockEvent, LockSpec};
use lock_sim::{Profile, Sim, SimConfig, Workload};
use std::time::Duration;
use support::{
    assert_exercised, env_u64, explored, replayed_from_env, replays_exactly,
    run_deadlock_schedules, run_schedules, workload,
};

/// Runs `default_count` fixed schedules of `name` (seeds offset by `salt`) and a
/// twentieth as many changing ones; fails with the replay command on the first
/// violation, or if a feature workload exercised too little.
fn run(name: &str, salt: u64, default_count: u64) {
    let count = env_u64("LOCK_SIM_USER_SCHEDULES").unwrap_or(default_count);
    let first = env_u64("LOCK_SIM_SEED").unwrap_or(0).wrapping_add(salt);
    let w = workload(name).through_lock_client();
    let label = format!("{name} through lock-client");
    let fixed = first..first + count;
    let c = run_schedules(&w, &label, fixed, count.div_ceil(20));
    if matches!(name, "sections" | "fenced" | "features") {
        assert_exercised(name, count, &c);
        let checked = c.fenced_outcomes_checked;
        assert!(name != "fenced" || checked > 10 * count, "{c:?}");
    }
}

schedules! {
    /// The liveness mode (`Workload::liveness`) through lock-client: no false
    /// `Suspended` or `Lost` reaches a guard on a sound network.
    liveness_schedules: "liveness", 17_000_000, 200;
    exclusive_schedules: "exclusive", 10_000_000, 300;
    read_write_schedules: "read_write", 11_000_000, 300;
    semaphore_schedules: "semaphore", 12_000_000, 300;
    leader_schedules: "leader", 13_000_000, 300;
    mixed_schedules: "mixed", 14_000_000, 300;
    harsh_timing_schedules: "harsh", 15_000_000, 300;
    /// Crash-detecting sections opened and closed through the guard: every
    /// crash-detecting grant's flag is checked against the section marker that the
    /// outcomes of `open_section`/`close_section` imply.
    sections_schedules: "sections", 16_000_000, 300;
    /// Fenced writes through the guard (with leases and revocable locks): every
    /// write audited at the server, every outcome `fenced_write` returned checked
    /// against it.
    fenced_schedules: "fenced", 17_000_000, 300;
    /// Every recipe with sections, fenced writes, leases, revocable locks,
    /// revocation requests and election observers, through lock-client.
    features_schedules: "features", 18_000_000, 300;
}

/// The deadlock schedules of `tests/deadlock.rs` through lock-client (500 fixed
/// and 25 changing): owners on several sessions take 2 to 4 locks in random
/// order with deadlock detection, under faults; every cycle is broken within the
/// bound by one true victim, which hears of it from its pending acquisition
/// (`LOCK_SIM_USER_DEADLOCK_SCHEDULES=n` for another count).
#[test]
fn deadlock_schedules() {
    let w = lock_sim::DeadlockWorkload::default().through_lock_client();
    let count = env_u64("LOCK_SIM_USER_DEADLOCK_SCHEDULES").unwrap_or(500);
    let first = env_u64("LOCK_SIM_SEED")
        .unwrap_or(0)
        .wrapping_add(19_000_000);
    let new = explored("deadlock through lock-client", count.div_ceil(20));
    let seeds = (first..first + count).chain(new).collect();
    run_deadlock_schedules("user_api", "deadlock_schedules", &w, seeds);
}

/// Two section calls in flight on one guard at once (a user's tasks sharing it):
/// both return, the later one decides (as the core lets it supersede the
/// earlier), and a release, which needs the guard back from both, goes through.
#[test]
fn overlapping_section_calls_on_one_guard_both_return() {
    let mut sim = Sim::new(SimConfig::new(5).user_api(true));
    let c = sim.add_client(Profile::KeepsWatches, Duration::from_secs(6));
    let spec = LockSpec::write("/locks/ledger").detect_crashes();
    let l = sim.acquire(c, spec).unwrap();
    sim.settle().unwrap();
    assert!(sim.holds(c, l));
    sim.open_section(c, l).unwrap();
    sim.close_section(c, l).unwrap();
    sim.settle().unwrap();
    assert!(
        sim.get("/locks/ledger/zkl-section").is_none(),
        "the later call (close) decided"
    );
    let sections: Vec<LockEvent> = sim
        .events(c)
        .iter()
        .map(|r| r.event.clone())
        .filter(|e| matches!(e, LockEvent::SectionOpened | LockEvent::SectionClosed))
        .collect();
    assert_eq!(
        sections,
        [LockEvent::SectionClosed],
        "only the latest call's outcome"
    );
    // Waits for both calls to return: one left waiting would stall it.
    sim.release(c, l).unwrap();
    sim.run_until_idle().unwrap();
    assert!(matches!(sim.outcome(c, l), Some(LockEvent::Released)));
}

/// The user's queries through the client: a revocation reaches the holder's
/// guard, an inspection lists the holder and the waiter, a deadlock scan finds
/// none, an election observer follows the leader until dropped; each answer comes
/// as the core's event.
#[test]
fn revocation_inspection_scan_and_observer_through_the_client() {
    let mut sim = Sim::new(SimConfig::new(8).user_api(true));
    let timeout = Duration::from_secs(6);
    let (a, b, c) = (
        sim.add_client(Profile::KeepsWatches, timeout),
        sim.add_client(Profile::LosesWatchesNewSession, timeout),
        sim.add_client(Profile::KeepsWatches, timeout),
    );
    let held = sim
        .acquire(a, LockSpec::write("/locks/job").revocable())
        .unwrap();
    sim.settle().unwrap();
    let waiting = sim.acquire(b, LockSpec::write("/locks/job")).unwrap();
    let leader = sim
        .acquire(a, LockSpec::leader("/locks/lead", "a"))
        .unwrap();
    let observer = sim.observe(c, "/locks/lead").unwrap();
    sim.settle().unwrap();
    let node = sim.grant(a, held).unwrap().path.to_string();
    let leader_node = sim.grant(a, leader).unwrap().path.to_string();

    let inspect = sim.inspect(c, "/locks/job").unwrap();
    let scan = sim.deadlocks(c, "/locks").unwrap();
    sim.settle().unwrap();
    match sim.outcome(c, inspect) {
        Some(LockEvent::Participants(p)) => {
            let names = |ps: &[lock_core::Participant]| -> Vec<String> {
                ps.iter().map(|p| format!("{}/{}", p.dir, p.node)).collect()
            };
            assert_eq!(names(&p.holders), [node.as_str()]);
            assert_eq!(p.waiters.len(), 1);
        }
        other => panic!("inspection answered {other:?}"),
    }
    assert!(
        matches!(sim.outcome(c, scan), Some(LockEvent::Deadlocks { cycles }) if cycles.is_empty()),
        "{:?}",
        sim.outcome(c, scan)
    );

    let revoke = sim.revoke(b, "/locks/job").unwrap();
    sim.settle().unwrap();
    assert!(
        matches!(sim.outcome(b, revoke), Some(LockEvent::RevocationSent { nodes }) if *nodes == [node.clone()]),
        "{:?}",
        sim.outcome(b, revoke)
    );
    let told = sim
        .events(a)
        .iter()
        .any(|r| r.lock == held && r.event == LockEvent::RevocationRequested);
    assert!(told, "the holder's guard hears the request");

    // The observer saw a lead; when it resigns, nobody leads.
    let leaders = |sim: &Sim| -> Vec<Option<String>> {
        sim.events(c)
            .iter()
            .filter(|r| r.lock == observer)
            .filter_map(|r| match &r.event {
                LockEvent::LeaderChanged { leader, .. } => {
                    Some(leader.as_ref().map(|l| l.path.clone()))
                }
                _ => None,
            })
            .collect()
    };
    assert_eq!(leaders(&sim).first(), Some(&None), "no election yet");
    // (An observer looks again for an election that did not exist yet.)
    sim.run_for(Duration::from_secs(2)).unwrap();
    assert_eq!(leaders(&sim).last(), Some(&Some(leader_node)));
    sim.release(a, leader).unwrap();
    sim.settle().unwrap();
    assert_eq!(leaders(&sim).last(), Some(&None));
    sim.cancel(c, observer).unwrap();
    sim.release(a, held).unwrap();
    sim.settle().unwrap();
    assert!(sim.holds(b, waiting));
    sim.release(b, waiting).unwrap();
    sim.run_until_idle().unwrap();
    assert!(matches!(
        sim.outcome(c, observer),
        Some(LockEvent::Failed(lock_core::FailReason::Cancelled))
    ));
    assert_eq!(sim.violation(), None);
}

/// With `LOCK_SIM_USER_REPLAY` set, replays that schedule with its trace; otherwise
/// checks that a schedule through lock-client replays exactly (same report, same
/// trace) and differs from the bare core's only in who reports: the user.
#[test]
fn replay() {
    if replayed_from_env("LOCK_SIM_USER_REPLAY", Workload::through_lock_client) {
        return;
    }
    for name in ["exclusive", "mixed"] {
        for seed in [1u64, 77] {
            let trace = replays_exactly(&workload(name).through_lock_client(), seed);
            assert!(
                trace.iter().any(|e| e.text.starts_with("user polled")),
                "{name} {seed}: the trace shows the user's polls"
            );
        }
    }
}
