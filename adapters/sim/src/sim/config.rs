//! [`SimConfig`]: the settings of a simulation (seed, latency, faults, which face the
//! clients show).

use crate::model::SILENT_CUT_NOTICED_WITHIN;
use crate::sim::fault_config::FaultConfig;
use crate::sim::network::Latency;
use std::time::Duration;

/// Settings of a simulation.
///
/// ```
/// use zklock::sim::{FaultConfig, Latency, SimConfig};
/// use std::time::Duration;
/// let cfg = SimConfig::new(42)
///     .latency(Latency::fixed(Duration::from_millis(2)))
///     .faults(FaultConfig::none());
/// assert_eq!(cfg.seed, 42);
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SimConfig {
    /// Seed of every random choice.
    pub seed: u64,
    /// One-way network latency.
    pub latency: Latency,
    /// How often the server reaps empty containers (`None`: never on its own; call
    /// [`Sim::reap_containers`](crate::Sim::reap_containers)). ZooKeeper's default is a minute; the default here is
    /// a second of virtual time.
    pub reap_interval: Option<Duration>,
    /// Random faults (default: none).
    pub faults: FaultConfig,
    /// Check the invariants after every step (default: on).
    pub check_invariants: bool,
    /// Record a human-readable trace of everything (default: off; costs time).
    pub trace: bool,
    /// Return `getChildren` names in a random order, as the server's hash order would
    /// (default: on).
    pub shuffle_children: bool,
    /// How much virtual time one `run_until*`/`settle` call may take before it gives
    /// up with [`ViolationKind::Stalled`](crate::ViolationKind::Stalled) (default: one hour).
    pub run_limit: Duration,
    /// Within which fraction of its session timeout a client notices a silent
    /// partition and reports `Disconnected` (default 2/3, as real clients and the
    /// core's contract require). A value of 1 or more breaks the contract: the
    /// server may expire the session before the client suspends its locks. Only
    /// useful to see the invariant checker catch that.
    pub notice_within: f64,
    /// Whether clients report how long before `Disconnected` they last heard from
    /// the server (default: on, as the core's contract requires). Off, they report
    /// zero, as if the contact had been at the notice: the core then counts the
    /// window from the notice, and the server may expire the session (and grant the
    /// lock to another) first. Only useful to see the invariant checker catch that.
    pub report_contact: bool,
    /// Whether each client is lock-client's user API ([`LockClient`](lock_client::LockClient)
    /// driven through its `Link`, on a virtual clock, its futures polled only when
    /// woken) instead of a bare [`lock_core::Session`] (default: off). The same
    /// invariants then check what the user sees, plus lost wake-ups and guard
    /// statuses. Sections and fenced writes go through the guard; observers,
    /// revocation requests, inspections and deadlock scans through the client.
    pub user_api: bool,
    /// Whether every client proves its contact with the leader with `sync`s
    /// ([`ClientConfig::proves_contact`](crate::ClientConfig::proves_contact)),
    /// as lock-client's bindings do (default: off).
    pub proves_contact: bool,
}

impl SimConfig {
    /// Defaults with `seed`.
    pub fn new(seed: u64) -> Self {
        SimConfig {
            seed,
            latency: Latency::default(),
            reap_interval: Some(Duration::from_secs(1)),
            faults: FaultConfig::none(),
            check_invariants: true,
            trace: false,
            shuffle_children: true,
            run_limit: Duration::from_secs(3600),
            notice_within: SILENT_CUT_NOTICED_WITHIN,
            report_contact: true,
            user_api: false,
            proves_contact: false,
        }
    }

    /// Sets the latency.
    pub fn latency(mut self, latency: Latency) -> Self {
        self.latency = latency;
        self
    }

    /// Sets the faults.
    pub fn faults(mut self, faults: FaultConfig) -> Self {
        self.faults = faults;
        self
    }

    /// Sets the reaper's interval.
    pub fn reap_interval(mut self, every: Option<Duration>) -> Self {
        self.reap_interval = every;
        self
    }

    /// Sets how much virtual time one `run_until*`/`settle` call may take.
    pub fn run_limit(mut self, limit: Duration) -> Self {
        self.run_limit = limit;
        self
    }

    /// Runs every client through lock-client's user API (see [`SimConfig::user_api`]).
    pub fn user_api(mut self, on: bool) -> Self {
        self.user_api = on;
        self
    }

    /// Makes every client prove its contact (see [`SimConfig::proves_contact`]).
    pub fn proves_contact(mut self, on: bool) -> Self {
        self.proves_contact = on;
        self
    }

    /// Turns tracing on or off.
    pub fn trace(mut self, on: bool) -> Self {
        self.trace = on;
        self
    }

    /// Turns the invariant checks on or off.
    pub fn check_invariants(mut self, on: bool) -> Self {
        self.check_invariants = on;
        self
    }
}
