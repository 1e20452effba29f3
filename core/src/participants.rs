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
    /// Whether the lock directory existed when it was listed (an empty queue
    /// may be a directory that is not there: a mistyped path).
    pub exists: bool,
    /// The last break of this lock by an operator, from the record a break
    /// leaves (`<path>/zkl-broken`, see [`Session::break_node`](crate::Session::break_node)).
    pub last_break: Option<LastBreak>,
}

/// The record of the last break of a lock ([`Participants::last_break`]): which
/// node an operator deleted, with which token, by whom and when.
#[derive(Clone, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub struct LastBreak {
    /// The name of the node that was broken.
    pub node: String,
    /// Its fencing token (`czxid`).
    pub token: FencingToken,
    /// The session that owned it.
    pub session: i64,
    /// Who broke it, as the breaker said (e.g. `user@host`), if it did.
    pub by: Option<String>,
    /// When (the record's `mtime`, the server's clock, ms since the epoch).
    pub at: i64,
}

/// First line of a break record: what the node holds.
const RECORD_HEADER: &str = "zklock-break 1";

impl LastBreak {
    /// The record a break stores: the header, then `key=value` lines (newlines
    /// in `by` become spaces).
    pub(crate) fn record(
        node: &str,
        token: FencingToken,
        session: i64,
        by: Option<&str>,
    ) -> Vec<u8> {
        let mut text = format!(
            "{RECORD_HEADER}\nnode={node}\ntoken={}\nsession={session}\n",
            token.0
        );
        if let Some(by) = by {
            text.push_str(&format!("by={}\n", by.replace(['\n', '\r'], " ")));
        }
        text.into_bytes()
    }

    /// Reads a record stored at `mtime`; `None` if it is not one.
    pub(crate) fn parse(data: &[u8], mtime: i64) -> Option<LastBreak> {
        let text = std::str::from_utf8(data).ok()?;
        let mut lines = text.lines();
        if lines.next()? != RECORD_HEADER {
            return None;
        }
        let (mut node, mut token, mut session, mut by) = (None, None, 0, None);
        for line in lines {
            match line.split_once('=') {
                Some(("node", v)) => node = Some(v.to_owned()),
                Some(("token", v)) => token = v.parse().ok().map(FencingToken),
                Some(("session", v)) => session = v.parse().unwrap_or(0),
                Some(("by", v)) => by = Some(v.to_owned()),
                _ => {}
            }
        }
        Some(LastBreak {
            node: node?,
            token: token?,
            session,
            by,
            at: mtime,
        })
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_break_record_reads_back() {
        let data = LastBreak::record(
            "zkl-x-write-0000000001",
            FencingToken(42),
            7,
            Some("ops@db1\nx"),
        );
        let back = LastBreak::parse(&data, 1_000).unwrap();
        assert_eq!(back.node, "zkl-x-write-0000000001");
        assert_eq!(back.token, FencingToken(42));
        assert_eq!(back.session, 7);
        assert_eq!(back.by.as_deref(), Some("ops@db1 x"));
        assert_eq!(back.at, 1_000);
        let anonymous = LastBreak::record("n", FencingToken(1), 0, None);
        assert_eq!(LastBreak::parse(&anonymous, 0).unwrap().by, None);
        assert_eq!(LastBreak::parse(b"something else", 0), None);
        assert_eq!(
            LastBreak::parse(b"zklock-break 1\ntoken=3\n", 0),
            None,
            "no node"
        );
    }
}
