//! Randomized schedules: many clients, every recipe, random acquire / hold / release /
//! cancel / timeout / revoke with every fault, and the invariants checked after every
//! step. 9,500 schedules per run on the bare core, in a few seconds; with the
//! 1,890 of `tests/user_api.rs` (the same workloads through lock-client's user
//! API), over 10,000.
//!
//! Environment:
//! * `LOCK_SIM_SCHEDULES=n`: schedules per workload (default 1600; 750 for the
//!   two fault-heavy ones);
//! * `LOCK_SIM_SEED=s`: first seed (default 0), to explore other schedules;
//! * `LOCK_SIM_REPLAY=s` (with `LOCK_SIM_WORKLOAD=exclusive|read_write|semaphore|
//!   leader|mixed|connection_faults|harsh|sections|fenced|features`): replays one
//!   schedule and prints its trace
//!   (`cargo test -p lock-sim --test workload replay -- --nocapture`).

use lock_sim::{FaultConfig, Sim, Workload};
use std::time::{Duration, Instant};

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

fn workload(name: &str) -> Workload {
    match name {
        "exclusive" => Workload::exclusive(),
        "read_write" => Workload::read_write(),
        "semaphore" => Workload::semaphore(),
        "leader" => Workload::leader(),
        "mixed" => Workload::mixed(),
        "connection_faults" => connection_faults(),
        "harsh" => Workload::harsh(),
        "sections" => Workload::sections(),
        "fenced" => Workload::fenced(),
        "features" => Workload::features(),
        other => panic!("unknown workload {other:?}"),
    }
}

/// Faults that never take a lock from a correct holder (no admin deletes, no
/// expiry): no holder is ever exempt from the checks.
fn connection_faults() -> Workload {
    let mut w =
        Workload::mixed().with_faults(FaultConfig::connection_only(Duration::from_millis(150)));
    w.name = "connection_faults";
    w
}

/// Runs `count` schedules of `w` (seeds offset by `salt` so every workload gets its
/// own), failing with the replay instructions on the first violation.
fn run(w: Workload, salt: u64, default_count: u64) {
    let count = env_u64("LOCK_SIM_SCHEDULES").unwrap_or(default_count);
    let first = env_u64("LOCK_SIM_SEED").unwrap_or(0).wrapping_add(salt);
    let start = Instant::now();
    let (mut steps, mut acquired, mut faults) = (0u64, 0usize, 0u64);
    for seed in first..first + count {
        match w.run(seed) {
            Ok(r) => {
                steps += r.steps;
                acquired += r.acquired;
                faults += r.faults;
            }
            Err(failure) => panic!(
                "{failure}\nreplay with LOCK_SIM_REPLAY={seed} LOCK_SIM_WORKLOAD={} \
                 cargo test -p lock-sim --test workload replay -- --nocapture",
                w.name
            ),
        }
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{}: {count} schedules (seeds {first}..{}) in {secs:.2}s = {:.0} schedules/s, \
         {steps} steps ({:.0} steps/s), {acquired} acquisitions granted, {faults} faults",
        w.name,
        first + count,
        count as f64 / secs,
        steps as f64 / secs,
    );
}

#[test]
fn exclusive_schedules() {
    run(Workload::exclusive(), 0, 1600);
}

#[test]
fn read_write_schedules() {
    run(Workload::read_write(), 1_000_000, 1600);
}

#[test]
fn semaphore_schedules() {
    run(Workload::semaphore(), 2_000_000, 1600);
}

#[test]
fn leader_schedules() {
    run(Workload::leader(), 3_000_000, 1600);
}

#[test]
fn mixed_schedules() {
    run(Workload::mixed(), 4_000_000, 1600);
}

#[test]
fn connection_fault_schedules() {
    run(connection_faults(), 5_000_000, 750);
}

#[test]
fn harsh_timing_schedules() {
    run(Workload::harsh(), 6_000_000, 750);
}

/// With `LOCK_SIM_REPLAY` set, replays that schedule with its trace; otherwise checks
/// that replaying is exact (same report, same trace, twice).
#[test]
fn replay() {
    if let Some(seed) = env_u64("LOCK_SIM_REPLAY") {
        let name = std::env::var("LOCK_SIM_WORKLOAD").unwrap_or_else(|_| "mixed".into());
        let w = workload(&name);
        let (result, sim) = w.simulate(seed, true);
        for e in sim.trace_log() {
            println!("{e}");
        }
        match result {
            Ok(r) => println!("schedule {seed} of {name}: ok: {r:?}"),
            Err(v) => panic!("schedule {seed} of {name}: {v}"),
        }
        return;
    }
    for name in ["exclusive", "read_write", "semaphore", "leader", "mixed"] {
        let w = workload(name);
        for seed in [1u64, 77, 4242] {
            let plain = w.run(seed).expect("passes");
            let replayed = Sim::replay(seed, &w).expect("passes");
            assert_eq!(plain, replayed, "{name} {seed}");
            let (_, a) = w.simulate(seed, true);
            let (_, b) = w.simulate(seed, true);
            assert_eq!(a.trace_log(), b.trace_log(), "{name} {seed}: same trace");
            assert!(!a.trace_log().is_empty());
        }
    }
}
