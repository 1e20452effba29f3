//! Draining the session and checking every output (requests, events) as it comes.

use super::world::{name_of, parent_of};
use super::{Conn, Harness, TaskKind, TaskState, SECTION_MARKER};
use lock_core::names::{format_sequence, parse_name, relative_sequence};
use lock_core::owner;
use lock_core::LockState::{Held, Releasing, Suspended, Waiting};
use lock_core::{
    CreateMode, FailReason, LockEvent, LockId, LostReason, MultiOp, NameScheme, NodeKind, Op,
    Output, Request,
};
use lock_sim::check::{fenced_outcome_agrees, grant_in_queue};
use FailReason::{Cancelled, Closed, SessionExpired, Zk};

impl Harness {
    pub(super) fn drain(&mut self) -> Vec<(LockId, LockEvent)> {
        let mut events = Vec::new();
        while let Some(out) = self.s.poll_output() {
            match out {
                Output::Request(r) => self.on_request(r),
                Output::Event { lock, event } => {
                    self.on_event(lock, &event);
                    events.push((lock, event));
                }
                Output::Progress { lock, progress } => {
                    self.log(|| format!("{lock} progress {progress:?}"))
                }
                other => self.fail(format!("unknown output {other:?}")),
            }
        }
        events
    }

    pub(super) fn on_request(&mut self, r: Request) {
        self.log(|| format!("-> {:?} {:?}", r.id, r.op));
        check!(
            self,
            matches!(self.conn, Conn::Connected(_)),
            "request {r:?} emitted while {:?}",
            self.conn
        );
        check!(
            self,
            r.id.0 > self.max_issued,
            "request id {:?} reused or not increasing (max {})",
            r.id,
            self.max_issued
        );
        self.max_issued = r.id.0;
        self.check_scope(&r.op);
        self.outstanding.push_back(r);
    }

    pub(super) fn in_a_dir(&self, path: &str) -> bool {
        self.dirs.contains(parent_of(path))
    }

    pub(super) fn readable(&self, path: &str) -> bool {
        self.dirs.contains(path) || self.read_dirs.contains(path)
    }

    pub(super) fn is_our_node(&self, path: &str) -> bool {
        let Some(p) = parse_name(name_of(path)) else {
            return false;
        };
        self.attempts
            .get(parent_of(path))
            .is_some_and(|v| v.iter().any(|(a, _)| *a == p.attempt))
    }

    pub(super) fn is_marker(&self, path: &str) -> bool {
        name_of(path) == SECTION_MARKER && self.in_a_dir(path)
    }

    pub(super) fn check_create(&mut self, path: &str, mode: CreateMode) {
        match mode {
            CreateMode::Container => {
                let ok = self
                    .dirs
                    .iter()
                    .any(|d| d == path || d.starts_with(&format!("{path}/")));
                check!(
                    self,
                    ok && path != "/",
                    "container {path} is neither a lock directory nor an ancestor of one"
                );
            }
            CreateMode::EphemeralSequential => {
                check!(
                    self,
                    self.in_a_dir(path),
                    "create {path} outside the lock directories"
                );
                let probe = format!("{}{}", name_of(path), format_sequence(0));
                let Some(p) = parse_name(&probe) else {
                    self.fail(format!("create prefix {path} names no known scheme"));
                };
                let dir = parent_of(path).to_owned();
                let v = self.attempts.entry(dir).or_default();
                if !v.iter().any(|(a, _)| *a == p.attempt) {
                    v.push((p.attempt, path.to_owned()));
                }
            }
            other => self.fail(format!("create {path} with mode {other:?}")),
        }
    }

