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

mod common;

use common::bare_lock::{bare_lock, bare_lock_counted, bare_release, mkdir, sequence_of, NAME};
use common::{
    bare_client, cpu_time, env_list, env_or, env_usize, loadavg, median, median_duration,
    mntr_overhead, packets, start_server, wait_quiet, wait_watches, watch_count, window, Packets,
    Sniffer,
};
use futures::channel::mpsc;
use futures::StreamExt;
use lock_testkit::{FaultProxy, ZkServer};
use lock_zookeeper_client::{Connect, LockClient, Runtime};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use zookeeper_client::{Acls, Client, CreateMode};

const TIMEOUT: Duration = Duration::from_secs(20);

fn main() {
    let only = env_or("FLOOR_ONLY", "uncontended,proxy,contention,many,herd");
    let on = |s: &str| only.split(',').any(|x| x.trim() == s);
    let rounds = env_usize("FLOOR_ROUNDS", 5);
    let server = start_server();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
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
    let handle = Runtime::Tokio(rt.handle().clone());
    if on("uncontended") {
        rt.block_on(uncontended(&handle, &server, rounds));
    }
    if on("proxy") {
        rt.block_on(through_proxy(&handle, &server, rounds));
    }
    if on("contention") {
        for sessions in env_list("CONTENTION_SESSIONS", "2,8") {
            rt.block_on(contention(&handle, &server, rounds, sessions));
        }
    }
    if on("many") {
        rt.block_on(many(&handle, &server, rounds));
    }
    if on("herd") {
        for waiters in env_list("HERD_WAITERS", "50,1000") {
            rt.block_on(herd(&handle, &server, waiters));
        }
    }
    println!();
    println!("load at end: {}", loadavg());
}

// ---------------------------------------------------------------------------
// Clients

async fn lock_client(rt: &Runtime, cluster: &str) -> LockClient {
    LockClient::builder(cluster)
        .session_timeout(TIMEOUT)
        .runtime(rt.clone())
        .connect()
        .await
        .expect("connecting")
}

// ---------------------------------------------------------------------------
// Uncontended, loopback

#[derive(Default)]
struct CycleRound {
    acquire: Duration,
    release: Duration,
    cycle: Duration,
    requests: f64,
    notifications: f64,
}

