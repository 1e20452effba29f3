//! The fleet harness end to end at small size against a real 3-node ensemble
//! (lock-testkit): 20 sessions in 2 worker processes for a few seconds. The
//! full sizes run from `scripts/bench.sh fleet`, not here.

use lock_fleet::{run_case, CaseConfig};
use std::path::PathBuf;
use std::time::Duration;

#[test]
fn twenty_sessions_hold_hand_off_and_never_overlap() {
    let dir = std::env::temp_dir().join(format!("zklock-fleet-smoke-{}", std::process::id()));
    let mut config = CaseConfig::from_env(
        20,
        PathBuf::from(env!("CARGO_BIN_EXE_zklock-fleet")),
        dir.clone(),
    );
    config.workers = 2;
    config.window = Duration::from_secs(4);
    config.warmup = Duration::from_secs(1);
    config.workload.think_ms = 300;
    config.workload.hot_sessions = 6;
    config.workload.hot_locks = 2;
    config.workload.cold_locks = 50;
    config.heap_mb = 256;
    let result = run_case(&config);
    let _ = std::fs::remove_dir_all(&dir);
    println!("{}", lock_fleet::report::case_text(&result));
    assert_eq!(result.problems(), Vec::<String>::new(), "the run's checks");
    assert_eq!(result.connected, 20);
    // Three hot sessions per hot lock queue behind each other: handoffs happen.
    assert!(
        result.figures.handoff.count > 0,
        "no handoff on the hot locks"
    );
    assert!(
        result.figures.cold_grant.count > 0,
        "no cold lock was granted"
    );
    // Every member took requests: the sessions spread over the ensemble.
    assert!(result.leader_rps > 0.0 && result.follower_rps > 0.0);
    assert!(
        result.members.iter().all(|m| m.heap_used_mb.is_some()),
        "jcmd read no heap"
    );
}
