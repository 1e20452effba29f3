//! What the simulated network carried: requests by operation, replies and watch
//! notifications, per client and in total. Benchmarks and round-trip tests read
//! these (the sim's equivalent of the server's `zk_packets_received`).

use lock_core::Op;

/// The kind of a ZooKeeper request.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
#[non_exhaustive]
pub enum OpKind {
    /// `create`.
    Create,
    /// `getChildren` (with or without a watch).
    GetChildren,
    /// `getData`.
    GetData,
    /// `setData`.
    SetData,
    /// `delete`.
    Delete,
    /// `multi`.
    Multi,
    /// `removeWatches`.
    RemoveWatch,
    /// `sync`.
    Sync,
    /// Anything else.
    Other,
}

impl OpKind {
    /// The kind of `op`.
    pub fn of(op: &Op) -> OpKind {
        match op {
            Op::Create { .. } => OpKind::Create,
            Op::GetChildren { .. } | Op::WatchChildren { .. } => OpKind::GetChildren,
            Op::GetData { .. } => OpKind::GetData,
            Op::SetData { .. } => OpKind::SetData,
            Op::Delete { .. } => OpKind::Delete,
            Op::Multi(_) => OpKind::Multi,
            Op::RemoveWatch { .. } => OpKind::RemoveWatch,
            Op::Sync { .. } => OpKind::Sync,
            _ => OpKind::Other,
        }
    }
}

/// Traffic counters. Add them up with `+=`; reset with [`Sim::reset_counters`](crate::Sim::reset_counters).
///
/// ```
/// use zklock::sim::{Counters, OpKind};
/// let mut c = Counters::default();
/// c.count_request(OpKind::Create);
/// c.count_request(OpKind::GetChildren);
/// assert_eq!(c.requests(), 2);
/// assert_eq!(c.requests_of(OpKind::Create), 1);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Default, Debug)]
#[non_exhaustive]
pub struct Counters {
    /// `create` requests sent.
    pub create: u64,
    /// `getChildren` requests sent.
    pub get_children: u64,
    /// `getData` requests sent.
    pub get_data: u64,
    /// `setData` requests sent.
    pub set_data: u64,
    /// `delete` requests sent.
    pub delete: u64,
    /// `multi` requests sent.
    pub multi: u64,
    /// `removeWatches` requests sent.
    pub remove_watch: u64,
    /// `sync` requests.
    pub sync: u64,
    /// Other requests sent.
    pub other: u64,
    /// Replies delivered to the client (the network's, not local connection-loss errors).
    pub replies: u64,
    /// Watch notifications delivered to the client.
    pub notifications: u64,
    /// Watch notifications lost in flight when a connection dropped.
    pub notifications_lost: u64,
    /// Times the client reported `Disconnected`.
    pub disconnects: u64,
    /// Times the client reconnected to its previous session.
    pub reconnects: u64,
    /// Sessions of this client that expired (or were closed) on the server.
    pub expirations: u64,
}

impl Counters {
    /// Counts one request of kind `kind`.
    pub fn count_request(&mut self, kind: OpKind) {
        *self.slot(kind) += 1;
    }

    fn slot(&mut self, kind: OpKind) -> &mut u64 {
        match kind {
            OpKind::Create => &mut self.create,
            OpKind::GetChildren => &mut self.get_children,
            OpKind::GetData => &mut self.get_data,
            OpKind::SetData => &mut self.set_data,
            OpKind::Delete => &mut self.delete,
            OpKind::Multi => &mut self.multi,
            OpKind::RemoveWatch => &mut self.remove_watch,
            OpKind::Sync => &mut self.sync,
            OpKind::Other => &mut self.other,
        }
    }

    /// Requests of one kind.
    pub fn requests_of(&self, kind: OpKind) -> u64 {
        let mut c = *self;
        *c.slot(kind)
    }

    /// All requests sent.
    pub fn requests(&self) -> u64 {
        self.create
            + self.get_children
            + self.get_data
            + self.set_data
            + self.delete
            + self.multi
            + self.remove_watch
            + self.sync
            + self.other
    }
}

add_assign_fields!(Counters: create, get_children, get_data, set_data, delete, multi,
    remove_watch, sync, other, replies, notifications, notifications_lost, disconnects,
    reconnects, expirations);
