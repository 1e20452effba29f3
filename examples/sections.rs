//! Crash-detecting critical sections on the embedded simulator (nothing to install):
//! the next holder learns that the previous one died mid-section, and repairs.
//!
//! Transfers move money between two accounts under an exclusive lock with crash
//! detection. A worker opens a section (a marker in ZooKeeper, fenced by its lock
//! node), debits, and dies before crediting: its session expires. The next worker's
//! grant says `previous_holder_crashed`: it repairs (re-applies the credit from the
//! transfer journal), runs its own transfer in a section, and releases cleanly, which
//! closes the section in the same multi as the delete. The worker after it sees no
//! crash. The uncontended grant learns the crash flag from the listing it already
//! makes: no extra round trip.
//!
//! ```sh
//! cargo run --example sections
//! ```

use lock_core::{LockEvent, LockId, LockSpec};
use lock_sim::{ClientId, Latency, Profile, Sim, SimConfig};
use std::time::Duration;

const LOCK: &str = "/locks/ledger";

fn say(sim: &Sim, who: &str, what: impl AsRef<str>) {
    println!(
        "  {:>7}  {:<8} {}",
        sim.now().to_string(),
        who,
        what.as_ref()
    );
}

/// The accounts, and the journal of the transfer in progress.
#[derive(Debug, Default)]
struct Ledger {
    alice: i64,
    bob: i64,
    pending_credit: Option<i64>,
}

fn open(sim: &mut Sim, c: ClientId, l: LockId) {
    sim.open_section(c, l).unwrap();
    sim.run_until(|s| s.lock_events(c, l).contains(&LockEvent::SectionOpened))
        .unwrap();
}

fn main() {
    let timeout = Duration::from_secs(3);
    let mut sim = Sim::new(SimConfig::new(7).latency(Latency::between(
        Duration::from_millis(1),
        Duration::from_millis(3),
    )));
    let w1 = sim.add_client(Profile::KeepsWatches, timeout);
    let w2 = sim.add_client(Profile::KeepsWatches, timeout);
    let w3 = sim.add_client(Profile::KeepsWatches, timeout);
    let spec = || LockSpec::write(LOCK).detect_crashes();
    let mut ledger = Ledger {
        alice: 100,
        bob: 0,
        pending_credit: None,
    };
    println!("== worker-1 moves 30 from alice to bob, and dies half-way");
    let l1 = sim.acquire(w1, spec()).unwrap();
    sim.run_until(|s| s.holds(w1, l1)).unwrap();
    say(&sim, "worker-1", "holds the ledger lock");
    open(&mut sim, w1, l1);
    say(
        &sim,
        "worker-1",
        "section opened (marker set, fenced by its lock node)",
    );
    ledger.alice -= 30;
    ledger.pending_credit = Some(30);
    say(&sim, "worker-1", format!("debited alice: {ledger:?}"));
    sim.expire_session(w1);
    say(
        &sim,
        "worker-1",
        "crashes: its session expires, its lock node goes",
    );
    sim.run_until(|s| s.outcome(w1, l1).is_some()).unwrap();

    println!("\n== worker-2 takes the lock (uncontended) and is told");
    sim.reset_counters();
    let l2 = sim.acquire(w2, spec()).unwrap();
    sim.run_until(|s| s.holds(w2, l2)).unwrap();
    let g = sim.grant(w2, l2).unwrap();
    let requests = sim.counters(w2).requests();
    say(
        &sim,
        "worker-2",
        format!(
            "holds, previous_holder_crashed = {} ({requests} requests: create + list + own-node watch)",
            g.previous_holder_crashed
        ),
    );
    assert!(g.previous_holder_crashed, "the crash is reported");
    assert_eq!(requests, 3, "no extra round trip for the crash flag");
    open(&mut sim, w2, l2);
    say(
        &sim,
        "worker-2",
        "opens its own section (takes the marker over)",
    );
    if let Some(credit) = ledger.pending_credit.take() {
        ledger.bob += credit;
        say(
            &sim,
            "worker-2",
            format!("repairs: re-applies the credit: {ledger:?}"),
        );
    }
    ledger.alice -= 20;
    ledger.bob += 20;
    say(&sim, "worker-2", format!("moves 20 more: {ledger:?}"));
    assert_eq!(ledger.alice + ledger.bob, 100, "money is conserved");

    println!(
        "\n== worker-3 waits; worker-2 releases cleanly (closing its section in the same multi)"
    );
    let l3 = sim.acquire(w3, spec()).unwrap();
    sim.settle().unwrap();
    sim.release(w2, l2).unwrap();
    sim.run_until(|s| s.holds(w3, l3)).unwrap();
    let g3 = sim.grant(w3, l3).unwrap();
    say(
        &sim,
        "worker-3",
        format!(
            "holds, previous_holder_crashed = {}",
            g3.previous_holder_crashed
        ),
    );
    assert!(
        !g3.previous_holder_crashed,
        "a clean release is not a crash"
    );
    assert_eq!(sim.outcome(w2, l2), Some(&LockEvent::Released));

    sim.release(w3, l3).unwrap();
    sim.run_until_idle().unwrap();
    sim.check_quiescent().unwrap();
    assert!(sim.children(LOCK).is_empty(), "no marker left");
    println!("\nok: the crash inside the section was detected and repaired by the next holder");
}
