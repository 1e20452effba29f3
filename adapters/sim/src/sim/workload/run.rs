//! One schedule of a [`Workload`](super::Workload) being run: the planned
//! acquisitions, the user's actions in virtual time, and the checks after every step.

use super::{Agenda, Mix, Report, Workload};
use crate::check::{Violation, ViolationKind};
use crate::ids::ClientId;
use crate::sim::config::SimConfig;
use crate::sim::rng::SimRng;
use crate::sim::scheduler::Sim;
use lock_core::{CreateMode, LockEvent, LockId, LockSpec, MultiOp, NameScheme, Recipe, Timestamp};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

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

pub(super) struct Run {
    pub(super) sim: Sim,
    plan: Vec<Planned>,
    agenda: Agenda<Action>,
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
    /// A liveness run (see [`Workload::liveness`]).
    liveness: bool,
}

impl Run {
    pub(super) fn new(w: &Workload, seed: u64, trace: bool) -> Run {
        let mut rng = SimRng::new(seed ^ 0x706c_616e_706c_616e);
        let cfg = SimConfig::new(seed)
            .latency(w.latency)
            .faults(w.faults.clone())
            .reap_interval(Some(w.reap_interval))
            .trace(trace)
            .user_api(w.user_api)
            .proves_contact(w.liveness);
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
                let section = rng.chance(w.section_chance);
                let close_section = section && rng.chance(w.close_section_chance);
                // Not in go-zookeeper's layout, whose `Lock` fails on the marker
                // (the draws stay, so seeds keep their schedules).
                if spec.naming_scheme() != NameScheme::Go {
                    spec = spec.detect_crashes();
                    extras.section = section;
                    extras.close_section = close_section;
                }
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
            agenda: Agenda {
                actions,
                seq: count as u64,
            },
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
            liveness: w.liveness,
        }
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
                    self.agenda
                        .schedule(now + hold, Action::Release(r.client, r.lock));
                    let extras = self.extras.get(&key).cloned().unwrap_or_default();
                    if extras.section {
                        self.agenda
                            .schedule(now, Action::OpenSection(r.client, r.lock));
                    }
                    if extras.close_section {
                        let at = now + hold.mul_f64(0.6);
                        self.agenda
                            .schedule(at, Action::CloseSection(r.client, r.lock));
                    }
                    if extras.fenced.is_some() {
                        // At once, during the hold, and one at the release (refused).
                        for k in 0..4 {
                            let at = now + hold.mul_f64(k as f64 / 3.0);
                            let w = Action::FencedWrite(r.client, r.lock, g.token.0);
                            self.agenda.schedule(at, w);
                        }
                    }
                }
                LockEvent::RevocationRequested => {
                    self.agenda.schedule(now, Action::Release(r.client, r.lock));
                }
                ref event if self.liveness && is_false_alarm(event) => {
                    let detail =
                        format!("{} {} told {event:?} on a sound network", r.client, r.lock);
                    self.sim.violate(ViolationKind::FalseAlarm, detail);
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
                            self.agenda.schedule(at, Action::Cancel(client, id));
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
                        self.agenda.schedule(at, Action::Cancel(client, id));
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
        self.sim.poisoned()
    }

    fn refused(&mut self, detail: String) {
        self.sim.violate(ViolationKind::UsageRefused, detail);
    }

    pub(super) fn go(&mut self) -> Result<(), Violation> {
        let mut faults_on = true;
        loop {
            self.react();
            self.sim.poisoned()?;
            if faults_on && self.sim.now() >= self.chaos_until {
                faults_on = false;
                self.sim.stop_faults();
                self.drain_deadline = self.sim.now() + self.drain_limit;
            }
            if !faults_on && self.done() {
                self.sim.check_quiescent()?;
                if self.liveness && self.acquired < self.plan.len() {
                    let detail = format!(
                        "{} of {} acquisitions granted on a sound network",
                        self.acquired,
                        self.plan.len()
                    );
                    self.sim.violate(ViolationKind::Liveness, detail);
                }
                return self.sim.poisoned();
            }
            if !faults_on && self.sim.now() >= self.drain_deadline {
                let detail = self.liveness_report();
                self.sim.violate(ViolationKind::Liveness, detail);
                return self.sim.poisoned();
            }
            let limit = if faults_on {
                self.chaos_until
            } else {
                self.drain_deadline
            };
            if let Some(action) = self.agenda.next(&mut self.sim, limit)? {
                self.perform(action)?;
            }
        }
    }

    fn done(&self) -> bool {
        self.sim.checker.unfinished().is_empty() && self.sim.is_idle()
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

    pub(super) fn report(&self) -> Report {
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

/// Whether `event` can only come from a connection that is silent or gone, or
/// from a session that ended: what a liveness run never allows. A task that
/// ends for a reason of the recipe (a deadlock, a permit count its peers do
/// not share) or of its user (an election observer stopped) is not one.
fn is_false_alarm(event: &LockEvent) -> bool {
    use lock_core::FailReason;
    match event {
        LockEvent::Suspended | LockEvent::Lost(_) => true,
        LockEvent::Failed(reason) => !matches!(
            reason,
            FailReason::Deadlock { .. }
                | FailReason::SelfDeadlock { .. }
                | FailReason::PermitsMismatch { .. }
                | FailReason::Cancelled
        ),
        _ => false,
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
