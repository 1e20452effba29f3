//! Fenced writes on the embedded simulator (nothing to install): a stale holder's
//! write is rejected by ZooKeeper itself.
//!
//! Two workers update `/bank/balance` under the lock `/locks/balance`, each write
//! sent as a `multi` with a `check` on the writer's own lock node. An operator
//! force-deletes worker-1's lock node (think of a stuck process being evicted);
//! worker-1 has not heard yet and writes again: the `check` fails and nothing is
//! written. worker-2 gets the lock and its writes apply. Once worker-1 has heard,
//! zklock refuses its writes outright. The simulator audits every write to the
//! balance at the instant the server applies it: it must come from the current
//! holder, and the token it carries never goes backwards.
//!
//! ```sh
//! cargo run --example fenced
//! ```

use lock_core::{CreateMode, FencedError, LockEvent, LockId, LockSpec, MultiOp};
use lock_sim::{ClientId, Latency, Profile, Sim, SimConfig};
use std::time::Duration;

const LOCK: &str = "/locks/balance";
const DATA: &str = "/bank/balance";

fn say(sim: &Sim, who: &str, what: impl AsRef<str>) {
    println!(
        "  {:>7}  {:<8} {}",
        sim.now().to_string(),
        who,
        what.as_ref()
    );
}

fn balance(sim: &Sim) -> String {
    String::from_utf8_lossy(&sim.get(DATA).unwrap().data).into_owned()
}

/// Writes `amount` (tagged with the writer's token), fenced by the lock.
fn write(sim: &mut Sim, c: ClientId, l: LockId, amount: u32) -> u64 {
    let token = sim.grant(c, l).unwrap().token;
    let set = MultiOp::SetData {
        path: DATA.into(),
        data: format!("{token}:{amount}").into_bytes(),
        version: None,
    };
    sim.fenced_write(c, l, vec![set])
        .expect("held, as far as it knows")
}

fn outcome(sim: &Sim, c: ClientId, l: LockId, write: u64) -> Option<Result<(), FencedError>> {
    sim.lock_events(c, l).into_iter().find_map(|e| match e {
        LockEvent::FencedWrite { write: w, result } if w == write => Some(result.map(|_| ())),
        _ => None,
    })
}

fn main() {
    let timeout = Duration::from_secs(3);
    let mut sim = Sim::new(SimConfig::new(3).latency(Latency::between(
        Duration::from_millis(1),
        Duration::from_millis(3),
    )));
    sim.admin_create("/bank", b"", CreateMode::Persistent)
        .unwrap();
    sim.admin_create(DATA, b"0:0", CreateMode::Persistent)
        .unwrap();
    sim.audit_fenced_writes(DATA, LOCK);
    let w1 = sim.add_client(Profile::KeepsWatches, timeout);
    let w2 = sim.add_client(Profile::KeepsWatches, timeout);

    println!("== worker-1 holds the lock and writes");
    let l1 = sim.acquire(w1, LockSpec::write(LOCK)).unwrap();
    sim.run_until(|s| s.holds(w1, l1)).unwrap();
    let l2 = sim.acquire(w2, LockSpec::write(LOCK)).unwrap();
    sim.settle().unwrap();
    let t1 = sim.grant(w1, l1).unwrap().token;
    say(
        &sim,
        "worker-1",
        format!("holds, token {t1}; worker-2 waits"),
    );
    let a = write(&mut sim, w1, l1, 100);
    sim.run_until(|s| outcome(s, w1, l1, a).is_some()).unwrap();
    say(
        &sim,
        "worker-1",
        format!(
            "fenced write -> {:?}; balance = {}",
            outcome(&sim, w1, l1, a).unwrap(),
            balance(&sim)
        ),
    );
    assert_eq!(outcome(&sim, w1, l1, a), Some(Ok(())));

    println!("\n== an operator evicts worker-1; worker-1 writes before it hears");
    let node = sim.grant(w1, l1).unwrap().path;
    sim.admin_delete(&node).unwrap();
    say(&sim, "operator", "deletes worker-1's lock node");
    let stale = write(&mut sim, w1, l1, 666);
    say(
        &sim,
        "worker-1",
        "still believes it holds: sends a fenced write of 666",
    );
    sim.run_until(|s| outcome(s, w1, l1, stale).is_some() && s.outcome(w1, l1).is_some())
        .unwrap();
    // The watch on its node tells worker-1 of the deletion before this reply comes:
    // the reply can only be the failed check, so zklock reports `NotHeld` at once.
    let result = outcome(&sim, w1, l1, stale).unwrap();
    say(
        &sim,
        "worker-1",
        format!(
            "fenced write -> {result:?}: nothing written (the check on its node failed); then {:?}",
            sim.outcome(w1, l1).unwrap()
        ),
    );
    assert_eq!(result, Err(FencedError::NotHeld));
    assert_eq!(
        balance(&sim),
        format!("{t1}:100"),
        "the stale write was not applied"
    );
    say(&sim, "", format!("balance = {} (unchanged)", balance(&sim)));

    println!("\n== worker-2 takes over");
    sim.run_until(|s| s.holds(w2, l2)).unwrap();
    let t2 = sim.grant(w2, l2).unwrap().token;
    say(&sim, "worker-2", format!("holds, token {t2} (> {t1})"));
    let b = write(&mut sim, w2, l2, 250);
    sim.run_until(|s| outcome(s, w2, l2, b).is_some()).unwrap();
    say(
        &sim,
        "worker-2",
        format!(
            "fenced write -> {:?}; balance = {}",
            outcome(&sim, w2, l2, b).unwrap(),
            balance(&sim)
        ),
    );
    assert_eq!(balance(&sim), format!("{t2}:250"));

    let refused = sim.fenced_write(w1, l1, vec![]);
    say(
        &sim,
        "worker-1",
        format!("tries again: refused at once ({})", refused.unwrap_err()),
    );

    sim.release(w2, l2).unwrap();
    sim.run_until_idle().unwrap();
    sim.check_quiescent().unwrap();
    let audited = sim.coverage().fenced_applied;
    println!(
        "\nok: the stale holder's write never applied ({audited} writes audited at the server)"
    );
}
