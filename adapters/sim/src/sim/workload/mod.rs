//! Randomized workloads: many clients, every recipe, random acquire / hold / release /
//! cancel / timeout, with faults, and the invariants checked after every step.
//!
//! A schedule is fully determined by its seed and the [`Workload`]: it first runs a
//! chaos phase (acquisitions arrive while random faults strike), then stops the faults
//! and drains: holders keep releasing after their hold time, so every acquisition
//! must end (liveness) and no lock node may be left behind (no orphans).
//!
//! Beyond plain locking, a workload can exercise the features of a holder: revocable
//! locks that release when asked, leases (`max_hold`), crash-detecting critical
//! sections opened (and sometimes closed) while held, and fenced writes to a data
//! node per lock, audited by the invariant checker ([`Workload::sections`],
//! [`Workload::fenced`], [`Workload::features`]).
//!
//! ```
//! use zklock::sim::Workload;
//! let w = Workload::exclusive();
//! for seed in 0..3 {
//!     let report = w.run(seed).unwrap_or_else(|f| panic!("{f}"));
//!     assert!(report.acquisitions > 0);
//! }
//! ```

use crate::check::Violation;
use crate::sim::fault_config::FaultConfig;
use crate::sim::network::Latency;
use crate::sim::scheduler::{Sim, TraceEntry};
use lock_core::Timestamp;
use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

mod run;

use run::Run;

/// Which recipes a workload exercises.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[non_exhaustive]
pub enum Mix {
    /// Exclusive (write) locks on a shallow and a deep path.
    Exclusive,
    /// Readers and writers on one path.
    ReadWrite,
    /// A semaphore with 1 to 3 permits (per schedule).
    Semaphore,
    /// Leader election.
    Leader,
    /// All of the above at once, on separate paths.
    All,
}

/// The shape of a family of random schedules. Start from a preset and adjust.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Workload {
    /// Name, for messages.
    pub name: &'static str,
    /// Recipes.
    pub mix: Mix,
    /// Number of clients (inclusive range).
    pub clients: (usize, usize),
    /// Number of acquisitions (inclusive range).
    pub acquisitions: (usize, usize),
    /// Every client's session timeout.
    pub session_timeout: Duration,
    /// Time between two acquisitions.
    pub gap: (Duration, Duration),
    /// How long a holder holds before releasing.
    pub hold: (Duration, Duration),
    /// Probability of a long hold instead (longer than a session timeout, so that
    /// holders meet faults: suspension, expiry, revocation).
    pub long_hold_chance: f64,
    /// How long a long hold lasts.
    pub long_hold: (Duration, Duration),
    /// Probability that an acquisition honours revocation requests.
    pub revocable_chance: f64,
    /// Probability that an acquisition is a lease (`max_hold`, up to a session timeout).
    pub lease_chance: f64,
    /// Probability that a user asks the holders of a lock to let go (per acquisition).
    pub revoke_chance: f64,
    /// Probability that a client observes an election (per acquisition, leader
    /// workloads only).
    pub observe_chance: f64,
    /// Probability that an exclusive (write or leader) acquisition detects crashes
    /// ([`LockSpec::detect_crashes`](lock_core::LockSpec::detect_crashes)).
    pub detect_crashes_chance: f64,
    /// Probability that a crash-detecting holder opens a critical section as soon as
    /// it holds (it stays open until the release unless closed).
    pub section_chance: f64,
    /// Probability that a holder with an open section closes it partway through its
    /// hold.
    pub close_section_chance: f64,
    /// Probability that an exclusive (write or leader) holder makes fenced writes
    /// while it holds: to a data node per lock path, audited by the invariant
    /// checker ([`Sim::audit_fenced_writes`]).
    pub fenced_chance: f64,
    /// Probability that an acquisition has a deadline (up to 2 session timeouts away).
    pub deadline_chance: f64,
    /// Probability that an acquisition does not wait (`try_only`).
    pub try_chance: f64,
    /// Probability that the user cancels an acquisition after a while.
    pub cancel_chance: f64,
    /// Random faults during the chaos phase.
    pub faults: FaultConfig,
    /// Network latency.
    pub latency: Latency,
    /// Container reaper interval.
    pub reap_interval: Duration,
    /// Virtual time the drain phase may take before liveness is declared violated.
    pub drain_limit: Duration,
    /// Whether the clients are lock-client's user API ([`SimConfig::user_api`](crate::SimConfig::user_api));
    /// set with [`through_lock_client`](Self::through_lock_client).
    pub user_api: bool,
    /// A liveness run: with no fault and message delays far below the contact
    /// rules' margins, a `Suspended` or `Lost` (or a waiter failing for want of
    /// contact) is a [`FalseAlarm`](crate::ViolationKind::FalseAlarm), and every
    /// acquisition must be granted. Set by [`liveness`](Self::liveness).
    pub liveness: bool,
}