async fn uncontended(rt: &Runtime, server: &ZkServer, rounds: usize) {
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

// ---------------------------------------------------------------------------
// Through the delay proxy

async fn through_proxy(rt: &Runtime, server: &ZkServer, rounds: usize) {
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

// ---------------------------------------------------------------------------
// Contention on one lock

struct ContentionRound {
    rate: f64,
    handoff: Duration,
    requests: f64,
}

/// Handoff bookkeeping shared by the contenders of one round.
#[derive(Default)]
struct Handoffs {
    epoch: Option<Instant>,
    /// When the last `release()` began, in ns since `epoch` (0: none yet).
    last_release: AtomicU64,
    samples: Mutex<Vec<Duration>>,
    count: AtomicU64,
}

impl Handoffs {
    fn new() -> Handoffs {
        Handoffs {
            epoch: Some(Instant::now()),
            ..Handoffs::default()
        }
    }
    fn ns(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.epoch.unwrap()).as_nanos() as u64 + 1
    }
    /// An acquisition asked at `asked` completed now.
    fn acquired(&self, asked: Instant) {
        let now = Instant::now();
        let released = self.last_release.load(Ordering::Acquire);
        if released > self.ns(asked) {
            let gap = self.ns(now).saturating_sub(released);
            self.samples.lock().unwrap().push(Duration::from_nanos(gap));
        }
        self.count.fetch_add(1, Ordering::Relaxed);
    }
    fn releasing(&self) {
        self.last_release
            .store(self.ns(Instant::now()), Ordering::Release);
    }
}

async fn contention(rt: &Runtime, server: &ZkServer, rounds: usize, sessions: usize) {
    let time = Duration::from_millis(env_usize("CONTENTION_MS", 1500) as u64);
    let cluster = server.connect_string();
    let mut zks = Vec::new();
    let mut bares = Vec::new();
    for _ in 0..sessions {
        zks.push(lock_client(rt, &cluster).await);
        bares.push(Arc::new(bare_client(&cluster, TIMEOUT).await));
    }
    let zpath = format!("/bench/contention-{sessions}/zklock");
    let fdir = format!("/bench/contention-{sessions}/floor");
    mkdir(&bares[0], &fdir).await;
    let m = zks[0].mutex(zpath.clone());
    m.lock().await.unwrap().release().await.unwrap();
    let overhead = mntr_overhead(server);
    let (mut z, mut f) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        // zklock
        let h = Arc::new(Handoffs::new());
        let stop = Arc::new(AtomicBool::new(false));
        let before = packets(server);
        let started = Instant::now();
        let tasks: Vec<_> = zks
            .iter()
            .map(|c| {
                let (m, h, stop) = (c.mutex(zpath.clone()), h.clone(), stop.clone());
                tokio::spawn(async move {
                    while !stop.load(Ordering::Relaxed) {
                        let asked = Instant::now();
                        let g = m.lock().await.unwrap();
                        h.acquired(asked);
                        h.releasing();
                        g.release().await.unwrap();
                    }
                })
            })
            .collect();
        z.push(finish_contention(server, overhead, before, started, time, stop, tasks, &h).await);
        for c in &zks {
            c.wait_idle().await.unwrap();
        }
        // floor
        let h = Arc::new(Handoffs::new());
        let stop = Arc::new(AtomicBool::new(false));
        let before = packets(server);
        let started = Instant::now();
        let tasks: Vec<_> = bares
            .iter()
            .map(|c| {
                let (c, h, stop, dir) = (c.clone(), h.clone(), stop.clone(), fdir.clone());
                tokio::spawn(async move {
                    while !stop.load(Ordering::Relaxed) {
                        let asked = Instant::now();
                        let node = bare_lock(&c, &dir).await;
                        h.acquired(asked);
                        h.releasing();
                        bare_release(&c, &node).await;
                    }
                })
            })
            .collect();
        f.push(finish_contention(server, overhead, before, started, time, stop, tasks, &h).await);
    }
    for c in zks {
        c.close().await;
    }
    println!();
    println!("## {sessions} sessions contending on one lock ({time:?} per round)");
    println!(
        "{:<8} {:>16} {:>16} {:>20}",
        "", "acquisitions/s", "handoff p50", "requests/acquisition"
    );
    for (name, r) in [("zklock", &z), ("floor", &f)] {
        println!(
            "{:<8} {:>16.0} {:>16.1?} {:>20.2}",
            name,
            median(&r.iter().map(|x| x.rate).collect::<Vec<_>>()),
            median_duration(&r.iter().map(|x| x.handoff).collect::<Vec<_>>()),
            median(&r.iter().map(|x| x.requests).collect::<Vec<_>>()),
        );
    }
    let rate: Vec<f64> = z.iter().zip(&f).map(|(a, b)| a.rate / b.rate).collect();
    let handoff: Vec<f64> = z
        .iter()
        .zip(&f)
        .map(|(a, b)| a.handoff.as_secs_f64() / b.handoff.as_secs_f64())
        .collect();
    println!(
        "{:<8} {:>16.2} {:>16.2}   (zklock / floor, median of per-round-pair ratios)",
        "ratio",
        median(&rate),
        median(&handoff)
    );
    println!("load: {}", loadavg());
}

