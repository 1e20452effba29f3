//! Running a case: each step dispatched to the user's, the server's or the
//! network's side; settling (honest serving until only far timers are left);
//! and the end of a case (check what is left, cancel everything, close).

use super::detect::SCAN_ROOTS;
use super::{
    peer_attempt, Conn, DirPick, Harness, LockPick, PathPick, Step, TaskKind, DIRS, FOREIGN_NAMES,
    SETTLE_HORIZON,
};
use lock_core::names::node_prefix;
use lock_core::CreateMode;
use lock_core::Input as CoreInput;
use lock_core::{LockId, RequestId, WatchKind};
use std::time::Duration;

impl Harness {
    pub(super) fn run_step(&mut self, step: &Step) {
        match step {
            Step::Acquire(a) => self.acquire(a),
            Step::Release(p) => self.release(*p, false),
            Step::Cancel(p) => self.release(*p, true),
            Step::Observe(d) => self.start_task(TaskKind::Observer, Self::dir_of(d)),
            Step::RevokeCall(t) => {
                if let Some(path) = self.revoke_target(t) {
                    self.start_task(TaskKind::Revoke, path);
                }
            }
            Step::OpenSection(p) => self.section(*p, true),
            Step::CloseSection(p) => self.section(*p, false),
            Step::FencedWrite { lock, ops } => self.fenced_write(*lock, ops),
            Step::Serve(n) => {
                for _ in 0..=(n % 8) {
                    if !self.serve_one() {
                        break;
                    }
                }
            }
            Step::Settle => {
                for _ in 0..256 {
                    if !(self.serve_one() || self.deliver(0)) {
                        break;
                    }
                }
            }
            Step::Fail { err, applied } => self.fail_front(*err, *applied),
            Step::Craft { pick, reply } => self.craft(*pick, reply),
            Step::Unknown { id, reply } => {
                let id = RequestId(self.max_issued.saturating_add(1 + id % 1024));
                self.stale_reply(id, None, reply);
            }
            Step::Stale { pick, reply } => {
                if let Some(r) = crate::pick(&self.past, *pick).cloned() {
                    self.stale_reply(r.id, Some(r.op), reply);
                }
            }
            Step::PeerJoin {
                dir,
                scheme,
                kind,
                attempt,
            } => {
                let dir = DIRS[usize::from(*dir) % DIRS.len()];
                self.ensure_dir(dir);
                let prefix = format!(
                    "{dir}/{}",
                    node_prefix(scheme.scheme(), peer_attempt(*attempt), *kind)
                );
                let peers = self.world.peer_session;
                let r =
                    self.world
                        .create(peers, &prefix, &[*attempt], CreateMode::EphemeralSequential);
                self.log(|| format!("peer joins: {r:?}"));
            }
            Step::Foreign { dir, name } => {
                let dir = DIRS[usize::from(*dir) % DIRS.len()];
                self.ensure_dir(dir);
                let n = FOREIGN_NAMES[usize::from(*name) % FOREIGN_NAMES.len()];
                let _ = self.world.create(
                    lock_sim::NO_SESSION,
                    &format!("{dir}/{n}"),
                    b"",
                    CreateMode::Persistent,
                );
            }
            Step::PeerLeave(i) => {
                if let Some(p) = crate::pick(&self.peer_nodes(), *i).cloned() {
                    self.log(|| format!("peer leaves: {p}"));
                    let _ = self.world.delete(&p);
                }
            }
            Step::AdminDeleteOwn(i) => {
                if let Some(p) = crate::pick(&self.our_world_nodes(), *i).cloned() {
                    self.log(|| format!("admin deletes {p}"));
                    self.lying("an admin deleted one of our nodes");
                    let _ = self.world.delete(&p);
                }
            }
            Step::Revoke { pick, curator } => {
                if let Some(p) = crate::pick(&self.our_world_nodes(), *pick).cloned() {
                    let marker: &[u8] = if *curator { b"__REVOKE__" } else { b"unlock" };
                    let _ = self.world.set_data(&p, marker);
                }
            }
            Step::Reap => self.world.reap(),
            Step::Deliver(i) => {
                self.deliver(*i);
            }
            Step::Spurious { path, kind } => {
                let path = match path {
                    PathPick::Ours(i) => {
                        let ours: Vec<String> = self
                            .locks
                            .iter()
                            .filter_map(|l| l.grant.as_ref().map(|g| g.path.to_string()))
                            .collect();
                        crate::pick(&ours, *i).cloned()
                    }
                    PathPick::World(i) => crate::pick(&self.world.paths(), *i).cloned(),
                    PathPick::Dir(i) => Some(DIRS[usize::from(*i) % DIRS.len()].to_owned()),
                    PathPick::Raw(s) => Some(s.clone()),
                };
                let Some(path) = path else {
                    return;
                };
                let kind = *kind;
                if kind == WatchKind::NodeDeleted && self.world.zk.contains(&path) {
                    self.lying("a deletion notice for a node that exists");
                }
                self.feed(CoreInput::Watch { path, kind });
            }
            Step::Disconnect {
                applied,
                report_errors,
                since_contact_ms,
            } => self.disconnect(*applied, *report_errors, *since_contact_ms),
            Step::Reconnect { new_session } => self.reconnect(*new_session),
            Step::ServerExpire => self.server_expire(),
            Step::Expired => self.expired(),
            Step::Close => self.close(),
            Step::Advance(ms) => {
                let t = self.now + Duration::from_millis(u64::from(*ms));
                self.advance_to(t);
            }
            Step::AdvanceToTimeout => {
                if let Some(t) = self.s.poll_timeout() {
                    self.advance_to(t);
                }
            }
            Step::Inspect(d) => self.start_task(TaskKind::Inspect, Self::dir_of(d)),
            Step::Scan(DirPick::Known(i)) => {
                let root = SCAN_ROOTS[usize::from(*i) % SCAN_ROOTS.len()];
                self.start_task(TaskKind::Scan, root.to_owned());
            }
            Step::Scan(DirPick::Raw(root)) => self.start_task(TaskKind::Scan, root.clone()),
            Step::PeerOwner { pick, owner, waits } => self.peer_owner(*pick, *owner, waits),
        }
    }

