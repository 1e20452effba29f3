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

use crate::check::{Violation, ViolationKind};
use crate::ids::ClientId;
use crate::sim::fault_config::FaultConfig;
use crate::sim::network::Latency;
use crate::sim::rng::SimRng;
use crate::sim::scheduler::{Sim, SimConfig, TraceEntry};
use lock_core::{CreateMode, LockEvent, LockId, LockSpec, MultiOp, NameScheme, Recipe, Timestamp};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::Duration;

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
    /// ([`LockSpec::detect_crashes`]).
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
    /// Whether the clients are lock-client's user API ([`SimConfig::user_api`]);
    /// set with [`through_lock_client`](Self::through_lock_client).
    pub user_api: bool,
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
    /// ([`SimConfig::user_api`]): the acquisitions, releases, cancellations,
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
        match self.execute(seed, false) {
            Ok(report) => Ok(report),
            Err(_) => self
                .execute(seed, true)
                .map_err(|(violation, trace)| Failure {
                    workload: self.name,
                    violation,
                    trace,
                    user_api: self.user_api,
                }),
        }
    }

    /// Runs the schedule of `seed` with tracing on (what [`Sim::replay`] does).
    pub fn replay(&self, seed: u64) -> Result<Report, Failure> {
        self.execute(seed, true)
            .map_err(|(violation, trace)| Failure {
                workload: self.name,
                violation,
                trace,
                user_api: self.user_api,
            })
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
        workload.replay(seed)
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

#[derive(Clone, Debug)]
enum Action {
    OpenSection(ClientId, LockId),
    CloseSection(ClientId, LockId),
    FencedWrite(ClientId, LockId, i64),
    Acquire(usize),
    Observe(ClientId, String),
    Revoke(ClientId, String),
    Release(ClientId, LockId),
    Cancel(ClientId, LockId),
}

/// What a holder does while it holds, besides waiting to release.
#[derive(Clone, Debug, Default)]
struct Extras {
    section: bool,
    close_section: bool,
    /// The audited data node it writes to.
    fenced: Option<String>,
}

struct Planned {
    client: ClientId,
    spec: LockSpec,
    extras: Extras,
    hold: Duration,
    cancel_after: Option<Duration>,
}

struct Run {
    sim: Sim,
    plan: Vec<Planned>,
    actions: BTreeMap<(Timestamp, u64), Action>,
    seq: u64,
    cursor: usize,
    hold: BTreeMap<(ClientId, LockId), Duration>,
    extras: BTreeMap<(ClientId, LockId), Extras>,
    writes: u64,
    released: BTreeSet<(ClientId, LockId)>,
    acquired: usize,
    chaos_until: Timestamp,
    drain_limit: Duration,
    drain_deadline: Timestamp,
    observe_for: Duration,
}

impl Run {
    fn new(w: &Workload, seed: u64, trace: bool) -> Run {
        let mut rng = SimRng::new(seed ^ 0x706c_616e_706c_616e);
        let cfg = SimConfig::new(seed)
            .latency(w.latency)
            .faults(w.faults.clone())
            .reap_interval(Some(w.reap_interval))
            .trace(trace)
            .user_api(w.user_api);
        let mut sim = Sim::new(cfg);
        let clients = sim.add_random_clients(&mut rng, w.clients, w.session_timeout);
        let permits = 1 + rng.below(3) as u32;
        let count = w.acquisitions.0 + rng.index(w.acquisitions.1 - w.acquisitions.0 + 1);
        let mut at = Timestamp::ZERO;
        let mut plan = Vec::with_capacity(count);
        let mut actions = BTreeMap::new();
        for k in 0..count {
            at = at + rng.duration(w.gap.0, w.gap.1);
            let client = clients[rng.index(clients.len())];
            let mut spec = random_spec(&mut rng, w.mix, permits, client);
            if rng.chance(w.deadline_chance) {
                spec = spec.deadline(at + rng.duration(Duration::ZERO, w.session_timeout * 2));
            }
            if rng.chance(w.try_chance) {
                spec = spec.try_only();
            }
            if rng.chance(w.revocable_chance) {
                spec = spec.revocable();
            }
            if rng.chance(w.lease_chance) {
                spec = spec.max_hold(rng.duration(Duration::from_millis(1), w.session_timeout));
            }
            let mut extras = Extras::default();
            let exclusive = matches!(spec.recipe(), Recipe::Write | Recipe::Leader);
            if exclusive && w.detect_crashes_chance > 0.0 && rng.chance(w.detect_crashes_chance) {
                spec = spec.detect_crashes();
                extras.section = rng.chance(w.section_chance);
                extras.close_section = extras.section && rng.chance(w.close_section_chance);
            }
            if exclusive && w.fenced_chance > 0.0 && rng.chance(w.fenced_chance) {
                let data = fenced_data_path(spec.path());
                if sim.get(&data).is_none() {
                    // (A fresh top-level node: this cannot fail.)
                    let _ = sim.admin_create(&data, b"", CreateMode::Persistent);
                    sim.audit_fenced_writes(&data, spec.path());
                }
                extras.fenced = Some(data);
            }
            let path = spec.path().to_owned();
            if rng.chance(w.revoke_chance) {
                let who = clients[rng.index(clients.len())];
                let when = at + rng.duration(Duration::ZERO, w.session_timeout);
                actions.insert(
                    (when, u64::MAX - k as u64),
                    Action::Revoke(who, path.clone()),
                );
            }
            if matches!(w.mix, Mix::Leader | Mix::All) && rng.chance(w.observe_chance) {
                let who = clients[rng.index(clients.len())];
                actions.insert(
                    (at, u64::MAX / 2 - k as u64),
                    Action::Observe(who, "/locks/lead".to_owned()),
                );
            }
            let hold = if rng.chance(w.long_hold_chance) {
                rng.duration(w.long_hold.0, w.long_hold.1)
            } else {
                rng.duration(w.hold.0, w.hold.1)
            };
            let cancel_after = rng
                .chance(w.cancel_chance)
                .then(|| rng.duration(Duration::ZERO, w.session_timeout));
            plan.push(Planned {
                client,
                spec,
                extras,
                hold,
                cancel_after,
            });
            actions.insert((at, k as u64), Action::Acquire(k));
        }
        Run {
            sim,
            plan,
            seq: count as u64,
            actions,
            cursor: 0,
            hold: BTreeMap::new(),
            extras: BTreeMap::new(),
            writes: 0,
            released: BTreeSet::new(),
            acquired: 0,
            chaos_until: at + w.session_timeout * 2,
            drain_limit: w.drain_limit,
            drain_deadline: Timestamp::MAX,
            observe_for: w.session_timeout * 2,
        }
    }

    fn schedule(&mut self, at: Timestamp, action: Action) {
        self.seq += 1;
        self.actions.insert((at, self.seq), action);
    }

    /// Reacts to the events since the last look, as a user would.
    fn react(&mut self) {
        let now = self.sim.now();
        while self.cursor < self.sim.all_events().len() {
            let r = self.sim.all_events()[self.cursor].clone();
            self.cursor += 1;
            let key = (r.client, r.lock);
            match r.event {
                LockEvent::Acquired(g) => {
                    self.acquired += 1;
                    let hold = self.hold.get(&key).copied().unwrap_or_default();
                    self.schedule(now + hold, Action::Release(r.client, r.lock));
                    let extras = self.extras.get(&key).cloned().unwrap_or_default();
                    if extras.section {
                        self.schedule(now, Action::OpenSection(r.client, r.lock));
                    }
                    if extras.close_section {
                        let at = now + hold.mul_f64(0.6);
                        self.schedule(at, Action::CloseSection(r.client, r.lock));
                    }
                    if extras.fenced.is_some() {
                        // At once, during the hold, and one at the release (refused).
                        for k in 0..4 {
                            let at = now + hold.mul_f64(k as f64 / 3.0);
                            let w = Action::FencedWrite(r.client, r.lock, g.token.0);
                            self.schedule(at, w);
                        }
                    }
                }
                LockEvent::RevocationRequested => {
                    self.schedule(now, Action::Release(r.client, r.lock));
                }
                _ => {}
            }
        }
    }

    fn perform(&mut self, action: Action) -> Result<(), Violation> {
        match action {
            Action::Acquire(k) => {
                let p = &self.plan[k];
                let (client, spec, hold, cancel_after) =
                    (p.client, p.spec.clone(), p.hold, p.cancel_after);
                let extras = p.extras.clone();
                match self.sim.acquire(client, spec) {
                    Ok(id) => {
                        self.hold.insert((client, id), hold);
                        self.extras.insert((client, id), extras);
                        if let Some(d) = cancel_after {
                            let at = self.sim.now() + d;
                            self.schedule(at, Action::Cancel(client, id));
                        }
                    }
                    Err(e) => self.refused(format!("{client}: acquire refused: {e}")),
                }
            }
            Action::Observe(client, path) => {
                // Observers follow the election until the user stops them.
                match self.sim.observe(client, &path) {
                    Ok(id) => {
                        let at = self.sim.now() + self.observe_for;
                        self.schedule(at, Action::Cancel(client, id));
                    }
                    Err(e) => self.refused(format!("{client}: observe refused: {e}")),
                }
            }
            Action::OpenSection(client, lock) | Action::CloseSection(client, lock) => {
                let open = matches!(action, Action::OpenSection(..));
                let r = if open {
                    self.sim.open_section(client, lock)
                } else {
                    self.sim.close_section(client, lock)
                };
                // Refused only when no longer held (or suspended).
                if let Err(e) = r {
                    if self.sim.holds(client, lock) {
                        self.refused(format!(
                            "{client}: section call on held {lock} refused: {e}"
                        ));
                    }
                }
            }
            Action::FencedWrite(client, lock, token) => {
                let path = self
                    .extras
                    .get(&(client, lock))
                    .and_then(|e| e.fenced.clone())
                    .expect("planned with a data node");
                self.writes += 1;
                let data = format!("{token}:{client}:{lock}:{}", self.writes);
                let set = MultiOp::SetData {
                    path,
                    data: data.into_bytes(),
                    version: None,
                };
                if let Err(e) = self.sim.fenced_write(client, lock, vec![set]) {
                    if self.sim.holds(client, lock) && self.sim.is_connected(client) {
                        self.refused(format!(
                            "{client}: fenced write on held {lock} refused: {e}"
                        ));
                    }
                }
            }
            Action::Revoke(client, path) => {
                if let Err(e) = self.sim.revoke(client, &path) {
                    self.refused(format!("{client}: revoke refused: {e}"));
                }
            }
            Action::Release(client, lock) => {
                let key = (client, lock);
                if self.sim.checker.is_held(key) && self.released.insert(key) {
                    if let Err(e) = self.sim.release(client, lock) {
                        self.refused(format!("{client}: release of held {lock} refused: {e}"));
                    }
                }
            }
            Action::Cancel(client, lock) => {
                let key = (client, lock);
                if !self.sim.checker.is_ended(key) && !self.released.contains(&key) {
                    if self.sim.checker.is_held(key) {
                        self.released.insert(key);
                    }
                    if let Err(e) = self.sim.cancel(client, lock) {
                        self.refused(format!("{client}: cancel of {lock} refused: {e}"));
                    }
                }
            }
        }
        match self.sim.violation() {
            Some(v) => Err(v.clone()),
            None => Ok(()),
        }
    }

    fn refused(&mut self, detail: String) {
        self.sim.violate(ViolationKind::UsageRefused, detail);
    }

    fn go(&mut self) -> Result<(), Violation> {
        let mut faults_on = true;
        loop {
            self.react();
            if faults_on && self.sim.now() >= self.chaos_until {
                faults_on = false;
                self.sim.stop_faults();
                self.drain_deadline = self.sim.now() + self.drain_limit;
            }
            if !faults_on && self.done() {
                return self.sim.check_quiescent();
            }
            if !faults_on && self.sim.now() >= self.drain_deadline {
                let detail = self.liveness_report();
                self.sim.violate(ViolationKind::Liveness, detail);
                return Err(self.sim.violation().cloned().expect("just violated"));
            }
            let next_action = self.actions.first_key_value().map(|(k, _)| k.0);
            let horizon = match (faults_on, next_action) {
                (true, Some(t)) => t.min(self.chaos_until),
                (true, None) => self.chaos_until,
                (false, Some(t)) => t.min(self.drain_deadline),
                (false, None) => self.drain_deadline,
            };
            if !self.sim.step_until(horizon)? {
                if let Some(entry) = self.actions.first_entry() {
                    if entry.key().0 <= self.sim.now() {
                        let action = entry.remove();
                        self.perform(action)?;
                    }
                }
            }
        }
    }

    fn done(&self) -> bool {
        self.sim.checker.unfinished().is_empty()
            && self
                .sim
                .clients
                .iter()
                .all(|c| c.is_quiet() && c.core.is_idle())
    }

    fn liveness_report(&self) -> String {
        let unfinished: Vec<String> = self
            .sim
            .checker
            .unfinished()
            .iter()
            .map(|((c, l), path)| format!("{c} {l} on {path}: {:?}", self.sim.state(*c, *l)))
            .collect();
        let busy: Vec<String> = self
            .sim
            .clients
            .iter()
            .enumerate()
            .filter(|(_, c)| !(c.is_quiet() && c.core.is_idle()))
            .map(|(i, c)| {
                format!(
                    "c{i}: tracked {} in flight {} conn {:?}",
                    c.core.tracked(),
                    c.core.in_flight(),
                    c.conn
                )
            })
            .collect();
        format!("with faults stopped, not everything ended: unfinished {unfinished:?}; busy clients {busy:?}")
    }

    fn report(&self) -> Report {
        Report {
            steps: self.sim.steps(),
            virtual_time: self.sim.now(),
            acquisitions: self.plan.len(),
            acquired: self.acquired,
            faults: self.sim.faults_injected(),
            requests: self.sim.total_counters().requests(),
            coverage: self.sim.coverage(),
        }
    }
}

/// The data node that fenced writes under the lock at `lock_path` go to.
fn fenced_data_path(lock_path: &str) -> String {
    format!("/fenced{}", lock_path.replace('/', "_"))
}

fn random_spec(rng: &mut SimRng, mix: Mix, permits: u32, client: ClientId) -> LockSpec {
    let mix = match mix {
        Mix::All => [Mix::Exclusive, Mix::ReadWrite, Mix::Semaphore, Mix::Leader][rng.index(4)],
        m => m,
    };
    let spec = match mix {
        Mix::Exclusive if rng.chance(0.3) => LockSpec::exclusive("/app/deep/locks/x"),
        Mix::Exclusive => LockSpec::exclusive("/locks/x"),
        Mix::ReadWrite if rng.chance(0.6) => LockSpec::read("/locks/rw"),
        Mix::ReadWrite => LockSpec::write("/locks/rw"),
        Mix::Semaphore => LockSpec::semaphore("/locks/sem", permits),
        _ => LockSpec::leader("/locks/lead", format!("{client}")),
    };
    let scheme = match (rng.below(4), mix) {
        (0, _) => NameScheme::Curator,
        (1, _) => NameScheme::Kazoo,
        // go-zookeeper has only a mutex: its names on the exclusive paths, beside
        // every other scheme (one draw as before, so seeds keep their schedules).
        (3, Mix::Exclusive) => NameScheme::Go,
        _ => NameScheme::Native,
    };
    if mix == Mix::Semaphore {
        // One layout per semaphore path: the native one, Curator's
        // (`<path>/locks` + `<path>/leases`) and kazoo's (`<path>-__lock__` +
        // `<path>`) are three different semaphores.
        let path = match scheme {
            NameScheme::Curator => "/locks/sem-curator",
            NameScheme::Kazoo => "/locks/sem-kazoo",
            _ => "/locks/sem",
        };
        return LockSpec::semaphore(path, permits).scheme(scheme);
    }
    spec.scheme(scheme)
}
