//! zklock side by side with what a user runs today: Apache Curator's
//! `InterProcessMutex` (Java), kazoo's `Lock` (Python), zookeeper-client's own
//! `Client::lock`, and the bare zookeeper-client doing zklock's requests (the
//! floor). Each library runs in a process of its own (`peer.rs`) and times its
//! own cycles, so process start and the pipe do not count; the libraries
//! alternate round by round against the same servers.
//!
//! ```text
//! scripts/bench.sh                     # all of it, writes BENCHMARKS.md's first section
//! COMPARE_ONLY=uncontended,contention cargo bench -p lock-zookeeper-client --bench compare
//! COMPARE_ONLY=memory MEMORY_COUNTS=10000 cargo bench -p lock-zookeeper-client --bench compare
//! ```
//!
//! Sections (`COMPARE_ONLY`, comma-separated; default all but `memory`):
//!
//! * `uncontended`: acquire + release cycles on loopback (standalone server):
//!   acquire, release and cycle p50/p99, requests per cycle (`mntr`'s
//!   `zk_packets_received`), the peer's CPU per cycle; then the same through a
//!   delay proxy, in units of the fastest single request through it.
//! * `contention`: 2 and 8 sessions (one process per library) loop on one lock
//!   on a 3-node ensemble: handoffs/s, requests per acquisition summed over the
//!   members.
//! * `many`: 1,000 locks on one session, one thread or task per lock.
//! * `herd`: one holder and `HERD_WAITERS` queued waiters, one session each,
//!   in one process per library: drain time and when each waiter held.
//! * `memory` (`memory.rs`): RSS and CPU per held lock and per waiting
//!   acquisition.
//!
//! Knobs: `COMPARE_ROUNDS` (5), `COMPARE_LIBRARIES` (zklock,floor,recipe,curator,kazoo),
//! `UNCONTENDED_CYCLES` (300 per round), `UNCONTENDED_WARMUP` (300), `PROXY_CYCLES` (30),
//! `PROXY_DELAY_MS` (1), `CONTENTION_MS` (1500), `CONTENTION_SESSIONS` (2,8),
//! `MANY_LOCKS` (1000), `MANY_CYCLES` (5), `MANY_ROUNDS` (3), `HERD_WAITERS` (200),
//! `HERD_ROUNDS` (1), `MEMORY_COUNTS` (10000,100000), `MEMORY_SESSIONS` (1,100),
//! `MEMORY_THREAD_CAP` (10000), `COMPARE_KAZOO_PYTHON` (a Python with kazoo; default
//! `<target>/kazoo-venv/bin/python`), `COMPARE_WRITE=1` (write BENCHMARKS.md's
//! section and the charts; scripts/bench.sh sets it), `COMPARE_RELEASE=drop` (zklock
//! releases by dropping its guard, as `Client::lock` does: its cycle without waiting
//! for the `delete`).
//!
//! Session timeout 20 s for every library. zklock sends a `sync` on a session
//! idle for a tenth of that (contact proof), and every client pings an idle
//! session: both are in the request counts, where a window is long enough to
//! include them.

#![forbid(unsafe_code)]

#[path = "../common/mod.rs"]
mod common;

mod charts;
mod memory;
mod peer;
mod report;
mod rust_peer;
mod sections;
mod table;

use lock_testkit::measure::{env_list, env_or, env_usize, loadavg};
use peer::{Launcher, Library};
use std::path::PathBuf;
use std::time::Duration;

/// Every peer's session timeout.
pub const SESSION_TIMEOUT: Duration = Duration::from_secs(20);
/// Set (to a library's key) when this binary runs as a peer.
pub const PEER_ENV: &str = "COMPARE_PEER";

/// One run's results.
pub struct Bench {
    pub launcher: Launcher,
    pub libraries: Vec<Library>,
    pub rounds: usize,
    pub table: table::Table,
    pub charts: charts::ChartData,
    /// The load average after each section.
    pub loads: Vec<(String, String)>,
    pub proxy_rtt: Option<Duration>,
    /// The server's version (`mntr`'s `zk_version`, up to the build details).
    pub zk_version: String,
}

impl Bench {
    pub fn note_load(&mut self, section: &str) {
        let load = loadavg();
        println!("  {section}: done, load {load}");
        self.loads.push((section.to_owned(), load));
    }
}

fn main() {
    if let Ok(key) = std::env::var(PEER_ENV) {
        return rust_peer::run(Library::parse(&key));
    }
    // `cargo bench` passes `--bench`; nothing else is expected.
    let only = env_or("COMPARE_ONLY", "uncontended,contention,many,herd");
    let on = |s: &str| only.split(',').any(|x| x.trim() == s);
    let libraries: Vec<Library> = env_or("COMPARE_LIBRARIES", "zklock,floor,recipe,curator,kazoo")
        .split(',')
        .map(|k| Library::parse(k.trim()))
        .collect();
    let target = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("target dir")
        .to_path_buf();
    let launcher = Launcher::prepare(&target.join("compare"), &libraries);
    let mut bench = Bench {
        launcher,
        libraries,
        rounds: env_usize("COMPARE_ROUNDS", 5),
        table: table::Table::default(),
        charts: charts::ChartData::default(),
        loads: Vec::new(),
        proxy_rtt: None,
        zk_version: String::from("?"),
    };
    let started = std::time::SystemTime::now();
    println!(
        "compare: {:?}; load at start {}",
        bench.libraries,
        loadavg()
    );
    bench.loads.push(("start".into(), loadavg()));
    let write = std::env::var_os("COMPARE_WRITE").is_some_and(|v| v == "1");
    if on("uncontended") || on("many") || on("herd") {
        let server = common::start_server();
        if let Some(v) = server
            .mntr()
            .ok()
            .and_then(|m| m.get("zk_version").map(str::to_owned))
        {
            bench.zk_version = v.split(['-', ',']).next().unwrap_or(&v).to_owned();
        }
        if on("uncontended") {
            sections::uncontended(&mut bench, &server);
        }
        if on("many") {
            sections::many(&mut bench, &server);
        }
        if on("herd") {
            sections::herd(&mut bench, &server);
        }
    }
    if on("contention") {
        let ensemble = lock_testkit::ZkEnsemble::builder()
            .config("preAllocSize", "1024")
            .start_ensemble(3)
            .expect("starting a 3-node ensemble (lock-testkit)");
        for sessions in env_list("CONTENTION_SESSIONS", "2,8") {
            sections::contention(&mut bench, &ensemble, sessions);
        }
    }
    if !bench.table.rows.is_empty() {
        let text = report::section(&bench, started);
        println!("\n{text}");
        if write {
            let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
            let charts = charts::write(&bench.charts, &manifest.join("benches/charts"));
            println!("charts: {charts:?}");
            lock_testkit::measure::splice(&manifest.join("../../BENCHMARKS.md"), "compare", &text);
        }
    }
    if on("memory") {
        let text = memory::run(&mut bench);
        println!("\n{text}");
        if write {
            let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
            lock_testkit::measure::splice(&manifest.join("../../BENCHMARKS.md"), "memory", &text);
        }
    }
}