#[allow(clippy::too_many_arguments)]
async fn finish_contention(
    server: &ZkServer,
    overhead: Packets,
    before: Packets,
    started: Instant,
    time: Duration,
    stop: Arc<AtomicBool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    h: &Handoffs,
) -> ContentionRound {
    tokio::time::sleep(time).await;
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        t.await.unwrap();
    }
    let elapsed = started.elapsed();
    let w = window(before, packets(server), overhead);
    let n = h.count.load(Ordering::Relaxed);
    let samples = h.samples.lock().unwrap().clone();
    ContentionRound {
        rate: n as f64 / elapsed.as_secs_f64(),
        handoff: median_duration(&samples),
        requests: w.received as f64 / n as f64,
    }
}

// ---------------------------------------------------------------------------
// Many locks on one session

struct ManyRound {
    rate: f64,
    requests: f64,
    /// CPU per cycle: the server's JVM, this process.
    server_cpu: Duration,
    client_cpu: Duration,
    /// The server's CPU use over the round, in cores.
    server_cores: f64,
}

async fn many(rt: &Runtime, server: &ZkServer, rounds: usize) {
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

// ---------------------------------------------------------------------------
// Herd drain

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Design {
    Zklock,
    Floor,
    Naive,
    Children,
}

impl Design {
    fn name(self) -> &'static str {
        match self {
            Design::Zklock => "zklock",
            Design::Floor => "floor",
            Design::Naive => "naive (a)",
            Design::Children => "children (b)",
        }
    }
}

struct HerdRound {
    releases: usize,
    elapsed: Duration,
    requests: f64,
    notifications: f64,
}

async fn herd(rt: &Runtime, server: &ZkServer, waiters: usize) {
    let cap = env_usize("HERD_CAP", 50);
    // A round with 1,000 sessions per design takes ~1.5 min on 2 cores.
    let rounds = env_usize("HERD_ROUNDS", if waiters > 200 { 1 } else { 3 });
    let designs: Vec<Design> = env_or("HERD_DESIGNS", "zklock,floor,naive,children")
        .split(',')
        .map(|d| match d.trim() {
            "zklock" => Design::Zklock,
            "floor" => Design::Floor,
            "naive" => Design::Naive,
            "children" => Design::Children,
            other => panic!("HERD_DESIGNS: {other}"),
        })
        .collect();
    // FLOOR_TRACE=1: the herd's sessions go through a frame-decoding proxy that
    // prints what each round's requests and packets are.
    let sniffer = std::env::var_os("FLOOR_TRACE").map(|_| Sniffer::start(server.addr()));
    let mut results: Vec<(Design, Vec<HerdRound>)> =
        designs.iter().map(|&d| (d, Vec::new())).collect();
    for round in 0..rounds {
        for (design, rs) in &mut results {
            let releases = match design {
                Design::Zklock | Design::Floor => waiters,
                Design::Naive | Design::Children => waiters.min(cap),
            };
            let dir = format!("/bench/herd-{waiters}-{round}/{}", design_dir(*design));
            rs.push(
                herd_round(
                    rt,
                    server,
                    sniffer.as_ref(),
                    *design,
                    &dir,
                    waiters,
                    releases,
                )
                .await,
            );
        }
    }
    println!();
    println!(
        "## herd: one holder, {waiters} queued waiters, one session each ({rounds} rounds, medians)"
    );
    println!(
        "{:<13} {:>9} {:>12} {:>14} {:>18} {:>24}",
        "design", "releases", "drain", "per release", "requests/release", "notifications/release"
    );
    for (design, r) in &results {
        let per: Vec<f64> = r
            .iter()
            .map(|x| x.elapsed.as_secs_f64() / x.releases as f64)
            .collect();
        println!(
            "{:<13} {:>9} {:>12.2?} {:>14.1?} {:>18.2} {:>24.2}",
            design.name(),
            r[0].releases,
            median_duration(&r.iter().map(|x| x.elapsed).collect::<Vec<_>>()),
            Duration::from_secs_f64(median(&per)),
            median(&r.iter().map(|x| x.requests).collect::<Vec<_>>()),
            median(&r.iter().map(|x| x.notifications).collect::<Vec<_>>()),
        );
    }
    println!("load: {}", loadavg());
}

