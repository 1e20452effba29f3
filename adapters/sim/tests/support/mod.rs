//! What the seeded test targets share: their environment knobs, and the workloads
//! by the names `LOCK_SIM_WORKLOAD` takes.
#![allow(dead_code)] // each target uses a part

use lock_sim::{FaultConfig, Workload};
use std::time::Duration;

/// The number environment variable `name` holds, if set.
pub fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

/// The workload named `name`: a preset of [`Workload`], or `connection_faults`.
pub fn workload(name: &str) -> Workload {
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
        "liveness" => Workload::liveness(),
        other => panic!("unknown workload {other:?}"),
    }
}

/// Faults that never take a lock from a correct holder (no admin deletes, no
/// expiry): no holder is ever exempt from the checks.
pub fn connection_faults() -> Workload {
    let mut w =
        Workload::mixed().with_faults(FaultConfig::connection_only(Duration::from_millis(150)));
    w.name = "connection_faults";
    w
}
