//! One deadlock schedule being run: owners taking their locks in random order,
//! faults, and the wait-for graph rebuilt from the simulator's global view after
//! every step, checked against what lock-core reported.

use super::{DeadlockReport, DeadlockWorkload};
use crate::check::{Violation, ViolationKind};
use crate::ids::ClientId;
use crate::sim::config::SimConfig;
use crate::sim::rng::SimRng;
use crate::sim::scheduler::Sim;
use crate::sim::workload::Agenda;
use lock_core::{
    names::parse_name, owner, FailReason, LockEvent, LockId, LockSpec, LockState, NameScheme,
    NodeKind, Timestamp,
};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

struct Owner {
    name: String,
    client: ClientId,
    /// This round's locks, in order: (path, read).
    plan: Vec<(String, bool)>,
    next: usize,
    held: Vec<LockId>,
    waiting: Option<(LockId, String)>,
    rounds_left: usize,
    busy: bool,
}

#[derive(Clone, Debug)]
enum Action {
    Start(usize),
    ReleaseAll(usize),
}

type Edge = (String, String);

pub(super) struct Run<'w> {
    w: &'w DeadlockWorkload,
    pub(super) sim: Sim,
    rng: SimRng,
    owners: Vec<Owner>,
    by_lock: BTreeMap<(ClientId, LockId), usize>,
    agenda: Agenda<Action>,
    cursor: usize,
    chaos: bool,
    chaos_until: Timestamp,
    drain_deadline: Timestamp,
    acquisitions: usize,
    /// Observation times (the global view is rebuilt after every step and action).
    obs: Vec<Timestamp>,
    /// Edges now, since which observation.
    edges: BTreeMap<Edge, usize>,
    /// Edges gone: their intervals `[from, to)` in observations.
    history: BTreeMap<Edge, Vec<(usize, usize)>>,
    /// Nodes on a cycle now, since when.
    on_cycle: BTreeMap<String, Timestamp>,
    victims: BTreeSet<Vec<String>>,
    latencies: Vec<Duration>,
    /// What the last rebuilt graph was built from.
    last_key: Option<GraphKey>,
}

type GraphKey = (i64, Vec<Option<(LockId, bool)>>);

fn paths(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("/dl/l{i}")).collect()
}

impl<'w> Run<'w> {
    pub(super) fn new(w: &'w DeadlockWorkload, seed: u64, trace: bool) -> Self {
        let mut rng = SimRng::new(seed ^ 0x6465_6164_6c6f_636b);
        let cfg = SimConfig::new(seed)
            .latency(w.latency)
            .faults(w.faults.clone())
            .reap_interval(Some(Duration::from_millis(200)))
            .trace(trace)
            .user_api(w.user_api);
        let mut sim = Sim::new(cfg);
        let clients = sim.add_random_clients(&mut rng, w.clients, w.session_timeout);
        let m = w.owners.0 + rng.index(w.owners.1 - w.owners.0 + 1);
        let mut actions = BTreeMap::new();
        let owners = (0..m)
            .map(|k| {
                let at = Timestamp::ZERO + rng.duration(w.gap.0, w.gap.1);
                actions.insert((at, k as u64), Action::Start(k));
                Owner {
                    name: format!("owner-{k}"),
                    client: clients[k % clients.len()],
                    plan: Vec::new(),
                    next: 0,
                    held: Vec::new(),
                    waiting: None,
                    rounds_left: w.rounds.0 + rng.index(w.rounds.1 - w.rounds.0 + 1),
                    busy: false,
                }
            })
            .collect();
        let chaos_until = Timestamp::ZERO + w.chaos;
        Run {
            w,
            sim,
            rng,
            owners,
            by_lock: BTreeMap::new(),
            agenda: Agenda {
                actions,
                seq: m as u64,
            },
            cursor: 0,
            chaos: true,
            chaos_until,
            drain_deadline: Timestamp::MAX,
            acquisitions: 0,
            obs: Vec::new(),
            edges: BTreeMap::new(),
            history: BTreeMap::new(),
            on_cycle: BTreeMap::new(),
            victims: BTreeSet::new(),
            latencies: Vec::new(),
            last_key: None,
        }
    }

