//! Max-hold leases on the embedded ZooKeeper (nothing to install): a holder that
//! hangs loses the lock when its lease runs out, and the fencing token exposes its
//! late write.
//!
//! `batch-1` takes a lock with a 1 s lease (`.max_hold(..)`) and hangs. `batch-2`
//! waits, on its own thread and ZooKeeper session (lock-sim's in-process server,
//! through the real `LockClient`). 1 s after the grant, zklock reports
//! `Lost(LeaseExpired)` to `batch-1` and deletes its node; `batch-2` holds at once
//! with a higher token. When `batch-1` wakes up and writes to the storage with its
//! old token, the storage (which remembers the highest token it has seen) rejects
//! it; a fenced write is refused too.
//!
//! ```sh
//! cargo run --example lease
//! ```
//!
//! On a real ZooKeeper, replace `server.client()` with
//! `zklock::blocking::connect("127.0.0.1:2181")?` (feature `blocking`) or
//! `zklock::connect("127.0.0.1:2181").await?` (async, the default feature).

use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};
use zklock::sim::Server;
use zklock::{FencingToken, LockClient, LostReason, Writes};

const LOCK: &str = "/locks/batch";
const LEASE: Duration = Duration::from_secs(1);

/// Prints one line of the timeline.
fn say(start: Instant, who: &str, what: impl std::fmt::Display) {
    let ms = start.elapsed().as_secs_f64() * 1e3;
    println!("  {ms:>7.1} ms  {who:<8} {what}");
}

/// A storage service that rejects writes carrying a token lower than one it has seen.
#[derive(Default)]
struct Storage {
    highest: Option<FencingToken>,
    value: String,
}

impl Storage {
    fn write(&mut self, token: FencingToken, value: &str) -> Result<(), String> {
        match self.highest {
            Some(highest) if token < highest => Err(format!("token {token} < {highest}")),
            _ => {
                self.highest = Some(token);
                self.value = value.to_owned();
                Ok(())
            }
        }
    }
}

fn main() {
    let server = Server::new();
    let [b1, b2]: [LockClient; 2] = std::array::from_fn(|_| server.client());
    let storage = Mutex::new(Storage::default());
    let store = |token, value| storage.lock().expect("storage").write(token, value);
    let start = Instant::now();

    println!("== batch-1 takes the lock with a {LEASE:?} lease, and hangs");
    // The lease runs from the grant, which comes after this instant and before
    // `lock_blocking` returns: timing the hold from here never undercounts it (from
    // the return it would, by however long a busy machine takes to run this thread).
    let asked = Instant::now();
    let g1 = b1
        .mutex(LOCK)
        .max_hold(LEASE)
        .lock_blocking()
        .expect("batch-1 locks");
    let t1 = g1.token();
    say(start, "batch-1", format!("holds, token {t1}"));
    store(t1, "batch-1: started").expect("the first write");
    thread::scope(|s| {
        let waiter = s.spawn(|| {
            say(start, "batch-2", "waits");
            let g2 = b2.mutex(LOCK).lock_blocking().expect("batch-2's turn");
            say(
                start,
                "batch-2",
                format!("holds, token {} (> {t1})", g2.token()),
            );
            store(g2.token(), "batch-2: done").expect("the newest token");
            say(
                start,
                "batch-2",
                format!("writes with token {}: ok", g2.token()),
            );
            g2
        });
        say(start, "batch-1", "hangs (never releases)");
        let reason = g1.lost_blocking();
        let held = asked.elapsed();
        say(
            start,
            "batch-1",
            format!("Lost({reason:?}) after {held:.1?} held"),
        );
        assert_eq!(reason, LostReason::LeaseExpired);
        assert!(held >= LEASE, "not before the lease ran out");
        let g2 = waiter.join().expect("batch-2's thread");
        assert!(g2.token() > t1);
        let nodes = server.children(LOCK).unwrap_or_default();
        assert!(nodes.len() == 1 && g2.path().ends_with(&nodes[0]));
        say(
            start,
            "",
            "    batch-1's node is gone: batch-2's is the only one",
        );

        println!("\n== batch-1 wakes up and writes with its old token");
        let late = store(t1, "batch-1: done").expect_err("a stale token");
        say(start, "storage", format!("rejects: {late}: stale writer"));
        let refused = g1.fenced_write_blocking(Writes::new().set_data(LOCK, ""));
        let refused = refused.expect_err("not held");
        say(
            start,
            "batch-1",
            format!("a fenced write is refused at once too ({refused})"),
        );
        g2.release_blocking().expect("release");
    });
    let value = storage.lock().expect("storage").value.clone();
    assert_eq!(value, "batch-2: done");

    for client in [&b1, &b2] {
        client.close_blocking();
    }
    let left = server.children(LOCK).unwrap_or_default();
    println!("\n  storage: {value:?}; nodes left under {LOCK}: {left:?}");
    println!("ok: the lease expired, the lock moved on, the late writer was caught by its token");
}
