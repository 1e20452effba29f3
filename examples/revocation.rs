//! Revocation on the embedded ZooKeeper (nothing to install): a holder asked to let
//! go releases cooperatively, and a waiter asked to give up its place leaves.
//!
//! `report` holds a revocable lock; `backup` waits for it. An operator (`ops`, on
//! its own ZooKeeper session) revokes the lock: zklock writes Curator's `__REVOKE__`
//! into the holder's node, the holder hears it through the watch on its own node,
//! finishes its step and releases, and `backup` gets the lock with a higher fencing
//! token. Then `adhoc`, a revocable waiter, is revoked by its node path and gives up
//! with `Error::Revoked`, leaving no node behind. Each worker is a thread with its
//! own session on lock-sim's in-process server, through the real `LockClient`.
//!
//! ```sh
//! cargo run --example revocation
//! ```
//!
//! On a real ZooKeeper, replace `server.client()` with
//! `zklock::blocking::connect("127.0.0.1:2181")?` (feature `blocking`) or
//! `zklock::connect("127.0.0.1:2181").await?` (async, the default feature).

use std::thread;
use std::time::{Duration, Instant};
use zklock::sim::Server;
use zklock::{Error, LockClient};

const LOCK: &str = "/locks/nightly-report";

/// Prints one line of the timeline.
fn say(start: Instant, who: &str, what: impl std::fmt::Display) {
    let ms = start.elapsed().as_secs_f64() * 1e3;
    println!("  {ms:>7.1} ms  {who:<7} {what}");
}

/// The lock's nodes, as the server has them.
fn nodes(server: &Server) -> Vec<String> {
    server.children(LOCK).unwrap_or_default()
}

/// Waits until the server shows `n` nodes under the lock (the clients' requests
/// are applied on their own threads).
fn until_nodes(server: &Server, n: usize) {
    let start = Instant::now();
    while nodes(server).len() != n {
        assert!(start.elapsed() < Duration::from_secs(5), "no {n} nodes");
        thread::sleep(Duration::from_millis(1));
    }
}

fn main() {
    let server = Server::new();
    let [report, backup, adhoc, ops]: [LockClient; 4] = std::array::from_fn(|_| server.client());
    let start = Instant::now();

    println!("== A revocable lock, released cooperatively on request");
    let backups = thread::scope(|s| {
        let backup = &backup;
        let lock = report.mutex(LOCK).revocable();
        let guard = lock.lock_blocking().expect("report takes the free lock");
        let tr = guard.token();
        say(
            start,
            "report",
            format!("holds {LOCK} (revocable), token {tr}"),
        );
        s.spawn(move || {
            guard
                .revocation_requested_blocking()
                .expect("asked, not lost");
            let what = "hears RevocationRequested; it decides: finish the step...";
            say(start, "report", what);
            assert!(guard.is_trusted(), "asking is not taking");
            thread::sleep(Duration::from_millis(40));
            say(start, "report", "...and releases");
            guard.release_blocking().expect("release");
        });
        let waiter = s.spawn(move || {
            say(start, "backup", "waits for the lock");
            let guard = backup.mutex(LOCK).lock_blocking().expect("backup's turn");
            say(
                start,
                "backup",
                format!("holds {LOCK}, token {} (> {tr})", guard.token()),
            );
            assert!(guard.token() > tr);
            guard
        });
        until_nodes(&server, 2);
        let asked = ops.revoke_blocking(LOCK).expect("revoke");
        say(
            start,
            "ops",
            format!("revoke({LOCK}): asked {} holder(s)", asked.len()),
        );
        waiter.join().expect("backup's thread")
    });

    println!("\n== A revocable waiter, asked to give up its place");
    let waiting = adhoc.mutex(LOCK).revocable().start().expect("start");
    until_nodes(&server, 2);
    let mine = nodes(&server)
        .into_iter()
        .find(|n| !backups.path().ends_with(n.as_str()))
        .expect("adhoc's node");
    let seq = mine.rsplit('-').next().unwrap_or_default();
    say(
        start,
        "adhoc",
        format!("waits behind backup (revocable), node ...-{seq}"),
    );
    let asked = ops.revoke_blocking(format!("{LOCK}/{mine}"));
    let asked = asked.expect("revoke").len();
    say(
        start,
        "ops",
        format!("revoke(<adhoc's node>): asked {asked} node"),
    );
    let outcome = waiting.wait_blocking();
    say(start, "adhoc", format!("gives up: {outcome:?}"));
    assert!(matches!(outcome, Err(Error::Revoked)));
    until_nodes(&server, 1);
    say(start, "adhoc", "its node is gone; backup is untouched");
    assert!(backups.is_trusted(), "backup is untouched");

    backups.release_blocking().expect("release");
    for client in [&report, &backup, &adhoc, &ops] {
        client.close_blocking();
    }
    println!("\n  nodes left under {LOCK}: {:?}", nodes(&server));
    println!("ok: cooperative release on request; revoked waiter left cleanly");
}