    pub(super) fn go(&mut self) -> Result<(), Violation> {
        loop {
            self.react()?;
            self.observe()?;
            if self.chaos && self.sim.now() >= self.chaos_until {
                self.chaos = false;
                self.sim.stop_faults();
                self.drain_deadline = self.sim.now() + self.w.drain_limit;
            }
            if !self.chaos && self.done() {
                return self.sim.check_quiescent();
            }
            if !self.chaos && self.sim.now() >= self.drain_deadline {
                let busy: Vec<String> = self
                    .owners
                    .iter()
                    .filter(|o| o.busy)
                    .map(|o| format!("{} waiting {:?} held {:?}", o.name, o.waiting, o.held))
                    .collect();
                self.sim.violate(
                    ViolationKind::Liveness,
                    format!("with faults stopped, owners never finished: {busy:?}"),
                );
                return self.sim.poisoned();
            }
            let limit = if self.chaos {
                self.chaos_until
            } else {
                self.drain_deadline
            };
            if let Some(a) = self.agenda.next(&mut self.sim, limit)? {
                self.perform(a);
            }
        }
    }

    fn done(&self) -> bool {
        self.owners.iter().all(|o| !o.busy)
            && self.sim.checker.unfinished().is_empty()
            && self.sim.is_idle()
    }

    fn perform(&mut self, a: Action) {
        match a {
            Action::Start(k) => {
                let o = &mut self.owners[k];
                if o.busy || o.rounds_left == 0 || !self.chaos {
                    return;
                }
                o.rounds_left -= 1;
                o.busy = true;
                let mut pool = paths(self.w.locks);
                let take = self.w.per_round.0
                    + self.rng.index(self.w.per_round.1 - self.w.per_round.0 + 1);
                let mut plan = Vec::new();
                for _ in 0..take.min(pool.len()) {
                    let p = pool.remove(self.rng.index(pool.len()));
                    plan.push((p, self.rng.chance(self.w.read_chance)));
                }
                let o = &mut self.owners[k];
                o.plan = plan;
                o.next = 0;
                self.acquire_next(k);
            }
            Action::ReleaseAll(k) => self.release_all(k),
        }
    }

    fn acquire_next(&mut self, k: usize) {
        let o = &self.owners[k];
        let (path, read) = o.plan[o.next].clone();
        let spec = if read {
            LockSpec::read(path.clone())
        } else {
            LockSpec::write(path.clone())
        }
        .owner(o.name.clone())
        .revocable()
        .detect_deadlocks(self.w.detect_after);
        let client = o.client;
        match self.sim.acquire(client, spec) {
            Ok(id) => {
                self.acquisitions += 1;
                self.by_lock.insert((client, id), k);
                let o = &mut self.owners[k];
                o.next += 1;
                o.waiting = Some((id, path));
            }
            Err(e) => {
                self.sim.violate(
                    ViolationKind::UsageRefused,
                    format!("{client}: acquire refused: {e}"),
                );
            }
        }
    }

    /// Ends the round: releases everything held; the next round comes later.
    fn release_all(&mut self, k: usize) {
        let client = self.owners[k].client;
        if let Some((w, _)) = self.owners[k].waiting.take() {
            let _ = self.sim.cancel(client, w);
        }
        for lock in std::mem::take(&mut self.owners[k].held) {
            if self.sim.checker.is_held((client, lock)) {
                let _ = self.sim.release(client, lock);
            } else if !self.sim.checker.is_ended((client, lock)) {
                let _ = self.sim.cancel(client, lock);
            }
        }
        let o = &mut self.owners[k];
        o.busy = false;
        if o.rounds_left > 0 && self.chaos {
            let at = self.sim.now() + self.rng.duration(self.w.gap.0, self.w.gap.1);
            self.agenda.schedule(at, Action::Start(k));
        }
    }

