//! One case end to end: a fresh 3-node ensemble, the worker processes, the
//! window (optionally with a rolling restart), the samples, the checks.

use crate::check::{self, Figures, Overlap};
use crate::record::{Fault, Hold, Record};
use crate::{now_ns, Mode, WorkerSpec};
use lock_testkit::{ZkEnsemble, ZkServer};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// One case's settings. [`CaseConfig::from_env`] reads the `FLEET_*` knobs.
#[derive(Clone, Debug)]
pub struct CaseConfig {
    /// `zklock`, `bare` (the yardstick), `curator` or `kazoo` (`mode` Fleet).
    pub library: String,
    /// The workload.
    pub mode: Mode,
    /// Sessions in all.
    pub sessions: usize,
    /// Worker processes (sessions are dealt round-robin).
    pub workers: usize,
    /// The measured window (at least; a rolling restart extends it until the
    /// last server is back plus one restart gap).
    pub window: Duration,
    /// From `go` to the window's start.
    pub warmup: Duration,
    /// Restart the three servers one by one (followers first, the leader last)
    /// during the window.
    pub rolling_restart: bool,
    /// The quiet span before each restart, and after the last.
    pub restart_gap: Duration,
    /// Hot sessions (loop on the hot locks).
    pub hot_sessions: usize,
    /// Hot locks.
    pub hot_locks: usize,
    /// Cold locks.
    pub cold_locks: usize,
    /// A cold session's mean think time.
    pub think_ms: u64,
    /// A cold hold's mean length.
    pub hold_ms: u64,
    /// A hot hold's length.
    pub hot_hold_ms: u64,
    /// A hot session's think time, uniform up to this.
    pub hot_think_ms: u64,
    /// The session timeout.
    pub session_timeout: Duration,
    /// An acquisition's deadline.
    pub acquire_timeout: Duration,
    /// Each server's maximum heap.
    pub heap_mb: u32,
    /// The seed.
    pub seed: u64,
    /// The binary that runs `worker` (this one, or the test's `CARGO_BIN_EXE_`).
    pub worker_exe: PathBuf,
    /// Where the record files go.
    pub dir: PathBuf,
}

fn env_u64(key: &str, default: u64) -> u64 {
    match std::env::var(key) {
        Ok(v) => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{key}={v:?}: not a number")),
        Err(_) => default,
    }
}

impl CaseConfig {
    /// A fleet case of `sessions` sessions, its knobs from the environment:
    ///
    /// `FLEET_PER_WORKER` (1000 sessions per process, at least 2 processes), `FLEET_SECONDS` (60),
    /// `FLEET_WARMUP_S` (10), `FLEET_RESTART_GAP_S` (20), `FLEET_HOT_LOCKS` (4),
    /// `FLEET_HOT_PER_MILLE` (10: hot sessions per 1,000; at least 4),
    /// `FLEET_COLD_LOCKS` (sessions / 10, at least 50), `FLEET_THINK_MS`
    /// (20000), `FLEET_HOLD_MS` (50), `FLEET_HOT_HOLD_MS` (5),
    /// `FLEET_HOT_THINK_MS` (20), `FLEET_SESSION_TIMEOUT_MS` (60000),
    /// `FLEET_HEAP_MB` (1024), `FLEET_SEED` (1).
    pub fn from_env(sessions: usize, worker_exe: PathBuf, dir: PathBuf) -> CaseConfig {
        let per_worker = env_u64("FLEET_PER_WORKER", 1000).max(1) as usize;
        let hot = (sessions * env_u64("FLEET_HOT_PER_MILLE", 10) as usize / 1000)
            .max(4)
            .min(sessions);
        CaseConfig {
            library: "zklock".into(),
            mode: Mode::Fleet,
            sessions,
            workers: sessions.div_ceil(per_worker).max(2).min(sessions),
            window: Duration::from_secs(env_u64("FLEET_SECONDS", 60)),
            warmup: Duration::from_secs(env_u64("FLEET_WARMUP_S", 10)),
            rolling_restart: false,
            restart_gap: Duration::from_secs(env_u64("FLEET_RESTART_GAP_S", 20)),
            hot_sessions: hot,
            // At least two hot sessions per hot lock: a hot lock has a queue.
            hot_locks: (env_u64("FLEET_HOT_LOCKS", 4) as usize).min(hot / 2).max(1),
            cold_locks: env_u64("FLEET_COLD_LOCKS", (sessions as u64 / 10).max(50)) as usize,
            think_ms: env_u64("FLEET_THINK_MS", 20_000),
            hold_ms: env_u64("FLEET_HOLD_MS", 50),
            hot_hold_ms: env_u64("FLEET_HOT_HOLD_MS", 5),
            hot_think_ms: env_u64("FLEET_HOT_THINK_MS", 20),
            session_timeout: Duration::from_millis(env_u64("FLEET_SESSION_TIMEOUT_MS", 60_000)),
            acquire_timeout: Duration::from_secs(60),
            heap_mb: env_u64("FLEET_HEAP_MB", 1024) as u32,
            seed: env_u64("FLEET_SEED", 1),
            worker_exe,
            dir,
        }
    }

