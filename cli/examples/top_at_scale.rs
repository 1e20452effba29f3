//! Measures `zklock top` and `zklock deadlocks` over 10,000 locks on a real
//! ZooKeeper (lock-testkit), and prints the numbers (no assertion: these are
//! measurements, see BENCHMARKS.md).
//!
//! ```text
//! cargo build --release -p zklock-cli --bin zklock --example top_at_scale
//! target/release/examples/top_at_scale [LOCKS]
//! ```
//!
//! Under a fresh root it creates LOCKS (10,000) lock directories directly with a
//! raw ZooKeeper session (pipelined, in zklock's naming scheme with owner
//! headers): each with a holder and `i % 3` waiters, and two locks in a deadlock
//! (alice holds one and waits for the other, bob the reverse). Then, with the
//! `zklock` binary next to this example's directory (or `$ZKLOCK`):
//!
//! * `zklock top --once ROOT` and `zklock deadlocks ROOT`: wall time and server
//!   requests (`mntr` `zk_packets_received`, which counts every client's);
//! * `zklock top ROOT` under a pseudo-terminal (script(1), 160x40): time to the
//!   first screen; 30 s idle (CPU from /proc/PID/stat, requests); 20 changes one
//!   at a time (a waiter added to one lock: time until the screen's waiter count
//!   shows it, CPU and requests per change); one burst of 200 changes.

#[allow(dead_code)] // look_of: the pty test's
#[path = "../tests/screen/mod.rs"]
mod screen;

use lock_core::names::node_prefix;
use lock_core::owner;
use lock_core::{AttemptId, NameScheme, NodeKind};
use lock_testkit::ZkServer;
use lock_zookeeper_client::zookeeper_client::{Acls, Client, CreateMode};
use screen::{Screen, Terminal};
use std::process::Command;
use std::time::{Duration, Instant};

fn main() {
    let locks: usize = std::env::args()
        .nth(1)
        .map_or(10_000, |n| n.parse().expect("LOCKS: a number"));
    let zklock = std::env::var("ZKLOCK").unwrap_or_else(|_| {
        let me = std::env::current_exe().unwrap();
        me.parent()
            .unwrap()
            .parent()
            .unwrap()
            .join("zklock")
            .display()
            .to_string()
    });
    let server = ZkServer::builder()
        .config("preAllocSize", "65536")
        .start()
        .expect("starting ZooKeeper (lock-testkit)");
    let zk = server.connect_string();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let raw = rt.block_on(Client::connect(&zk)).expect("a raw session");
    let root = "/top-at-scale";
    let started = Instant::now();
    let participants = rt.block_on(populate(&raw, root, locks));
    println!(
        "setup: {locks} lock directories, {participants} participant nodes in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    println!("load average: {}", load_average());

    let packets = || {
        server
            .mntr()
            .unwrap()
            .get_u64("zk_packets_received")
            .unwrap()
    };
    for args in [vec!["top", "--once", root], vec!["deadlocks", root]] {
        let before = packets();
        let started = Instant::now();
        let out = Command::new(&zklock)
            .args(&args)
            .env("ZKLOCK_ZK", &zk)
            .output()
            .expect("running zklock");
        let took = started.elapsed();
        let requests = packets() - before;
        let text = String::from_utf8_lossy(&out.stdout);
        println!(
            "zklock {}: {:.2} s, {requests} requests, exit {:?}, first line: {}",
            args.join(" "),
            took.as_secs_f64(),
            out.status.code(),
            text.lines().next().unwrap_or("")
        );
    }
    live(&zklock, &zk, root, locks, &rt, &raw, &packets);
    println!("load average: {}", load_average());
}

/// Creates participant nodes (ephemeral, sequential, zklock's names), each
/// `(directory, owner, attempt id)`, all at once (pipelined).
async fn participants(raw: &Client, nodes: Vec<(String, String, u128)>) {
    let mut created = tokio::task::JoinSet::new();
    for (dir, owner, n) in nodes {
        let raw = raw.clone();
        created.spawn(async move {
            let prefix = node_prefix(NameScheme::Native, AttemptId(n), NodeKind::Write);
            let options = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
            let path = format!("{dir}/{prefix}");
            raw.create(&path, &owner::header(Some(&owner), &[]), &options)
                .await
                .expect("creating a participant");
        });
    }
    while let Some(done) = created.join_next().await {
        done.unwrap();
    }
}

/// Creates the locks under `root`; returns how many participant nodes.
async fn populate(raw: &Client, root: &str, locks: usize) -> usize {
    let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
    raw.create(root, &[], &persistent).await.expect("the root");
    let dir = |i: usize| format!("{root}/lock-{i:05}");
    for chunk in (0..locks).collect::<Vec<_>>().chunks(1000) {
        let dirs: Vec<String> = chunk.iter().map(|i| dir(*i)).collect();
        let created: Vec<_> = dirs
            .iter()
            .map(|d| raw.create(d, &[], &persistent))
            .collect();
        for c in created {
            c.await.expect("a lock directory");
        }
    }
    let mut nodes = Vec::new();
    for i in 0..locks {
        let holder = match i {
            0 => "alice".to_owned(),
            1 => "bob".to_owned(),
            _ => format!("holder-{i}"),
        };
        nodes.push((dir(i), holder));
        for j in 0..i % 3 {
            nodes.push((dir(i), format!("waiter-{i}-{j}")));
        }
    }
    // The deadlock: alice waits at lock 1 (held by bob), bob at lock 0.
    nodes.push((dir(1), "alice".to_owned()));
    nodes.push((dir(0), "bob".to_owned()));
    let total = nodes.len();
    for (k, chunk) in nodes.chunks(1000).enumerate() {
        let chunk = chunk
            .iter()
            .enumerate()
            .map(|(j, (d, owner))| (d.clone(), owner.clone(), (k * 1000 + j + 1) as u128))
            .collect();
        participants(raw, chunk).await;
    }
    total
}

/// Clock ticks of CPU (user + system) `pid` used so far.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // After the command name in parentheses: fields 3.. ; utime, stime are 14, 15.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let get = |i: usize| {
        fields
            .get(i - 3)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    get(14) + get(15)
}

