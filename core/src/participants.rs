//! Who takes part in locks, as the core reports them: the holders and waiters of a
//! lock ([`Participants`], from an inspection) and the nodes of a deadlock cycle
//! ([`CycleNode`], from deadlock detection).

use crate::ids::FencingToken;
use crate::names::{NameScheme, NodeKind};

/// One participant of a lock, as [`LockEvent::Participants`](crate::LockEvent::Participants) reports it.
#[derive(Clone, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub struct Participant {
    /// The node's name in its directory ([`dir`](Self::dir)).
    pub node: String,
    /// The directory the node is in: the lock path, or for a semaphore in
    /// Curator's or kazoo's layout its queue (`<path>/locks`, `<path>-__lock__`)
    /// or its lease pool (`<path>/leases`, the path itself).
    pub dir: String,
    /// What it asks for.
    pub kind: NodeKind,
    /// A semaphore node's permit count, when its name carries it (zklock's native
    /// scheme does; Curator's semaphore nodes do not).
    pub permits: Option<u32>,
    /// The naming scheme it was created with (zklock, Curator or kazoo).
    pub scheme: NameScheme,
    /// The server's sequence number.
    pub sequence: i32,
    /// The owner written in its data, if any (see [`LockSpec::owner`](crate::LockSpec::owner)).
    pub owner: Option<String>,
    /// The session that owns the node (its `ephemeralOwner`).
    pub session: i64,
    /// When it was created (the node's `ctime`, ms since the epoch; 0 when the
    /// client library gives none).
    pub ctime: i64,
    /// Its fencing token (`czxid`); also its age in zxids: higher is younger.
    pub token: FencingToken,
    /// The user's data (without zklock's owner header).
    pub data: Vec<u8>,
    /// For a waiter: the lower nodes that block it under its recipe's rule (all of
    /// them must go for a lock, all but `permits - 1` for a semaphore). Empty for a
    /// holder.
    pub waits_for: Vec<String>,
    /// Full paths of nodes where this node's owner waits, as published by deadlock
    /// detection (empty unless its owner has waited longer than `detect_after`).
    pub owner_waits_at: Vec<String>,
}

/// Holders and waiters of one lock, oldest first.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
#[non_exhaustive]
pub struct Participants {
    /// The lock directory.
    pub path: String,
    /// The participants holding the lock, in queue order.
    pub holders: Vec<Participant>,
    /// The participants waiting, in queue order.
    pub waiters: Vec<Participant>,
    /// Children that match no naming scheme (ignored).
    pub foreign: usize,
}

/// One node of a deadlock cycle, as [`FailReason::Deadlock`](crate::FailReason::Deadlock)
/// reports it. The cycle lists nodes in wait order: each waits for the next (a
/// waiting node for its blocker, a held node for the node its owner waits at), and
/// the last for the first.
#[derive(Clone, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub struct CycleNode {
    /// Full path of the node.
    pub node: String,
    /// Its owner, when its data names one.
    pub owner: Option<String>,
    /// Whether it holds its lock (else it waits).
    pub holds: bool,
    /// Its `czxid`: the fencing token of a holder, the age of a waiter.
    pub token: FencingToken,
    /// The session that owns it.
    pub session: i64,
    /// When it was created (`ctime`, ms since the epoch; 0 when unknown): its age.
    pub ctime: i64,
}
