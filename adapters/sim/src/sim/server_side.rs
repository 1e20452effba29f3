//! The server side of the simulation: applying requests that arrive, routing watch
//! firings to the sessions' connections, the session tracker and the container reaper.

use crate::sim::client::ConnectionView;
use crate::sim::network::Message;
use crate::sim::scheduler::Sim;
use lock_core::{Op, Reply, ZkError};

impl Sim {
    /// Opens a new server session for client `i` and makes it the client's.
    pub(crate) fn open_session(&mut self, i: usize) -> i64 {
        let s = self.model.create_session();
        let timeout = self.clients[i].cfg.session_timeout;
        self.sessions.open(s, i, timeout);
        let c = &mut self.clients[i];
        c.session = Some(s);
        c.last_zxid = self.model.zxid();
        c.watches.clear();
        s
    }

    /// A request reaches the server.
    pub(crate) fn server_receive(&mut self, i: usize) {
        let Some(p) = self.clients[i].link.to_server.pop_front() else {
            return;
        };
        let alive = self.model.session_is_alive(p.session);
        let mut result = if alive {
            self.apply_request(p.session, &p.request.op)
        } else {
            Err(ZkError::SessionExpired)
        };
        if self.cfg.shuffle_children {
            if let Ok(Reply::Children(names)) = &mut result {
                self.clients[i].rng.shuffle(names);
            }
        }
        self.trace_with(Some(i), || {
            let (id, op) = (p.request.id, &p.request.op);
            format!("server applies {id} {op:?} -> {result:?}")
        });
        // The server sends the watch firings a transaction causes before its reply.
        self.route_notifications();
        let now = self.now;
        let latency = self.cfg.latency;
        let c = &mut self.clients[i];
        if c.conn == ConnectionView::Connected && c.session == Some(p.session) {
            let delay = latency.sample(&mut c.rng);
            c.link.deliver(
                now,
                delay,
                Message::Reply {
                    id: p.request.id,
                    result,
                    zxid: self.model.zxid(),
                },
            );
        }
    }

    /// Applies one request of a live session, auditing fenced writes (see
    /// [`Sim::audit_fenced_writes`]) at the instant they apply.
    pub(crate) fn apply_request(&mut self, session: i64, op: &Op) -> Result<Reply, ZkError> {
        let writes = if self.cfg.check_invariants {
            self.checker.audited_writes(op)
        } else {
            Vec::new()
        };
        if writes.is_empty() {
            return self.model.apply(session, op);
        }
        let holds: Vec<Result<(), String>> = writes
            .iter()
            .map(|(path, data)| self.checker.writer_holds(session, path, data, &self.model))
            .collect();
        let result = self.model.apply(session, op);
        if result.is_ok() {
            let r = self.checker.on_fenced_applied(writes, holds);
            self.check(r);
        }
        result
    }

    /// Hands the model's watch firings to the connections they are for; a firing for
    /// a session whose connection is not up is lost, as on a real server.
    pub(crate) fn route_notifications(&mut self) {
        if !self.model.has_notifications() {
            return;
        }
        let now = self.now;
        let latency = self.cfg.latency;
        for n in self.model.take_notifications() {
            let Some(i) = self.sessions.owner(n.session) else {
                continue;
            };
            let c = &mut self.clients[i];
            if c.conn == ConnectionView::Connected && c.session == Some(n.session) {
                self.trace_with(Some(i), || {
                    format!("server: watch {:?} {} fires", n.kind, n.path)
                });
                let c = &mut self.clients[i];
                let delay = latency.sample(&mut c.rng);
                c.link.deliver(
                    now,
                    delay,
                    Message::Watch {
                        path: n.path,
                        kind: n.kind,
                    },
                );
            } else {
                c.counters.notifications_lost += 1;
                self.trace_with(Some(i), || {
                    format!("watch {:?} {} lost (connection down)", n.kind, n.path)
                });
            }
        }
    }

    /// The session tracker expires `session` (or a fault does): its ephemerals go.
    pub(crate) fn server_expire(&mut self, session: i64) {
        let Some(owner) = self.sessions.expired(session) else {
            return;
        };
        let deleted = self.model.expire_session(session);
        self.clients[owner].counters.expirations += 1;
        self.trace_with(Some(owner), || {
            format!("server expires session {session:#x}, deleting {deleted:?}")
        });
        self.route_notifications();
    }

    /// One pass of the container reaper.
    pub(crate) fn server_reap(&mut self) -> Vec<String> {
        let reaped = self.model.reap_containers();
        if !reaped.is_empty() {
            self.trace_with(None, || format!("reaper deletes containers {reaped:?}"));
        }
        self.route_notifications();
        reaped
    }
}
