//! The measured sections: each starts one peer per library and runs the
//! libraries in alternating rounds (the order rotates every round), so that all
//! see the same machine load.

use super::common::{mntr_overhead, packets, wait_quiet, watch_count};
use super::peer::{nanos, Library, Peer};
use super::table::{format_value, Unit};
use super::Bench;
use lock_testkit::measure::{env_usize, median};
use lock_testkit::{FaultProxy, ZkEnsemble, ZkServer};
use std::time::{Duration, Instant};

/// Requests the servers received (every member's `zk_packets_received`, less the
/// `mntr`s that read them).
pub struct Requests<'a> {
    servers: Vec<&'a ZkServer>,
    overhead: u64,
}

impl<'a> Requests<'a> {
    pub fn new(servers: Vec<&'a ZkServer>) -> Requests<'a> {
        let overhead = servers.iter().map(|s| mntr_overhead(s)).sum();
        Requests { servers, overhead }
    }
    pub fn now(&self) -> u64 {
        self.servers.iter().map(|s| packets(s)).sum()
    }
    /// Requests since `before`, less the closing read's own.
    pub fn since(&self, before: u64) -> u64 {
        self.now().saturating_sub(before + self.overhead)
    }
}

/// One peer per library, each with `sessions` sessions to `cluster`.
fn start_all(bench: &Bench, cluster: &str, sessions: usize) -> Vec<Peer> {
    bench
        .libraries
        .iter()
        .map(|&l| bench.launcher.start(l, cluster, sessions))
        .collect()
}

fn peer_of(peers: &mut [Peer], lib: Library) -> &mut Peer {
    peers
        .iter_mut()
        .find(|p| p.library == lib)
        .expect("a peer per library")
}

/// The libraries in round `round`'s order.
fn rotated(libs: &[Library], round: usize) -> Vec<Library> {
    let mut v = libs.to_vec();
    let n = v.len().max(1);
    v.rotate_left(round % n);
    v
}

fn secs(d: &[Duration]) -> Vec<f64> {
    d.iter().map(Duration::as_secs_f64).collect()
}

fn percentile(d: &[Duration], p: f64) -> f64 {
    lock_testkit::measure::percentile(&secs(d), p)
}

/// Uncontended acquire + release cycles on loopback, then through the delay proxy.
pub fn uncontended(bench: &mut Bench, server: &ZkServer) {
    let cycles = env_usize("UNCONTENDED_CYCLES", 300);
    let warm = env_usize("UNCONTENDED_WARMUP", 300);
    let requests = Requests::new(vec![server]);
    let cluster = server.connect_string();
    let mut peers = start_all(bench, &cluster, 1);
    for p in &mut peers {
        p.call(&format!("cycles /bench/u/{} {warm}", p.library.key()));
    }
    for round in 0..bench.rounds {
        for lib in rotated(&bench.libraries, round) {
            let p = peer_of(&mut peers, lib);
            let (before, cpu, switches) = (requests.now(), p.thread_cpu(), p.voluntary_switches());
            let r = p.call(&format!("cycles /bench/u/{} {cycles}", lib.key()));
            let cpu = p.thread_cpu().since(&cpu);
            let switches = p.voluntary_switches().saturating_sub(switches);
            let sent = requests.since(before);
            let (acquire, release) = (nanos(&r[0]), nanos(&r[1]));
            let cycle: Vec<Duration> = acquire.iter().zip(&release).map(|(a, b)| *a + *b).collect();
            let t = &mut bench.table;
            let timed = [
                ("acquire p50", &acquire, 0.5, true),
                ("acquire p99", &acquire, 0.99, false),
                ("release p50", &release, 0.5, false),
                ("cycle p50", &cycle, 0.5, true),
                ("cycle p99", &cycle, 0.99, false),
            ];
            for (what, samples, p, ratios) in timed {
                let label = format!("uncontended, loopback: {what}");
                t.push(&label, Unit::Time, ratios, lib, percentile(samples, p));
            }
            let per_cycle = [
                (
                    "requests / cycle (server)",
                    Unit::Number(2),
                    false,
                    sent as f64,
                ),
                ("client CPU / cycle", Unit::Time, true, cpu.as_secs_f64()),
                (
                    "wake-ups / cycle (voluntary context switches)",
                    Unit::Number(1),
                    true,
                    switches as f64,
                ),
            ];
            for (what, unit, ratios, total) in per_cycle {
                let label = format!("uncontended: {what}");
                t.push(&label, unit, ratios, lib, total / cycles as f64);
            }
            bench.charts.cycles.entry(lib).or_default().extend(cycle);
        }
    }
    bench.note_load("uncontended, loopback");
    for p in peers {
        p.quit();
    }
    through_proxy(bench, server);
}

fn through_proxy(bench: &mut Bench, server: &ZkServer) {
    let cycles = env_usize("PROXY_CYCLES", 30);
    let delay = Duration::from_millis(env_usize("PROXY_DELAY_MS", 1) as u64);
    let proxy = FaultProxy::start(server.addr()).expect("proxy");
    proxy.set_delays(delay, delay);
    let cluster = proxy.connect_string();
    let mut peers = start_all(bench, &cluster, 1);
    for p in &mut peers {
        p.call(&format!("cycles /bench/p/{} 20", p.library.key()));
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let bare = rt.block_on(lock_testkit::floor::bare_client(
        &cluster,
        super::SESSION_TIMEOUT,
    ));
    let mut rtts = Vec::new();
    for round in 0..bench.rounds {
        // The unit: the fastest single request through the same proxy.
        let rtt = rt.block_on(async {
            let mut best = Duration::MAX;
            for _ in 0..20 {
                let t0 = Instant::now();
                bare.check_stat("/").await.unwrap();
                best = best.min(t0.elapsed());
            }
            best
        });
        rtts.push(rtt);
        let unit = rtt.as_secs_f64();
        for lib in rotated(&bench.libraries, round) {
            let p = peer_of(&mut peers, lib);
            let r = p.call(&format!("cycles /bench/p/{} {cycles}", lib.key()));
            let (acquire, release) = (nanos(&r[0]), nanos(&r[1]));
            let cycle: Vec<Duration> = acquire.iter().zip(&release).map(|(a, b)| *a + *b).collect();
            let (a, c) = (median(&secs(&acquire)), median(&secs(&cycle)));
            let t = &mut bench.table;
            let label = format!(
                "{} ms each way (proxy): acquire, in RTTs",
                delay.as_millis()
            );
            t.push(&label, Unit::Number(2), false, lib, a / unit);
            let label = format!("{} ms each way (proxy): cycle, in RTTs", delay.as_millis());
            t.push(&label, Unit::Number(2), true, lib, c / unit);
        }
    }
    drop(bare);
    bench.proxy_rtt = Some(Duration::from_secs_f64(median(&secs(&rtts))));
    bench.note_load("through the proxy");
    for p in peers {
        p.quit();
    }
}

/// `sessions` sessions of each library loop on one lock, on a 3-node ensemble.
pub fn contention(bench: &mut Bench, ensemble: &ZkEnsemble, sessions: usize) {
    let ms = env_usize("CONTENTION_MS", 1500);
    let requests = Requests::new(ensemble.members().iter().collect());
    let cluster = ensemble.connect_string();
    let mut peers = start_all(bench, &cluster, sessions);
    let path = |lib: Library| format!("/bench/c{sessions}/{}", lib.key());
    for p in &mut peers {
        p.call(&format!("contend {} 300", path(p.library)));
    }
    for round in 0..bench.rounds {
        for lib in rotated(&bench.libraries, round) {
            let p = peer_of(&mut peers, lib);
            let before = requests.now();
            let r = p.call(&format!("contend {} {ms}", path(lib)));
            let sent = requests.since(before);
            let (count, elapsed): (f64, f64) =
                (r[0].parse().unwrap(), r[1].parse::<f64>().unwrap() / 1e9);
            let t = &mut bench.table;
            let label = format!("{sessions} sessions on one lock (ensemble): handoffs / s");
            t.push(&label, Unit::Number(0), true, lib, count / elapsed);
            let label = format!("{sessions} sessions: requests / acquisition (servers)");
            t.push(&label, Unit::Number(2), true, lib, sent as f64 / count);
            bench
                .charts
                .handoffs
                .entry((lib, sessions))
                .or_default()
                .push(count / elapsed);
        }
    }
    bench.note_load(&format!("contention, {sessions} sessions"));
    for p in peers {
        p.quit();
    }
}

/// 1,000 locks on one session, one thread or task per lock.
pub fn many(bench: &mut Bench, server: &ZkServer) {
    let locks = env_usize("MANY_LOCKS", 1000);
    let cycles = env_usize("MANY_CYCLES", 5);
    let rounds = env_usize("MANY_ROUNDS", bench.rounds.min(3));
    let requests = Requests::new(vec![server]);
    let cluster = server.connect_string();
    let mut peers = start_all(bench, &cluster, 1);
    // Round 0 warms up (directories, JIT) and is not counted.
    for round in 0..=rounds {
        for lib in rotated(&bench.libraries, round) {
            let p = peer_of(&mut peers, lib);
            let (before, cpu) = (requests.now(), p.cpu());
            let r = p.call(&format!("many /bench/m/{} {locks} {cycles}", lib.key()));
            let cpu = p.cpu() - cpu;
            let sent = requests.since(before);
            let n = (locks * cycles) as f64;
            let elapsed = r[0].parse::<f64>().unwrap() / 1e9;
            if round == 0 {
                continue;
            }
            let t = &mut bench.table;
            let locks_label = format_value(locks as f64, Unit::Number(0));
            let label = format!("{locks_label} locks on one session: cycles / s");
            t.push(&label, Unit::Number(0), true, lib, n / elapsed);
            let label = format!("{locks_label} locks: client CPU / cycle");
            t.push(&label, Unit::Time, true, lib, cpu.as_secs_f64() / n);
            let label = format!("{locks_label} locks: requests / cycle (server)");
            t.push(&label, Unit::Number(2), false, lib, sent as f64 / n);
        }
    }
    bench.note_load("1,000 locks on one session");
    for p in peers {
        p.quit();
    }
}

/// One holder and N queued waiters, one session each, in one process per library.
pub fn herd(bench: &mut Bench, server: &ZkServer) {
    let waiters = env_usize("HERD_WAITERS", 200);
    let rounds = env_usize("HERD_ROUNDS", 1);
    let requests = Requests::new(vec![server]);
    let cluster = server.connect_string();
    for round in 0..rounds {
        for lib in rotated(&bench.libraries, round) {
            let mut p = bench.launcher.start(lib, &cluster, waiters + 1);
            let path = format!("/bench/h{round}/{}", lib.key());
            let base = watch_count(server);
            p.call(&format!("herd {path}"));
            // Queued: every waiter's watch is on the server, and it has read all.
            while watch_count(server) < base + waiters as u64 {
                std::thread::sleep(Duration::from_millis(20));
            }
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(wait_quiet(server));
            let before = requests.now();
            let r = p.call("go");
            let sent = requests.since(before);
            let elapsed = r[0].parse::<f64>().unwrap() / 1e9;
            let t = &mut bench.table;
            let label = format!("herd: {waiters} queued waiters, drain");
            t.push(&label, Unit::Time, true, lib, elapsed);
            t.push(
                "herd: requests / release (server)",
                Unit::Number(2),
                false,
                lib,
                sent as f64 / (waiters + 1) as f64,
            );
            if round == 0 {
                bench.charts.drain.insert(lib, nanos(&r[1]));
            }
            p.quit();
        }
    }
    bench.note_load("herd drain");
}
