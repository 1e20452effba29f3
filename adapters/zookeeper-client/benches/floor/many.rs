//! Many locks on one session: cycles/s and CPU per cycle.

use crate::common::{mntr_overhead, packets, window};
use crate::{lock_client, TIMEOUT};
use lock_testkit::floor::{bare_client, bare_lock, bare_release, mkdir};
use lock_testkit::measure::{cpu_time, env_or, env_usize, loadavg, median, median_duration};
use lock_testkit::ZkServer;
use lock_zookeeper_client::TokioRuntime;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(crate) struct ManyRound {
    rate: f64,
    requests: f64,
    /// CPU per cycle: the server's JVM, this process.
    server_cpu: Duration,
    client_cpu: Duration,
    /// The server's CPU use over the round, in cores.
    server_cores: f64,
}

pub(crate) async fn many(rt: &TokioRuntime, server: &ZkServer, rounds: usize) {
    let locks = env_usize("MANY_LOCKS", 1000);
    let cycles = env_usize("MANY_CYCLES", 10);
    let cluster = server.connect_string();
    let zk = lock_client(rt, &cluster).await;
    let bare = Arc::new(bare_client(&cluster, TIMEOUT).await);
    mkdir(&bare, "/bench/many/floor").await;
    let dirs: Vec<_> = (0..locks)
        .map(|i| {
            let bare = &bare;
            async move { mkdir(bare, &format!("/bench/many/floor/l{i}")).await }
        })
        .collect();
    futures::future::join_all(dirs).await;
    let overhead = mntr_overhead(server);
    let jvm = server.jvm_pid();
    // MANY_SIDES=zklock (or floor): one side only, for profiling.
    let sides = env_or("MANY_SIDES", "zklock,floor");
    let sides: Vec<&str> = sides.split(',').map(str::trim).collect();
    let (mut z, mut f) = (Vec::new(), Vec::new());
    // Round 0 warms up (directories, the server's JIT) and is not counted.
    for round in 0..=rounds {
        for zklock in [true, false] {
            if !sides.contains(&(if zklock { "zklock" } else { "floor" })) {
                continue;
            }
            let (s0, c0) = (cpu_time(jvm), cpu_time(None));
            let before = packets(server);
            let started = Instant::now();
            let tasks: Vec<_> = (0..locks)
                .map(|i| {
                    if zklock {
                        let m = zk.mutex(format!("/bench/many/zklock/l{i}"));
                        tokio::spawn(async move {
                            for _ in 0..cycles {
                                m.lock().await.unwrap().release().await.unwrap();
                            }
                        })
                    } else {
                        let dir = format!("/bench/many/floor/l{i}");
                        let bare = bare.clone();
                        tokio::spawn(async move {
                            for _ in 0..cycles {
                                let node = bare_lock(&bare, &dir).await;
                                bare_release(&bare, &node).await;
                            }
                        })
                    }
                })
                .collect();
            for t in tasks {
                t.await.unwrap();
            }
            let elapsed = started.elapsed();
            let (s1, c1) = (cpu_time(jvm), cpu_time(None));
            if zklock {
                zk.wait_idle().await.unwrap();
            }
            let w = window(before, packets(server), overhead);
            let n = (locks * cycles) as u32;
            let r = ManyRound {
                rate: f64::from(n) / elapsed.as_secs_f64(),
                requests: w.received as f64 / f64::from(n),
                server_cpu: (s1 - s0) / n,
                client_cpu: (c1 - c0) / n,
                server_cores: (s1 - s0).as_secs_f64() / elapsed.as_secs_f64(),
            };
            if round > 0 {
                if zklock {
                    z.push(r)
                } else {
                    f.push(r)
                }
            }
        }
    }
    zk.close().await;
    println!();
    println!("## {locks} distinct locks on one session, one task per lock doing {cycles} cycles per round (after a warm-up round)");
    println!(
        "{:<8} {:>10} {:>15} {:>18} {:>18} {:>14}",
        "", "cycles/s", "requests/cycle", "server CPU/cycle", "client CPU/cycle", "server cores"
    );
    for (name, r) in [("zklock", &z), ("floor", &f)] {
        println!(
            "{:<8} {:>10.0} {:>15.2} {:>18.1?} {:>18.1?} {:>14.2}",
            name,
            median(&r.iter().map(|x| x.rate).collect::<Vec<_>>()),
            median(&r.iter().map(|x| x.requests).collect::<Vec<_>>()),
            median_duration(&r.iter().map(|x| x.server_cpu).collect::<Vec<_>>()),
            median_duration(&r.iter().map(|x| x.client_cpu).collect::<Vec<_>>()),
            median(&r.iter().map(|x| x.server_cores).collect::<Vec<_>>()),
        );
    }
    let ratio: Vec<f64> = z.iter().zip(&f).map(|(a, b)| a.rate / b.rate).collect();
    let per_request: Vec<f64> = z
        .iter()
        .zip(&f)
        .map(|(a, b)| a.rate * a.requests / (b.rate * b.requests))
        .collect();
    println!(
        "{:<8} {:>10.2}   (zklock / floor, median of per-round-pair ratios; rounds: {}); in requests/s: {:.2}",
        "ratio",
        median(&ratio),
        ratio
            .iter()
            .map(|r| format!("{r:.2}"))
            .collect::<Vec<_>>()
            .join(" "),
        median(&per_request)
    );
    println!("load: {}", loadavg());
}