impl Workload {
    fn preset(name: &'static str, mix: Mix) -> Self {
        let timeout = Duration::from_millis(600);
        Workload {
            name,
            mix,
            clients: (2, 5),
            acquisitions: (8, 24),
            session_timeout: timeout,
            gap: (Duration::from_millis(1), Duration::from_millis(60)),
            hold: (Duration::from_millis(1), Duration::from_millis(120)),
            long_hold_chance: 0.2,
            long_hold: (timeout / 2, timeout * 2),
            revocable_chance: 0.3,
            lease_chance: 0.05,
            revoke_chance: 0.03,
            observe_chance: 0.1,
            detect_crashes_chance: 0.0,
            section_chance: 0.0,
            close_section_chance: 0.0,
            fenced_chance: 0.0,
            deadline_chance: 0.2,
            try_chance: 0.05,
            cancel_chance: 0.15,
            faults: FaultConfig::chaos(Duration::from_millis(250)),
            latency: Latency::between(Duration::from_micros(500), Duration::from_millis(6)),
            reap_interval: Duration::from_millis(200),
            drain_limit: Duration::from_secs(120),
            user_api: false,
            liveness: false,
        }
    }

    /// Exclusive locks.
    pub fn exclusive() -> Self {
        Self::preset("exclusive", Mix::Exclusive)
    }

    /// Read/write locks.
    pub fn read_write() -> Self {
        Self::preset("read_write", Mix::ReadWrite)
    }

    /// Semaphores.
    pub fn semaphore() -> Self {
        Self::preset("semaphore", Mix::Semaphore)
    }

    /// Leader election.
    pub fn leader() -> Self {
        Self::preset("leader", Mix::Leader)
    }

    /// Every recipe at once.
    pub fn mixed() -> Self {
        Self::preset("mixed", Mix::All)
    }

    /// Everything at once under tight timing: latencies up to 40 ms against a
    /// 300 ms session timeout, a fault every 60 ms on average, up to 6 clients.
    pub fn harsh() -> Self {
        let mut w = Self::mixed().with_faults(FaultConfig::chaos(Duration::from_millis(60)));
        w.name = "harsh";
        w.session_timeout = Duration::from_millis(300);
        w.latency = Latency::between(Duration::from_micros(100), Duration::from_millis(40));
        w.long_hold = (Duration::from_millis(150), Duration::from_millis(600));
        w.clients = (2, 6);
        w.acquisitions = (10, 40);
        w
    }

    /// Liveness: clients that prove their contact with `sync`s, as lock-client's
    /// bindings do; every recipe, no fault, one-way delays of at most a fortieth of
    /// the session timeout (far below the margins of a tenth), holds of up to
    /// two session timeouts (waiters wait longer than a timeout) and gaps that
    /// leave sessions idle for most of one. No holder may ever be told
    /// `Suspended` or `Lost` (a [`FalseAlarm`](crate::ViolationKind::FalseAlarm)),
    /// and every acquisition is granted. Nothing is cancelled, timed out,
    /// revoked or leased: each of those ends an acquisition on purpose.
    ///
    /// ```
    /// use zklock::sim::Workload;
    /// let report = Workload::liveness().run(7).unwrap_or_else(|f| panic!("{f}"));
    /// assert_eq!(report.acquired, report.acquisitions);
    /// ```
    pub fn liveness() -> Self {
        let mut w = Self::preset("liveness", Mix::All).with_faults(FaultConfig::none());
        w.liveness = true;
        w.latency = Latency::between(Duration::from_micros(500), w.session_timeout / 40);
        w.gap = (Duration::from_millis(1), w.session_timeout * 9 / 10);
        w.long_hold_chance = 0.3;
        w.long_hold = (w.session_timeout / 2, w.session_timeout * 2);
        w.revocable_chance = 0.0;
        w.revoke_chance = 0.0;
        w.lease_chance = 0.0;
        w.deadline_chance = 0.0;
        w.try_chance = 0.0;
        w.cancel_chance = 0.0;
        w
    }

