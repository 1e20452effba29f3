//! Max-hold leases on the embedded simulator (nothing to install): a holder that
//! hangs loses the lock when its lease runs out, and the fencing token exposes its
//! late write.
//!
//! `batch-1` takes a lock with a 2 s lease and hangs. `batch-2` waits. At exactly
//! 2 s after the grant, zklock reports `Lost(LeaseExpired)` to `batch-1` and deletes
//! its node; `batch-2` holds at once with a higher token. When `batch-1` wakes up
//! and writes to the storage with its old token, the storage (which remembers the
//! highest token it has seen) rejects it.
//!
//! ```sh
//! cargo run --example lease
//! ```

use lock_core::{FencingToken, LockEvent, LockSpec, LostReason};
use lock_sim::{Latency, Profile, Sim, SimConfig};
use std::time::Duration;

const LOCK: &str = "/locks/batch";

fn say(sim: &Sim, who: &str, what: impl AsRef<str>) {
    println!(
        "  {:>7}  {:<8} {}",
        sim.now().to_string(),
        who,
        what.as_ref()
    );
}

/// A storage service that rejects writes carrying a token lower than one it has seen.
#[derive(Default)]
struct Storage {
    highest: Option<FencingToken>,
    value: String,
}

impl Storage {
    fn write(&mut self, token: FencingToken, value: &str) -> Result<(), String> {
        if self.highest.is_some_and(|h| token < h) {
            return Err(format!(
                "token {token} < {}: stale writer",
                self.highest.unwrap()
            ));
        }
        self.highest = Some(token);
        self.value = value.to_owned();
        Ok(())
    }
}

fn main() {
    let lease = Duration::from_secs(2);
    let mut sim = Sim::new(SimConfig::new(9).latency(Latency::between(
        Duration::from_millis(1),
        Duration::from_millis(3),
    )));
    let b1 = sim.add_client(Profile::KeepsWatches, Duration::from_secs(6));
    let b2 = sim.add_client(Profile::KeepsWatches, Duration::from_secs(6));
    let mut storage = Storage::default();

    println!("== batch-1 takes the lock with a {lease:?} lease");
    let l1 = sim
        .acquire(b1, LockSpec::write(LOCK).max_hold(lease))
        .unwrap();
    sim.run_until(|s| s.holds(b1, l1)).unwrap();
    let granted = sim.now();
    let t1 = sim.grant(b1, l1).unwrap().token;
    say(&sim, "batch-1", format!("holds, token {t1}"));
    storage.write(t1, "batch-1: started").unwrap();
    let l2 = sim.acquire(b2, LockSpec::write(LOCK)).unwrap();
    sim.settle().unwrap();
    say(&sim, "batch-2", "waits");
    say(&sim, "batch-1", "hangs (never releases)");

    sim.run_until(|s| s.outcome(b1, l1).is_some()).unwrap();
    let lost = sim.outcome(b1, l1).unwrap().clone();
    say(&sim, "batch-1", format!("{lost:?}"));
    assert_eq!(lost, LockEvent::Lost(LostReason::LeaseExpired));
    assert_eq!(
        sim.now() - granted,
        lease,
        "exactly max_hold after the grant"
    );
    sim.run_until(|s| s.holds(b2, l2)).unwrap();
    let t2 = sim.grant(b2, l2).unwrap().token;
    assert!(
        sim.owned_nodes(b1, LOCK).is_empty(),
        "batch-1's node is gone"
    );
    say(
        &sim,
        "batch-2",
        format!("holds, token {t2} (> {t1}); batch-1's node is gone"),
    );
    assert!(t2 > t1);
    storage.write(t2, "batch-2: done").unwrap();
    say(&sim, "batch-2", format!("writes with token {t2}: ok"));

    println!("\n== batch-1 wakes up and writes with its old token");
    let late = storage.write(t1, "batch-1: done");
    say(
        &sim,
        "storage",
        format!("rejects: {}", late.clone().unwrap_err()),
    );
    assert!(late.is_err());
    assert_eq!(storage.value, "batch-2: done");
    let refused = sim.fenced_write(b1, l1, vec![]);
    say(
        &sim,
        "batch-1",
        format!(
            "a fenced write is refused at once too ({})",
            refused.unwrap_err()
        ),
    );

    sim.release(b2, l2).unwrap();
    sim.run_until_idle().unwrap();
    sim.check_quiescent().unwrap();
    println!("\nok: the lease expired, the lock moved on, the late writer was caught by its token");
}