    pub(super) fn check_scope(&mut self, op: &Op) {
        match op {
            Op::Create { path, mode, .. } => self.check_create(path, *mode),
            Op::GetChildren { path } => check!(
                self,
                self.readable(path) || self.plain_readable(path),
                "listing of {path}, not a lock directory, inspected, scanned or chased"
            ),
            Op::WatchChildren { path } => check!(
                self,
                self.readable(path),
                "watched listing of {path}, not a lock directory"
            ),
            Op::GetData { path, watch } => {
                let participant = parse_name(name_of(path)).is_some()
                    && (self.in_a_dir(path)
                        || self.read_dirs.contains(parent_of(path))
                        || (!watch && self.plain_readable(parent_of(path))));
                check!(
                    self,
                    participant || self.is_marker(path),
                    "getData of {path}, not a participant of a lock directory"
                )
            }
            Op::Delete { path, .. } => check!(
                self,
                self.in_a_dir(path) && self.is_our_node(path),
                "delete of {path}, not a node of ours"
            ),
            Op::SetData {
                path,
                data,
                version,
            } => {
                let revocation = data == b"__REVOKE__"
                    && parse_name(name_of(path)).is_some()
                    && (self.revoke_nodes.contains(path)
                        || self.read_dirs.contains(parent_of(path)));
                // Deadlock detection publishing where an owner waits: a versioned
                // write of zklock's owner header on a node of ours.
                let published = owner::parse(NameScheme::Native, data);
                let publication = published.header
                    && version.is_some()
                    && self.in_a_dir(path)
                    && self.is_our_node(path);
                if publication {
                    // Chases may read where it says we wait.
                    for w in published.waits {
                        self.published_dirs.insert(parent_of(&w).to_owned());
                    }
                }
                check!(
                    self,
                    revocation || publication,
                    "setData of {path} ({data:?}) is no revocation we asked for"
                )
            }
            Op::Multi(ops) => {
                // A fenced write: a check on our node, then exactly the user's writes.
                let fenced = match ops.split_first() {
                    Some((
                        MultiOp::Check {
                            path,
                            version: None,
                        },
                        rest,
                    )) => {
                        self.is_our_node(path) && self.fenced.iter().any(|f| f.as_slice() == rest)
                    }
                    _ => false,
                };
                if fenced {
                    return;
                }
                for m in ops {
                    let ok = match m {
                        MultiOp::Check { path, .. } => {
                            self.in_a_dir(path) && self.is_our_node(path)
                        }
                        MultiOp::Delete { path, .. } => {
                            self.is_marker(path) || (self.in_a_dir(path) && self.is_our_node(path))
                        }
                        MultiOp::Create { path, mode, .. } => {
                            self.is_marker(path) && *mode == CreateMode::Persistent
                        }
                        MultiOp::SetData { path, .. } => self.is_marker(path),
                        _ => false,
                    };
                    check!(self, ok, "multi op {m:?} out of scope in {ops:?}");
                }
            }
            Op::RemoveWatch { path, watch } => check!(
                self,
                match watch {
                    lock_core::WatchType::Children => self.readable(path),
                    _ => self.in_a_dir(path) && self.is_our_node(path),
                },
                "removeWatches on {path}, not a node of ours"
            ),
            other => self.fail(format!("unknown op {other:?}")),
        }
    }

    pub(super) fn world_leader(&self, dir: &str) -> Option<(String, i32)> {
        let parts: Vec<(i32, String)> = self
            .world
            .children(dir)
            .into_iter()
            .filter_map(|n| {
                parse_name(&n)
                    .filter(|p| p.kind != NodeKind::Read)
                    .map(|p| (p.seq, n))
            })
            .collect();
        let reference = parts.first()?.0;
        parts
            .into_iter()
            .min_by_key(|(s, _)| relative_sequence(*s, reference))
            .map(|(s, n)| (format!("{dir}/{n}"), s))
    }

