//! The fleet harness (dev-only): N ZooKeeper sessions spread over several worker
//! processes against a real 3-node ensemble on this machine, each session
//! holding, waiting for and handing off locks from a pool, while the
//! coordinator samples the servers (`mntr`, heap) and the workers (RSS, CPU).
//! Afterwards every hold interval of every process is merged on the shared
//! monotonic clock and checked: no two trusted holders of one lock overlapped.
//!
//! * [`worker`]: one process of sessions (zklock's `LockClient` or the bare
//!   zookeeper-client), driven over stdin/stdout.
//! * [`coord`]: one case (N sessions, optionally a rolling restart), end to end;
//!   its settings and results in [`case`], what it measures in [`measure`].
//! * [`check`]: the overlap check and the latency figures.
//! * [`report`], [`chart`]: BENCHMARKS.md's fleet section and its SVG.
//!
//! `scripts/bench.sh fleet` runs the suite (`zklock-fleet suite`); one case is
//! `zklock-fleet run N [restart]`. Knobs are `FLEET_*` environment variables,
//! listed on [`CaseConfig::from_env`] and in `main.rs`.

#![forbid(unsafe_code)]

pub mod case;
pub mod chart;
pub mod check;
pub mod coord;
mod launch;
pub mod measure;
pub mod record;
pub mod report;
pub mod worker;

pub use case::{CaseConfig, CaseResult};
pub use coord::{run_case, run_case_on};

/// CLOCK_MONOTONIC in nanoseconds: one clock for every process on the machine
/// (and across network namespaces), so that the holds recorded by different
/// workers can be merged by time. `std::time::Instant` reads the same clock but
/// cannot be sent to another process.
pub fn now_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// What the sessions of a worker do.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Mode {
    /// The fleet mix: a few hot sessions loop on a few hot locks (queues); the
    /// rest think for long exponential spans between short holds of random cold
    /// locks from a large pool.
    Fleet,
    /// Yardstick: every session loops acquire + release on a lock of its own.
    Uncontended,
    /// Yardstick: every session loops acquire + release on one lock.
    Handoff,
    /// No locks at all: what an idle session costs (pings, zklock's contact
    /// `sync`s), the baseline the fleet's requests per session sit on.
    Idle,
}

impl Mode {
    /// The mode's name on command lines and in tables.
    pub fn key(self) -> &'static str {
        match self {
            Mode::Fleet => "fleet",
            Mode::Uncontended => "uncontended",
            Mode::Handoff => "handoff",
            Mode::Idle => "idle",
        }
    }

    fn parse(s: &str) -> Mode {
        match s {
            "fleet" => Mode::Fleet,
            "uncontended" => Mode::Uncontended,
            "handoff" => Mode::Handoff,
            "idle" => Mode::Idle,
            other => panic!("unknown mode {other:?}"),
        }
    }
}

/// A worker's instructions, passed on its command line as `key=value` words.
#[derive(Clone, Debug)]
pub struct WorkerSpec {
    /// `zklock` or `bare`.
    pub library: String,
    /// What the sessions do.
    pub mode: Mode,
    /// The ensemble's connect string.
    pub connect: String,
    /// Sessions in this worker.
    pub count: usize,
    /// The global index of this worker's first session; session `i` is
    /// `first + i * stride`, so that hot sessions spread over the workers.
    pub first: usize,
    /// See `first`.
    pub stride: usize,
    /// Sessions with a global index below this are hot.
    pub hot_sessions: usize,
    /// Hot locks; hot session `g` uses hot lock `g % hot_locks`.
    pub hot_locks: usize,
    /// The cold pool's size.
    pub cold_locks: usize,
    /// A cold session's mean think time between holds (exponential).
    pub think_ms: u64,
    /// A cold hold's mean length (exponential).
    pub hold_ms: u64,
    /// A hot hold's length.
    pub hot_hold_ms: u64,
    /// A hot session's think time, uniform in `0..=hot_think_ms`.
    pub hot_think_ms: u64,
    /// The session timeout asked for.
    pub session_timeout_ms: u64,
    /// An acquisition's deadline.
    pub acquire_timeout_ms: u64,
    /// The seed of the think and hold times.
    pub seed: u64,
    /// Where the records go.
    pub out: String,
}

impl WorkerSpec {
    /// The command-line words.
    pub fn to_args(&self) -> Vec<String> {
        vec![
            format!("library={}", self.library),
            format!("mode={}", self.mode.key()),
            format!("connect={}", self.connect),
            format!("count={}", self.count),
            format!("first={}", self.first),
            format!("stride={}", self.stride),
            format!("hot_sessions={}", self.hot_sessions),
            format!("hot_locks={}", self.hot_locks),
            format!("cold_locks={}", self.cold_locks),
            format!("think_ms={}", self.think_ms),
            format!("hold_ms={}", self.hold_ms),
            format!("hot_hold_ms={}", self.hot_hold_ms),
            format!("hot_think_ms={}", self.hot_think_ms),
            format!("session_timeout_ms={}", self.session_timeout_ms),
            format!("acquire_timeout_ms={}", self.acquire_timeout_ms),
            format!("seed={}", self.seed),
            format!("out={}", self.out),
        ]
    }

    /// Parses [`to_args`](Self::to_args)'s words.
    pub fn from_args(args: &[String]) -> WorkerSpec {
        let get = |key: &str| -> String {
            args.iter()
                .find_map(|a| a.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
                .unwrap_or_else(|| panic!("worker: missing {key}="))
                .to_owned()
        };
        let num = |key: &str| -> u64 {
            get(key)
                .parse()
                .unwrap_or_else(|_| panic!("worker: bad {key}"))
        };
        WorkerSpec {
            library: get("library"),
            mode: Mode::parse(&get("mode")),
            connect: get("connect"),
            count: num("count") as usize,
            first: num("first") as usize,
            stride: num("stride") as usize,
            hot_sessions: num("hot_sessions") as usize,
            hot_locks: num("hot_locks") as usize,
            cold_locks: num("cold_locks") as usize,
            think_ms: num("think_ms"),
            hold_ms: num("hold_ms"),
            hot_hold_ms: num("hot_hold_ms"),
            hot_think_ms: num("hot_think_ms"),
            session_timeout_ms: num("session_timeout_ms"),
            acquire_timeout_ms: num("acquire_timeout_ms"),
            seed: num("seed"),
            out: get("out"),
        }
    }
}