    /// A short name for tables: `zklock 1,000`, `zklock 1,000 + rolling restart`.
    pub fn label(&self) -> String {
        let mut s = format!(
            "{} {} {}",
            self.library,
            self.mode.key(),
            thousands(self.sessions)
        );
        if self.rolling_restart {
            s.push_str(" + rolling restart");
        }
        s
    }
}

/// `10000` as `10,000`.
pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A member's figures over the window.
#[derive(Clone, Debug, Default)]
pub struct MemberFigures {
    /// Packets received while this member led, and while it followed.
    pub received_leading: u64,
    /// See `received_leading`.
    pub received_following: u64,
    /// Requests into the request pipeline while this member led: its own
    /// clients' and every write and `sync` its followers forwarded
    /// (`zk_prep_processor_request_queued`).
    pub pipeline_leading: u64,
    /// Writes proposed while this member led (`zk_proposal_count`).
    pub proposals: u64,
    /// The most outstanding requests seen.
    pub max_outstanding: u64,
    /// The most alive connections seen.
    pub max_connections: u64,
    /// `mntr` samples that got no answer.
    pub unanswered: usize,
    /// Live heap at the window's end (jcmd `GC.run`, `GC.heap_info`), MiB.
    pub heap_used_mb: Option<f64>,
    /// The JVM's RSS at the window's end, MiB.
    pub rss_mb: Option<f64>,
    /// `Expiring session` lines in the member's log.
    pub expired: usize,
}

/// One case's results.
#[derive(Clone, Debug)]
pub struct CaseResult {
    /// The settings.
    pub config: CaseConfig,
    /// Sessions that connected.
    pub connected: usize,
    /// How long connecting them took.
    pub connect_time: Duration,
    /// The window's length.
    pub window: Duration,
    /// `/proc/loadavg` at the window's start and end.
    pub load: (String, String),
    /// Per member (in `myid` order).
    pub members: Vec<MemberFigures>,
    /// Packets per second received by the leader (whichever member led).
    pub leader_rps: f64,
    /// Packets per second received by a follower (mean of the followers).
    pub follower_rps: f64,
    /// Requests per second into the leader's pipeline (its clients' and what
    /// its followers forward: every write and `sync`).
    pub leader_pipeline_rps: f64,
    /// Writes proposed per second (the leader's).
    pub proposals_per_s: f64,
    /// Packets per second per session, over the whole ensemble.
    pub per_session_rps: f64,
    /// Latencies and grants.
    pub figures: Figures,
    /// Grants per second in the window.
    pub grants_per_s: f64,
    /// The workers' RSS summed at the window's end, per session (KiB).
    pub client_rss_kib_per_session: f64,
    /// The workers' CPU time in the window, per session per second (µs/s).
    pub client_cpu_us_per_session_s: f64,
    /// Sessions the clients saw expire (distinct).
    pub client_expired: usize,
    /// Fleet sessions (distinct) one of whose ZooKeeper sessions the servers
    /// expired; [`server_expired`](Self::server_expired) less the expiries of
    /// these sessions' ids are sessions no client ever got (handshakes a client
    /// gave up on while the server was slow).
    pub server_expired_fleet: usize,
    /// Sessions the servers expired that no client ever had.
    pub server_expired_unowned: usize,
    /// Two holders at once (must be empty).
    pub overlaps: Vec<Overlap>,
    /// Faults by kind.
    pub faults: BTreeMap<String, usize>,
    /// The first fault, if any: what gave out first.
    pub first_fault: Option<Fault>,
    /// What the rolling restart did (member, role, seconds to serve again).
    pub restarts: Vec<(usize, String, Duration)>,
    /// A worker that failed (its exit status), or a restart that did not
    /// bring its member back.
    pub worker_failures: Vec<String>,
}

