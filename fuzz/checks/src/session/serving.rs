//! The server's and the network's steps: replies (honest, failed or crafted),
//! watch deliveries, disconnects, reconnects, expiries, time.

use super::world::name_of;
use super::{
    peer_attempt, ChildPick, Conn, Crafted, DataPick, ErrPick, Harness, OwnerPick, Shape,
    FOREIGN_NAMES,
};
use lock_core::names::format_sequence;
use lock_core::CreateMode;
use lock_core::Input as CoreInput;
use lock_core::{
    MultiOp, MultiResult, Op, Reply, Request, RequestId, SessionEvent, Stat, Timestamp, ZkError,
};
use std::time::Duration;

impl Harness {
    pub(super) fn feed(&mut self, input: CoreInput) {
        self.log(|| format!("feed {input:?}"));
        self.s.handle_input(input, self.now);
        self.drain();
    }

    pub(super) fn reply(&mut self, id: RequestId, result: Result<Reply, ZkError>) {
        self.feed(CoreInput::Reply {
            request: id,
            result,
        });
    }

    pub(super) fn apply(&mut self, sid: i64, r: &Request) -> Result<Reply, ZkError> {
        let mut result = self.world.apply(sid, &r.op, self.case_stat_on_create);
        if matches!(r.op, Op::Multi(_)) && result.is_ok() {
            self.applied_multis.insert(r.id);
        }
        if self.reverse_listings {
            if let Ok(Reply::Children(c)) = &mut result {
                c.reverse();
            }
        }
        result
    }

    /// The server answers the front request from the world.
    pub(super) fn serve_one(&mut self) -> bool {
        let Conn::Connected(sid) = self.conn else {
            return false;
        };
        let Some(r) = self.outstanding.pop_front() else {
            return false;
        };
        let result = self.apply(sid, &r);
        self.world.replied();
        self.note_read(&r, &result);
        self.past.push(r.clone());
        self.reply(r.id, result);
        true
    }

    pub(super) fn fail_front(&mut self, err: ErrPick, applied: bool) {
        let Conn::Connected(sid) = self.conn else {
            return;
        };
        let Some(r) = self.outstanding.pop_front() else {
            return;
        };
        let e = err.error();
        if e.is_connection_loss() {
            if applied {
                let _ = self.apply(sid, &r);
            }
        } else {
            self.world.replied();
            let truthful = self.world.error_for(sid, &r.op) == Some(e.clone());
            let harmless = matches!(
                e,
                ZkError::NoAuth | ZkError::BadArguments | ZkError::Other(_)
            );
            if !truthful && !harmless {
                self.lying("an error reply that lies about the state");
            }
            if truthful {
                // The server's own answer (a listing of a missing directory, a read
                // of a gone node), as good as one served in order.
                self.note_read(&r, &Err(e.clone()));
            }
        }
        self.past.push(r.clone());
        self.reply(r.id, Err(e));
    }

    pub(super) fn crafted(&self, op: &Op, c: &Crafted) -> Result<Reply, ZkError> {
        let owner = match c.owner {
            OwnerPick::Current => self.session_id().unwrap_or(0),
            OwnerPick::Zero => 0,
            OwnerPick::Raw(o) => o,
        };
        let stat = Stat {
            czxid: c.czxid,
            mzxid: c.czxid,
            ephemeral_owner: owner,
            ..Stat::default()
        };
        match c.shape {
            Shape::Error(e) => Err(e.error()),
            Shape::WrongType(t) => Ok(match t % 6 {
                0 => Reply::Created {
                    path: format!("/x/{}", format_sequence(c.seq)),
                    stat: Some(stat),
                },
                1 => Reply::Children(vec!["stray".into()]),
                2 => Reply::Data {
                    data: c.data.bytes(),
                    stat,
                },
                3 => Reply::Stat(stat),
                4 => Reply::Deleted,
                _ => Reply::Multi(Vec::new()),
            }),
            Shape::Plausible => Ok(match op {
                Op::Create { path, mode, .. } => Reply::Created {
                    path: if *mode == CreateMode::EphemeralSequential {
                        format!("{path}{}", format_sequence(c.seq))
                    } else {
                        path.clone()
                    },
                    stat: c.with_stat.then_some(stat),
                },
                Op::GetChildren { path } | Op::WatchChildren { path } => Reply::Children(
                    c.children
                        .iter()
                        .map(|ch| self.child_name(path, ch))
                        .collect(),
                ),
                Op::GetData { .. } => Reply::Data {
                    data: match &c.data {
                        DataPick::TooLarge => b"unlock".to_vec(),
                        d => d.bytes(),
                    },
                    stat,
                },
                Op::SetData { .. } => Reply::Stat(stat),
                Op::Delete { .. } => Reply::Deleted,
                Op::Multi(ops) => Reply::Multi(
                    ops.iter()
                        .map(|m| match m {
                            MultiOp::Create { path, .. } => {
                                MultiResult::Created { path: path.clone() }
                            }
                            MultiOp::Delete { .. } => MultiResult::Deleted,
                            MultiOp::SetData { .. } => MultiResult::SetData { stat },
                            _ => MultiResult::Checked,
                        })
                        .collect(),
                ),
                _ => Reply::Deleted,
            }),
        }
    }

