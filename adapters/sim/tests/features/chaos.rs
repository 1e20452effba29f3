//! Every feature at once, under chaos: the randomized workloads.

use crate::harness::{env_u64, explored, EXPLORE_ONE_IN};
use lock_sim::Workload;
use std::time::Instant;

fn run_workload(w: Workload, salt: u64, default: u64) -> lock_sim::Coverage {
    let n = env_u64("FEATURES_SEEDS").unwrap_or(default);
    let start = Instant::now();
    let mut total = lock_sim::Coverage::default();
    let explore = explored(w.name, n.div_ceil(EXPLORE_ONE_IN));
    for seed in (salt..salt + n).chain(explore) {
        match w.run(seed) {
            Ok(r) => total += r.coverage,
            Err(failure) => panic!(
                "{failure}\nreplay: lock_sim::Sim::replay({seed}, &lock_sim::Workload::{}())",
                w.name
            ),
        }
    }
    println!(
        "{}: {n} schedules in {:.2}s: {total:?}",
        w.name,
        start.elapsed().as_secs_f64()
    );
    total
}

/// Crash-detecting sections under chaos: every crash-detecting grant's flag is
/// checked against the section marker the events imply.
#[test]
fn sections_under_chaos() {
    let c = run_workload(Workload::sections(), 8_000_000, 1500);
    let n = env_u64("FEATURES_SEEDS").unwrap_or(1500);
    assert!(
        c.crash_flags_checked > 4 * n && c.crashes_reported > n / 10,
        "{c:?}"
    );
}

/// Fenced writes under chaos (with leases and revocation): every write audited at
/// the server, every outcome checked.
#[test]
fn fenced_writes_under_chaos() {
    let c = run_workload(Workload::fenced(), 9_000_000, 1000);
    // (Writes rejected as NotHeld need an admin delete while one is in flight: rare.)
    let n = env_u64("FEATURES_SEEDS").unwrap_or(1000);
    assert!(
        c.fenced_applied > 10 * n && c.leases_expired > n / 4 && (n < 500 || c.fenced_not_held > 0),
        "{c:?}"
    );
}

/// Every recipe and every feature at once.
#[test]
fn features_under_chaos() {
    let c = run_workload(Workload::features(), 10_000_000, 1200);
    let n = env_u64("FEATURES_SEEDS").unwrap_or(1200);
    assert!(
        c.crash_flags_checked > n && c.fenced_applied > 5 * n && c.revocations_requested > n / 10,
        "{c:?}"
    );
}