    pub(super) fn on_event(&mut self, lock: LockId, event: &LockEvent) {
        self.log(|| format!("<- {lock} {event:?}"));
        let Some(i) = self.task(lock) else {
            self.fail(format!("event {event:?} for unknown {lock}"));
        };
        let l = &self.locks[i];
        let (state, kind, dir) = (l.state, l.kind, l.dir.clone());
        if state.is_none() {
            self.fail(format!(
                "{event:?} for {lock} after its terminal event {:?}",
                self.locks[i].terminal
            ));
        }
        // The events each kind of task may hear, each handled.
        let next = match (kind, event) {
            (TaskKind::Lock, e)
                if !matches!(
                    e,
                    LockEvent::LeaderChanged { .. } | LockEvent::RevocationSent { .. }
                ) =>
            {
                self.on_lock_event(i, event)
            }
            (TaskKind::Observer, LockEvent::LeaderChanged { leader, .. }) => {
                let prev = self.locks[i].reported.clone();
                check!(
                    self,
                    prev.as_ref() != Some(leader),
                    "{lock} reported the same leader twice: {leader:?}"
                );
                if self.honest {
                    let truth = self.world_leader(&dir);
                    match (leader, &truth) {
                        (None, None) => {}
                        (Some(l), Some((path, _))) if *path == l.path => {
                            let n = self.world.zk.get(path).expect("the leader's node");
                            check!(
                                self,
                                owner::user_data(&n.data) == l.id && n.stat.czxid == l.token.0,
                                "{lock} leader {l:?} but the node has data {:?} czxid {}",
                                n.data,
                                n.stat.czxid
                            );
                        }
                        _ => self.fail(format!(
                            "{lock} reports leader {leader:?}, the world's is {truth:?}"
                        )),
                    }
                }
                self.locks[i].reported = Some(leader.clone());
                state
            }
            (TaskKind::Revoke, LockEvent::RevocationSent { nodes }) => {
                for n in nodes {
                    check!(
                        self,
                        *n == dir || parent_of(n) == dir,
                        "{lock} revoked {n}, outside its target {dir}"
                    );
                }
                state
            }
            (TaskKind::Inspect, LockEvent::Participants(_))
            | (TaskKind::Scan, LockEvent::Deadlocks { .. }) => {
                self.on_read_task_event(i, event);
                state
            }
            (
                TaskKind::Observer | TaskKind::Revoke,
                LockEvent::Failed(Cancelled | Closed | Zk(_)),
            ) => state,
            (
                TaskKind::Inspect | TaskKind::Scan,
                LockEvent::Failed(Cancelled | Closed | Zk(_) | SessionExpired),
            ) => state,
            _ => self.fail(format!("{event:?} for a {kind:?} task {lock}")),
        };
        if event.is_terminal() {
            self.locks[i].terminal = Some(event.clone());
            let pending = self.locks[i].writes.clone();
            check!(
                self,
                pending.is_empty(),
                "{lock} ended with fenced writes without outcome: {pending:?}"
            );
        }
        // (An acquisition's own rules end it on exactly these events.)
        self.locks[i].state = if event.is_terminal() { None } else { next };
    }