    fn react(&mut self) -> Result<(), Violation> {
        while self.cursor < self.sim.all_events().len() {
            let r = self.sim.all_events()[self.cursor].clone();
            self.cursor += 1;
            let Some(&k) = self.by_lock.get(&(r.client, r.lock)) else {
                continue;
            };
            let is_waiting = self.owners[k].waiting.as_ref().map(|w| w.0) == Some(r.lock);
            match r.event {
                LockEvent::Acquired(_) if is_waiting => {
                    let o = &mut self.owners[k];
                    o.waiting = None;
                    o.held.push(r.lock);
                    if o.next < o.plan.len() {
                        self.acquire_next(k);
                    } else {
                        let at = self.sim.now() + self.rng.duration(self.w.hold.0, self.w.hold.1);
                        self.agenda.schedule(at, Action::ReleaseAll(k));
                    }
                }
                LockEvent::Failed(reason) if is_waiting => {
                    self.owners[k].waiting = None;
                    if let FailReason::Deadlock { cycle } = reason {
                        self.check_victim(&cycle)?;
                    }
                    self.release_all(k);
                }
                // A held lock lost or asked back: the round ends.
                LockEvent::Lost(_) | LockEvent::RevocationRequested
                    if self.owners[k].held.contains(&r.lock) =>
                {
                    self.release_all(k);
                }
                _ => {}
            }
        }
        self.sim.poisoned()
    }

    /// The global wait-for graph now.
    fn graph(&self) -> BTreeSet<Edge> {
        // Where each owner really waits: (owner, dir) for a waiting acquisition.
        let mut waits_in: BTreeMap<&str, &str> = BTreeMap::new();
        for o in &self.owners {
            if let Some((lock, dir)) = &o.waiting {
                if self.sim.state(o.client, *lock) == Some(LockState::Waiting) {
                    waits_in.insert(&o.name, dir);
                }
            }
        }
        let mut held_by: Vec<(String, String)> = Vec::new(); // (owner, node)
        let mut waiting_at: BTreeMap<String, String> = BTreeMap::new(); // owner -> node
        let mut edges = BTreeSet::new();
        let mut anonymous: Vec<(String, String)> = Vec::new(); // (dir, node)
        for dir in paths(self.w.locks) {
            let mut q: Vec<(i32, NodeKind, String, Option<String>)> = self
                .sim
                .children(&dir)
                .into_iter()
                .filter_map(|n| {
                    let p = parse_name(&n)?;
                    let path = format!("{dir}/{n}");
                    let owner = self
                        .sim
                        .get(&path)
                        .and_then(|i| owner::parse(NameScheme::Native, &i.data).owner);
                    Some((p.seq, p.kind, path, owner))
                })
                .collect();
            q.sort_by_key(|e| e.0);
            for i in 0..q.len() {
                let (_, kind, path, owner) = &q[i];
                let blockers: Vec<&String> = q[..i]
                    .iter()
                    .filter(|(_, k, _, _)| *kind != NodeKind::Read || *k != NodeKind::Read)
                    .map(|(_, _, p, _)| p)
                    .collect();
                if blockers.is_empty() {
                    if let Some(o) = owner {
                        held_by.push((o.clone(), path.clone()));
                    }
                    continue;
                }
                for b in blockers {
                    edges.insert((path.clone(), b.clone()));
                }
                match owner {
                    Some(o) => {
                        if waits_in.get(o.as_str()) == Some(&dir.as_str()) {
                            waiting_at.insert(o.clone(), path.clone());
                        }
                    }
                    // Its header was overwritten (a revocation request): whose it
                    // is, the user knows (its session, and where its owners wait).
                    None => anonymous.push((dir.clone(), path.clone())),
                }
            }
        }
        for (dir, path) in anonymous {
            let session = self.sim.get(&path).map(|i| i.stat.ephemeral_owner);
            let mut who = self.owners.iter().filter(|o| {
                waits_in.get(o.name.as_str()) == Some(&dir.as_str())
                    && !waiting_at.contains_key(&o.name)
                    && self.sim.session_id(o.client) == session
            });
            if let (Some(o), None) = (who.next(), who.next()) {
                waiting_at.insert(o.name.clone(), path);
            }
        }
        for (o, h) in held_by {
            if let Some(w) = waiting_at.get(&o) {
                edges.insert((h, w.clone()));
            }
        }
        edges
    }