/// Milliseconds per clock tick (`getconf CLK_TCK`).
fn ms_per_tick() -> f64 {
    let out = Command::new("getconf").arg("CLK_TCK").output().unwrap();
    1000.0
        / String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse::<f64>()
            .unwrap_or(100.0)
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The first process whose parent is `parent` (script's shell exec'ed zklock).
fn child_of(parent: u32) -> Option<u32> {
    let children =
        std::fs::read_to_string(format!("/proc/{parent}/task/{parent}/children")).ok()?;
    children.split_whitespace().next()?.parse().ok()
}

/// The waiter count on the screen's summary line.
fn waiters_shown(screen: &Screen) -> Option<usize> {
    let text = screen.text();
    let at = text.find(" waiter(s)")?;
    let before = &text[..at];
    let start = before.rfind(' ')? + 1;
    before[start..].parse().ok()
}

#[allow(clippy::too_many_arguments)]
fn live(
    zklock: &str,
    zk: &str,
    root: &str,
    locks: usize,
    rt: &tokio::runtime::Runtime,
    raw: &Client,
    packets: &dyn Fn() -> u64,
) {
    let tick_ms = ms_per_tick();
    let before = packets();
    let started = Instant::now();
    let mut terminal = Terminal::top(zklock, zk, root);
    let screen = terminal.screen.clone();
    let wait_for = |what: &dyn Fn(&Screen) -> bool| {
        let until = Instant::now() + Duration::from_secs(120);
        while !what(&screen.lock().unwrap()) {
            assert!(Instant::now() < until, "{}", screen.lock().unwrap().text());
            std::thread::sleep(Duration::from_millis(1));
        }
    };
    let summary = format!("{locks} lock(s) under {root}");
    wait_for(&|s| s.text().contains(&summary));
    let first = started.elapsed();
    let pid = child_of(terminal.script.id()).expect("zklock under script");
    println!(
        "zklock top (live): first screen after {:.2} s, {} requests, {:.0} ms CPU",
        first.as_secs_f64(),
        packets() - before,
        cpu_ticks(pid) as f64 * tick_ms
    );
    println!("{}", screen.lock().unwrap().marked());

    // Idle: only ticks (ages redrawn each second) and the sessions' pings.
    std::thread::sleep(Duration::from_secs(2));
    let (cpu, requests) = (cpu_ticks(pid), packets());
    std::thread::sleep(Duration::from_secs(30));
    println!(
        "idle 30 s: {:.0} ms CPU, {} requests (both sessions' pings, every client's)",
        (cpu_ticks(pid) - cpu) as f64 * tick_ms,
        packets() - requests
    );

    // One change at a time: a waiter added to one lock.
    let mut latencies = Vec::new();
    let (cpu, requests) = (cpu_ticks(pid), packets());
    let changes = 20;
    for k in 0..changes {
        let shown = waiters_shown(&screen.lock().unwrap()).unwrap();
        let dir = format!("{root}/lock-{:05}", (k * 487) % locks);
        let at = Instant::now();
        let node = (dir, format!("probe-{k}"), 1_000_000 + k as u128);
        rt.block_on(participants(raw, vec![node]));
        wait_for(&|s| waiters_shown(s) == Some(shown + 1));
        latencies.push(at.elapsed());
        std::thread::sleep(Duration::from_millis(300));
    }
    latencies.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{changes} single changes (a waiter created -> on the screen): median {:.0} ms, max {:.0} ms; \
         per change {:.1} ms CPU, {:.1} requests (the create included)",
        ms(latencies[changes / 2]),
        ms(latencies[changes - 1]),
        (cpu_ticks(pid) - cpu) as f64 * tick_ms / changes as f64,
        (packets() - requests) as f64 / changes as f64
    );

    // A burst: 200 waiters in 200 locks at once.
    let burst = 200;
    let shown = waiters_shown(&screen.lock().unwrap()).unwrap();
    let (cpu, requests) = (cpu_ticks(pid), packets());
    let at = Instant::now();
    let nodes = (0..burst)
        .map(|k| {
            let dir = format!("{root}/lock-{:05}", (k * 37 + 5) % locks);
            (dir, format!("burst-{k}"), 2_000_000 + k as u128)
        })
        .collect();
    rt.block_on(participants(raw, nodes));
    wait_for(&|s| waiters_shown(s) == Some(shown + burst));
    let all_shown = at.elapsed();
    std::thread::sleep(Duration::from_millis(500));
    println!(
        "burst of {burst} changes: all on the screen after {:.0} ms; {:.0} ms CPU, {} requests ({burst} creates included)",
        ms(all_shown),
        (cpu_ticks(pid) - cpu) as f64 * tick_ms,
        packets() - requests
    );

    terminal.press(b"q");
    terminal.wait();
}