impl CaseResult {
    /// Sessions the servers expired (every `Expiring session` line).
    pub fn server_expired(&self) -> usize {
        self.members.iter().map(|m| m.expired).sum()
    }

    /// The checks a run must pass: every session connected, no overlap, no
    /// worker failed, and no expiry, except that with a rolling restart an
    /// expiry is allowed when the clients and the servers count the same.
    pub fn problems(&self) -> Vec<String> {
        let mut p = Vec::new();
        if self.connected < self.config.sessions {
            p.push(format!(
                "{} of {} sessions connected",
                self.connected, self.config.sessions
            ));
        }
        if !self.overlaps.is_empty() {
            p.push(format!(
                "{} overlaps, first {:?}",
                self.overlaps.len(),
                self.overlaps[0]
            ));
        }
        p.extend(self.worker_failures.iter().cloned());
        let (client, server) = (self.client_expired, self.server_expired_fleet);
        if !self.config.rolling_restart && (client > 0 || server > 0) {
            p.push(format!("sessions expired: {client} seen by clients, {server} of the fleet's by the servers"));
        }
        if self.config.rolling_restart && client != server {
            p.push(format!("expiries unaccounted for: {client} seen by clients, {server} of the fleet's by the servers"));
        }
        if self.figures.grants == 0 && self.config.mode != Mode::Idle {
            p.push("no grants in the window".into());
        }
        p
    }
}

struct Worker {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    out: PathBuf,
}

impl Worker {
    fn send(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").expect("writing to a worker");
        self.stdin.flush().expect("writing to a worker");
    }

    /// The worker's next line, which must start with `word`.
    fn expect(&mut self, word: &str) -> String {
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("reading a worker");
        assert!(
            line.starts_with(word),
            "worker {}: expected {word:?}, got {line:?} (exit: {:?})",
            self.child.id(),
            self.child.try_wait()
        );
        line.trim().to_owned()
    }

    fn rss_kib(&self) -> u64 {
        rss_kib(self.child.id())
    }

    fn cpu(&self) -> Duration {
        cpu_time(self.child.id())
    }
}

/// VmRSS of a process, KiB.
fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

/// User + system CPU time of a process.
fn cpu_time(pid: u32) -> Duration {
    let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return Duration::ZERO;
    };
    let rest = text.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15; `rest` starts at field 3.
    let ticks = |i: usize| {
        fields
            .get(i - 3)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // USER_HZ is 100 on every Linux this runs on.
    Duration::from_millis((ticks(14) + ticks(15)) * 10)
}

/// `/proc/loadavg`'s first three fields.
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

