//! Crash-detecting critical sections on the embedded ZooKeeper (nothing to install):
//! the next holder learns that the previous one died mid-section, and repairs.
//!
//! Transfers move money between two accounts under an exclusive lock with crash
//! detection, each worker on its own ZooKeeper session on lock-sim's in-process
//! server, through the real `LockClient`. A worker opens a section (a marker in
//! ZooKeeper, fenced by its lock node), debits, and dies before crediting: its
//! session expires. The next worker's grant says `previous_holder_crashed`: it
//! repairs (re-applies the credit from the transfer journal), runs its own transfer
//! in a section, and releases cleanly, which closes the section in the same multi as
//! the delete. The worker after it sees no crash. The uncontended grant learns the
//! crash flag from the listing it already makes: no extra round trip.
//!
//! ```sh
//! cargo run --example sections
//! ```
//!
//! On a real ZooKeeper, replace `server.client()` with
//! `zklock::blocking::connect("127.0.0.1:2181")?` (feature `blocking`) or
//! `zklock::connect("127.0.0.1:2181").await?` (async, the default feature).

use std::thread;
use std::time::{Duration, Instant};
use zklock::sim::Server;
use zklock::{LockClient, LostReason};

const LOCK: &str = "/locks/ledger";

/// Prints one line of the timeline.
fn say(start: Instant, who: &str, what: impl std::fmt::Display) {
    let ms = start.elapsed().as_secs_f64() * 1e3;
    println!("  {ms:>7.1} ms  {who:<8} {what}");
}

/// The accounts, and the journal of the transfer in progress.
#[derive(Debug)]
struct Ledger {
    alice: i64,
    bob: i64,
    pending_credit: Option<i64>,
}

fn main() {
    let server = Server::new();
    let [w1, w2, w3]: [LockClient; 3] = std::array::from_fn(|_| server.client());
    let ledger = |c: &LockClient| c.mutex(LOCK).detect_crashes();
    let mut books = Ledger {
        alice: 100,
        bob: 0,
        pending_credit: None,
    };
    let start = Instant::now();

    println!("== worker-1 moves 30 from alice to bob, and dies half-way");
    let g1 = ledger(&w1).lock_blocking().expect("worker-1 locks");
    say(start, "worker-1", "holds the ledger lock");
    g1.open_section_blocking().expect("open");
    say(
        start,
        "worker-1",
        "opens a section (a marker, fenced by its node)",
    );
    books.alice -= 30;
    books.pending_credit = Some(30);
    say(start, "worker-1", format!("debits alice: {books:?}"));
    server.expire_session(&w1);
    say(start, "worker-1", "crashes: its session expires");
    assert_eq!(g1.lost_blocking(), LostReason::SessionExpired);

    println!("\n== worker-2 takes the lock (uncontended) and is told");
    let g2 = ledger(&w2).lock_blocking().expect("worker-2 locks");
    let crashed = g2.previous_holder_crashed();
    let requests = w2.stats_blocking().expect("stats").requests;
    say(
        start,
        "worker-2",
        format!("holds; previous_holder_crashed = {crashed}"),
    );
    say(
        start,
        "",
        format!("    ({requests} requests: no extra one for the flag)"),
    );
    assert!(crashed, "the crash is reported");
    assert_eq!(
        requests, 2,
        "create + getChildren: as without crash detection"
    );
    g2.open_section_blocking().expect("open");
    say(
        start,
        "worker-2",
        "opens its own section (takes the marker over)",
    );
    if let Some(credit) = books.pending_credit.take() {
        books.bob += credit;
        say(start, "worker-2", format!("repairs: {books:?}"));
    }
    books.alice -= 20;
    books.bob += 20;
    say(start, "worker-2", format!("moves 20 more: {books:?}"));
    assert_eq!(books.alice + books.bob, 100, "money is conserved");

    println!(
        "\n== worker-3 waits; worker-2 releases cleanly (closing its section in the same multi)"
    );
    let waiting = ledger(&w3).start().expect("start");
    thread::sleep(Duration::from_millis(20)); // lets worker-3 queue behind worker-2
    say(start, "worker-3", "waits");
    g2.release_blocking().expect("release");
    say(start, "worker-2", "releases");
    let g3 = waiting.wait_blocking().expect("worker-3's turn");
    let crashed = g3.previous_holder_crashed();
    say(
        start,
        "worker-3",
        format!("holds; previous_holder_crashed = {crashed}"),
    );
    assert!(!crashed, "a clean release is not a crash");
    g3.release_blocking().expect("release");

    for client in [&w1, &w2, &w3] {
        client.close_blocking();
    }
    let left = server.children(LOCK).unwrap_or_default();
    println!("\n  nodes left under {LOCK} (no marker): {left:?}");
    assert!(left.is_empty(), "no marker left");
    println!("ok: the crash inside the section was detected and repaired by the next holder");
}
