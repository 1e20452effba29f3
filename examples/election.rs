//! Leader election with an observer on the embedded simulator (nothing to install),
//! and a failover when the leader's session expires.
//!
//! Three service instances take part in an election; a dashboard observes it
//! without taking part. The leader is cut off by a network partition that outlasts
//! its session timeout: within 2/3 of the timeout it suspends itself (it no longer
//! trusts its leadership), the server expires its session and deletes its node,
//! and the next participant, the only one watching that node, is elected. The
//! dashboard follows every change. At no instant do two instances trust that they
//! lead (the simulator checks it after every step).
//!
//! ```sh
//! cargo run --example election
//! ```

use lock_core::{LockEvent, LockId, LockSpec, LostReason};
use lock_sim::{ClientId, Latency, Profile, Sim, SimConfig};
use std::time::Duration;

const ELECTION: &str = "/services/billing/leader";
const NAMES: [&str; 3] = ["node-a", "node-b", "node-c"];

fn say(sim: &Sim, who: &str, what: impl AsRef<str>) {
    println!(
        "  {:>7}  {:<9} {}",
        sim.now().to_string(),
        who,
        what.as_ref()
    );
}

fn leader_name(sim: &Sim, dashboard: ClientId, obs: LockId) -> Option<String> {
    sim.events(dashboard)
        .iter()
        .rev()
        .find_map(|r| match &r.event {
            LockEvent::LeaderChanged { leader, .. } if r.lock == obs => Some(
                leader
                    .as_ref()
                    .map(|l| String::from_utf8_lossy(&l.id).into_owned())
                    .unwrap_or_else(|| "nobody".into()),
            ),
            _ => None,
        })
}

/// When (c, l) first reported an event matching `pred`.
fn first(sim: &Sim, c: ClientId, l: LockId, pred: impl Fn(&LockEvent) -> bool) -> Option<String> {
    sim.events(c)
        .iter()
        .find(|r| r.lock == l && pred(&r.event))
        .map(|r| r.at.to_string())
}

fn main() {
    let timeout = Duration::from_secs(3);
    let mut sim = Sim::new(SimConfig::new(11).latency(Latency::between(
        Duration::from_millis(1),
        Duration::from_millis(3),
    )));
    let nodes: Vec<ClientId> = NAMES
        .iter()
        .map(|_| sim.add_client(Profile::KeepsWatches, timeout))
        .collect();
    let dashboard = sim.add_client(Profile::KeepsWatches, timeout);

    println!("== Three participants and an observer");
    let mut ids = Vec::new();
    for (i, &n) in nodes.iter().enumerate() {
        ids.push(
            sim.acquire(n, LockSpec::leader(ELECTION, NAMES[i]))
                .unwrap(),
        );
        sim.settle().unwrap();
        say(&sim, NAMES[i], "joins the election");
    }
    let obs = sim.observe(dashboard, ELECTION).unwrap();
    sim.settle().unwrap();
    assert!(sim.holds(nodes[0], ids[0]));
    say(&sim, NAMES[0], "is the leader");
    say(
        &sim,
        "dashboard",
        format!(
            "observes: leader = {}",
            leader_name(&sim, dashboard, obs).unwrap()
        ),
    );

    println!("\n== The leader is partitioned away past its session timeout ({timeout:?})");
    sim.reset_counters();
    sim.partition(nodes[0], timeout * 2);
    say(&sim, NAMES[0], "is cut off (packets vanish)");
    sim.run_until(|s| s.holds(nodes[1], ids[1])).unwrap();
    let suspended_at = first(&sim, nodes[0], ids[0], |e| *e == LockEvent::Suspended)
        .expect("the cut-off leader suspends itself");
    let elected_at = first(&sim, nodes[1], ids[1], |e| {
        matches!(e, LockEvent::Acquired(_))
    })
    .unwrap();
    println!(
        "  {suspended_at:>7}  {:<9} Suspended (within 2/3 of the timeout): no longer trusts its leadership",
        NAMES[0]
    );
    println!(
        "  {elected_at:>7}  {:<9} elected: the server expired node-a's session, its node went, node-b's watch fired",
        NAMES[1]
    );
    assert!(suspended_at < elected_at, "never two trusted leaders");
    let woken: u64 = [1, 2]
        .iter()
        .map(|&i| sim.counters(nodes[i]).notifications)
        .sum();
    println!(
        "  {:>7}  {:<9} participants woken by the change: {woken} (node-c sleeps on)",
        "", ""
    );
    assert_eq!(woken, 1, "herd-free: one participant wakes");
    sim.run_until(|s| leader_name(s, dashboard, obs).as_deref() == Some(NAMES[1]))
        .unwrap();
    say(
        &sim,
        "dashboard",
        format!(
            "observes: leader = {}",
            leader_name(&sim, dashboard, obs).unwrap()
        ),
    );

    println!("\n== Still cut off, node-a gives up; then the partition heals");
    sim.run_until(|s| s.outcome(nodes[0], ids[0]).is_some())
        .unwrap();
    let out = sim.outcome(nodes[0], ids[0]).unwrap().clone();
    say(
        &sim,
        NAMES[0],
        format!("{out:?} (suspended for the whole grace)"),
    );
    assert!(matches!(
        out,
        LockEvent::Lost(LostReason::SessionExpired | LostReason::SuspendedTooLong)
    ));
    sim.settle().unwrap();
    say(&sim, NAMES[0], "reconnects, learns its session expired");
    let rejoin = sim
        .acquire(nodes[0], LockSpec::leader(ELECTION, NAMES[0]))
        .unwrap();
    sim.settle().unwrap();
    say(&sim, NAMES[0], "rejoins, as a follower now");
    assert!(sim.holds(nodes[1], ids[1]) && !sim.holds(nodes[0], rejoin));
    assert_eq!(leader_name(&sim, dashboard, obs).as_deref(), Some(NAMES[1]));

    println!("\n== node-b resigns");
    sim.release(nodes[1], ids[1]).unwrap();
    sim.run_until(|s| s.holds(nodes[2], ids[2])).unwrap();
    sim.settle().unwrap();
    say(&sim, NAMES[2], "elected");
    say(
        &sim,
        "dashboard",
        format!(
            "observes: leader = {}",
            leader_name(&sim, dashboard, obs).unwrap()
        ),
    );
    assert_eq!(leader_name(&sim, dashboard, obs).as_deref(), Some(NAMES[2]));

    sim.cancel(dashboard, obs).unwrap();
    sim.release(nodes[2], ids[2]).unwrap();
    sim.run_until(|s| s.holds(nodes[0], rejoin)).unwrap();
    sim.release(nodes[0], rejoin).unwrap();
    sim.run_until_idle().unwrap();
    sim.check_quiescent().unwrap();
    println!("\nok: one trusted leader at any instant; failover on session expiry; the observer followed");
}
