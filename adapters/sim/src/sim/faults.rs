//! Faults: seeded random ones configured by [`FaultConfig`] (`fault_config.rs`), and explicit ones for
//! tests ([`Sim::disconnect`], [`Sim::partition`], [`Sim::expire_session`],
//! [`Sim::admin_delete`], ...).
//!
//! Every fault is one ZooKeeper can really produce. In particular a watch firing is
//! only ever lost the way it is lost in ZooKeeper: in flight when a connection drops
//! (or sent into a connection that silently stopped working).

use crate::ids::ClientId;
use crate::sim::binding::Break;
use crate::sim::client::ConnectionView;
use crate::sim::fault_config::{FaultConfig, InFlight};
use crate::sim::scheduler::Sim;
use lock_core::names::parse_name;
use lock_core::{CreateMode, Timestamp, ZkError};
use std::time::Duration;

impl Sim {
    /// Resets `client`'s connection; in-flight requests reach the server or not by a
    /// seeded choice, replies and notifications in flight are lost, and the client
    /// notices at once and reconnects after a reconnect delay. Returns false if it
    /// was not connected.
    pub fn disconnect(&mut self, client: ClientId) -> bool {
        self.disconnect_with(client, InFlight::Seeded)
    }

    /// [`Sim::disconnect`] with an explicit choice for the requests in flight.
    pub fn disconnect_with(&mut self, client: ClientId, in_flight: InFlight) -> bool {
        let applied = match in_flight {
            InFlight::Applied => Some(usize::MAX),
            InFlight::Lost => Some(0),
            InFlight::First(n) => Some(n),
            InFlight::Seeded => None,
        };
        self.faults_injected += 1;
        let r = self.break_link(client.0, Break::Reset, applied);
        self.after_call();
        r
    }

    /// Cuts `client` off for `duration`: every packet either way vanishes (requests in
    /// flight reach the server or not, seeded). The client notices within 2/3 of its
    /// session timeout and keeps trying to reconnect; if the partition outlasts the
    /// session timeout, the server expires the session.
    pub fn partition(&mut self, client: ClientId, duration: Duration) -> bool {
        self.faults_injected += 1;
        let until = self.now + duration;
        let r = self.break_link(client.0, Break::Blackhole { until }, None);
        self.after_call();
        r
    }

    /// Ends `client`'s partition now (its next reconnect attempt succeeds).
    pub fn heal(&mut self, client: ClientId) {
        let now = self.now;
        let c = &mut self.clients[client.0];
        c.partition_until = None;
        if let ConnectionView::Connecting { at } = c.conn {
            if at > now && at != Timestamp::MAX {
                c.conn = ConnectionView::Connecting { at: at.min(now) };
            }
        }
    }

    /// Ends every partition.
    pub fn heal_all(&mut self) {
        for i in 0..self.clients.len() {
            self.heal(ClientId(i));
        }
    }

    /// Delays `client`'s next reconnect attempt by at least `d`.
    pub fn delay_reconnect(&mut self, client: ClientId, d: Duration) {
        let until = self.now + d;
        let c = &mut self.clients[client.0];
        c.partition_until = Some(c.partition_until.map_or(until, |t| t.max(until)));
    }

    /// The server expires `client`'s session now (its ephemeral nodes go) and closes
    /// its connection; the client notices at once (also a partitioned one: the
    /// expiry is an event it is told of, unlike a silent partition), and learns of
    /// the expiry when it reconnects. Returns false if the session was not alive.
    pub fn expire_session(&mut self, client: ClientId) -> bool {
        let i = client.0;
        let Some(s) = self.clients[i]
            .session
            .filter(|s| self.model.session_is_alive(*s))
        else {
            return false;
        };
        self.faults_injected += 1;
        let connected = matches!(
            self.clients[i].conn,
            ConnectionView::Connected | ConnectionView::Blackholed { .. }
        );
        if connected {
            // Nothing more gets through on this connection.
            self.clients[i].conn = ConnectionView::Connecting { at: Timestamp::MAX };
        }
        self.checker.on_forced_expiry(s);
        self.server_expire(s);
        if connected {
            self.clients[i].last_contact = self.now;
            self.notice_disconnect(i);
        }
        self.after_call();
        true
    }

    /// Closes `client` for good: its session ends on the server and its core hears
    /// `Closed`.
    pub fn close(&mut self, client: ClientId) {
        let i = client.0;
        if let Some(s) = self.clients[i].session {
            if self.sessions.contains(s) {
                self.server_expire(s);
            }
        }
        let c = &mut self.clients[i];
        c.conn = ConnectionView::Closed;
        c.link.cut();
        c.pending.clear();
        self.feed(
            i,
            lock_core::Input::Session(lock_core::SessionEvent::Closed),
        );
        self.after_call();
    }

    /// Resets `client`'s connection if a watch notification is in flight to it (the
    /// only way ZooKeeper loses one). Returns how many were lost.
    pub fn lose_notifications(&mut self, client: ClientId) -> usize {
        let n = self.clients[client.0].link.notifications_in_flight();
        if n > 0 {
            self.disconnect(client);
        }
        n
    }

