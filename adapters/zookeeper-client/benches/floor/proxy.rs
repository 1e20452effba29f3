//! The uncontended cycle through the delay proxy, in round trips.

use crate::common::bare_lock::{bare_lock, bare_release, mkdir};
use crate::common::{bare_client, env_usize, loadavg, median, median_duration, mntr_overhead};
use crate::loopback::{cycle_round, CycleRound};
use crate::{lock_client, TIMEOUT};
use lock_testkit::{FaultProxy, ZkServer};
use lock_zookeeper_client::TokioRuntime;
use std::time::{Duration, Instant};

pub(crate) async fn through_proxy(rt: &TokioRuntime, server: &ZkServer, rounds: usize) {
    let cycles = env_usize("PROXY_CYCLES", 40);
    let delay = Duration::from_millis(env_usize("PROXY_DELAY_MS", 1) as u64);
    let proxy = FaultProxy::start(server.addr()).expect("proxy");
    proxy.set_delays(delay, delay);
    let cluster = proxy.connect_string();
    let zk = lock_client(rt, &cluster).await;
    let bare = bare_client(&cluster, TIMEOUT).await;
    mkdir(&bare, "/bench/proxy/floor").await;
    let mutex = zk.mutex("/bench/proxy/zklock");
    for _ in 0..10 {
        mutex.lock().await.unwrap().release().await.unwrap();
        let node = bare_lock(&bare, "/bench/proxy/floor").await;
        bare_release(&bare, &node).await;
    }
    zk.wait_idle().await.unwrap();
    let overhead = mntr_overhead(server);
    let (mut z, mut f, mut rtts) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        // The unit: the fastest single request through the same proxy.
        let mut rtt = Duration::MAX;
        for _ in 0..20 {
            let t0 = Instant::now();
            bare.check_stat("/bench").await.unwrap();
            rtt = rtt.min(t0.elapsed());
        }
        rtts.push(rtt);
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
                let node = bare_lock(&bare, "/bench/proxy/floor").await;
                let t1 = Instant::now();
                bare_release(&bare, &node).await;
                (t0, t1, Instant::now())
            })
            .await,
        );
    }
    zk.close().await;
    let rtt = median_duration(&rtts);
    println!();
    println!(
        "## uncontended cycle through the proxy, {delay:?} each way ({cycles} cycles per round); RTT = fastest single request, median over rounds: {rtt:.2?}"
    );
    println!(
        "{:<8} {:>12} {:>12} {:>12} {:>14} {:>14} {:>12}",
        "", "acquire", "release", "cycle", "acquire [RTT]", "release [RTT]", "cycle [RTT]"
    );
    for (name, r) in [("zklock", &z), ("floor", &f)] {
        // Each round in units of that round's RTT.
        let unit = |g: fn(&CycleRound) -> Duration| {
            let v: Vec<f64> = r
                .iter()
                .zip(&rtts)
                .map(|(x, u)| g(x).as_secs_f64() / u.as_secs_f64())
                .collect();
            median(&v)
        };
        println!(
            "{:<8} {:>12.2?} {:>12.2?} {:>12.2?} {:>14.2} {:>14.2} {:>12.2}",
            name,
            median_duration(&r.iter().map(|x| x.acquire).collect::<Vec<_>>()),
            median_duration(&r.iter().map(|x| x.release).collect::<Vec<_>>()),
            median_duration(&r.iter().map(|x| x.cycle).collect::<Vec<_>>()),
            unit(|x| x.acquire),
            unit(|x| x.release),
            unit(|x| x.cycle),
        );
    }
    println!("load: {}", loadavg());
}
