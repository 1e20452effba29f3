//! Uncontended cycles, zklock and the floor in alternating rounds: on loopback
//! (acquire / release / cycle, requests and notifications per cycle), and
//! through the delay proxy (the same, in round trips).

use crate::common::{mntr_overhead, packets, window, Packets};
use crate::{lock_client, TIMEOUT};
use lock_testkit::floor::{bare_client, bare_lock, bare_release, mkdir};
use lock_testkit::measure::{env_usize, loadavg, median, median_duration};
use lock_testkit::{FaultProxy, ZkServer};
use lock_zookeeper_client::TokioRuntime;
use std::time::{Duration, Instant};

/// One round's medians of one side.
#[derive(Default)]
struct CycleRound {
    acquire: Duration,
    release: Duration,
    cycle: Duration,
    requests: f64,
    notifications: f64,
}

/// The medians over rounds of one side's acquire, release and cycle.
fn medians(rounds: &[CycleRound]) -> [Duration; 3] {
    let of =
        |g: fn(&CycleRound) -> Duration| median_duration(&rounds.iter().map(g).collect::<Vec<_>>());
    [of(|x| x.acquire), of(|x| x.release), of(|x| x.cycle)]
}

pub(crate) async fn uncontended(rt: &TokioRuntime, server: &ZkServer, rounds: usize) {
    let cycles = env_usize("UNCONTENDED_CYCLES", 500);
    let cluster = server.connect_string();
    let (z, f, _) = alternate(
        rt,
        server,
        &cluster,
        "uncontended",
        100,
        cycles,
        rounds,
        false,
    )
    .await;
    println!();
    println!(
        "## uncontended cycle, loopback ({cycles} cycles per round; medians of per-round medians)"
    );
    println!(
        "{:<8} {:>12} {:>12} {:>12} {:>14} {:>20}",
        "", "acquire", "release", "cycle", "requests/cycle", "notifications/cycle"
    );
    for (name, r) in [("zklock", &z), ("floor", &f)] {
        let [acquire, release, cycle] = medians(r);
        println!(
            "{:<8} {:>12.1?} {:>12.1?} {:>12.1?} {:>14.2} {:>20.2}",
            name,
            acquire,
            release,
            cycle,
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

pub(crate) async fn through_proxy(rt: &TokioRuntime, server: &ZkServer, rounds: usize) {
    let cycles = env_usize("PROXY_CYCLES", 40);
    let delay = Duration::from_millis(env_usize("PROXY_DELAY_MS", 1) as u64);
    let proxy = FaultProxy::start(server.addr()).expect("proxy");
    proxy.set_delays(delay, delay);
    let cluster = proxy.connect_string();
    let (z, f, rtts) = alternate(rt, server, &cluster, "proxy", 10, cycles, rounds, true).await;
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
        let [acquire, release, cycle] = medians(r);
        println!(
            "{:<8} {:>12.2?} {:>12.2?} {:>12.2?} {:>14.2} {:>14.2} {:>12.2}",
            name,
            acquire,
            release,
            cycle,
            unit(|x| x.acquire),
            unit(|x| x.release),
            unit(|x| x.cycle),
        );
    }
    println!("load: {}", loadavg());
}

/// zklock's and the floor's rounds of `cycles` cycles each on `cluster` (the
/// server, or a proxy before it), alternating, after `warmup` cycles of each
/// (directories, JIT, connections), under `/bench/{name}`. With `probe_rtt`,
/// each round starts with the fastest of 20 single requests (`exists`): the
/// round trip the proxy's rounds are counted in.
#[allow(clippy::too_many_arguments)]
async fn alternate(
    rt: &TokioRuntime,
    server: &ZkServer,
    cluster: &str,
    name: &str,
    warmup: usize,
    cycles: usize,
    rounds: usize,
    probe_rtt: bool,
) -> (Vec<CycleRound>, Vec<CycleRound>, Vec<Duration>) {
    let floor_dir = format!("/bench/{name}/floor");
    let zk = lock_client(rt, cluster).await;
    let bare = bare_client(cluster, TIMEOUT).await;
    mkdir(&bare, &floor_dir).await;
    let mutex = zk.mutex(format!("/bench/{name}/zklock"));
    for _ in 0..warmup {
        mutex.lock().await.unwrap().release().await.unwrap();
        let node = bare_lock(&bare, &floor_dir).await;
        bare_release(&bare, &node).await;
    }
    zk.wait_idle().await.unwrap();
    let overhead = mntr_overhead(server);
    let (mut z, mut f, mut rtts) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        if probe_rtt {
            let mut rtt = Duration::MAX;
            for _ in 0..20 {
                let t0 = Instant::now();
                bare.check_stat("/bench").await.unwrap();
                rtt = rtt.min(t0.elapsed());
            }
            rtts.push(rtt);
        }
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
                let node = bare_lock(&bare, &floor_dir).await;
                let t1 = Instant::now();
                bare_release(&bare, &node).await;
                (t0, t1, Instant::now())
            })
            .await,
        );
    }
    zk.close().await;
    (z, f, rtts)
}

async fn cycle_round<F, Fut>(
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
