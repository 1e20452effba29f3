//! Helpers shared by the benches (`mod common;` in each): the server, its `mntr`
//! counters. What the fleet and the partition bench share too (medians, knobs,
//! `/proc`, the bare-client floor) is lock-testkit's (`lock_testkit::measure`,
//! `lock_testkit::floor`).

#![forbid(unsafe_code)]
// Each bench uses a subset.
#![allow(dead_code)]

use lock_testkit::ZkServer;
use std::time::Duration;

/// A standalone server on loopback as every bench uses it: small log preallocation
/// steps (the default 64 MiB makes the first write slow). lock-testkit runs the
/// JVM with the C1 compiler only (`-XX:TieredStopAtLevel=1`, quick to start);
/// `BENCH_SERVER_C2=1` lets the JVM use C2 as a production server does.
pub fn start_server() -> ZkServer {
    let mut builder = ZkServer::builder().config("preAllocSize", "1024");
    if std::env::var_os("BENCH_SERVER_C2").is_some_and(|v| !v.is_empty()) {
        builder = builder.jvm_arg("-XX:TieredStopAtLevel=4");
    }
    builder.start().expect("starting ZooKeeper (lock-testkit)")
}

/// The benches' runtime: tokio with 2 worker threads (the machine's cores in
/// BENCHMARKS.md's runs), timers and I/O on.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio")
}

/// The server's `zk_packets_received`: every request and ping of every session,
/// plus one per four-letter word.
pub fn packets(server: &ZkServer) -> u64 {
    let m = server.mntr().expect("mntr");
    m.get_u64("zk_packets_received")
        .expect("zk_packets_received")
}

/// What one `mntr` adds to [`packets`] (measured, so a window between two reads
/// can subtract it).
pub fn mntr_overhead(server: &ZkServer) -> u64 {
    let before = packets(server);
    packets(server) - before
}

/// The server's `zk_watch_count`: watches set, summed over sessions and paths.
/// Asked again while a busy server (deleting a closed session's 100,000 nodes)
/// does not answer `mntr` within its 2 s.
pub fn watch_count(server: &ZkServer) -> u64 {
    for _ in 0..30 {
        if let Ok(m) = server.mntr() {
            return m.get_u64("zk_watch_count").expect("zk_watch_count");
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    panic!("the server did not answer mntr for a minute");
}

/// Waits until the server has read nothing but our own `mntr`s for 100 ms:
/// requests already sent (a queue being formed) are then all counted before a
/// window opens.
pub async fn wait_quiet(server: &ZkServer) {
    let overhead = mntr_overhead(server);
    let mut last = packets(server);
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = packets(server);
        if now - last <= overhead {
            return;
        }
        last = now;
    }
}
