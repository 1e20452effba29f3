//! Dining philosophers on the in-process server (lock-sim): distributed deadlock
//! detection breaking a real deadlock, then the same philosophers made
//! deadlock-free by taking both forks with one multi-lock (`LockClient::multi`),
//! which takes them in one canonical order.
//!
//! Each philosopher is an owner with its own client (its own ZooKeeper session);
//! each fork is a mutex. Round 1: everyone takes the left fork, then the right
//! one: a cycle of five waits. With `detect_deadlocks`, the waiters chase each
//! other's published waits through ZooKeeper, and exactly one of them (the
//! youngest waiting node) fails with `Error::Deadlock`; it puts its fork down and
//! tries again, and everyone eats. Round 2: everyone asks for "left and right"
//! as one multi-lock, all or nothing; the multi-lock takes the forks in path order,
//! so no cycle can form (the order is a total order on forks), whatever order the
//! philosopher names them in.
//!
//! Run with `cargo run -p zklock-examples --example philosophers`.

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};
use zklock::sim::Server;
use zklock::{Error, LockClient};

const N: usize = 5;
const DETECT_AFTER: Duration = Duration::from_millis(100);

fn fork(i: usize) -> String {
    format!("/philosophers/fork-{}", i % N)
}

fn name(i: usize) -> String {
    format!("philosopher-{i}")
}

/// Round 1: left fork, then right fork, all at once. Returns how many times this
/// philosopher was chosen as a victim.
fn naive(me: usize, table: LockClient, all_seated: Arc<Barrier>) -> Result<u32, Error> {
    let mut victim = 0;
    loop {
        let left = table.mutex(fork(me)).lock_blocking()?;
        if victim == 0 {
            all_seated.wait(); // everyone holds a left fork: the trap is set
        }
        let start = Instant::now();
        let right = table.mutex(fork(me + 1)).detect_deadlocks(DETECT_AFTER);
        match right.lock_timeout_blocking(Duration::from_secs(30)) {
            Ok(right) => {
                println!("  {} eats", name(me));
                right.release_blocking()?;
                left.release_blocking()?;
                return Ok(victim);
            }
            Err(Error::Deadlock { cycle }) => {
                victim += 1;
                let owners: Vec<&str> = cycle
                    .iter()
                    .filter(|n| !n.holds)
                    .filter_map(|n| n.owner.as_deref())
                    .collect();
                println!(
                    "  deadlock detected after {:?}: {} waits for the next, the last for the first",
                    start.elapsed(),
                    owners.join(" -> "),
                );
                for node in &cycle {
                    let what = if node.holds { "holds" } else { "waits at" };
                    let owner = node.owner.as_deref().unwrap_or("?");
                    println!("    {owner} {what} {}", node.node);
                }
                println!("  victim: {} puts its left fork down and retries", name(me));
                left.release_blocking()?;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Round 2: both forks as one multi-lock (left named first, as in round 1). It
/// takes them in canonical order, all or nothing: no deadlock is possible, and
/// detection, still on, never fires.
fn canonical(me: usize, table: LockClient, meals: usize) -> Result<(), Error> {
    let forks = table
        .multi([fork(me), fork(me + 1)])
        .detect_deadlocks(DETECT_AFTER);
    for _ in 0..meals {
        let both = forks.lock_blocking()?; // never `Error::Deadlock`
        both.release_blocking()?;
    }
    Ok(())
}

fn main() -> Result<(), Error> {
    let server = Server::new();
    let tables: Vec<LockClient> = (0..N)
        .map(|i| server.client().with_owner(name(i)))
        .collect();

    println!("round 1: left fork first (deadlocks)");
    let seated = Arc::new(Barrier::new(N));
    let threads: Vec<_> = tables
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let (t, seated) = (t.clone(), seated.clone());
            std::thread::spawn(move || naive(i, t, seated))
        })
        .collect();
    let mut victims = 0;
    for t in threads {
        victims += t.join().expect("philosopher panicked")?;
    }
    println!("round 1: everyone ate; {victims} victim(s) broke the deadlock");

    const MEALS: usize = 20;
    println!("round 2: both forks as one multi-lock, {MEALS} meals each");
    let start = Instant::now();
    let threads: Vec<_> = tables
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let t = t.clone();
            std::thread::spawn(move || canonical(i, t, MEALS))
        })
        .collect();
    for t in threads {
        t.join().expect("philosopher panicked")?;
    }
    println!(
        "round 2: {} meals in {:?}, no deadlock",
        N * MEALS,
        start.elapsed()
    );
    for t in &tables {
        t.close_blocking();
    }
    Ok(())
}
