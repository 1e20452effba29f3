//! [`Sim`]: the deterministic scheduler. Virtual time jumps from one wakeup to the
//! next (a message arriving, a core timer, a reconnect attempt, a session expiry, the
//! container reaper, a fault); ties are broken by a fixed order, so one seed gives one
//! schedule.

use crate::check::{Checker, Options, Violation, ViolationKind};
use crate::ids::ClientId;
use crate::model::{SessionTracker, ZkModel};
use crate::sim::client::{ClientConfig, ConnectionView, EventRecord, Profile, SimClient};
use crate::sim::clients::{Clients, Wake};
use crate::sim::config::SimConfig;
use crate::sim::rng::SimRng;
use crate::sim::user_queries::Ask;
use lock_core::{LockId, LockSpec, LockState, Timestamp, UsageError};
use std::fmt;
use std::time::Duration;

/// One line of the trace.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct TraceEntry {
    /// The step during which it happened.
    pub step: u64,
    /// Virtual time.
    pub at: Timestamp,
    /// The client concerned, if any.
    pub client: Option<ClientId>,
    /// What happened.
    pub text: String,
}

impl fmt::Display for TraceEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.client {
            Some(c) => write!(f, "[{:>6}] {:>9} {c}: {}", self.step, self.at, self.text),
            None => write!(f, "[{:>6}] {:>9} --: {}", self.step, self.at, self.text),
        }
    }
}

/// A simulated ZooKeeper server with clients, each running a [`lock_core::Session`],
/// under a deterministic scheduler with fault injection and invariant checks.
///
/// ```
/// use zklock::{LockEvent, LockSpec};
/// use zklock::sim::{Profile, Sim, SimConfig};
/// use std::time::Duration;
///
/// let mut sim = Sim::new(SimConfig::new(1));
/// let a = sim.add_client(Profile::KeepsWatches, Duration::from_secs(10));
/// let b = sim.add_client(Profile::KeepsWatches, Duration::from_secs(10));
/// let la = sim.acquire(a, LockSpec::write("/locks/job")).unwrap();
/// sim.settle().unwrap();
/// let lb = sim.acquire(b, LockSpec::write("/locks/job")).unwrap();
/// sim.settle().unwrap();
/// assert!(sim.holds(a, la) && !sim.holds(b, lb));
/// sim.release(a, la).unwrap();
/// sim.settle().unwrap();
/// assert!(sim.holds(b, lb));
/// assert!(matches!(sim.outcome(a, la), Some(LockEvent::Released)));
/// ```
pub struct Sim {
    pub(crate) cfg: SimConfig,
    pub(crate) now: Timestamp,
    pub(crate) steps: u64,
    pub(crate) rng: SimRng,
    pub(crate) model: ZkModel,
    pub(crate) clients: Clients,
    /// The server's live sessions, by the client that owns them.
    pub(crate) sessions: SessionTracker<Timestamp, usize>,
    pub(crate) next_reap: Option<Timestamp>,
    pub(crate) next_fault: Option<Timestamp>,
    pub(crate) checker: Checker,
    pub(crate) feed_log: Vec<EventRecord>,
    pub(crate) trace_log: Vec<TraceEntry>,
    pub(crate) violation: Option<Violation>,
    pub(crate) faults_injected: u64,
    /// The instant virtual time zero stands for on the user face's clocks.
    pub(crate) zero: std::time::Instant,
}

impl Sim {
    /// A server with no clients yet, at virtual time zero.
    pub fn new(cfg: SimConfig) -> Sim {
        let mut rng = SimRng::new(cfg.seed);
        let next_fault = cfg
            .faults
            .mean_interval
            .map(|m| Timestamp::ZERO + rng.duration(Duration::ZERO, m * 2));
        Sim {
            next_reap: cfg.reap_interval.map(|d| Timestamp::ZERO + d),
            next_fault,
            cfg,
            now: Timestamp::ZERO,
            steps: 0,
            rng,
            model: ZkModel::new(),
            clients: Clients::default(),
            sessions: SessionTracker::default(),
            checker: Checker::default(),
            feed_log: Vec::new(),
            trace_log: Vec::new(),
            violation: None,
            faults_injected: 0,
            zero: std::time::Instant::now(),
        }
    }

    /// Adds a client with `profile` and `session_timeout`; it connects one latency
    /// later.
    pub fn add_client(&mut self, profile: Profile, session_timeout: Duration) -> ClientId {
        self.add_client_with(ClientConfig::new(profile, session_timeout))
    }

