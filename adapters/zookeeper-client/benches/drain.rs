//! Draining a queue: one holder and N waiters on one lock, spread over S sessions,
//! against a real ZooKeeper (lock-testkit, loopback). Each waiter releases as soon
//! as it holds. Measures the drain (from the holder's release to the last release),
//! requests per acquisition (the core's count and the server's `mntr`), and waiter
//! wake-ups per release: the herd effect, across sessions and inside one.
//!
//! ```text
//! cargo bench -p lock-zookeeper-client --bench drain
//! DRAIN_WAITERS=300 DRAIN_SESSIONS=1,4,300 cargo bench -p lock-zookeeper-client --bench drain
//! ```
//!
//! The window opens once every waiter's watch is sent (core), held (server's
//! `zk_watch_count`) and the server has read everything sent. `DRAIN_TRACE=1`
//! routes the sessions through a frame-decoding proxy and prints the window's
//! requests by operation and the server's packets by kind; `DRAIN_EARLY=1` opens
//! the window as before issue 10 (as soon as the core has sent the watches).

#![forbid(unsafe_code)]

mod common;

use common::{packets, start_server, wait_quiet, wait_watches, watch_count, Sniffer};
use lock_testkit::measure::{env_list, env_usize};
use lock_testkit::ZkServer;
use lock_zookeeper_client::{Connect, LockClient, TokioRuntime};
use std::time::{Duration, Instant};

fn main() {
    let waiters = env_usize("DRAIN_WAITERS", 1000);
    let sessions = env_list("DRAIN_SESSIONS", "1,4");
    let server = start_server();
    let rt = common::runtime();
    println!(
        "{:>9} {:>8} {:>10} {:>16} {:>17} {:>16}",
        "sessions", "waiters", "drain", "req/acquisition", "pkts/acquisition", "wake-ups/release"
    );
    for (round, &s) in sessions.iter().enumerate() {
        let runtime = TokioRuntime(rt.handle().clone());
        let path = format!("/bench/drain-{round}");
        let r = rt.block_on(drain(runtime, &server, &path, s, waiters));
        println!(
            "{:>9} {:>8} {:>10.2?} {:>16.2} {:>17.2} {:>16.2}",
            s, waiters, r.elapsed, r.requests, r.packets, r.wakeups
        );
    }
}

struct Drain {
    elapsed: Duration,
    requests: f64,
    packets: f64,
    wakeups: f64,
}

async fn drain(
    rt: TokioRuntime,
    server: &ZkServer,
    path: &str,
    sessions: usize,
    n: usize,
) -> Drain {
    // DRAIN_TRACE=1: through a frame-decoding proxy that prints the window's
    // requests by operation and the server's packets by kind.
    let sniffer = std::env::var_os("DRAIN_TRACE").map(|_| Sniffer::start(server.addr()));
    let cluster = sniffer
        .as_ref()
        .map_or_else(|| server.connect_string(), Sniffer::connect_string);
    let mut clients = Vec::new();
    for _ in 0..sessions {
        let client = LockClient::builder(&cluster)
            .session_timeout(Duration::from_secs(30))
            .runtime(rt.clone())
            .connect()
            .await
            .expect("connecting");
        clients.push(client);
    }
    let holder = clients[0].mutex(path).lock().await.expect("holder");
    let watches = watch_count(server);
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let mutex = clients[i % sessions].mutex(path);
            tokio::spawn(async move {
                let guard = mutex.lock().await.expect("lock");
                guard.release().await.expect("release");
            })
        })
        .collect();
    // Wait until every waiter is queued with its watch set.
    let totals = |clients: Vec<LockClient>| async move {
        let mut sum = lock_core::Stats::default();
        for c in &clients {
            let s = c.stats().await.expect("stats");
            sum.requests += s.requests;
            sum.watches_set += s.watches_set;
            sum.handoff_notifications += s.handoff_notifications;
        }
        sum
    };
    // The core counts a watch when it sends the request: also wait for the
    // server to hold them all (before issue 10 the window opened while up to
    // ~800 of the queue's create / getChildren / getData were still on their
    // way, which the server then counted in the window: the "0.77 more packets
    // per acquisition than the core's count").
    let before = loop {
        let s = totals(clients.clone()).await;
        if s.watches_set >= n as u64 {
            break s;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    if std::env::var_os("DRAIN_EARLY").is_none() {
        wait_watches(server, watches + n as u64).await;
        wait_quiet(server).await;
    }
    let trace_before = sniffer.as_ref().map(Sniffer::snapshot);
    let packets_before = packets(server).received;
    let t0 = Instant::now();
    holder.release().await.expect("release");
    for t in tasks {
        t.await.expect("waiter");
    }
    let elapsed = t0.elapsed();
    let packets = packets(server).received - packets_before - 1; // the first mntr's own packet
    if let (Some(s), Some(t)) = (&sniffer, &trace_before) {
        println!("  trace: {}", Sniffer::diff(t, &s.snapshot()));
    }
    let after = totals(clients.clone()).await;
    for c in &clients {
        c.close().await;
    }
    let acquisitions = (n + 1) as f64;
    Drain {
        elapsed,
        requests: (after.requests - before.requests) as f64 / acquisitions,
        packets: packets as f64 / acquisitions,
        wakeups: (after.handoff_notifications - before.handoff_notifications) as f64 / n as f64,
    }
}