    /// Crash-detecting critical sections on exclusive locks: most holders open a
    /// section, some close it before releasing, many hold long enough to meet an
    /// expiry inside it. The checker verifies every grant's
    /// `previous_holder_crashed` against the section marker.
    pub fn sections() -> Self {
        let mut w = Self::preset("sections", Mix::Exclusive);
        w.detect_crashes_chance = 0.8;
        w.section_chance = 0.7;
        w.close_section_chance = 0.3;
        w.long_hold_chance = 0.35;
        w
    }

    /// Fenced writes on exclusive locks, with leases and revocation in the mix: the
    /// checker audits every write at the server (never from a holder whose node is
    /// gone, tokens never backwards) and every reported outcome.
    pub fn fenced() -> Self {
        let mut w = Self::preset("fenced", Mix::Exclusive);
        w.fenced_chance = 0.9;
        w.lease_chance = 0.25;
        w.revocable_chance = 0.4;
        w.revoke_chance = 0.1;
        w.long_hold_chance = 0.35;
        w
    }

    /// Every recipe and every feature at once: revocation, leases, election
    /// observers, crash-detecting sections and fenced writes.
    pub fn features() -> Self {
        let mut w = Self::preset("features", Mix::All);
        w.detect_crashes_chance = 0.5;
        w.section_chance = 0.6;
        w.close_section_chance = 0.3;
        w.fenced_chance = 0.6;
        w.revocable_chance = 0.5;
        w.revoke_chance = 0.1;
        w.lease_chance = 0.15;
        w.observe_chance = 0.2;
        w
    }

    /// The same schedules with every client driven through lock-client's user API
    /// ([`SimConfig::user_api`](crate::SimConfig::user_api)): the acquisitions, releases, cancellations,
    /// timeouts, leases and revocable locks of the preset, the holders'
    /// crash-detecting sections and fenced writes through their guards, and the
    /// revocation requests and election observers through the client.
    ///
    /// ```
    /// use zklock::sim::Workload;
    /// let w = Workload::mixed().through_lock_client();
    /// let report = w.run(1).unwrap_or_else(|f| panic!("{f}"));
    /// assert!(report.acquired > 0);
    /// let w = Workload::fenced().through_lock_client();
    /// let report = w.run(1).unwrap_or_else(|f| panic!("{f}"));
    /// assert!(report.coverage.fenced_outcomes_checked > 0);
    /// ```
    pub fn through_lock_client(mut self) -> Self {
        self.user_api = true;
        self
    }

    /// The same workload with other faults.
    pub fn with_faults(mut self, faults: FaultConfig) -> Self {
        self.faults = faults;
        self
    }

    /// Runs the schedule of `seed`. On a violation the schedule is replayed with
    /// tracing on, and the [`Failure`] carries the trace.
    pub fn run(&self, seed: u64) -> Result<Report, Failure> {
        self.execute(seed, false)
            .or_else(|_| Sim::replay(seed, self))
    }

    fn execute(&self, seed: u64, trace: bool) -> Result<Report, (Violation, Vec<TraceEntry>)> {
        let (result, mut sim) = self.simulate(seed, trace);
        result.map_err(|v| (v, std::mem::take(&mut sim.trace_log)))
    }

    /// Runs the schedule of `seed` and hands back the simulation too, to inspect its
    /// events, tree, counters and (with `trace`) its trace.
    pub fn simulate(&self, seed: u64, trace: bool) -> (Result<Report, Violation>, Sim) {
        let mut run = Run::new(self, seed, trace);
        let result = run.go().map(|()| run.report());
        (result, run.sim)
    }
}

