//! The checks of the harness's state: after every step, and at quiescence.

use super::world::{name_of, parent_of};
use super::{Conn, Harness, TaskKind};
use lock_core::names::{parse_name, relative_sequence};
use lock_core::LockState::{Held, Waiting};
use lock_core::{AttemptId, NameScheme, NodeKind, Recipe};
use std::collections::BTreeSet;

impl Harness {
    pub(super) fn check_state(&mut self) {
        for i in 0..self.locks.len() {
            let (id, state, kind) = (self.locks[i].id, self.locks[i].state, self.locks[i].kind);
            // Only acquisitions have a state to query.
            let expect = if kind == TaskKind::Lock { state } else { None };
            let got = self.s.state(id);
            check!(
                self,
                got == expect,
                "state({id}) = {got:?}, events say {state:?}"
            );
            if state == Some(Held) {
                check!(
                    self,
                    matches!(self.conn, Conn::Connected(_)),
                    "{id} trusted while {:?}",
                    self.conn
                );
            }
        }
        check!(
            self,
            self.s.stats().acquired == self.acquired_events,
            "stats.acquired {} but {} Acquired events",
            self.s.stats().acquired,
            self.acquired_events
        );
        check!(
            self,
            self.s.stats().stale_replies >= self.stale_expected,
            "stale replies {} < the {} surely stale ones fed",
            self.s.stats().stale_replies,
            self.stale_expected
        );
        if self.conn == Conn::Closed {
            check!(
                self,
                self.s.tracked() == 0,
                "closed session still tracks tasks"
            );
        }
        if self.honest {
            self.check_safety();
        }
    }

    /// Honest world: every trusted holder really holds.
    pub(super) fn check_safety(&mut self) {
        for i in 0..self.locks.len() {
            if self.locks[i].state != Some(Held) {
                continue;
            }
            let l = &self.locks[i];
            let g = l.grant.clone().expect("held without grant");
            let Some(node) = self.world.zk.get(&g.path) else {
                self.fail(format!("{} trusted but its node {} is gone", l.id, g.path));
            };
            check!(
                self,
                Some(node.stat.ephemeral_owner) == self.session_id()
                    && self.world.session == self.session_id(),
                "{} trusted but {} is owned by {:#x}, session {:?}",
                l.id,
                g.path,
                node.stat.ephemeral_owner,
                self.session_id()
            );
            check!(
                self,
                node.stat.czxid == g.token.0,
                "{} token {} but czxid {}",
                l.id,
                g.token,
                node.stat.czxid
            );
            let own = parse_name(name_of(&g.path)).expect("grant name parses");
            let blockers = self.blockers(&l.dir, l.recipe, own.attempt, own.seq);
            check!(
                self,
                !is_blocked(l.recipe, &blockers),
                "{} ({:?}) trusted holder of {} but lower blockers exist: {blockers:?}",
                l.id,
                l.recipe,
                g.path
            );
        }
    }

    /// The participants of `dir` below `seq` that count against `recipe`.
    pub(super) fn blockers(
        &self,
        dir: &str,
        recipe: Recipe,
        attempt: AttemptId,
        seq: i32,
    ) -> Vec<(String, NodeKind)> {
        self.world
            .children(dir)
            .into_iter()
            .filter_map(|n| {
                // The core's own rule of who participates (unknown sequential
                // names exclude), and only a known name can carry our attempt.
                let p = lock_core::names::parse_participant(&n)?;
                let ours = p.scheme != NameScheme::Other && p.attempt == attempt;
                // Reference: a reader counts every lower participant but readers.
                let counts = !ours
                    && relative_sequence(p.seq, seq) < 0
                    && (recipe != Recipe::Read || p.kind != NodeKind::Read);
                counts.then_some((n, p.kind))
            })
            .collect()
    }

    /// Honest world at rest: a waiter is really blocked, every node of ours belongs
    /// to a live acquisition, revocations are done and observers report the truth.
    pub(super) fn check_quiescent(&mut self) {
        let sid = self.session_id().expect("connected");
        let ours = self.world.zk.ephemerals(sid);
        let mut attempts = BTreeSet::new();
        let one_node_each = ours
            .iter()
            .filter_map(|p| parse_name(name_of(p)))
            .all(|n| attempts.insert(n.attempt));
        check!(
            self,
            one_node_each,
            "duplicate nodes of one attempt at rest: {ours:?}"
        );
        let live = self
            .locks
            .iter()
            .filter(|l| l.kind == TaskKind::Lock && l.state.is_some())
            .count();
        check!(
            self,
            ours.len() <= live,
            "{} nodes of ours at rest but only {live} live acquisitions: {ours:?}",
            ours.len()
        );
        for l in &self.locks {
            if l.state.is_none() {
                if let Some(g) = &l.grant {
                    if self
                        .world
                        .zk
                        .get(&g.path)
                        .is_some_and(|n| n.stat.ephemeral_owner == sid)
                    {
                        self.fail(format!("{} ended but its node {} remains", l.id, g.path));
                    }
                }
            }
            if matches!(
                l.kind,
                TaskKind::Revoke | TaskKind::Inspect | TaskKind::Scan
            ) {
                check!(
                    self,
                    l.state.is_none(),
                    "{:?} {} still running at rest",
                    l.kind,
                    l.id
                );
            }
            if l.kind == TaskKind::Observer && l.state.is_some() {
                let truth = self.world_leader(&l.dir).map(|(p, _)| p);
                let told = l.reported.clone().flatten().map(|x| x.path);
                check!(
                    self,
                    truth == told,
                    "observer {} at rest says {told:?}, the leader is {truth:?}",
                    l.id
                );
            }
        }
        let held: BTreeSet<String> = self
            .locks
            .iter()
            .filter(|o| o.state.is_some())
            .filter_map(|o| o.grant.as_ref().map(|g| g.path.to_string()))
            .collect();
        for i in 0..self.locks.len() {
            let l = &self.locks[i];
            if l.kind != TaskKind::Lock || l.state != Some(Waiting) {
                continue;
            }
            // Its node: one of ours in its directory that no live holder has. With
            // several waiters in one directory we cannot tell whose node is whose;
            // require that at least one of the candidates is blocked.
            let mine: Vec<&String> = ours
                .iter()
                .filter(|p| parent_of(p) == l.dir && !held.contains(p.as_str()))
                .collect();
            let blocked = mine.iter().any(|p| {
                let own = parse_name(name_of(p)).expect("ours parse");
                is_blocked(
                    l.recipe,
                    &self.blockers(&l.dir, l.recipe, own.attempt, own.seq),
                )
            });
            check!(
                self,
                blocked,
                "{} waits at rest but nothing blocks it (candidates {mine:?}, dir {:?})",
                l.id,
                self.world.children(&l.dir)
            );
        }
    }
}

/// Reference: is a participant of `recipe` with these lower `blockers` kept from
/// holding? A semaphore also never holds beside a lower exclusive (write or leader)
/// node.
fn is_blocked(recipe: Recipe, blockers: &[(String, NodeKind)]) -> bool {
    let writer = blockers
        .iter()
        .any(|(_, k)| matches!(k, NodeKind::Write | NodeKind::Leader));
    blockers.len() >= recipe.permits() || (matches!(recipe, Recipe::Semaphore { .. }) && writer)
}
