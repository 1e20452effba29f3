//! Fenced writes on the embedded ZooKeeper (nothing to install): a stale holder's
//! write is rejected by ZooKeeper itself.
//!
//! Two workers, each on its own ZooKeeper session on lock-sim's in-process server
//! (through the real `LockClient`), update `/bank/balance` under the lock
//! `/locks/balance`, each write sent as a `multi` with a `check` on the writer's own
//! lock node. An operator force-deletes worker-1's lock node (think of a stuck
//! process being evicted); worker-1 writes again at once, racing the watch that
//! tells it: if its write goes out first, the `check` fails at the server and
//! nothing is written; if the news came first, zklock refuses the write outright.
//! Either way the balance is untouched. worker-2 gets the lock and its writes
//! apply. Every value carries its writer's token: they never go backwards.
//!
//! ```sh
//! cargo run --example fenced
//! ```
//!
//! On a real ZooKeeper, replace `server.client()` with
//! `zklock::blocking::connect("127.0.0.1:2181")?` (feature `blocking`) or
//! `zklock::connect("127.0.0.1:2181").await?` (async, the default feature).

use std::time::Instant;
use zklock::sim::Server;
use zklock::{FencedError, LockClient, LockGuard, Writes};

const LOCK: &str = "/locks/balance";
const DATA: &str = "/bank/balance";

/// Prints one line of the timeline.
fn say(start: Instant, who: &str, what: impl std::fmt::Display) {
    let ms = start.elapsed().as_secs_f64() * 1e3;
    println!("  {ms:>7.1} ms  {who:<8} {what}");
}

/// The balance as stored: `token:amount`.
fn balance(server: &Server) -> String {
    String::from_utf8_lossy(&server.data(DATA).unwrap_or_default()).into_owned()
}

/// Writes `amount`, tagged with the writer's token, fenced by its lock.
fn write(guard: &LockGuard, amount: u32) -> Result<(), FencedError> {
    let value = format!("{}:{amount}", guard.token());
    guard.fenced_write_blocking(Writes::new().set_data(DATA, value))?;
    Ok(())
}

fn main() {
    let server = Server::new();
    let [w1, w2]: [LockClient; 2] = std::array::from_fn(|_| server.client());
    let start = Instant::now();

    println!("== worker-1 holds the lock and writes");
    let g1 = w1.mutex(LOCK).lock_blocking().expect("worker-1 locks");
    let t1 = g1.token();
    let waiting = w2.mutex(LOCK).start().expect("start");
    say(
        start,
        "worker-1",
        format!("holds, token {t1}; worker-2 waits"),
    );
    let setup = Writes::new().create("/bank", "").create(DATA, "0:0");
    g1.fenced_write_blocking(setup).expect("create the balance");
    let result = write(&g1, 100);
    say(start, "worker-1", format!("fenced write -> {result:?}"));
    say(start, "", format!("    balance = {}", balance(&server)));
    assert_eq!(result, Ok(()));

    println!("\n== an operator evicts worker-1; worker-1 writes at once, racing the news");
    let sent = || w1.stats_blocking().map(|s| s.requests).unwrap_or_default();
    let before = sent();
    assert!(server.admin_delete(g1.path()), "worker-1's node was there");
    let stale = write(&g1, 666);
    let went_out = sent() > before;
    say(start, "operator", "deletes worker-1's lock node");
    say(
        start,
        "worker-1",
        format!("fenced write of 666 -> {stale:?}"),
    );
    let why = if went_out {
        "it went out first: the check on its node failed, nothing written"
    } else {
        "it had heard already: refused before sending"
    };
    say(start, "", format!("    {why}"));
    say(start, "worker-1", format!("then {:?}", g1.status()));
    assert_eq!(stale, Err(FencedError::NotHeld));
    let unchanged = balance(&server);
    assert_eq!(unchanged, format!("{t1}:100"), "the stale write applied");
    say(start, "", format!("    balance = {unchanged} (unchanged)"));

    println!("\n== worker-2 takes over");
    let g2 = waiting.wait_blocking().expect("worker-2's turn");
    let t2 = g2.token();
    say(start, "worker-2", format!("holds, token {t2} (> {t1})"));
    assert!(t2 > t1);
    let result = write(&g2, 250);
    say(start, "worker-2", format!("fenced write -> {result:?}"));
    say(start, "", format!("    balance = {}", balance(&server)));
    assert_eq!(balance(&server), format!("{t2}:250"));
    let refused = write(&g1, 999).expect_err("worker-1 lost the lock");
    say(
        start,
        "worker-1",
        format!("tries again: refused at once ({refused})"),
    );
    g2.release_blocking().expect("release");

    for client in [&w1, &w2] {
        client.close_blocking();
    }
    let left = server.children(LOCK).unwrap_or_default();
    println!(
        "\n  nodes left under {LOCK}: {left:?}; {DATA} = {}",
        balance(&server)
    );
    println!("ok: the stale holder's write never applied");
}
