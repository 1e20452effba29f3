//! What idle sessions cost the ensemble's leader: `N` lock-zookeeper-client
//! sessions (default 1,000) that hold nothing, each connected to the leader of a
//! 3-node lock-testkit ensemble, then the leader's `zk_packets_received` counted
//! over a window (default 30 s): pings, and any request of zklock's.
//!
//! ```text
//! cargo bench -p lock-zookeeper-client --bench idle -- [SESSIONS] [TIMEOUT_MS] [WINDOW_S]
//! ```
//!
//! Every session takes and releases one lock first, so it is idle, not new.

mod common;

use lock_testkit::ZkEnsemble;
use lock_zookeeper_client::TokioRuntime;
use std::time::{Duration, Instant};

fn arg(n: usize, default: u64) -> u64 {
    std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .nth(n)
        .map_or(default, |a| a.parse().expect("a number"))
}

fn main() {
    let sessions = arg(0, 1000) as usize;
    let timeout = Duration::from_millis(arg(1, 10_000));
    let window = Duration::from_secs(arg(2, 30));
    let ensemble = ZkEnsemble::builder()
        .config("maxClientCnxns", "0")
        .max_heap_mb(1024)
        .start_ensemble(3)
        .expect("a 3-node ensemble");
    let leader = ensemble
        .wait_for_leader(Duration::from_secs(60))
        .expect("a leader");
    let server = ensemble.member(leader).expect("leader");
    let rt = common::runtime();
    let started = Instant::now();
    let clients: Vec<_> = (0..sessions)
        .map(|i| {
            let client = rt
                .block_on(
                    lock_zookeeper_client::builder(&server.connect_string())
                        .session_timeout(timeout)
                        .runtime(TokioRuntime(rt.handle().clone()))
                        .connect(),
                )
                .expect("connect");
            let guard = client
                .mutex(format!("/idle/{}", i % 64))
                .lock_timeout_blocking(Duration::from_secs(60))
                .expect("lock");
            guard.release_blocking().expect("release");
            client
        })
        .collect();
    eprintln!("{sessions} sessions up in {:?}", started.elapsed());
    // Let the background server checks and any ramp settle.
    std::thread::sleep(timeout);
    let received = || common::packets(server);
    let before = received();
    let start = Instant::now();
    std::thread::sleep(window);
    let packets = received() - before;
    let seconds = start.elapsed().as_secs_f64();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "{sessions} idle sessions, T = {timeout:?}: {packets} packets at the leader in {seconds:.1} s = \
         {:.1}/s ({:.3}/s per session, {:.2} per session per T); load {}",
        packets as f64 / seconds,
        packets as f64 / seconds / sessions as f64,
        packets as f64 / seconds / sessions as f64 * timeout.as_secs_f64(),
        load.trim()
    );
    drop(clients);
}