    pub(super) fn child_name(&self, dir: &str, ch: &ChildPick) -> String {
        match ch {
            ChildPick::Ours { pick, seq } => {
                match self.attempts.get(dir).and_then(|v| crate::pick(v, *pick)) {
                    Some((_, prefix)) => format!("{}{}", name_of(prefix), format_sequence(*seq)),
                    None => format!("zkl-{:032x}-write-{}", 0, format_sequence(*seq)),
                }
            }
            ChildPick::World(i) => crate::pick(&self.world.children(dir), *i)
                .cloned()
                .unwrap_or_else(|| "empty".into()),
            ChildPick::Peer {
                scheme,
                kind,
                attempt,
                seq,
            } => crate::node_name(scheme.scheme(), peer_attempt(*attempt), *kind, *seq),
            ChildPick::Foreign(i) => FOREIGN_NAMES[usize::from(*i) % FOREIGN_NAMES.len()].into(),
            ChildPick::Raw(s) => s.clone(),
        }
    }

    pub(super) fn craft(&mut self, pick: u8, c: &Crafted) {
        if self.outstanding.is_empty() {
            return;
        }
        let i = usize::from(pick) % self.outstanding.len();
        let r = self.outstanding.remove(i).expect("index in range");
        let result = self.crafted(&r.op, c);
        self.lying("a crafted reply");
        self.past.push(r.clone());
        self.reply(r.id, result);
    }

    pub(super) fn stale_reply(&mut self, id: RequestId, op: Option<Op>, c: &Crafted) {
        if self.outstanding.iter().any(|r| r.id == id) {
            return;
        }
        let op = op.unwrap_or(Op::GetChildren { path: "/".into() });
        let result = self.crafted(&op, c);
        let before = self.s.stats().stale_replies;
        self.reply(id, result);
        self.stale_expected += 1;
        check!(
            self,
            self.s.stats().stale_replies == before + 1,
            "reply to forgotten/unknown {id:?} was not counted as stale"
        );
    }

    pub(super) fn our_world_nodes(&self) -> Vec<String> {
        let mut ours = (self.world.session)
            .map(|s| self.world.zk.ephemerals(s))
            .unwrap_or_default();
        ours.retain(|p| self.in_a_dir(p));
        ours
    }

    pub(super) fn peer_nodes(&self) -> Vec<String> {
        self.world.zk.ephemerals(self.world.peer_session)
    }

    pub(super) fn ensure_dir(&mut self, dir: &str) {
        for d in crate::dir_and_ancestors(dir) {
            if !self.world.zk.contains(d) {
                let _ = self
                    .world
                    .create(lock_sim::NO_SESSION, d, b"", CreateMode::Container);
            }
        }
    }

    /// Delivers a queued watch firing; false when none is queued.
    pub(super) fn deliver(&mut self, i: u8) -> bool {
        if self.world.queue.is_empty() {
            return false;
        }
        let i = usize::from(i) % self.world.queue.len();
        let n = self.world.queue.remove(i).expect("index in range");
        self.feed(CoreInput::Watch {
            path: n.path,
            kind: n.kind,
        });
        true
    }