fn design_dir(d: Design) -> &'static str {
    match d {
        Design::Zklock => "zklock",
        Design::Floor => "floor",
        Design::Naive => "naive",
        Design::Children => "children",
    }
}

/// Connects `n` sessions, 50 at a time.
async fn connect_many<T, F, Fut>(n: usize, connect: F) -> Vec<T>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = T>,
{
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let batch = (n - out.len()).min(50);
        out.extend(futures::future::join_all((0..batch).map(|_| connect())).await);
    }
    out
}

async fn herd_round(
    rt: &Runtime,
    server: &ZkServer,
    sniffer: Option<&Sniffer>,
    design: Design,
    dir: &str,
    waiters: usize,
    releases: usize,
) -> HerdRound {
    let cluster = sniffer.map_or_else(|| server.connect_string(), Sniffer::connect_string);
    let snap = || sniffer.map(Sniffer::snapshot);
    let trace = |before: &Option<std::collections::BTreeMap<String, u64>>| {
        if let (Some(s), Some(b)) = (sniffer, before) {
            println!(
                "  trace {:<13} {}",
                design.name(),
                Sniffer::diff(b, &s.snapshot())
            );
        }
    };
    let queued = Arc::new(AtomicUsize::new(0));
    let (done_tx, mut done_rx) = mpsc::unbounded::<()>();
    let mut tasks = Vec::new();
    let overhead = mntr_overhead(server);
    let admin = bare_client(&cluster, TIMEOUT).await;
    mkdir(&admin, dir).await;
    let (before, started, elapsed, traced);
    // The sessions live until the window closes (the last handle of a bare
    // session sends closeSession when dropped).
    let sessions: Vec<Arc<Client>>;
    match design {
        Design::Zklock => {
            let clients = connect_many(waiters + 1, || lock_client(rt, &cluster)).await;
            let holder = clients[0].mutex(dir).lock().await.unwrap();
            let base = watch_count(server);
            for c in &clients[1..] {
                let (m, done) = (c.mutex(dir), done_tx.clone());
                tasks.push(tokio::spawn(async move {
                    m.lock().await.unwrap().release().await.unwrap();
                    let _ = done.unbounded_send(());
                }));
            }
            // Queued: every waiter has its predecessor watch set, on the server.
            wait_watches(server, base + waiters as u64).await;
            wait_quiet(server).await;
            traced = snap();
            before = packets(server);
            started = Instant::now();
            holder.release().await.unwrap();
            for _ in 0..releases {
                done_rx.next().await;
            }
            elapsed = started.elapsed();
            let after = packets(server);
            trace(&traced);
            for c in &clients {
                c.close().await;
            }
            return herd_result(before, after, overhead, elapsed, releases + 1);
        }
        Design::Floor | Design::Children => {
            let clients = connect_many(waiters + 1, || bare_client(&cluster, TIMEOUT)).await;
            let clients: Vec<Arc<Client>> = clients.into_iter().map(Arc::new).collect();
            let holder_node = bare_lock(&clients[0], dir).await;
            let base = watch_count(server);
            for c in &clients[1..] {
                let (c, done, queued, dir) =
                    (c.clone(), done_tx.clone(), queued.clone(), dir.to_owned());
                tasks.push(tokio::spawn(async move {
                    if design == Design::Floor {
                        let node = bare_lock_counted(&c, &dir, Some(&queued)).await;
                        bare_release(&c, &node).await;
                    } else {
                        let (node, watcher) = children_lock(&c, &dir, &queued).await;
                        bare_release(&c, &node).await;
                        drop(watcher);
                    }
                    let _ = done.unbounded_send(());
                }));
            }
            wait_queued(&queued, waiters).await;
            wait_watches(server, base + waiters as u64).await;
            wait_quiet(server).await;
            traced = snap();
            before = packets(server);
            started = Instant::now();
            bare_release(&clients[0], &holder_node).await;
            sessions = clients;
        }
        Design::Naive => {
            let clients = connect_many(waiters + 1, || bare_client(&cluster, TIMEOUT)).await;
            let clients: Vec<Arc<Client>> = clients.into_iter().map(Arc::new).collect();
            let lock = format!("{dir}/lock");
            let options = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
            clients[0].create(&lock, b"", &options).await.unwrap();
            let base = watch_count(server);
            for c in &clients[1..] {
                let (c, done, queued, lock) =
                    (c.clone(), done_tx.clone(), queued.clone(), lock.clone());
                tasks.push(tokio::spawn(async move {
                    naive_lock(&c, &lock, &queued).await;
                    c.delete(&lock, None).await.unwrap();
                    let _ = done.unbounded_send(());
                }));
            }
            wait_queued(&queued, waiters).await;
            wait_watches(server, base + waiters as u64).await;
            wait_quiet(server).await;
            traced = snap();
            before = packets(server);
            started = Instant::now();
            clients[0].delete(&lock, None).await.unwrap();
            sessions = clients;
        }
    }
    for _ in 0..releases {
        done_rx.next().await;
    }
    elapsed = started.elapsed();
    let after = packets(server);
    trace(&traced);
    for t in &tasks {
        t.abort();
    }
    drop(sessions);
    herd_result(before, after, overhead, elapsed, releases + 1)
}