impl Sim {
    /// Replays the schedule `seed` of `workload` exactly, with tracing on: the
    /// reproduction of a failure the randomized tests printed.
    pub fn replay(seed: u64, workload: &Workload) -> Result<Report, Failure> {
        workload
            .execute(seed, true)
            .map_err(|(violation, trace)| Failure {
                workload: workload.name,
                violation,
                trace,
                user_api: workload.user_api,
            })
    }
}

/// A randomized run's user actions, by when they are due (ties: by the key's second
/// half, which [`schedule`](Self::schedule) counts up from `seq`).
pub(crate) struct Agenda<A> {
    pub(crate) actions: BTreeMap<(Timestamp, u64), A>,
    pub(crate) seq: u64,
}

impl<A> Agenda<A> {
    pub(crate) fn schedule(&mut self, at: Timestamp, action: A) {
        self.seq += 1;
        self.actions.insert((at, self.seq), action);
    }

    /// Steps `sim` towards the next action, no further than `limit`: the action due
    /// now if no wakeup came before it.
    pub(crate) fn next(&mut self, sim: &mut Sim, limit: Timestamp) -> Result<Option<A>, Violation> {
        let next = self.actions.first_key_value().map(|(k, _)| k.0);
        if sim.step_until(next.map_or(limit, |t| t.min(limit)))? {
            return Ok(None);
        }
        let due = self
            .actions
            .first_entry()
            .filter(|e| e.key().0 <= sim.now());
        Ok(due.map(|e| e.remove()))
    }
}

/// What a schedule did.
#[derive(Clone, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub struct Report {
    /// Wakeups processed.
    pub steps: u64,
    /// Virtual time at the end.
    pub virtual_time: Timestamp,
    /// Acquisitions started.
    pub acquisitions: usize,
    /// Acquisitions that got the lock.
    pub acquired: usize,
    /// Faults injected.
    pub faults: u64,
    /// Requests sent in all.
    pub requests: u64,
    /// What the feature checks exercised.
    pub coverage: crate::Coverage,
}

/// A schedule that violated an invariant, with the trace of its replay.
#[derive(Clone, Debug)]
pub struct Failure {
    /// Which workload.
    pub workload: &'static str,
    /// What failed, where (seed and step).
    pub violation: Violation,
    /// Everything that happened, up to the violation.
    pub trace: Vec<TraceEntry>,
    /// Whether the clients ran through lock-client's user API
    /// ([`Workload::through_lock_client`]).
    pub user_api: bool,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const TAIL: usize = 200;
        writeln!(f, "workload {:?}: {}", self.workload, self.violation)?;
        let skip = self.trace.len().saturating_sub(TAIL);
        if skip > 0 {
            writeln!(f, "... ({skip} earlier trace lines)")?;
        }
        for e in &self.trace[skip..] {
            writeln!(f, "{e}")?;
        }
        let (seed, name) = (self.violation.seed, self.workload);
        if name == "deadlock" {
            // (A DeadlockWorkload's failure: it replays with its trace on its own.)
            let face = if self.user_api {
                ".through_lock_client()"
            } else {
                ""
            };
            return writeln!(
                f,
                "replay: lock_sim::DeadlockWorkload::default(){face}.run({seed})"
            );
        }
        if self.user_api {
            return writeln!(
                f,
                "replay: lock_sim::Sim::replay({seed}, &lock_sim::Workload::{name}().through_lock_client())  \
                 (or LOCK_SIM_USER_REPLAY={seed} LOCK_SIM_WORKLOAD={name} cargo test -p lock-sim --test user_api replay -- --nocapture)"
            );
        }
        writeln!(
            f,
            "replay: lock_sim::Sim::replay({seed}, &lock_sim::Workload::{name}())  \
             (or LOCK_SIM_REPLAY={seed} cargo test -p lock-sim --test workload replay -- --nocapture)"
        )
    }
}

impl std::error::Error for Failure {}