/// The live heap of a JVM, MiB: `jcmd <pid> GC.run` (a full collection, after
/// the window, so that the figure is what the sessions and nodes keep, not
/// where the collector happened to be), then `GC.heap_info` (the generations'
/// `used`; metaspace is not heap).
fn heap_used_mb(pid: u32) -> Option<f64> {
    Command::new("jcmd")
        .arg(pid.to_string())
        .arg("GC.run")
        .output()
        .ok()?;
    let out = Command::new("jcmd")
        .arg(pid.to_string())
        .arg("GC.heap_info")
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut kib = 0u64;
    let mut seen = false;
    for line in text
        .lines()
        .filter(|l| l.contains("generation") || l.contains("garbage-first heap"))
    {
        if let Some(used) = line.split("used ").nth(1) {
            let number: String = used.chars().take_while(char::is_ascii_digit).collect();
            kib += number.parse::<u64>().ok()?;
            seen = true;
        }
    }
    seen.then_some(kib as f64 / 1024.0)
}

/// Samples every member every 2 s until `stop`: packets received (attributed to
/// the member's role at the sample), outstanding requests, connections.
fn sampler(ensemble: Arc<ZkEnsemble>, stop: Arc<AtomicBool>) -> Vec<MemberFigures> {
    let n = ensemble.members().len();
    let mut figures = vec![MemberFigures::default(); n];
    // Per member: packets received from clients, requests into the request
    // pipeline (on the leader: its clients' and the writes and syncs its
    // followers forward), writes proposed.
    let mut last: Vec<Option<[u64; 3]>> = vec![None; n];
    // A restarted member counts from 0 again.
    let delta = |now: u64, prev: u64| if now >= prev { now - prev } else { now };
    loop {
        let stopping = stop.load(Ordering::SeqCst);
        for (i, member) in ensemble.members().iter().enumerate() {
            let Ok(m) = member.mntr() else {
                figures[i].unanswered += 1;
                continue;
            };
            let counters = [
                m.get_u64("zk_packets_received").unwrap_or(0),
                m.get_u64("zk_prep_processor_request_queued").unwrap_or(0),
                m.get_u64("zk_proposal_count").unwrap_or(0),
            ];
            let leading = m.get("zk_server_state") == Some("leader");
            let f = &mut figures[i];
            f.max_outstanding = f
                .max_outstanding
                .max(m.get_u64("zk_outstanding_requests").unwrap_or(0));
            f.max_connections = f
                .max_connections
                .max(m.get_u64("zk_num_alive_connections").unwrap_or(0));
            if let Some(prev) = last[i] {
                let received = delta(counters[0], prev[0]);
                if leading {
                    f.received_leading += received;
                    f.pipeline_leading += delta(counters[1], prev[1]);
                    f.proposals += delta(counters[2], prev[2]);
                } else {
                    f.received_following += received;
                }
            }
            last[i] = Some(counters);
        }
        if stopping {
            return figures;
        }
        let until = Instant::now() + Duration::from_secs(2);
        while Instant::now() < until && !stop.load(Ordering::SeqCst) {
            thread::sleep(Duration::from_millis(50));
        }
    }
}

/// The ids (`0x...`) of the sessions a member's log says it expired, in order.
fn expiring_ids(server: &ZkServer) -> Vec<String> {
    std::fs::read_to_string(server.log_path())
        .map(|log| {
            log.lines()
                .filter_map(|l| l.split("Expiring session ").nth(1))
                .map(|rest| rest.split([',', ' ']).next().unwrap_or("").to_owned())
                .collect()
        })
        .unwrap_or_default()
}

const CURATOR_SOURCE: &str = include_str!("../peers/CuratorFleet.java");
const KAZOO_SOURCE: &str = include_str!("../peers/kazoo_fleet.py");

/// How to start a worker of a peer library: Curator's compiled class and
/// classpath, kazoo's Python and script.
enum Peers {
    Rust,
    Curator { java: PathBuf, classpath: String },
    Kazoo { python: PathBuf, script: PathBuf },
}

