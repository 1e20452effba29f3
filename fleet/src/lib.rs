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
}

impl std::str::FromStr for Mode {
    type Err = String;

    fn from_str(s: &str) -> Result<Mode, String> {
        [Mode::Fleet, Mode::Uncontended, Mode::Handoff, Mode::Idle]
            .into_iter()
            .find(|mode| mode.key() == s)
            .ok_or_else(|| format!("unknown mode {s:?}"))
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.key())
    }
}

/// Declares [`WorkerSpec`] and its command-line words, `field=value` per field
/// (the Curator and kazoo workers read the same words).
macro_rules! worker_spec {
    ($($(#[doc = $doc:literal])* $field:ident: $ty:ty,)*) => {
        /// A worker's instructions, passed on its command line as `key=value` words.
        #[derive(Clone, Debug)]
        pub struct WorkerSpec {
            $($(#[doc = $doc])* pub $field: $ty,)*
        }

        impl WorkerSpec {
            /// The command-line words.
            pub fn to_args(&self) -> Vec<String> {
                vec![$(format!(concat!(stringify!($field), "={}"), self.$field)),*]
            }

            /// Parses [`to_args`](Self::to_args)'s words.
            pub fn from_args(args: &[String]) -> WorkerSpec {
                let get = |key: &str| -> &str {
                    args.iter()
                        .find_map(|a| a.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
                        .unwrap_or_else(|| panic!("worker: missing {key}="))
                };
                WorkerSpec {
                    $($field: get(stringify!($field))
                        .parse()
                        .unwrap_or_else(|_| panic!(concat!("worker: bad ", stringify!($field)))),)*
                }
            }
        }
    };
}

worker_spec! {
    /// `zklock`, `bare` (the yardstick), `curator` or `kazoo` (`mode` Fleet).
    library: String,
    /// What the sessions do.
    mode: Mode,
    /// The ensemble's connect string.
    connect: String,
    /// Sessions in this worker.
    count: usize,
    /// The global index of this worker's first session; session `i` is
    /// `first + i * stride`, so that hot sessions spread over the workers.
    first: usize,
    /// See `first`.
    stride: usize,
    /// Sessions with a global index below this are hot.
    hot_sessions: usize,
    /// Hot locks; hot session `g` uses hot lock `g % hot_locks`.
    hot_locks: usize,
    /// The cold pool's size.
    cold_locks: usize,
    /// A cold session's mean think time between holds (exponential).
    think_ms: u64,
    /// A cold hold's mean length (exponential).
    hold_ms: u64,
    /// A hot hold's length.
    hot_hold_ms: u64,
    /// A hot session's think time, uniform in `0..=hot_think_ms`.
    hot_think_ms: u64,
    /// The session timeout asked for.
    session_timeout_ms: u64,
    /// An acquisition's deadline.
    acquire_timeout_ms: u64,
    /// The seed of the think and hold times.
    seed: u64,
    /// Where the records go.
    out: String,
}