    /// Serves honestly until nothing is left to do but timers beyond the horizon
    /// (observers of a missing directory poll forever).
    pub(super) fn settle(&mut self) {
        let horizon = self.now + SETTLE_HORIZON;
        for _ in 0..50_000 {
            if self.serve_one() || self.deliver(0) {
                continue;
            }
            match self.s.poll_timeout() {
                Some(t) if t <= horizon => self.advance_to(t),
                _ => return,
            }
        }
        self.fail("no quiescence after 50000 honest steps".into());
    }

    /// The end of a case: serve honestly, check what is left, cancel everything,
    /// check the session comes to rest, then close.
    pub(super) fn finish(&mut self, end_with_expiry: bool) {
        self.step = usize::MAX;
        if self.conn == Conn::Closed {
            return;
        }
        if !matches!(self.conn, Conn::Connected(_)) {
            self.reconnect(false);
        }
        self.settle();
        self.check_state();
        if self.honest {
            self.check_quiescent();
        }
        let ids: Vec<LockId> = self
            .locks
            .iter()
            .filter(|l| l.state.is_some())
            .map(|l| l.id)
            .collect();
        for id in ids {
            self.release(LockPick::Raw(id.0), true);
        }
        self.settle();
        self.check_state();
        check!(
            self,
            self.s.tracked() == 0 && self.s.is_idle(),
            "after cancelling everything and serving honestly, {} tasks are still tracked",
            self.s.tracked()
        );
        self.check_all_ended("after cancel");
        if self.honest {
            let sid = self.session_id().expect("connected");
            let left = self.world.zk.ephemerals(sid);
            check!(
                self,
                left.is_empty(),
                "orphan nodes of ours at quiescence: {left:?}"
            );
        }
        if end_with_expiry {
            self.expired();
        }
        self.close();
    }
}