impl Peers {
    /// Compiles the Curator worker or writes the kazoo script, next to the
    /// worker binary (`<target>/<profile>/`). Panics with the fix when Java,
    /// Curator's jars or kazoo are missing.
    fn prepare(config: &CaseConfig) -> Peers {
        let target = config
            .worker_exe
            .parent()
            .and_then(|p| p.parent())
            .expect("the target directory");
        let build = target.join("fleet-peers");
        std::fs::create_dir_all(&build).expect("the peers' build directory");
        match config.library.as_str() {
            "curator" => {
                let (java, classpath) = lock_testkit::curator_peer(CURATOR_SOURCE, "CuratorFleet", &build)
                    .unwrap_or_else(|e| panic!("the Curator worker: {e} (scripts/install-deps.sh installs Java and Curator)"));
                Peers::Curator { java, classpath }
            }
            "kazoo" => {
                let script = build.join("kazoo_fleet.py");
                std::fs::write(&script, KAZOO_SOURCE).expect("writing kazoo_fleet.py");
                let python = std::env::var_os("FLEET_KAZOO_PYTHON")
                    .map_or_else(|| target.join("kazoo-venv/bin/python"), PathBuf::from);
                assert!(
                    python.exists(),
                    "{} is missing: scripts/install-deps.sh makes <target>/kazoo-venv with kazoo \
                     (or set FLEET_KAZOO_PYTHON to a Python with kazoo)",
                    python.display()
                );
                Peers::Kazoo { python, script }
            }
            _ => Peers::Rust,
        }
    }
}

/// The command that starts one worker (its `key=value` words still to add).
fn worker_command(config: &CaseConfig, peers: &Peers) -> Command {
    match peers {
        Peers::Rust => {
            let mut c = Command::new(&config.worker_exe);
            c.arg("worker");
            c
        }
        Peers::Curator { java, classpath } => {
            let mut c = Command::new(java);
            // Thousands of threads (a session's own, ZooKeeper's two, Curator's): small stacks.
            c.args([
                "-Xmx1g",
                "-Xss512k",
                "-XX:+UseSerialGC",
                "-cp",
                classpath,
                "CuratorFleet",
            ]);
            c
        }
        Peers::Kazoo { python, script } => {
            let mut c = Command::new(python);
            c.arg(script);
            c
        }
    }
}

/// Starts the 3-node ensemble a case runs on. `tickTime` 100 ms (the
/// testkit's), `syncLimit` 5 s and `initLimit` 20 s: ZooKeeper's production
/// defaults in time (2 s ticks x 5 and x 10), so that a follower that rejoins
/// under load (a snapshot of 10,000 sessions) is not cut off by a limit made
/// for idle tests; `maxClientCnxns=0` (the testkit's: every session comes from
/// 127.0.0.1).
pub fn start_ensemble(heap_mb: u32) -> ZkEnsemble {
    ZkEnsemble::builder()
        .max_heap_mb(heap_mb)
        .sync_limit(50)
        .init_limit(200)
        .startup_timeout(Duration::from_secs(120))
        .start_ensemble(3)
        .expect("starting a 3-node ensemble (lock-testkit)")
}

/// Runs one case on a fresh ensemble.
pub fn run_case(config: &CaseConfig) -> CaseResult {
    run_case_on(config, Arc::new(start_ensemble(config.heap_mb)))
}

