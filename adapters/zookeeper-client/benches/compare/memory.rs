//! Memory and CPU per held lock and per waiting acquisition: a peer with 1 or
//! 100 sessions takes N distinct locks (`hold`), then queues N acquisitions on N
//! other locks that a second peer of the same library holds (`wait`: other
//! libraries' nodes would not be seen as holders); the peer's RSS and CPU time are
//! read before and after each step. Curator and kazoo block a thread per waiting
//! acquisition, so their waits stop at `MEMORY_THREAD_CAP`.

use super::peer::Library;
use super::Bench;
use lock_testkit::measure::{env_list, env_usize, loadavg};
use std::time::{Duration, Instant};

/// The server's `zk_watch_count`, asked again while a busy server (deleting a
/// closed session's 100,000 nodes) does not answer `mntr` within its 2 s.
fn watch_count(server: &lock_testkit::ZkServer) -> u64 {
    for _ in 0..30 {
        if let Ok(m) = server.mntr() {
            return m.get_u64("zk_watch_count").expect("zk_watch_count");
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    panic!("the server did not answer mntr for a minute");
}

struct Case {
    lib: Library,
    count: usize,
    sessions: usize,
    base_rss: u64,
    held: (f64, Duration, Duration),
    waiting: Result<(f64, Duration), String>,
}

/// Runs every case and returns the markdown section.
pub fn run(bench: &mut Bench) -> String {
    let counts = env_list("MEMORY_COUNTS", "10000,100000");
    let session_counts = env_list("MEMORY_SESSIONS", "1,100");
    let cap = env_usize("MEMORY_THREAD_CAP", 10_000);
    let server = lock_testkit::ZkServer::builder()
        .config("preAllocSize", "1024")
        .max_heap_mb(3072)
        .start()
        .expect("starting ZooKeeper");
    let cluster = server.connect_string();
    let started = std::time::SystemTime::now();
    let mut cases = Vec::new();
    let mut tag = 0;
    for &count in &counts {
        for &sessions in &session_counts {
            for lib in bench.libraries.clone() {
                tag += 1;
                let dir = format!("/mem/{tag}-{}", lib.key());
                let mut p = bench.launcher.start(lib, &cluster, sessions);
                std::thread::sleep(Duration::from_millis(500));
                let (rss0, cpu0) = (p.rss(), p.cpu());
                let t0 = Instant::now();
                p.call(&format!("hold {dir}/held {count}"));
                let hold_time = t0.elapsed();
                std::thread::sleep(Duration::from_millis(500));
                let (rss1, cpu1) = (p.rss(), p.cpu());
                let held = (
                    (rss1.saturating_sub(rss0)) as f64 / count as f64,
                    (cpu1 - cpu0) / count as u32,
                    hold_time,
                );
                let waiting = if lib.thread_per_waiter() && count > cap {
                    Err(format!("not run: one thread per waiting acquisition ({count} threads; MEMORY_THREAD_CAP {cap})"))
                } else {
                    let mut holder = bench.launcher.start(lib, &cluster, 1);
                    holder.call(&format!("hold {dir}/wait {count}"));
                    let base = watch_count(&server);
                    let (rss1, cpu1) = (p.rss(), p.cpu());
                    p.call(&format!("wait {dir}/wait {count}"));
                    let limit = env_usize("MEMORY_WAIT_S", 600);
                    let deadline = Instant::now() + Duration::from_secs(limit as u64);
                    let mut result = Ok(());
                    while watch_count(&server) < base + count as u64 {
                        if Instant::now() > deadline {
                            result = Err(format!(
                                "stopped after {limit} s: {} of {count} queued",
                                watch_count(&server) - base
                            ));
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(200));
                    }
                    std::thread::sleep(Duration::from_millis(500));
                    let (rss2, cpu2) = (p.rss(), p.cpu());
                    holder.quit();
                    result.map(|()| {
                        (
                            rss2.saturating_sub(rss1) as f64 / count as f64,
                            (cpu2 - cpu1) / count as u32,
                        )
                    })
                };
                p.quit();
                let case = Case {
                    lib,
                    count,
                    sessions,
                    base_rss: rss0,
                    held,
                    waiting,
                };
                println!("  memory {}; load {}", row(&case).trim_end(), loadavg());
                cases.push(case);
            }
        }
    }
    bench.note_load("memory");
    table(bench, &cases, started)
}

fn kib(bytes: f64) -> String {
    if bytes >= 1024.0 * 10.0 {
        format!("{:.0} KiB", bytes / 1024.0)
    } else {
        format!("{:.2} KiB", bytes / 1024.0)
    }
}

fn us(d: Duration) -> String {
    format!("{:.0} µs", d.as_secs_f64() * 1e6)
}

fn table(bench: &Bench, cases: &[Case], started: std::time::SystemTime) -> String {
    let mut s = String::from("## Memory and CPU per lock (current)\n\n");
    s += &format!(
        "Generated by `scripts/bench.sh memory` (`COMPARE_ONLY=memory`), {} UTC; machine: {}; \
         load average at the end: {}. One process per row, with 1 or 100 sessions: it takes \
         N distinct locks and keeps them (held), then queues N acquisitions of N other locks \
         held by another process (waiting; counted as queued once the server holds N more \
         watches). RSS is the process's `VmRSS` (after a 0.5 s pause), CPU its user + system \
         time; both are the growth over the step divided by N. Base RSS is the process \
         with its sessions connected and nothing else. A JVM's RSS grows with its heap, \
         which it does not hand back: Curator's figures are what the process costs the \
         machine, not live objects.\n\n",
        lock_testkit::measure::utc(started),
        lock_testkit::measure::machine(),
        bench.loads.last().map_or_else(loadavg, |(_, l)| l.clone()),
    );
    s += "| library | N | sessions | base RSS | per held lock: RSS, CPU | time to take N | per waiting acquisition: RSS, CPU |\n";
    s += "|---|---|---|---|---|---|---|\n";
    for c in cases {
        s += &row(c);
    }
    s
}

/// One case's table row.
fn row(c: &Case) -> String {
    let (rss, cpu, t) = c.held;
    let waiting = match &c.waiting {
        Ok((rss, cpu)) => format!("{}, {}", kib(*rss), us(*cpu)),
        Err(why) => why.clone(),
    };
    format!(
        "| {} | {} | {} | {:.0} MiB | {}, {} | {:.1} s | {} |\n",
        c.lib.key(),
        super::table::format_value(c.count as f64, super::table::Unit::Number(0)),
        c.sessions,
        c.base_rss as f64 / 1024.0 / 1024.0,
        kib(rss),
        us(cpu),
        t.as_secs_f64(),
        waiting
    )
}
