//! zklock demo on the embedded ZooKeeper: nothing to install.
//!
//! Four workers, each a thread with its own ZooKeeper session, contend for an
//! exclusive lock and then a read/write lock on lock-sim's in-process server,
//! through the same `LockClient` a real deployment uses; then one worker's
//! connection drops (its lock is suspended, then resumed) and one's session expires
//! (its lock is lost, and the next worker moves up). The summary counts the
//! ZooKeeper requests per acquisition.
//!
//! ```sh
//! cargo run --example demo
//! ```
//!
//! On a real ZooKeeper, replace `server.client()` with
//! `zklock::blocking::connect("127.0.0.1:2181")?` (feature `blocking`) or
//! `zklock::connect("127.0.0.1:2181").await?` (async, the default feature).

use std::thread;
use std::time::{Duration, Instant};
use zklock::sim::Server;
use zklock::LockEvent;
use zklock::{LockClient, LockGuard};

const NAMES: [&str; 4] = ["alice", "bob", "carol", "dave"];

/// Prints one line of the timeline.
fn say(start: Instant, who: &str, what: impl std::fmt::Display) {
    let ms = start.elapsed().as_secs_f64() * 1e3;
    println!("  {ms:>7.1} ms  {who:<6} {what}");
}

fn node(guard: &LockGuard) -> &str {
    guard.path().rsplit('/').next().unwrap_or_default()
}

fn main() {
    let server = Server::new();
    let workers: Vec<LockClient> = NAMES.iter().map(|_| server.client()).collect();
    let start = Instant::now();

    println!(
        "== Exclusive lock /demo/job: every worker takes it twice, one at a time, in arrival order"
    );
    thread::scope(|s| {
        for (name, locks) in NAMES.iter().zip(&workers) {
            s.spawn(move || {
                for _ in 0..2 {
                    say(start, name, "wants    /demo/job");
                    let guard = locks.mutex("/demo/job").lock_blocking().expect("lock");
                    say(
                        start,
                        name,
                        format!("HOLDS    token={} node={}", guard.token(), node(&guard)),
                    );
                    thread::sleep(Duration::from_millis(20));
                    say(start, name, "releases");
                    guard.release_blocking().expect("release");
                }
            });
        }
    });

    println!("\n== Read/write lock /demo/table: readers share; the writer waits for them; a later reader waits for the writer");
    let table = |i: usize| workers[i].rwlock("/demo/table");
    let r1 = table(0).read().lock_blocking().expect("read");
    say(start, NAMES[0], "HOLDS    read");
    let r2 = table(1).read().lock_blocking().expect("read");
    say(start, NAMES[1], "HOLDS    read, beside alice");
    thread::scope(|s| {
        s.spawn(|| {
            let w = table(2).write().lock_blocking().expect("write");
            say(start, NAMES[2], "HOLDS    write, alone");
            thread::sleep(Duration::from_millis(20));
            say(start, NAMES[2], "releases write");
            w.release_blocking().expect("release");
        });
        s.spawn(|| {
            // Queued after the writer (give it time to queue): waits for it.
            thread::sleep(Duration::from_millis(10));
            let r3 = table(3).read().lock_blocking().expect("read");
            say(start, NAMES[3], "HOLDS    read, after the writer");
            r3.release_blocking().expect("release");
        });
        thread::sleep(Duration::from_millis(30));
        say(start, NAMES[0], "releases read");
        r1.release_blocking().expect("release");
        say(start, NAMES[1], "releases read");
        r2.release_blocking().expect("release");
    });

    println!("\n== Faults: a dropped connection suspends a holder; an expired session loses it");
    let guard = workers[0].mutex("/demo/job").lock_blocking().expect("lock");
    server.disconnect(&workers[0], Duration::from_millis(100));
    for _ in 0..2 {
        let event = guard.next_event_blocking().expect("an event");
        say(start, NAMES[0], format!("{event:?}"));
    }
    let waiting = workers[1].mutex("/demo/job").start().expect("start");
    say(start, NAMES[1], "waits behind alice");
    server.expire_session(&workers[0]);
    say(
        start,
        NAMES[0],
        format!("Lost({:?})", guard.lost_blocking()),
    );
    let next = waiting.wait_blocking().expect("granted");
    say(
        start,
        NAMES[1],
        format!(
            "HOLDS    token={} (greater than alice's {})",
            next.token(),
            guard.token()
        ),
    );
    assert_eq!(
        next.next_event_timeout_blocking(Duration::ZERO),
        None::<LockEvent>
    );
    next.release_blocking().expect("release");

    println!("\n== Summary");
    let mut requests = 0;
    let mut acquired = 0;
    for locks in &workers {
        locks.wait_idle_blocking().expect("idle");
        let stats = locks.stats_blocking().expect("stats");
        requests += stats.requests;
        acquired += stats.acquired;
    }
    println!("  acquisitions: {acquired}, ZooKeeper requests: {requests}");
    println!(
        "  requests per acquisition, its release included: {:.2} (3 when the lock is free: create + getChildren, then delete)",
        requests as f64 / acquired.max(1) as f64
    );
    for locks in &workers {
        locks.close_blocking();
    }
    println!(
        "  nodes left under /demo/job: {:?}",
        server.children("/demo/job").unwrap_or_default()
    );
}