    /// Adds a client with full settings.
    pub fn add_client_with(&mut self, mut cfg: ClientConfig) -> ClientId {
        cfg.proves_contact |= self.cfg.proves_contact;
        let i = self.clients.len();
        let seed = cfg.seed.unwrap_or_else(|| {
            SimRng::new(self.cfg.seed ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)).next_u64()
        });
        let user_api = self.cfg.user_api.then_some(self.zero);
        let mut client = SimClient::new(cfg, seed, self.now, user_api);
        let delay = self.cfg.latency.sample(&mut client.rng);
        client.conn = ConnectionView::Connecting {
            at: self.now + delay,
        };
        self.clients.push(client);
        ClientId(i)
    }

    /// Adds between `range.0` and `range.1` clients (drawn from `rng`), each of a
    /// profile drawn from `rng` too: the population of a randomized workload.
    pub(crate) fn add_random_clients(
        &mut self,
        rng: &mut SimRng,
        range: (usize, usize),
        session_timeout: Duration,
    ) -> Vec<ClientId> {
        let n = range.0 + rng.index(range.1 - range.0 + 1);
        (0..n)
            .map(|_| {
                let profile = if rng.chance(0.5) {
                    Profile::KeepsWatches
                } else {
                    Profile::LosesWatchesNewSession
                };
                self.add_client(profile, session_timeout)
            })
            .collect()
    }

    // ----- the user's calls -----------------------------------------------------

    /// Starts an acquisition on `client` (see [`Session::acquire`](lock_core::Session::acquire)).
    pub fn acquire(&mut self, client: ClientId, spec: LockSpec) -> Result<LockId, UsageError> {
        let i = client.0;
        let path = spec.path().to_owned();
        let recipe = spec.recipe();
        // The spec keeps its options to itself: setting one that is already set
        // changes nothing.
        let options = Options {
            revocable: spec.clone().revocable() == spec,
            detects: spec.clone().detect_crashes() == spec,
            scheme: spec.naming_scheme(),
        };
        let now = self.now;
        let id = self.clients[i].core.acquire(spec, now)?;
        self.trace_with(Some(i), || format!("user acquires {id} {recipe:?} {path}"));
        if self.cfg.check_invariants {
            let r = self
                .checker
                .on_start((client, id), &path, Some(recipe), options);
            self.check(r);
        }
        self.pump(i);
        self.after_call();
        Ok(id)
    }

    /// Starts following the leader of the election at `path` (see
    /// [`Session::observe`](lock_core::Session::observe); on the user face
    /// [`LockClient::observe_election`](lock_client::LockClient::observe_election)).
    pub fn observe(&mut self, client: ClientId, path: &str) -> Result<LockId, UsageError> {
        self.start_task(client, Ask::Observe(path.to_owned()), "observes")
    }

    /// Asks the holders of the lock at `path` to let go (see [`Session::revoke`](lock_core::Session::revoke);
    /// on the user face [`LockClient::revoke`](lock_client::LockClient::revoke)).
    pub fn revoke(&mut self, client: ClientId, path: &str) -> Result<LockId, UsageError> {
        self.start_task(client, Ask::Revoke(path.to_owned()), "revokes")
    }

    /// Lists the holders and waiters of the lock at `path` (see
    /// [`Session::inspect`](lock_core::Session::inspect); on the user face
    /// [`LockClient::participants`](lock_client::LockClient::participants)).
    pub fn inspect(&mut self, client: ClientId, path: &str) -> Result<LockId, UsageError> {
        self.start_task(client, Ask::Inspect(path.to_owned()), "inspects")
    }

    /// Scans the locks under `root` for deadlocks (see
    /// [`Session::deadlocks`](lock_core::Session::deadlocks); on the user face
    /// [`LockClient::deadlocks`](lock_client::LockClient::deadlocks)).
    pub fn deadlocks(&mut self, client: ClientId, root: &str) -> Result<LockId, UsageError> {
        self.start_task(client, Ask::Deadlocks(root.to_owned()), "scans")
    }

    fn start_task(&mut self, client: ClientId, ask: Ask, what: &str) -> Result<LockId, UsageError> {
        let now = self.now;
        let path = match &ask {
            Ask::Revoke(p) | Ask::Inspect(p) | Ask::Deadlocks(p) | Ask::Observe(p) => p.clone(),
        };
        let id = self.clients[client.0].core.ask(ask, now)?;
        self.trace_with(Some(client.0), || format!("user {what} {path} as {id}"));
        if self.cfg.check_invariants {
            let r = self
                .checker
                .on_start((client, id), &path, None, Options::default());
            self.check(r);
        }
        self.pump(client.0);
        self.after_call();
        Ok(id)
    }

    /// Opens a crash-detecting critical section (see [`Session::open_section`](lock_core::Session::open_section);
    /// on the user face [`LockGuard::open_section`](lock_client::LockGuard::open_section)).
    pub fn open_section(&mut self, client: ClientId, lock: LockId) -> Result<(), UsageError> {
        self.section_call(client, lock, true)
    }

    /// Closes the critical section (see [`Session::close_section`](lock_core::Session::close_section);
    /// on the user face [`LockGuard::close_section`](lock_client::LockGuard::close_section)).
    pub fn close_section(&mut self, client: ClientId, lock: LockId) -> Result<(), UsageError> {
        self.section_call(client, lock, false)
    }

    fn section_call(
        &mut self,
        client: ClientId,
        lock: LockId,
        open: bool,
    ) -> Result<(), UsageError> {
        let now = self.now;
        let core = &mut self.clients[client.0].core;
        let r = core.section(lock, open, now);
        let reported = core.reports_calls();
        self.trace_with(Some(client.0), || {
            let what = if open { "opens" } else { "closes" };
            format!("user {what} a section on {lock}: {r:?}")
        });
        // (The user face reports the call when lock-client makes it.)
        if r.is_ok() && !reported {
            self.checker.on_section_call((client, lock), open);
        }
        self.pump(client.0);
        self.after_call();
        r
    }

    /// Writes fenced by the lock (see [`Session::fenced_write`](lock_core::Session::fenced_write);
    /// on the user face [`LockGuard::fenced_write`](lock_client::LockGuard::fenced_write), whose
    /// outcome is reported as the core's `FencedWrite` event under the id returned here).
    pub fn fenced_write(
        &mut self,
        client: ClientId,
        lock: LockId,
        ops: Vec<lock_core::MultiOp>,
    ) -> Result<u64, UsageError> {
        let now = self.now;
        let audited = ops.clone();
        let core = &mut self.clients[client.0].core;
        let r = core.fenced_write(lock, ops, now);
        let reported = core.reports_calls();
        self.trace_with(Some(client.0), || {
            format!("user fenced write on {lock}: {r:?}")
        });
        match r {
            Ok(write) if !reported => self.checker.on_fenced_call((client, lock), write, &audited),
            _ => {}
        }
        self.pump(client.0);
        self.after_call();
        r
    }

    /// Audits every write to the data node `data_path` (writes carry
    /// `<token>` or `<token>:<anything>`, unique per write): at the instant the server
    /// applies one, its token must belong to the current holder of the exclusive lock
    /// at `lock_path`, and must not be lower than the last one applied; every
    /// [`LockEvent::FencedWrite`](lock_core::LockEvent::FencedWrite) must agree with
    /// what the server did. A breach stops the run with
    /// [`ViolationKind::StaleWrite`] or [`ViolationKind::WrongOutcome`].
    ///
    /// ```
    /// use zklock::{CreateMode, LockSpec, MultiOp};
    /// use zklock::sim::{Profile, Sim, SimConfig};
    /// use std::time::Duration;
    ///
    /// let mut sim = Sim::new(SimConfig::new(3));
    /// sim.admin_create("/balance", b"0", CreateMode::Persistent).unwrap();
    /// sim.audit_fenced_writes("/balance", "/locks/balance");
    /// let c = sim.add_client(Profile::KeepsWatches, Duration::from_secs(6));
    /// let l = sim.acquire(c, LockSpec::write("/locks/balance")).unwrap();
    /// sim.settle().unwrap();
    /// let token = sim.grant(c, l).unwrap().token;
    /// let set = MultiOp::SetData { path: "/balance".into(), data: format!("{token}:1").into(), version: None };
    /// sim.fenced_write(c, l, vec![set]).unwrap();
    /// sim.settle().unwrap();
    /// assert_eq!(sim.get("/balance").unwrap().data, format!("{token}:1").into_bytes());
    /// ```
    pub fn audit_fenced_writes(&mut self, data_path: &str, lock_path: &str) {
        self.checker.audit_fenced(data_path, lock_path);
    }

    /// What the invariant checker's feature checks (sections, fenced writes,
    /// revocation, leases) have exercised so far.
    pub fn coverage(&self) -> crate::Coverage {
        self.checker.coverage()
    }

    /// Releases a held lock (see [`Session::release`](lock_core::Session::release)).
    pub fn release(&mut self, client: ClientId, lock: LockId) -> Result<(), UsageError> {
        self.let_go(client, lock, false)
    }

    /// Gives up an acquisition, or releases it if held (see [`Session::cancel`](lock_core::Session::cancel)).
    pub fn cancel(&mut self, client: ClientId, lock: LockId) -> Result<(), UsageError> {
        self.let_go(client, lock, true)
    }

    /// [`release`](Self::release), or [`cancel`](Self::cancel) if `cancel`.
    fn let_go(&mut self, client: ClientId, lock: LockId, cancel: bool) -> Result<(), UsageError> {
        let (i, now) = (client.0, self.now);
        let core = &mut self.clients[i].core;
        let r = if cancel {
            core.cancel(lock, now)
        } else {
            core.release(lock, now)
        };
        let what = if cancel { "cancels" } else { "releases" };
        self.trace_with(Some(i), || format!("user {what} {lock}: {r:?}"));
        if r.is_ok() {
            self.checker.on_release_call((client, lock));
        }
        self.pump(i);
        self.after_call();
        r
    }

    // ----- running --------------------------------------------------------------

    /// The earliest wakeup of all, at equal times the earlier [`Wake`] variant. The
    /// clients' part comes from their index (`clients.rs`), refreshed here for the
    /// clients touched since the last look: O(touched · log clients), not O(clients).
    pub(crate) fn next_wakeup(&mut self) -> Option<(Timestamp, Wake)> {
        self.clients.refresh(self.now);
        let mut best = self.clients.next_wakeup();
        let mut consider = |due: Timestamp, w: Wake| {
            if best.map_or(true, |b| (due, w) < b) {
                best = Some((due, w));
            }
        };
        if let Some((t, s)) = self.sessions.next_expiry() {
            consider(t, Wake::Expire(s));
        }
        if let Some(t) = self.next_reap {
            consider(t, Wake::Reap);
        }
        if let Some(t) = self.next_fault {
            consider(t, Wake::Fault);
        }
        best
    }

    /// Processes the next wakeup. Returns `Ok(false)` when nothing at all is left to
    /// happen, and the violation if an invariant failed.
    pub fn step(&mut self) -> Result<bool, Violation> {
        self.step_until(Timestamp::MAX)
    }

    /// Processes the next wakeup if it is due no later than `deadline` (`Ok(true)`);
    /// otherwise moves the clock to `deadline` and returns `Ok(false)`.
    pub fn step_until(&mut self, deadline: Timestamp) -> Result<bool, Violation> {
        self.poisoned()?;
        let Some((due, wake)) = self.next_wakeup().filter(|(due, _)| *due <= deadline) else {
            if deadline != Timestamp::MAX {
                self.now = self.now.max(deadline);
            }
            return Ok(false);
        };
        self.now = self.now.max(due);
        self.steps += 1;
        match wake {
            Wake::ServerReceive(i) => self.server_receive(i),
            Wake::ClientReceive(i) => self.client_receive(i),
            Wake::LocalFailure(i) => self.local_fail(i),
            Wake::Connect(i) => self.connect(i),
            Wake::NoticeDisconnect(i) => self.notice_disconnect(i),
            Wake::CoreTimer(i) => self.core_timer(i),
            Wake::Expire(s) => self.server_expire(s),
            Wake::Reap => {
                let _ = self.server_reap();
                self.next_reap = self.cfg.reap_interval.map(|d| self.now + d);
            }
            Wake::Fault => self.random_fault(),
        }
        self.after_call();
        self.poisoned()?;
        Ok(true)
    }

    /// Runs every wakeup due up to `now + d`, leaving the clock there.
    pub fn run_for(&mut self, d: Duration) -> Result<(), Violation> {
        let until = self.now + d;
        while self.step_until(until)? {}
        Ok(())
    }

    /// Steps until `done(self)` holds (checked before every step). Fails with
    /// [`ViolationKind::Stalled`] if nothing is left to happen or the run limit passes.
    pub fn run_until(&mut self, mut done: impl FnMut(&Sim) -> bool) -> Result<(), Violation> {
        let limit = self.now + self.cfg.run_limit;
        loop {
            self.poisoned()?;
            // `settle`'s predicate reads the clients' index.
            self.clients.refresh(self.now);
            if done(self) {
                return Ok(());
            }
            if self.now > limit {
                let d = format!(
                    "condition not met after {:?} of virtual time",
                    self.cfg.run_limit
                );
                self.violate(ViolationKind::Stalled, d);
                continue;
            }
            if !self.step_until(limit + Duration::from_nanos(1))? {
                self.violate(ViolationKind::Stalled, "condition not met".to_owned());
            }
        }
    }

    /// Runs until the network is quiet: nothing in flight and every client connected
    /// (or closed). Core timers further out (deadlines, graces) are left pending.
    pub fn settle(&mut self) -> Result<(), Violation> {
        self.run_until(|s| s.clients.all_quiet())
    }

    /// Runs until the network is quiet and every core is idle (no acquisition and no
    /// cleanup left).
    pub fn run_until_idle(&mut self) -> Result<(), Violation> {
        self.run_until(|s| s.clients.all_quiet() && s.clients.iter().all(|c| c.core.is_idle()))
    }

    // ----- invariants -----------------------------------------------------------

    /// Checks the invariants after a call, a step or a fault.
    pub(crate) fn after_call(&mut self) {
        if self.cfg.check_invariants && self.violation.is_none() {
            let r = self.checker.after_step(&self.model);
            self.check(r);
        }
    }

    pub(crate) fn check(&mut self, r: Result<(), (ViolationKind, String)>) {
        if let Err((kind, detail)) = r {
            self.violate(kind, detail);
        }
    }

    pub(crate) fn violate(&mut self, kind: ViolationKind, detail: String) {
        if self.violation.is_none() {
            self.trace_with(None, || format!("VIOLATION {kind:?}: {detail}"));
            self.violation = Some(Violation {
                kind,
                seed: self.cfg.seed,
                step: self.steps,
                at: self.now,
                detail,
            });
        }
    }

    /// The first violation as an error, if any.
    pub(crate) fn poisoned(&self) -> Result<(), Violation> {
        self.violation.clone().map_or(Ok(()), Err)
    }

    /// The first invariant violation, if any (the simulation stops at it).
    pub fn violation(&self) -> Option<&Violation> {
        self.violation.as_ref()
    }

    /// Checks the properties that hold at quiescence: no lock node in the tree that
    /// its owner does not hold or wait for. Call it after [`Sim::run_until_idle`].
    pub fn check_quiescent(&mut self) -> Result<(), Violation> {
        self.poisoned()?;
        let sessions: Vec<(ClientId, Option<i64>)> = self
            .clients
            .iter()
            .enumerate()
            .map(|(i, c)| (ClientId(i), c.core.session_id()))
            .collect();
        let orphans = self.checker.orphans(&self.model, &sessions);
        if !orphans.is_empty() {
            self.violate(
                ViolationKind::Orphan,
                format!("orphan lock nodes: {orphans:?}"),
            );
        }
        self.poisoned()
    }

    /// Ends `tasks` as a user winding down does: releases each held (or suspended)
    /// acquisition, cancels each observer, revocation, inspection or scan still
    /// running, and lets virtual time pass until every one has ended (a
    /// [`ViolationKind::Liveness`] after ten minutes); then runs until every core
    /// is idle and checks that nothing is left behind ([`Sim::check_quiescent`]).
    pub fn wind_down(&mut self, tasks: &[(ClientId, LockId)]) -> Result<(), Violation> {
        let limit = self.now + Duration::from_secs(600);
        loop {
            for &(c, l) in tasks {
                match self.state(c, l) {
                    Some(LockState::Held | LockState::Suspended) => {
                        let _ = self.release(c, l);
                    }
                    None if self.outcome(c, l).is_none() => {
                        let _ = self.cancel(c, l);
                    }
                    _ => {}
                }
            }
            let open: Vec<_> = tasks
                .iter()
                .filter(|&&(c, l)| self.outcome(c, l).is_none())
                .map(|&(c, l)| format!("{c}/{l}: {:?}", self.state(c, l)))
                .collect();
            if open.is_empty() {
                break;
            }
            if self.now >= limit {
                let detail = format!("tasks never ended while winding down: {open:?}");
                self.violate(ViolationKind::Liveness, detail);
                return self.poisoned();
            }
            self.run_for(Duration::from_millis(50))?;
        }
        self.run_until_idle()?;
        self.check_quiescent()
    }

    // ----- tracing --------------------------------------------------------------

    /// Adds a line to the trace, if on (`text` is only made then).
    pub(crate) fn trace_with(&mut self, client: Option<usize>, text: impl FnOnce() -> String) {
        if self.cfg.trace {
            self.trace_log.push(TraceEntry {
                step: self.steps,
                at: self.now,
                client: client.map(ClientId),
                text: text(),
            });
        }
    }

    /// The trace so far (empty unless [`SimConfig::trace`] is on).
    pub fn trace_log(&self) -> &[TraceEntry] {
        &self.trace_log
    }
}
