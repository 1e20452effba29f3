//! One case's settings ([`CaseConfig`]) and results ([`CaseResult`], a member's
//! [`MemberFigures`]), and the checks a result must pass.

use crate::check::{Figures, Overlap};
use crate::record::Fault;
use crate::{Mode, WorkerSpec};
use lock_testkit::measure::thousands;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// One case's settings. [`CaseConfig::from_env`] reads the `FLEET_*` knobs.
#[derive(Clone, Debug)]
pub struct CaseConfig {
    /// What every session does (the library, the mode, the locks, think and hold
    /// times, timeouts, the seed); each worker's spec is this one with its own
    /// connect string, share of the sessions and record file.
    pub workload: WorkerSpec,
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
    /// Each server's maximum heap.
    pub heap_mb: u32,
    /// The binary that runs `worker` (this one, or the test's `CARGO_BIN_EXE_`).
    pub worker_exe: PathBuf,
    /// Where the record files go.
    pub dir: PathBuf,
}

fn env_u64(key: &str, default: u64) -> u64 {
    lock_testkit::measure::env_usize(key, default as usize) as u64
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
            workload: WorkerSpec {
                library: "zklock".into(),
                mode: Mode::Fleet,
                hot_sessions: hot,
                // At least two hot sessions per hot lock: a hot lock has a queue.
                hot_locks: (env_u64("FLEET_HOT_LOCKS", 4) as usize).min(hot / 2).max(1),
                cold_locks: env_u64("FLEET_COLD_LOCKS", (sessions as u64 / 10).max(50)) as usize,
                think_ms: env_u64("FLEET_THINK_MS", 20_000),
                hold_ms: env_u64("FLEET_HOLD_MS", 50),
                hot_hold_ms: env_u64("FLEET_HOT_HOLD_MS", 5),
                hot_think_ms: env_u64("FLEET_HOT_THINK_MS", 20),
                session_timeout_ms: env_u64("FLEET_SESSION_TIMEOUT_MS", 60_000),
                acquire_timeout_ms: 60_000,
                seed: env_u64("FLEET_SEED", 1),
                // Each worker's own, set when it starts.
                connect: String::new(),
                count: 0,
                first: 0,
                stride: 1,
                out: String::new(),
            },
            sessions,
            workers: sessions.div_ceil(per_worker).max(2).min(sessions),
            window: Duration::from_secs(env_u64("FLEET_SECONDS", 60)),
            warmup: Duration::from_secs(env_u64("FLEET_WARMUP_S", 10)),
            rolling_restart: false,
            restart_gap: Duration::from_secs(env_u64("FLEET_RESTART_GAP_S", 20)),
            heap_mb: env_u64("FLEET_HEAP_MB", 1024) as u32,
            worker_exe,
            dir,
        }
    }

    /// A short name for tables: `zklock 1,000`, `zklock 1,000 + rolling restart`.
    pub fn label(&self) -> String {
        let mut s = format!(
            "{} {} {}",
            self.workload.library,
            self.workload.mode.key(),
            thousands(self.sessions)
        );
        if self.rolling_restart {
            s.push_str(" + rolling restart");
        }
        s
    }
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
        if self.figures.grants == 0 && self.config.workload.mode != Mode::Idle {
            p.push("no grants in the window".into());
        }
        p
    }
}