    pub(super) fn after_session_change(&mut self) {
        // Replies to requests of the old connection are never delivered.
        self.past.extend(self.outstanding.drain(..));
    }

    pub(super) fn disconnect(&mut self, applied: u8, report_errors: bool, since_contact_ms: u16) {
        if let Conn::Connected(sid) = self.conn {
            let known = self.world.client_watches();
            let mut applied = usize::from(applied);
            let mut guard = 0;
            while let Some(r) = self.outstanding.pop_front() {
                if applied > 0 {
                    applied -= 1;
                    let _ = self.apply(sid, &r);
                }
                self.past.push(r.clone());
                guard += 1;
                if report_errors && guard < 256 {
                    self.reply(r.id, Err(ZkError::ConnectionLoss));
                }
            }
            self.world.cut(known);
            self.conn = Conn::Disconnected(sid);
        }
        self.feed(CoreInput::Session(SessionEvent::Disconnected {
            since_contact: Duration::from_millis(u64::from(since_contact_ms)),
        }));
        self.after_session_change();
    }

    pub(super) fn reconnect(&mut self, new_session: bool) {
        if self.conn == Conn::Closed {
            return;
        }
        let sid = match (self.conn, self.world.session) {
            (Conn::Connected(s) | Conn::Disconnected(s), Some(w)) if s == w && !new_session => {
                // A new connection to the same session: the old one's watches go
                // with it and the client sets its own again.
                if matches!(self.conn, Conn::Connected(_)) {
                    let known = self.world.client_watches();
                    self.world.cut(known);
                }
                let queued = self.world.queue.len();
                self.world.resume();
                let fired = self.world.queue.len() - queued;
                self.log(|| format!("the client sets its watches again: {fired} fire"));
                s
            }
            _ => {
                self.world.end_session();
                self.world.open_session()
            }
        };
        self.after_session_change();
        self.conn = Conn::Connected(sid);
        self.feed(CoreInput::Session(SessionEvent::Connected {
            session_id: sid,
        }));
    }

    pub(super) fn server_expire(&mut self) {
        let connected = matches!(self.conn, Conn::Connected(_));
        if connected {
            self.lying("the server expired a session whose client is still connected");
        }
        self.world.end_session();
        if connected {
            // The server closes the connection of the session it closes
            // (ZooKeeper's FinalRequestProcessor on closeSession): the client loses
            // it, and the requests on it, and learns of the expiry when it reconnects.
            self.disconnect(0, true, 0);
        }
    }

    pub(super) fn expired(&mut self) {
        if self.conn == Conn::Closed {
            return;
        }
        self.world.end_session();
        self.after_session_change();
        self.conn = Conn::NoSession;
        self.feed(CoreInput::Session(SessionEvent::Expired));
    }

    pub(super) fn close(&mut self) {
        self.world.end_session();
        self.after_session_change();
        self.conn = Conn::Closed;
        self.feed(CoreInput::Session(SessionEvent::Closed));
        self.check_all_ended("after Closed");
        check!(self, self.s.is_idle(), "closed session not idle");
        check!(
            self,
            self.s.in_flight() == 0,
            "closed session has requests in flight"
        );
        check!(
            self,
            self.s.poll_timeout().is_none(),
            "closed session still has timers"
        );
    }

    /// Every task has had its terminal event (`when`: after what).
    pub(super) fn check_all_ended(&self, when: &str) {
        if let Some(l) = self.locks.iter().find(|l| l.state.is_some()) {
            self.fail(format!("{} has not ended {when} ({:?})", l.id, l.state));
        }
    }

    pub(super) fn advance_to(&mut self, t: Timestamp) {
        if t > self.now {
            self.now = t;
        }
        if self.s.poll_timeout().is_some_and(|d| d <= self.now) {
            self.log(|| "handle_timeout".into());
            self.s.handle_timeout(self.now);
            self.drain();
        }
        let next = self.s.poll_timeout();
        check!(
            self,
            !matches!(next, Some(d) if d <= self.now),
            "handle_timeout({:?}) left a timer due at {next:?}",
            self.now
        );
    }
}