/// Runs one case on `ensemble` (the yardstick's rounds share one). Its lock
/// paths must be free of an earlier case's nodes (each case's sessions are
/// closed at its end, so their ephemeral nodes are gone).
pub fn run_case_on(config: &CaseConfig, ensemble: Arc<ZkEnsemble>) -> CaseResult {
    std::fs::create_dir_all(&config.dir).expect("record directory");
    let connect = ensemble.connect_string();
    let expired_before: Vec<usize> = ensemble
        .members()
        .iter()
        .map(|m| expiring_ids(m).len())
        .collect();
    let peers = Peers::prepare(config);
    let started = Instant::now();
    let mut workers: Vec<Worker> = (0..config.workers)
        .map(|w| {
            let count = (config.sessions + config.workers - 1 - w) / config.workers;
            let out = config.dir.join(format!("worker-{w}.txt"));
            let spec = WorkerSpec {
                library: config.library.clone(),
                mode: config.mode,
                connect: connect.clone(),
                count,
                first: w,
                stride: config.workers,
                hot_sessions: config.hot_sessions,
                hot_locks: config.hot_locks,
                cold_locks: config.cold_locks,
                think_ms: config.think_ms,
                hold_ms: config.hold_ms,
                hot_hold_ms: config.hot_hold_ms,
                hot_think_ms: config.hot_think_ms,
                session_timeout_ms: config.session_timeout.as_millis() as u64,
                acquire_timeout_ms: config.acquire_timeout.as_millis() as u64,
                seed: config.seed,
                out: out.display().to_string(),
            };
            let mut child = worker_command(config, &peers)
                .args(spec.to_args())
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("starting a worker");
            let stdin = child.stdin.take().unwrap();
            let stdout = BufReader::new(child.stdout.take().unwrap());
            Worker {
                child,
                stdin,
                stdout,
                out,
            }
        })
        .collect();
    let connected: usize = workers
        .iter_mut()
        .map(|w| {
            w.expect("ready")
                .split_whitespace()
                .nth(1)
                .and_then(|n| n.parse::<usize>().ok())
                .unwrap_or(0)
        })
        .sum();
    let connect_time = started.elapsed();
    println!(
        "  {}: {connected} sessions connected in {:.1} s over {} workers; load {}",
        config.label(),
        connect_time.as_secs_f64(),
        config.workers,
        loadavg()
    );
    for w in &mut workers {
        w.send("go");
    }
    thread::sleep(config.warmup);

    // The window.
    let load_start = loadavg();
    let stop = Arc::new(AtomicBool::new(false));
    let sampling = {
        let (ensemble, stop) = (ensemble.clone(), stop.clone());
        thread::spawn(move || sampler(ensemble, stop))
    };
    let cpu0: Vec<Duration> = workers.iter().map(Worker::cpu).collect();
    let t0 = now_ns();
    let window_start = Instant::now();
    let mut restarts = Vec::new();
    let mut restart_failures = Vec::new();
    if config.rolling_restart {
        let leader = ensemble
            .wait_ready(Duration::from_secs(60))
            .expect("a leader");
        let mut order: Vec<usize> = (0..3).filter(|&i| i != leader).collect();
        order.push(leader);
        for i in order {
            thread::sleep(config.restart_gap);
            let role = if i == leader { "leader" } else { "follower" };
            let begun = Instant::now();
            let back = ensemble
                .restart(i)
                .and_then(|()| ensemble.wait_ready(Duration::from_secs(120)).map(drop));
            if let Err(e) = back {
                // What gave out: recorded, and the rest of the run still checked.
                restart_failures.push(format!("restarting member {}: {e}", i + 1));
                continue;
            }
            let took = begun.elapsed();
            println!(
                "  restarted member {} ({role}): serving again after {:.1} s; load {}",
                i + 1,
                took.as_secs_f64(),
                loadavg()
            );
            restarts.push((i, role.to_owned(), took));
        }
        thread::sleep(config.restart_gap);
    }
    if let Some(rest) = config.window.checked_sub(window_start.elapsed()) {
        thread::sleep(rest);
    }
    let t1 = now_ns();
    let window = window_start.elapsed();
    let cpu1: Vec<Duration> = workers.iter().map(Worker::cpu).collect();
    let client_rss: u64 = workers.iter().map(Worker::rss_kib).sum();
    let load_end = loadavg();
    stop.store(true, Ordering::SeqCst);
    let mut members = sampling.join().expect("sampler");
    for (i, member) in ensemble.members().iter().enumerate() {
        if let Some(pid) = member.jvm_pid() {
            members[i].heap_used_mb = heap_used_mb(pid);
            members[i].rss_mb = Some(rss_kib(pid) as f64 / 1024.0);
        }
    }

    for w in &mut workers {
        w.send("stop");
    }
    for w in &mut workers {
        w.expect("done");
    }
    // Expiries are counted before the sessions close (a close is not an expiry,
    // but counting first keeps the two apart for certain).
    let mut server_expired_ids = Vec::new();
    for (i, member) in ensemble.members().iter().enumerate() {
        let ids = expiring_ids(member);
        let new = ids.get(expired_before[i]..).unwrap_or_default();
        members[i].expired = new.len();
        server_expired_ids.extend_from_slice(new);
    }
    for w in &mut workers {
        w.send("close");
    }
    let mut worker_failures = restart_failures;
    let mut holds: Vec<Hold> = Vec::new();
    let mut faults: Vec<Fault> = Vec::new();
    for w in &mut workers {
        let status = w.child.wait().expect("waiting for a worker");
        if !status.success() {
            worker_failures.push(format!("worker {} exited with {status}", w.child.id()));
        }
        let text = std::fs::read_to_string(&w.out).expect("reading a worker's records");
        for line in text.lines() {
            match Record::parse(line) {
                Some(Record::Hold(h)) => holds.push(h),
                Some(Record::Fault(f)) => faults.push(f),
                None => panic!("{}: unreadable record {line:?}", w.out.display()),
            }
        }
    }

    // Every session id a fleet session ever had, and whose it was; the rest of
    // the servers' expiries are sessions no client got (a handshake the client
    // gave up on). Both sides count fleet sessions, not ZooKeeper sessions: a
    // fleet session whose replacement sessions expired too counts once.
    let mut owner = std::collections::HashMap::new();
    for f in &faults {
        if f.kind == crate::record::SESSION_OPENED {
            owner.insert(f.detail.clone(), f.session);
        } else if f.kind == "session-changed" {
            for id in f.detail.split(" -> ") {
                owner.insert(id.to_owned(), f.session);
            }
        }
    }
    faults.retain(|f| f.kind != crate::record::SESSION_OPENED);
    let mut expired_owners: Vec<usize> = server_expired_ids
        .iter()
        .filter_map(|id| owner.get(id).copied())
        .collect();
    expired_owners.sort_unstable();
    expired_owners.dedup();
    let server_expired_fleet = expired_owners.len();
    let server_expired_unowned = server_expired_ids
        .iter()
        .filter(|id| !owner.contains_key(*id))
        .count();

    let secs = window.as_secs_f64();
    let leading: u64 = members.iter().map(|m| m.received_leading).sum();
    let following: u64 = members.iter().map(|m| m.received_following).sum();
    let figures = check::figures(&holds, t0, t1);
    let mut expired_sessions: Vec<usize> = faults
        .iter()
        .filter(|f| f.is_expiry())
        .map(|f| f.session)
        .collect();
    expired_sessions.sort_unstable();
    expired_sessions.dedup();
    let mut by_kind = BTreeMap::new();
    for f in &faults {
        *by_kind.entry(f.kind.clone()).or_insert(0) += 1;
    }
    let first_fault = faults.iter().min_by_key(|f| f.at).cloned();
    let cpu: Duration = cpu1
        .iter()
        .zip(&cpu0)
        .map(|(a, b)| a.saturating_sub(*b))
        .sum();
    CaseResult {
        config: config.clone(),
        connected,
        connect_time,
        window,
        load: (load_start, load_end),
        leader_rps: leading as f64 / secs,
        follower_rps: following as f64 / secs / 2.0,
        leader_pipeline_rps: members.iter().map(|m| m.pipeline_leading).sum::<u64>() as f64 / secs,
        proposals_per_s: members.iter().map(|m| m.proposals).sum::<u64>() as f64 / secs,
        per_session_rps: (leading + following) as f64 / secs / config.sessions as f64,
        grants_per_s: figures.grants as f64 / secs,
        figures,
        members,
        client_rss_kib_per_session: client_rss as f64 / config.sessions as f64,
        client_cpu_us_per_session_s: cpu.as_secs_f64() * 1e6 / config.sessions as f64 / secs,
        client_expired: expired_sessions.len(),
        server_expired_fleet,
        server_expired_unowned,
        overlaps: check::overlaps(&holds),
        faults: by_kind,
        first_fault,
        restarts,
        worker_failures,
    }
}