    /// Rebuilds the global view and checks the bound.
    fn observe(&mut self) -> Result<(), Violation> {
        let now = self.sim.now();
        // The graph changes only with the tree (every write bumps the zxid) or with
        // where owners wait.
        let key = (
            self.sim.model().zxid(),
            self.owners
                .iter()
                .map(|o| {
                    o.waiting.as_ref().map(|(l, _)| {
                        (*l, self.sim.state(o.client, *l) == Some(LockState::Waiting))
                    })
                })
                .collect::<Vec<_>>(),
        );
        if self.last_key.as_ref() != Some(&key) {
            self.last_key = Some(key);
            self.rebuild(now);
        }
        if let Some((n, since)) = self.on_cycle.iter().min_by_key(|(_, t)| **t) {
            if now - *since > self.w.bound {
                let d = format!(
                    "{n} has been on a cycle of waits since {since}, longer than {:?}",
                    self.w.bound
                );
                self.sim.violate(ViolationKind::DeadlockNotBroken, d);
            }
        }
        self.sim.poisoned()
    }

    fn rebuild(&mut self, now: Timestamp) {
        let at = self.obs.len();
        self.obs.push(now);
        let current = self.graph();
        let gone: Vec<Edge> = self
            .edges
            .keys()
            .filter(|e| !current.contains(*e))
            .cloned()
            .collect();
        for e in gone {
            let from = self.edges.remove(&e).expect("present");
            self.history.entry(e).or_default().push((from, at));
        }
        for e in &current {
            self.edges.entry(e.clone()).or_insert(at);
        }
        // Nodes on a cycle: reachable from themselves.
        let mut adj: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for (a, b) in &current {
            adj.entry(a).or_default().push(b);
        }
        let mut cyclic = BTreeSet::new();
        for &start in adj.keys() {
            let mut seen = BTreeSet::new();
            let mut stack: Vec<&str> = adj[start].clone();
            while let Some(v) = stack.pop() {
                if v == start {
                    cyclic.insert(start.to_owned());
                    break;
                }
                if seen.insert(v) {
                    if let Some(n) = adj.get(v) {
                        stack.extend(n.iter().copied());
                    }
                }
            }
        }
        self.on_cycle.retain(|n, _| cyclic.contains(n));
        for n in cyclic {
            self.on_cycle.entry(n).or_insert(now);
        }
    }

    /// A victim's cycle: real at some instant, one victim for it, the right one.
    fn check_victim(&mut self, cycle: &[lock_core::CycleNode]) -> Result<(), Violation> {
        let n = cycle.len();
        let edges: Vec<Edge> = (0..n)
            .map(|i| (cycle[i].node.clone(), cycle[(i + 1) % n].node.clone()))
            .collect();
        let intervals: Vec<Vec<(usize, usize)>> = edges
            .iter()
            .map(|e| {
                let mut v = self.history.get(e).cloned().unwrap_or_default();
                if let Some(&from) = self.edges.get(e) {
                    v.push((from, usize::MAX));
                }
                v
            })
            .collect();
        let mut starts: Vec<usize> = intervals.iter().flatten().map(|iv| iv.0).collect();
        starts.sort_unstable();
        let formed = starts.into_iter().rev().find(|&t| {
            intervals
                .iter()
                .all(|ivs| ivs.iter().any(|&(a, b)| a <= t && t < b))
        });
        let Some(formed) = formed else {
            let d = format!("victim of a cycle that never existed whole: {cycle:?}");
            self.sim.violate(ViolationKind::FalseDeadlock, d);
            return self.sim.poisoned();
        };
        self.latencies.push(self.sim.now() - self.obs[formed]);
        let candidates: Vec<usize> = (0..n)
            .filter(|&i| !cycle[i].holds && cycle[(i + n - 1) % n].holds)
            .collect();
        let youngest = candidates.iter().max_by_key(|&&i| cycle[i].token);
        if youngest != Some(&0) {
            let d = format!("the victim is not the youngest candidate of its cycle: {cycle:?}");
            self.sim.violate(ViolationKind::SecondVictim, d);
        }
        let mut set: Vec<String> = cycle.iter().map(|c| c.node.clone()).collect();
        set.sort();
        if !self.victims.insert(set) {
            let d = format!("a second victim for the same cycle: {cycle:?}");
            self.sim.violate(ViolationKind::SecondVictim, d);
        }
        self.sim.poisoned()
    }

    pub(super) fn report(&self) -> DeadlockReport {
        DeadlockReport {
            steps: self.sim.steps(),
            acquisitions: self.acquisitions,
            victims: self.victims.len(),
            latencies: self.latencies.clone(),
            requests: self.sim.total_counters().requests(),
        }
    }
}
