//! Benchmarks of lock-zookeeper-client against a real ZooKeeper server started by
//! lock-testkit (standalone, loopback, `forceSync=no`).
//!
//! ```text
//! cargo bench -p lock-zookeeper-client --bench zk
//! ```
//!
//! Prints, per runtime: uncontended acquire / release / cycle latency (median, p99),
//! requests per cycle (server `mntr` and the core's count). Handoffs under
//! contention are the `compare` bench's `contention` section (tokio, 2 and 8
//! sessions on a 3-node ensemble).

#![forbid(unsafe_code)]

mod common;
#[path = "../tests/common/runtime.rs"]
mod runtime;

use common::{packets, start_server};
use lock_testkit::ZkServer;
use lock_zookeeper_client::{Connect, LockClient};
use runtime::{runtime_name, Runtime};
use std::future::Future;
use std::time::{Duration, Instant};

const UNCONTENDED_CYCLES: usize = 2000;
const WARMUP_CYCLES: usize = 200;

fn main() {
    // Small log preallocation steps: the default 64 MiB makes the first write slow.
    let server = start_server();
    let cluster = server.connect_string();
    println!("lock-zookeeper-client benchmarks against ZooKeeper on {cluster}");
    println!();
    println!(
        "{:<10} {:>14} {:>14} {:>14} {:>14} {:>14} {:>14} {:>10} {:>10}",
        "runtime",
        "acquire p50",
        "acquire p99",
        "release p50",
        "release p99",
        "cycle p50",
        "cycle p99",
        "req/cycle",
        "pkts/cycle"
    );
    for (name, rt) in runtimes() {
        let server = &server;
        let cluster = cluster.clone();
        let report = run_on(&rt, |runtime| async move {
            uncontended(runtime, &cluster, server).await
        });
        println!(
            "{:<10} {:>14?} {:>14?} {:>14?} {:>14?} {:>14?} {:>14?} {:>10.2} {:>10.2}",
            name,
            report.acquire.0,
            report.acquire.1,
            report.release.0,
            report.release.1,
            report.cycle.0,
            report.cycle.1,
            report.requests_per_cycle,
            report.packets_per_cycle,
        );
    }
}

struct Uncontended {
    acquire: (Duration, Duration),
    release: (Duration, Duration),
    cycle: (Duration, Duration),
    requests_per_cycle: f64,
    packets_per_cycle: f64,
}

async fn uncontended(rt: Runtime, cluster: &str, server: &ZkServer) -> Uncontended {
    let client = connect(&rt, cluster).await;
    let mutex = client.mutex(format!("/bench/uncontended-{}", runtime_name(&rt)));
    for _ in 0..WARMUP_CYCLES {
        mutex.lock().await.unwrap().release().await.unwrap();
    }
    client.wait_idle().await.unwrap();
    let requests_before = client.stats().await.unwrap().requests;
    let base = packets(server);
    let packets_before = packets(server);
    let mntr_overhead = packets_before - base;
    let mut acquire = Vec::with_capacity(UNCONTENDED_CYCLES);
    let mut release = Vec::with_capacity(UNCONTENDED_CYCLES);
    let mut cycle = Vec::with_capacity(UNCONTENDED_CYCLES);
    for _ in 0..UNCONTENDED_CYCLES {
        let t0 = Instant::now();
        let guard = mutex.lock().await.unwrap();
        let t1 = Instant::now();
        guard.release().await.unwrap();
        let t2 = Instant::now();
        acquire.push(t1 - t0);
        release.push(t2 - t1);
        cycle.push(t2 - t0);
    }
    client.wait_idle().await.unwrap();
    let packets = packets(server) - packets_before - mntr_overhead;
    let requests = client.stats().await.unwrap().requests - requests_before;
    client.close().await;
    Uncontended {
        acquire: percentiles(&acquire),
        release: percentiles(&release),
        cycle: percentiles(&cycle),
        requests_per_cycle: requests as f64 / UNCONTENDED_CYCLES as f64,
        packets_per_cycle: packets as f64 / UNCONTENDED_CYCLES as f64,
    }
}

/// p50 and p99 (`lock_testkit::measure::percentile`).
fn percentiles(samples: &[Duration]) -> (Duration, Duration) {
    let secs: Vec<f64> = samples.iter().map(Duration::as_secs_f64).collect();
    let at = |q| Duration::from_secs_f64(lock_testkit::measure::percentile(&secs, q));
    (at(0.5), at(0.99))
}

async fn connect(rt: &Runtime, cluster: &str) -> LockClient {
    LockClient::builder(cluster)
        .session_timeout(Duration::from_secs(10))
        .runtime(rt.clone())
        .connect()
        .await
        .expect("connecting")
}

enum Rt {
    Tokio(tokio::runtime::Runtime),
    AsyncStd,
    Smol,
}

fn runtimes() -> Vec<(String, Rt)> {
    vec![
        ("tokio".into(), Rt::Tokio(common::runtime())),
        ("async-std".into(), Rt::AsyncStd),
        ("smol".into(), Rt::Smol),
    ]
}

/// Runs `f` to completion on `rt`, giving it the matching [`Runtime`].
fn run_on<T, F: Future<Output = T>>(rt: &Rt, f: impl FnOnce(Runtime) -> F) -> T {
    match rt {
        Rt::Tokio(rt) => rt.block_on(f(Runtime::Tokio(rt.handle().clone()))),
        Rt::AsyncStd => async_std::task::block_on(f(Runtime::AsyncStd)),
        Rt::Smol => smol::block_on(f(Runtime::Smol)),
    }
}
