//! Deadlock workloads: owners on several sessions take 2 to 4 locks each, in random
//! order, hold them all, then release them all; every acquisition detects
//! deadlocks ([`LockSpec::detect_deadlocks`]). Random faults strike meanwhile.
//!
//! After every step (and every user action), the wait-for graph is rebuilt from
//! the simulator's global view, independently of lock-core's detection: the nodes
//! of every lock directory, their owners (the header in their data, read with
//! [`lock_core::owner::parse`], whose bytes lock-core's tests pin), who holds by the
//! recipe rules, and which owner really waits where (the user's own record). Its
//! edges: a waiting node to each lower node that blocks it (every lower node for a
//! write, every lower write for a read), and a held node to the node its owner
//! waits at. The checks:
//!
//! * **broken within the bound**: no node stays on a cycle longer than
//!   [`DeadlockWorkload::bound`];
//! * **no false deadlock**: every cycle a victim reports existed as a whole, every
//!   edge at once, at some point of the global history;
//! * **one victim per cycle**: no two victims report the same cycle, and each
//!   victim is the youngest (highest `czxid`) waiting node entered by an owner edge
//!   in its cycle;
//! * the simulator's own safety invariants throughout, and at the end (faults
//!   stopped, every round finished) liveness and no orphan nodes.

use crate::sim::fault_config::FaultConfig;
use crate::sim::network::Latency;
use crate::sim::workload::Failure;
use std::time::Duration;

mod run;

use run::Run;

/// The shape of a family of random deadlock schedules.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct DeadlockWorkload {
    /// Sessions (inclusive range).
    pub clients: (usize, usize),
    /// Owners, spread over the sessions (inclusive range).
    pub owners: (usize, usize),
    /// Lock paths in the pool.
    pub locks: usize,
    /// Locks one round takes (inclusive range, at most `locks`).
    pub per_round: (usize, usize),
    /// Rounds per owner during the chaos phase (inclusive range).
    pub rounds: (usize, usize),
    /// Probability that a lock of a round is taken for reading.
    pub read_chance: f64,
    /// Every session's timeout.
    pub session_timeout: Duration,
    /// Every acquisition's `detect_after`.
    pub detect_after: Duration,
    /// Pause before an owner's next round.
    pub gap: (Duration, Duration),
    /// How long an owner holds all its locks.
    pub hold: (Duration, Duration),
    /// Faults during the chaos phase.
    pub faults: FaultConfig,
    /// Network latency.
    pub latency: Latency,
    /// How long the chaos phase lasts (rounds start and faults strike).
    pub chaos: Duration,
    /// How long a node may stay on a cycle of waits (the detection bound checked).
    pub bound: Duration,
    /// Virtual time the drain may take before liveness is declared violated.
    pub drain_limit: Duration,
    /// Whether the sessions are lock-client's user API ([`SimConfig::user_api`](crate::SimConfig::user_api));
    /// set with [`through_lock_client`](Self::through_lock_client).
    pub user_api: bool,
}

impl Default for DeadlockWorkload {
    fn default() -> Self {
        let timeout = Duration::from_millis(600);
        let detect_after = Duration::from_millis(50);
        DeadlockWorkload {
            clients: (2, 3),
            owners: (2, 4),
            locks: 4,
            per_round: (2, 4),
            rounds: (1, 1),
            read_chance: 0.25,
            session_timeout: timeout,
            detect_after,
            gap: (Duration::from_millis(1), Duration::from_millis(20)),
            hold: (Duration::from_millis(1), Duration::from_millis(30)),
            faults: FaultConfig::chaos(Duration::from_millis(250)),
            latency: Latency::between(Duration::from_micros(500), Duration::from_millis(6)),
            chaos: timeout,
            bound: detect_after * 3 + timeout * 2,
            drain_limit: Duration::from_secs(60),
            user_api: false,
        }
    }
}

impl DeadlockWorkload {
    /// The same schedules with every session driven through lock-client's user
    /// API ([`SimConfig::user_api`](crate::SimConfig::user_api)): the victims hear of their deadlock as the
    /// user does, from the pending acquisition's `Error::Deadlock`.
    ///
    /// ```
    /// let w = zklock::sim::DeadlockWorkload::default().through_lock_client();
    /// let report = w.run(1).unwrap_or_else(|f| panic!("{f}"));
    /// assert!(report.acquisitions > 0);
    /// ```
    pub fn through_lock_client(mut self) -> Self {
        self.user_api = true;
        self
    }
}

/// What a deadlock schedule did.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
#[non_exhaustive]
pub struct DeadlockReport {
    /// Wakeups processed.
    pub steps: u64,
    /// Acquisitions started.
    pub acquisitions: usize,
    /// Deadlocks broken by a victim.
    pub victims: usize,
    /// For each victim: from the moment its cycle was complete in the global view
    /// to its `Failed(Deadlock)`.
    pub latencies: Vec<Duration>,
    /// Requests sent in all.
    pub requests: u64,
}

impl DeadlockWorkload {
    /// Runs the schedule of `seed`; on a violation it is replayed with tracing on.
    pub fn run(&self, seed: u64) -> Result<DeadlockReport, Failure> {
        self.execute(seed, false)
            .or_else(|_| self.execute(seed, true))
    }

    fn execute(&self, seed: u64, trace: bool) -> Result<DeadlockReport, Failure> {
        let mut run = Run::new(self, seed, trace);
        let result = run.go().map(|()| run.report());
        result.map_err(|violation| Failure {
            workload: "deadlock",
            violation,
            trace: std::mem::take(&mut run.sim.trace_log),
            user_api: self.user_api,
        })
    }
}
