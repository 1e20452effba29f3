//! Contention on one lock: handoffs/s and handoff latency with 2 and 8 sessions.

use crate::common::{mntr_overhead, packets, window, Packets};
use crate::{lock_client, TIMEOUT};
use lock_testkit::floor::{bare_client, bare_lock, bare_release, mkdir};
use lock_testkit::measure::{env_usize, loadavg, median, median_duration};
use lock_testkit::ZkServer;
use lock_zookeeper_client::TokioRuntime;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub(crate) struct ContentionRound {
    rate: f64,
    handoff: Duration,
    requests: f64,
}

/// Handoff bookkeeping shared by the contenders of one round.
#[derive(Default)]
pub(crate) struct Handoffs {
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

pub(crate) async fn contention(
    rt: &TokioRuntime,
    server: &ZkServer,
    rounds: usize,
    sessions: usize,
) {
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
pub(crate) async fn finish_contention(
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
