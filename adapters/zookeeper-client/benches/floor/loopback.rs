//! Uncontended cycles on loopback: acquire / release / cycle, requests and notifications per cycle.

use crate::common::bare_lock::{bare_lock, bare_release, mkdir};
use crate::common::{
    bare_client, env_usize, loadavg, median, median_duration, mntr_overhead, packets, window,
    Packets,
};
use crate::{lock_client, TIMEOUT};
use lock_testkit::ZkServer;
use lock_zookeeper_client::TokioRuntime;
use std::time::{Duration, Instant};

#[derive(Default)]
pub(crate) struct CycleRound {
    pub(crate) acquire: Duration,
    pub(crate) release: Duration,
    pub(crate) cycle: Duration,
    requests: f64,
    notifications: f64,
}

pub(crate) async fn uncontended(rt: &TokioRuntime, server: &ZkServer, rounds: usize) {
    let cycles = env_usize("UNCONTENDED_CYCLES", 500);
    let cluster = server.connect_string();
    let zk = lock_client(rt, &cluster).await;
    let bare = bare_client(&cluster, TIMEOUT).await;
    mkdir(&bare, "/bench/uncontended/floor").await;
    let mutex = zk.mutex("/bench/uncontended/zklock");
    let overhead = mntr_overhead(server);
    let (mut z, mut f) = (Vec::new(), Vec::new());
    // Warm-up (directories, JIT, connections).
    for _ in 0..100 {
        mutex.lock().await.unwrap().release().await.unwrap();
        let node = bare_lock(&bare, "/bench/uncontended/floor").await;
        bare_release(&bare, &node).await;
    }
    zk.wait_idle().await.unwrap();
    for _ in 0..rounds {
        z.push(
            cycle_round(server, overhead, cycles, || async {
                let t0 = Instant::now();
                let guard = mutex.lock().await.unwrap();
                let t1 = Instant::now();
                guard.release().await.unwrap();
                (t0, t1, Instant::now())
            })
            .await,
        );
        zk.wait_idle().await.unwrap();
        f.push(
            cycle_round(server, overhead, cycles, || async {
                let t0 = Instant::now();
                let node = bare_lock(&bare, "/bench/uncontended/floor").await;
                let t1 = Instant::now();
                bare_release(&bare, &node).await;
                (t0, t1, Instant::now())
            })
            .await,
        );
    }
    zk.close().await;
    println!();
    println!(
        "## uncontended cycle, loopback ({cycles} cycles per round; medians of per-round medians)"
    );
    println!(
        "{:<8} {:>12} {:>12} {:>12} {:>14} {:>20}",
        "", "acquire", "release", "cycle", "requests/cycle", "notifications/cycle"
    );
    for (name, r) in [("zklock", &z), ("floor", &f)] {
        println!(
            "{:<8} {:>12.1?} {:>12.1?} {:>12.1?} {:>14.2} {:>20.2}",
            name,
            median_duration(&r.iter().map(|x| x.acquire).collect::<Vec<_>>()),
            median_duration(&r.iter().map(|x| x.release).collect::<Vec<_>>()),
            median_duration(&r.iter().map(|x| x.cycle).collect::<Vec<_>>()),
            median(&r.iter().map(|x| x.requests).collect::<Vec<_>>()),
            median(&r.iter().map(|x| x.notifications).collect::<Vec<_>>()),
        );
    }
    let ratio = |g: fn(&CycleRound) -> Duration| {
        let v: Vec<f64> = z
            .iter()
            .zip(&f)
            .map(|(a, b)| g(a).as_secs_f64() / g(b).as_secs_f64())
            .collect();
        median(&v)
    };
    println!(
        "{:<8} {:>12.2} {:>12.2} {:>12.2}   (zklock / floor, median of per-round-pair ratios)",
        "ratio",
        ratio(|x| x.acquire),
        ratio(|x| x.release),
        ratio(|x| x.cycle)
    );
    println!("load: {}", loadavg());
}

pub(crate) async fn cycle_round<F, Fut>(
    server: &ZkServer,
    overhead: Packets,
    cycles: usize,
    mut one: F,
) -> CycleRound
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = (Instant, Instant, Instant)>,
{
    let before = packets(server);
    let (mut acquire, mut release, mut cycle) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..cycles {
        let (t0, t1, t2) = one().await;
        acquire.push(t1 - t0);
        release.push(t2 - t1);
        cycle.push(t2 - t0);
    }
    // Let a notification that follows the last reply land.
    tokio::time::sleep(Duration::from_millis(20)).await;
    let w = window(before, packets(server), overhead);
    CycleRound {
        acquire: median_duration(&acquire),
        release: median_duration(&release),
        cycle: median_duration(&cycle),
        requests: w.received as f64 / cycles as f64,
        notifications: w.notifications() as f64 / cycles as f64,
    }
}
