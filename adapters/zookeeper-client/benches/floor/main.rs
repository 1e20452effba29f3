//! zklock next to its floor: the bare zookeeper-client doing the same requests,
//! pipelined the same way, against one real ZooKeeper (lock-testkit, loopback),
//! in alternating rounds (zklock, floor, zklock, floor, ...) so that both see the
//! same machine load. Ratios are computed within the run.
//!
//! ```text
//! cargo bench -p lock-zookeeper-client --bench floor
//! FLOOR_ONLY=many,herd FLOOR_ROUNDS=3 HERD_WAITERS=50 cargo bench -p lock-zookeeper-client --bench floor
//! ```
//!
//! Sections (`FLOOR_ONLY`, comma-separated; all by default):
//!
//! * `uncontended`: acquire / release / cycle on loopback, with the server's
//!   requests (`zk_packets_received`) and notifications per cycle.
//! * `proxy`: the same through a `FaultProxy` adding 1 ms each way, in units of
//!   the fastest single-request round trip through that proxy (`RTT`).
//!   Notifications everywhere are the watches the server triggered (`mntr`'s
//!   `zk_sum_node_*_watch_count`).
//! * `contention`: 2 and 8 sessions loop on one lock: acquisitions/s and the
//!   handoff latency (from the holder's `release()` call to the next holder
//!   holding, for acquisitions that were queued when that release began).
//! * `many`: 1,000 distinct locks on one session, one task per lock doing
//!   `MANY_CYCLES` lock + release cycles; cycles/s from the start to the last
//!   task's end (a fixed window would cut the tasks' waves: they run in step),
//!   and the server's and this process's CPU per cycle.
//! * `herd`: one holder and N queued waiters, one session each; drain time,
//!   server requests and notifications per release, for zklock, the floor
//!   (the sequential recipe: watch the predecessor), and the seed articles' two
//!   herd designs: (a) one `/lock` node that every loser watches with `exists`
//!   and races to create again when it goes, (b) sequential nodes where every
//!   waiter watches the parent's children and lists again on every change.
//!   Designs (a) and (b) cost O(N) per release (O(N²) per drain), so with more
//!   than `HERD_CAP` waiters only the first `HERD_CAP` releases are measured.
//!
//! The floor's lock is the textbook recipe with zklock's request pattern: `create`
//! (ephemeral-sequential, a name of zklock's length) and `getChildren` sent
//! together; if something is lower, `getData` + watch on the predecessor, and the
//! lock is held when that watch fires if the listing showed nothing else lower,
//! else it lists again (zklock's rule); release is one `delete`. zklock adds today a `getData` + watch on its own node
//! (a 4th request, and a 2nd notification per release) unless lock-core has
//! dropped it from the plain-lock path.
//!
//! Knobs: `FLOOR_ROUNDS` (5: rounds of each side), `UNCONTENDED_CYCLES` (500),
//! `PROXY_CYCLES` (40), `PROXY_DELAY_MS` (1), `CONTENTION_MS` (1500),
//! `CONTENTION_SESSIONS` (2,8), `MANY_LOCKS` (1000), `MANY_CYCLES` (10 per lock and round),
//! `HERD_WAITERS` (50,1000), `HERD_CAP` (50), `HERD_ROUNDS` (3, or 1 above 200
//! waiters),
//! `HERD_DESIGNS` (zklock,floor,naive,children).

#![forbid(unsafe_code)]

#[path = "../common/mod.rs"]
mod common;

mod contention;
mod herd;
mod many;
mod uncontended;

use common::start_server;
use lock_testkit::measure::{env_list, env_or, env_usize, loadavg};
use lock_zookeeper_client::{Connect, LockClient, TokioRuntime};
use std::time::Duration;

pub(crate) const TIMEOUT: Duration = Duration::from_secs(20);

fn main() {
    let only = env_or("FLOOR_ONLY", "uncontended,proxy,contention,many,herd");
    let on = |s: &str| only.split(',').any(|x| x.trim() == s);
    let rounds = env_usize("FLOOR_ROUNDS", 5);
    let server = start_server();
    let rt = common::runtime();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!(
        "zklock vs the bare zookeeper-client floor; ZooKeeper on {}; {cores} cores; tokio, 2 workers; {rounds} rounds each, alternating",
        server.connect_string()
    );
    println!(
        "server JIT: {}; load at start: {}",
        if std::env::var_os("BENCH_SERVER_C2").is_some_and(|v| !v.is_empty()) {
            "C1 + C2 (BENCH_SERVER_C2)"
        } else {
            "C1 only (lock-testkit default)"
        },
        loadavg()
    );
    if std::env::var_os("FLOOR_MNTR_DUMP").is_some() {
        for (k, v) in server.mntr().expect("mntr").as_map() {
            println!("  mntr {k} = {v}");
        }
    }
    let handle = TokioRuntime(rt.handle().clone());
    if on("uncontended") {
        rt.block_on(uncontended::uncontended(&handle, &server, rounds));
    }
    if on("proxy") {
        rt.block_on(uncontended::through_proxy(&handle, &server, rounds));
    }
    if on("contention") {
        for sessions in env_list("CONTENTION_SESSIONS", "2,8") {
            rt.block_on(contention::contention(&handle, &server, rounds, sessions));
        }
    }
    if on("many") {
        rt.block_on(many::many(&handle, &server, rounds));
    }
    if on("herd") {
        for waiters in env_list("HERD_WAITERS", "50,1000") {
            rt.block_on(herd::herd(&handle, &server, waiters));
        }
    }
    println!();
    println!("load at end: {}", loadavg());
}

// ---------------------------------------------------------------------------
// Clients

pub(crate) async fn lock_client(rt: &TokioRuntime, cluster: &str) -> LockClient {
    LockClient::builder(cluster)
        .session_timeout(TIMEOUT)
        .runtime(rt.clone())
        .connect()
        .await
        .expect("connecting")
}