    /// An administrator's `create` (no session: no watches, no ephemerals).
    pub fn admin_create(
        &mut self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
    ) -> Result<String, ZkError> {
        let r = self
            .model
            .create(crate::model::NO_SESSION, path, data, mode)
            .map(|(p, _)| p);
        if let Ok(p) = &r {
            self.checker.on_admin_marker(p, true);
        }
        self.route_notifications();
        self.after_call();
        r
    }

    /// An administrator deletes a node (for example somebody's lock node). A holder
    /// of that node is no longer counted as a trusted holder by the invariants.
    pub fn admin_delete(&mut self, path: &str) -> Result<(), ZkError> {
        self.faults_injected += 1;
        self.trace_with(None, || format!("admin deletes {path}"));
        let r = self.model.delete(crate::model::NO_SESSION, path, None);
        if r.is_ok() {
            self.checker.on_admin_delete(path);
        }
        self.route_notifications();
        self.after_call();
        r
    }

    /// An administrator sets a node's data (`b"__REVOKE__"` asks its holder to let go).
    pub fn admin_set_data(&mut self, path: &str, data: &[u8]) -> Result<(), ZkError> {
        self.trace_with(None, || format!("admin sets data of {path}"));
        let r = self
            .model
            .set_data(crate::model::NO_SESSION, path, data, None)
            .map(|_| ());
        self.route_notifications();
        self.after_call();
        r
    }

    /// Sets a node's child version: the next sequence number handed out under it.
    pub fn set_cversion(&mut self, path: &str, cversion: i32) -> Result<(), ZkError> {
        self.model.set_cversion(path, cversion)
    }

    /// Runs one pass of the container reaper now.
    pub fn reap_containers(&mut self) -> Vec<String> {
        let reaped = self.server_reap();
        self.after_call();
        reaped
    }

    /// Replaces the random-fault settings (takes effect from the next fault).
    pub fn set_faults(&mut self, faults: FaultConfig) {
        self.next_fault = faults
            .mean_interval
            .map(|m| self.now + self.rng.duration(Duration::ZERO, m * 2));
        self.cfg.faults = faults;
    }

    /// Stops random faults (explicit ones still work) and ends every partition.
    pub fn stop_faults(&mut self) {
        let reconnect = self.cfg.faults.reconnect_delay;
        self.set_faults(FaultConfig {
            reconnect_delay: reconnect,
            ..FaultConfig::none()
        });
        self.heal_all();
    }

    /// Every participant node under the lock paths in use.
    fn lock_nodes(&self) -> Vec<String> {
        let mut out = Vec::new();
        for path in self.checker.lock_paths() {
            for name in self.model.children(&path).unwrap_or_default() {
                if parse_name(&name).is_some() {
                    out.push(format!("{path}/{name}"));
                }
            }
        }
        out
    }

    /// Injects one random fault (the scheduler calls this at random times).
    pub(crate) fn random_fault(&mut self) {
        let f = self.cfg.faults.clone();
        let Some(mean) = f.mean_interval else {
            self.next_fault = None;
            return;
        };
        self.next_fault = Some(self.now + self.rng.duration(Duration::ZERO, mean * 2));
        if self.clients.is_empty() {
            return;
        }
        let weights = [
            f.disconnect,
            f.partition,
            f.long_partition,
            f.expire,
            f.admin_delete,
            f.revoke,
            f.lose_notification,
        ];
        let client = ClientId(self.rng.index(self.clients.len()));
        let timeout = self.clients[client.0].cfg.session_timeout;
        match self.rng.weighted(&weights) {
            Some(0) => {
                self.trace_with(Some(client.0), || "FAULT disconnect".to_owned());
                self.disconnect(client);
            }
            Some(k @ (1 | 2)) => {
                let (lo, hi) = if k == 1 {
                    f.partition_len
                } else {
                    f.long_partition_len
                };
                let d = self.rng.duration(timeout.mul_f64(lo), timeout.mul_f64(hi));
                self.trace_with(Some(client.0), || format!("FAULT partition for {d:?}"));
                self.partition(client, d);
            }
            Some(3) => {
                self.trace_with(Some(client.0), || "FAULT session expiry".to_owned());
                self.expire_session(client);
            }
            Some(k @ (4 | 5)) => {
                let nodes = self.lock_nodes();
                if nodes.is_empty() {
                    return;
                }
                let node = nodes[self.rng.index(nodes.len())].clone();
                if k == 4 {
                    let _ = self.admin_delete(&node);
                } else {
                    let _ = self.admin_set_data(&node, b"__REVOKE__");
                }
            }
            Some(6) => {
                let busy: Vec<ClientId> = self
                    .clients()
                    .filter(|c| self.clients[c.0].link.notifications_in_flight() > 0)
                    .collect();
                if let Some(&c) = busy.get(self.rng.index(busy.len().max(1))) {
                    self.trace_with(Some(c.0), || {
                        "FAULT lose notifications in flight".to_owned()
                    });
                    self.lose_notifications(c);
                }
            }
            _ => {}
        }
    }
}