    pub(super) fn on_lock_event(&mut self, i: usize, event: &LockEvent) -> TaskState {
        let l = &self.locks[i];
        let (lock, state, dir) = (l.id, l.state, l.dir.clone());
        let (try_only, deadline, cancelled, revocable, detects) = (
            l.try_only,
            l.deadline,
            l.cancelled,
            l.revocable,
            l.detect_crashes,
        );
        let holding = matches!(state, Some(Held) | Some(Suspended));
        if !event.is_terminal() && !matches!(event, LockEvent::Acquired(_) | LockEvent::Suspended) {
            self.outcome.holder_events += 1;
        }
        // The states each event may come in, and the state it leads to.
        let (legal, next) = match event {
            LockEvent::Acquired(_) => (state == Some(Waiting), Some(Held)),
            LockEvent::Suspended => (state == Some(Held), Some(Suspended)),
            LockEvent::Resumed => (state == Some(Suspended), Some(Held)),
            LockEvent::RevocationRequested => (holding && revocable, state),
            LockEvent::SectionOpened | LockEvent::SectionClosed | LockEvent::SectionFailed(_) => {
                (holding && detects, state)
            }
            LockEvent::FencedWrite { .. } => (holding || state == Some(Releasing), state),
            // A release finds out that someone else deleted the node.
            LockEvent::Lost(reason) => (
                holding || (state == Some(Releasing) && *reason == LostReason::NodeDeleted),
                None,
            ),
            LockEvent::Released => (state == Some(Releasing), None),
            LockEvent::Failed(FailReason::Zk(_)) => {
                (matches!(state, Some(Waiting) | Some(Releasing)), None)
            }
            LockEvent::Failed(_) => (state == Some(Waiting), None),
            other => self.fail(format!("unknown event {other:?} for {lock}")),
        };
        check!(
            self,
            legal,
            "{event:?} for {lock} in {state:?} (revocable: {revocable}, crash detection: {detects})"
        );
        if matches!(event, LockEvent::Acquired(_) | LockEvent::Resumed) {
            check!(
                self,
                matches!(self.conn, Conn::Connected(_)),
                "{event:?} for {lock} while {:?}",
                self.conn
            );
        }
        match event {
            LockEvent::Acquired(g) => {
                check!(
                    self,
                    Some(g.session_id) == self.session_id(),
                    "grant {g:?} names a session other than {:?}",
                    self.session_id()
                );
                check!(
                    self,
                    grant_in_queue(g, &dir),
                    "grant {g:?} is no participant of {dir} with its sequence"
                );
                if !detects {
                    check!(
                        self,
                        !g.previous_holder_crashed,
                        "crash reported without crash detection"
                    );
                } else if self.honest {
                    let marker = self.world.zk.contains(&format!("{dir}/{SECTION_MARKER}"));
                    check!(
                        self,
                        g.previous_holder_crashed == marker,
                        "grant {g:?} but the crash marker exists: {marker}"
                    );
                }
                self.acquired_events += 1;
                self.locks[i].grant = Some(g.clone());
                self.locks[i].granted_at = self.now;
            }
            LockEvent::SectionOpened | LockEvent::SectionClosed if self.honest => {
                let marker = self.world.zk.contains(&format!("{dir}/{SECTION_MARKER}"));
                check!(
                    self,
                    marker == (*event == LockEvent::SectionOpened),
                    "{event:?} for {lock} but the marker exists: {marker}"
                );
            }
            LockEvent::FencedWrite { write, result } => {
                let Some(pos) = self.locks[i].writes.iter().position(|(w, _)| w == write) else {
                    self.fail(format!(
                        "{event:?} for a write {lock} has no outcome pending for"
                    ));
                };
                let (_, request) = self.locks[i].writes.remove(pos);
                let applied = request.is_some_and(|r| self.applied_multis.contains(&r));
                check!(
                    self,
                    !self.honest || fenced_outcome_agrees(result, &[applied]),
                    "write {write} reported {result:?}, applied: {applied}"
                );
            }
            LockEvent::Lost(LostReason::LeaseExpired) => {
                let l = &self.locks[i];
                check!(
                    self,
                    l.max_hold.is_some_and(|m| l.granted_at + m <= self.now),
                    "LeaseExpired at {:?}, granted at {:?} with max hold {:?}",
                    self.now,
                    l.granted_at,
                    l.max_hold
                );
            }
            LockEvent::Failed(reason) => match reason {
                FailReason::Cancelled => check!(self, cancelled, "Cancelled without cancel"),
                FailReason::WouldBlock => check!(self, try_only, "WouldBlock without try_only"),
                FailReason::Revoked => check!(self, revocable, "Revoked without revocable"),
                FailReason::Timeout => check!(
                    self,
                    deadline.is_some_and(|d| d <= self.now),
                    "Timeout at {:?} with deadline {deadline:?}",
                    self.now
                ),
                FailReason::Deadlock { cycle } => self.check_deadlock_victim(i, cycle),
                _ => {}
            },
            _ => {}
        }
        next
    }
}
