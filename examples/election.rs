//! Leader election with an observer on the embedded ZooKeeper (nothing to install),
//! and a failover when the leader's session expires.
//!
//! Three service instances take part in an election; a dashboard observes it
//! without taking part. Each has its own ZooKeeper session on lock-sim's in-process
//! server, through the real `LockClient`. The leader is cut off by a network
//! partition that outlasts its session timeout: within 2/3 of the timeout it
//! suspends itself (it no longer trusts its leadership), the server expires its
//! session and deletes its node, and the next participant, the only one watching
//! that node, is elected. The dashboard follows every change. When node-b is
//! elected, node-a no longer trusts its leadership: never two trusted leaders.
//!
//! ```sh
//! cargo run --example election
//! ```
//!
//! On a real ZooKeeper, replace `server.client_with_timeout(..)` with
//! `zklock::blocking::connect("127.0.0.1:2181")?` (feature `blocking`) or
//! `zklock::connect("127.0.0.1:2181").await?` (async, the default feature).

use std::thread;
use std::time::{Duration, Instant};
use zklock::sim::Server;
use zklock::{ElectionObserver, LockClient, LostReason};

const ELECTION: &str = "/services/billing/leader";
const NAMES: [&str; 3] = ["node-a", "node-b", "node-c"];
const TIMEOUT: Duration = Duration::from_millis(900);

/// Prints one line of the timeline.
fn say(start: Instant, who: &str, what: impl std::fmt::Display) {
    let ms = start.elapsed().as_secs_f64() * 1e3;
    println!("  {ms:>7.1} ms  {who:<9} {what}");
}

/// Waits (boundedly) until `done`: clients apply their requests on their own threads.
fn until(done: impl Fn() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < Duration::from_secs(5), "timed out");
        thread::sleep(Duration::from_millis(1));
    }
}

/// Waits until the dashboard sees `name` lead, and says so.
fn follow(start: Instant, dashboard: &mut ElectionObserver, name: Option<&str>) {
    let id = |o: &ElectionObserver| o.leader().map(|l| l.id.clone());
    while id(dashboard).as_deref() != name.map(str::as_bytes) {
        dashboard
            .changed_timeout_blocking(TIMEOUT * 5)
            .expect("a change");
    }
    let leader = name.unwrap_or("nobody");
    say(start, "dashboard", format!("observes: leader = {leader}"));
}

fn main() {
    let server = Server::new();
    let nodes: [LockClient; 3] = std::array::from_fn(|_| server.client_with_timeout(TIMEOUT));
    let participants = || server.children(ELECTION).unwrap_or_default().len();
    let start = Instant::now();

    println!("== Three participants and an observer");
    let join = |i: usize| {
        let election = nodes[i].election(ELECTION, NAMES[i]);
        until(|| participants() == i + 1);
        say(start, NAMES[i], "joins the election");
        election
    };
    let (mut ea, mut eb, mut ec) = (join(0), join(1), join(2));
    let a = ea.leadership_blocking().expect("node-a leads");
    say(start, NAMES[0], format!("leads, token {}", a.token()));
    let observing = server.client();
    let dashboard = observing.observe_election_blocking(ELECTION);
    let mut dashboard = dashboard.expect("observe");
    follow(start, &mut dashboard, Some(NAMES[0]));

    println!("\n== The leader is partitioned away past its session timeout ({TIMEOUT:?})");
    let before = nodes[0].session_id();
    server.partition(&nodes[0], TIMEOUT * 2);
    say(start, NAMES[0], "is cut off (packets vanish)");
    let event = a.suspended_blocking();
    say(start, NAMES[0], format!("{event:?}: no longer leads"));
    let b = eb.leadership_blocking().expect("node-b is elected");
    say(start, NAMES[1], format!("elected, token {}", b.token()));
    assert!(!a.is_trusted() && b.is_trusted(), "two trusted leaders");
    let woken = |i: usize| nodes[i].stats_blocking().map(|s| s.handoff_notifications);
    assert_eq!((woken(1), woken(2)), (Ok(1), Ok(0)), "herd-free");
    say(start, NAMES[2], "was not woken: it watches node-b");
    follow(start, &mut dashboard, Some(NAMES[1]));

    println!("\n== Still cut off, node-a gives up; the partition heals; it rejoins");
    let reason = a.lost_blocking();
    say(start, NAMES[0], format!("Lost({reason:?})"));
    assert_eq!(reason, LostReason::SuspendedTooLong, "the whole grace");
    until(|| nodes[0].session_id().is_some_and(|id| Some(id) != before));
    say(start, NAMES[0], "is back, on a new session");
    thread::scope(|s| {
        s.spawn(move || {
            let again = ea.leadership_blocking().expect("node-a leads again");
            say(start, NAMES[0], format!("elected, token {}", again.token()));
            again.resign_blocking().expect("resign");
        });
        until(|| participants() == 3);
        say(start, NAMES[0], "rejoins, as a follower now");

        println!("\n== node-b resigns, then node-c");
        b.resign_blocking().expect("resign");
        say(start, NAMES[1], "resigned");
        let c = ec.leadership_blocking().expect("node-c is elected");
        say(start, NAMES[2], format!("elected, token {}", c.token()));
        follow(start, &mut dashboard, Some(NAMES[2]));
        c.resign_blocking().expect("resign");
        say(start, NAMES[2], "resigned");
    });
    follow(start, &mut dashboard, None);

    drop(dashboard);
    for client in nodes.iter().chain([&observing]) {
        client.close_blocking();
    }
    let left = server.children(ELECTION).unwrap_or_default();
    println!("\n  nodes left under {ELECTION}: {left:?}");
    println!("ok: never two trusted leaders; failover on session expiry; the observer followed");
}
