//! Looking into a running [`Sim`]: time, the tree, clients, events, counters.

use crate::ids::ClientId;
use crate::model::{NodeInfo, ZkModel};
use crate::sim::client::{ConnectionView, EventRecord};
use crate::sim::config::SimConfig;
use crate::sim::counters::Counters;
use crate::sim::scheduler::Sim;
use lock_core::{Grant, LockEvent, LockId, LockState, Session, Timestamp};

impl Sim {
    /// The current virtual time.
    pub fn now(&self) -> Timestamp {
        self.now
    }

    /// Wakeups processed so far.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// The seed.
    pub fn seed(&self) -> u64 {
        self.cfg.seed
    }

    /// The configuration.
    pub fn config(&self) -> &SimConfig {
        &self.cfg
    }

    /// The server's tree, sessions and watches.
    pub fn model(&self) -> &ZkModel {
        &self.model
    }

    /// Child names of `path` in name order (empty if it does not exist).
    pub fn children(&self, path: &str) -> Vec<String> {
        self.model.children(path).unwrap_or_default()
    }

    /// A node's data and stat.
    pub fn get(&self, path: &str) -> Option<NodeInfo> {
        self.model.get(path)
    }

    /// The clients, in the order added.
    pub fn clients(&self) -> impl Iterator<Item = ClientId> {
        (0..self.clients.len()).map(ClientId)
    }

    /// A client's core, for its state and statistics.
    pub fn core(&self, client: ClientId) -> &Session {
        self.clients[client.0].core.session()
    }

    /// The server session a client uses (or last used).
    pub fn session_id(&self, client: ClientId) -> Option<i64> {
        self.clients[client.0].session
    }

    /// Watch notifications on their way to `client`.
    pub fn notifications_in_flight(&self, client: ClientId) -> usize {
        self.clients[client.0].link.notifications_in_flight()
    }

    /// Requests `client` sent on its current connection that have no reply yet.
    pub fn requests_in_flight(&self, client: ClientId) -> usize {
        self.clients[client.0].pending.len()
    }

    /// The nodes under `lock_path` owned by `client`'s current session, in name order.
    pub fn owned_nodes(&self, client: ClientId, lock_path: &str) -> Vec<String> {
        let Some(session) = self.clients[client.0].session else {
            return Vec::new();
        };
        self.children(lock_path)
            .into_iter()
            .map(|name| format!("{lock_path}/{name}"))
            .filter(|p| {
                self.model
                    .stat(p)
                    .is_some_and(|s| s.ephemeral_owner == session)
            })
            .collect()
    }

    /// Whether the network is quiet: nothing in flight, no connection change
    /// pending, every client connected (or closed). What [`Sim::settle`] runs to.
    pub fn is_quiet(&self) -> bool {
        self.clients.iter().all(|c| c.is_quiet())
    }

    /// Whether the network is quiet and every client's core is idle (no acquisition,
    /// observer or revocation, no cleanup left). What [`Sim::run_until_idle`] runs to.
    pub fn is_idle(&self) -> bool {
        self.clients
            .iter()
            .all(|c| c.is_quiet() && c.core.is_idle())
    }

    /// Whether a client's connection is up.
    pub fn is_connected(&self, client: ClientId) -> bool {
        self.clients[client.0].conn == ConnectionView::Connected
    }

    /// Every event reported to `client`, in order, with timestamps.
    pub fn events(&self, client: ClientId) -> &[EventRecord] {
        &self.clients[client.0].events
    }

    /// Every step (the core's [`Progress`](lock_core::Progress)) reported to a
    /// session-face `client`, in order, with timestamps (none for a client of the
    /// user face, whose lock-client keeps them).
    pub fn progress(&self, client: ClientId) -> &[crate::ProgressRecord] {
        &self.clients[client.0].progress
    }

    /// Every event of every client, in order.
    pub fn all_events(&self) -> &[EventRecord] {
        &self.feed_log
    }

    /// The events of one acquisition, in order.
    pub fn lock_events(&self, client: ClientId, lock: LockId) -> Vec<LockEvent> {
        self.events(client)
            .iter()
            .filter(|r| r.lock == lock)
            .map(|r| r.event.clone())
            .collect()
    }

    /// What the core says an acquisition is doing (`None` once ended).
    pub fn state(&self, client: ClientId, lock: LockId) -> Option<LockState> {
        self.clients[client.0].core.state(lock)
    }

    /// Whether `client` holds `lock` and trusts it (acquired, not suspended, not ended).
    pub fn holds(&self, client: ClientId, lock: LockId) -> bool {
        self.state(client, lock) == Some(LockState::Held)
    }

    /// The grant of an acquisition, once acquired.
    pub fn grant(&self, client: ClientId, lock: LockId) -> Option<Grant> {
        self.events(client).iter().find_map(|r| match &r.event {
            LockEvent::Acquired(g) if r.lock == lock => Some(g.clone()),
            _ => None,
        })
    }

    /// The terminal event of an acquisition, once it ended.
    pub fn outcome(&self, client: ClientId, lock: LockId) -> Option<&LockEvent> {
        self.events(client)
            .iter()
            .find(|r| r.lock == lock && r.event.is_terminal())
            .map(|r| &r.event)
    }

    /// A client's traffic counters.
    pub fn counters(&self, client: ClientId) -> Counters {
        self.clients[client.0].counters
    }

    /// The traffic counters of all clients added up.
    pub fn total_counters(&self) -> Counters {
        let mut total = Counters::default();
        for c in &self.clients {
            total += c.counters;
        }
        total
    }

    /// Sets every counter to zero.
    pub fn reset_counters(&mut self) {
        for c in &mut self.clients {
            c.counters = Counters::default();
        }
    }

    /// Faults injected so far (random and explicit).
    pub fn faults_injected(&self) -> u64 {
        self.faults_injected
    }
}
