//! Revocation on the embedded simulator (nothing to install): a holder asked to let
//! go releases cooperatively, and a waiter asked to give up its place leaves.
//!
//! `report` holds a revocable lock; `backup` waits for it. An operator (`ops`, on
//! its own ZooKeeper session) revokes the lock: zklock writes Curator's `__REVOKE__`
//! into the holder's node, the holder hears `RevocationRequested` through the watch
//! on its own node, finishes its step and releases, and `backup` gets the lock with
//! a higher fencing token. Then `adhoc`, a revocable waiter, is revoked by its node
//! path and gives up with `Failed(Revoked)`, leaving no node behind.
//!
//! ```sh
//! cargo run --example revocation
//! ```

use lock_core::{FailReason, LockEvent, LockSpec, LockState};
use lock_sim::{Latency, Profile, Sim, SimConfig};
use std::time::Duration;

const LOCK: &str = "/locks/nightly-report";

fn say(sim: &Sim, who: &str, what: impl AsRef<str>) {
    println!(
        "  {:>7}  {:<7} {}",
        sim.now().to_string(),
        who,
        what.as_ref()
    );
}

fn main() {
    let mut sim = Sim::new(SimConfig::new(5).latency(Latency::between(
        Duration::from_millis(1),
        Duration::from_millis(3),
    )));
    let timeout = Duration::from_secs(6);
    let report = sim.add_client(Profile::KeepsWatches, timeout);
    let backup = sim.add_client(Profile::KeepsWatches, timeout);
    let adhoc = sim.add_client(Profile::KeepsWatches, timeout);
    let ops = sim.add_client(Profile::KeepsWatches, timeout);

    println!("== A revocable lock, released cooperatively on request");
    let lr = sim
        .acquire(report, LockSpec::write(LOCK).revocable())
        .unwrap();
    sim.run_until(|s| s.holds(report, lr)).unwrap();
    let tr = sim.grant(report, lr).unwrap().token;
    say(
        &sim,
        "report",
        format!("holds {LOCK} (revocable), token {tr}"),
    );
    let lb = sim.acquire(backup, LockSpec::write(LOCK)).unwrap();
    sim.settle().unwrap();
    say(&sim, "backup", "waits for the lock");

    let rv = sim.revoke(ops, LOCK).unwrap();
    say(&sim, "ops", format!("revoke({LOCK})"));
    sim.run_until(|s| {
        s.lock_events(report, lr)
            .contains(&LockEvent::RevocationRequested)
    })
    .unwrap();
    if let Some(LockEvent::RevocationSent { nodes }) = sim.outcome(ops, rv) {
        say(
            &sim,
            "ops",
            format!("asked {} holder(s) to let go", nodes.len()),
        );
    }
    say(
        &sim,
        "report",
        "hears RevocationRequested; it decides: finish the current step...",
    );
    assert_eq!(
        sim.state(report, lr),
        Some(LockState::Held),
        "asking is not taking"
    );
    sim.run_for(Duration::from_millis(40)).unwrap();
    say(&sim, "report", "...and release");
    sim.release(report, lr).unwrap();
    sim.run_until(|s| s.holds(backup, lb) && s.outcome(report, lr).is_some())
        .unwrap();
    let tb = sim.grant(backup, lb).unwrap().token;
    say(&sim, "backup", format!("holds {LOCK}, token {tb} (> {tr})"));
    assert!(tb > tr);
    assert_eq!(sim.outcome(report, lr), Some(&LockEvent::Released));

    println!("\n== A revocable waiter, asked to give up its place");
    let la = sim
        .acquire(adhoc, LockSpec::write(LOCK).revocable())
        .unwrap();
    sim.settle().unwrap();
    let node = sim.owned_nodes(adhoc, LOCK)[0].clone();
    say(
        &sim,
        "adhoc",
        format!(
            "waits behind backup, node {}",
            node.rsplit('/').next().unwrap()
        ),
    );
    sim.revoke(ops, &node).unwrap();
    say(&sim, "ops", "revoke(<adhoc's node>)");
    sim.run_until(|s| s.outcome(adhoc, la).is_some()).unwrap();
    say(
        &sim,
        "adhoc",
        format!("{:?}", sim.outcome(adhoc, la).unwrap()),
    );
    assert_eq!(
        sim.outcome(adhoc, la),
        Some(&LockEvent::Failed(FailReason::Revoked))
    );
    sim.settle().unwrap();
    assert!(
        sim.owned_nodes(adhoc, LOCK).is_empty(),
        "it left no node behind"
    );
    say(&sim, "adhoc", "its node is gone; backup is untouched");
    assert!(sim.holds(backup, lb));

    sim.release(backup, lb).unwrap();
    sim.run_until_idle().unwrap();
    sim.check_quiescent().unwrap();
    println!("\nok: cooperative release on request; revoked waiter left cleanly");
}