/// Counted over `releases` (the holder's and those of the waiters measured).
fn herd_result(
    before: Packets,
    after: Packets,
    overhead: Packets,
    elapsed: Duration,
    releases: usize,
) -> HerdRound {
    let w = window(before, after, overhead);
    HerdRound {
        releases: releases - 1,
        elapsed,
        requests: w.received as f64 / releases as f64,
        notifications: w.notifications() as f64 / releases as f64,
    }
}

async fn wait_queued(queued: &AtomicUsize, waiters: usize) {
    while queued.load(Ordering::Relaxed) < waiters {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Design (a): `create /lock`; on `NodeExists`, `exists` + watch and, when it
/// fires, race again.
async fn naive_lock(client: &Client, lock: &str, queued: &AtomicUsize) {
    let options = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
    let mut first = true;
    // Watches set on a missing node are kept (as the articles' clients would),
    // not removed: dropping one would send a `removeWatches`.
    let mut kept = Vec::new();
    loop {
        match client.create(lock, b"", &options).await {
            Ok(_) => return,
            Err(zookeeper_client::Error::NodeExists) => {}
            Err(e) => panic!("create: {e}"),
        }
        let (stat, watcher) = client.check_and_watch_stat(lock).await.expect("exists");
        if first {
            first = false;
            queued.fetch_add(1, Ordering::Relaxed);
        }
        if stat.is_some() {
            watcher.changed().await;
        } else {
            kept.push(watcher);
        }
    }
}

/// Design (b): an ephemeral-sequential node, then `getChildren` + watch on the
/// parent until ours is the lowest.
async fn children_lock(
    client: &Client,
    dir: &str,
    queued: &AtomicUsize,
) -> (String, zookeeper_client::OneshotWatcher) {
    let prefix = format!("{dir}/{NAME}");
    let options = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
    let seq = client
        .create(&prefix, b"", &options)
        .await
        .expect("create")
        .1
        .into_i64();
    let mut first = true;
    loop {
        let (children, watcher) = client.list_and_watch_children(dir).await.expect("list");
        let lowest = children
            .iter()
            .filter_map(|n| sequence_of(n))
            .all(|s| s >= seq);
        if lowest {
            // The watch stays set, as in the article (the caller drops it after
            // its release, which fires it).
            return (format!("{prefix}{seq:010}"), watcher);
        }
        if first {
            first = false;
            queued.fetch_add(1, Ordering::Relaxed);
        }
        watcher.changed().await;
    }
}
