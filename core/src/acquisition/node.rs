//! [`Node`]: our node's life, the part of an acquisition that owns its create,
//! the reads of it (stat, data, watch), its delete and the duplicates a retried
//! create left. [`OwnNode`] (our node as far as we know it) is shared with the
//! lease step.

use crate::names::AttemptId;
use crate::proto::{RequestId, Stat};
use crate::requests::InFlight;

/// Our node (or lease node): its path, its sequence and, once read, its stat.
#[derive(Clone, Debug)]
pub(super) struct OwnNode {
    pub(super) path: String,
    pub(super) seq: i32,
    pub(super) stat: Option<Stat>,
}

/// What we know about our `create`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Create {
    /// Not sent yet (not connected when acquired).
    NotSent,
    /// Sent in this connection; the reply will tell.
    InFlight(RequestId),
    /// Sent, but the reply was lost with the connection: the node may exist.
    Unknown,
    /// We saw our node (reply or listing).
    Done,
}

/// Our node's life (see the module docs).
#[derive(Debug)]
pub(super) struct Node {
    /// Our attempt's id, in our node's name: how a listing tells our nodes.
    pub(super) attempt: AttemptId,
    /// The path our sequential node is created at (the sequence is appended).
    pub(super) create_path: String,
    pub(super) create: Create,
    pub(super) own: Option<OwnNode>,
    /// The `getData` on our own node in flight, whose reply we act on.
    pub(super) own_read: InFlight,
    /// A watch on our own node is set (or being set) on the server: by the reads
    /// of our node next in line, after a reconnect, for a spec that watches
    /// ([`crate::spec::LockSpec::watches_node`]) and by a hold that outlives a
    /// sync interval (not by a plain acquisition's read of its token); kept
    /// until the node goes.
    pub(super) own_watched: bool,
    pub(super) delete: InFlight,
    /// A delete of our node went out and its outcome is unknown (in flight at a
    /// disconnect, or failed with a connection loss): it may have been applied, so
    /// a later `NoNode` may be our own doing rather than someone else's.
    pub(super) delete_maybe_applied: bool,
    /// Duplicate nodes of ours still to delete.
    pub(super) extra: Vec<String>,
    /// Creates of the lock directory's containers so far (bounded by the config).
    pub(super) parent_tries: u32,
    /// A revocation request in our node was reported (once per data change).
    pub(super) revocation_seen: bool,
}

impl Node {
    pub(super) fn new(attempt: AttemptId, create_path: String) -> Self {
        Node {
            attempt,
            create_path,
            create: Create::NotSent,
            own: None,
            own_read: InFlight::default(),
            own_watched: false,
            delete: InFlight::default(),
            delete_maybe_applied: false,
            extra: Vec::new(),
            parent_tries: 0,
            revocation_seen: false,
        }
    }

    // Getters.

    /// The full path of our node, once known.
    pub(super) fn path(&self) -> Option<&str> {
        self.own.as_ref().map(|o| o.path.as_str())
    }

    // Mutators.

    /// The connection dropped (or a recovery starts): the read, watch and delete in
    /// flight are gone with it. A create in flight may have been applied, and so
    /// may a delete.
    pub(super) fn forget(&mut self) {
        self.own_read.forget();
        self.own_watched = false;
        self.delete_maybe_applied |= self.delete.forget();
        if let Create::InFlight(_) = self.create {
            self.create = Create::Unknown;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::LockId;
    use crate::proto::Op;
    use crate::requests::Purpose;

    #[test]
    fn forget_leaves_what_may_have_been_applied_unknown() {
        let mut session = crate::ctx::tests::Session::default();
        let lock = LockId(1);
        let mut node = Node::new(AttemptId(7), "/l/n-".into());
        node.create = Create::InFlight(RequestId(1));
        node.own = Some(OwnNode {
            path: "/l/n-0000000001".into(),
            seq: 1,
            stat: None,
        });
        let read = Op::GetData {
            path: "/l/n-0000000001".into(),
            watch: true,
        };
        let delete = Op::Delete {
            path: "/l/n-0000000001".into(),
            version: None,
        };
        assert!(node
            .own_read
            .send(&mut session.cx(), lock, Purpose::OwnData, read));
        node.own_watched = true;
        assert!(node
            .delete
            .send(&mut session.cx(), lock, Purpose::DeleteOwn, delete));
        node.forget();
        assert_eq!(node.create, Create::Unknown);
        assert!(!node.own_read.is_pending() && !node.own_watched);
        assert!(!node.delete.is_pending());
        assert!(
            node.delete_maybe_applied,
            "a delete in flight may have been applied"
        );
        assert_eq!(
            node.path(),
            Some("/l/n-0000000001"),
            "the node itself is kept"
        );
        // Nothing in flight: forgetting again changes nothing.
        node.delete_maybe_applied = false;
        node.create = Create::Done;
        node.forget();
        assert!(!node.delete_maybe_applied);
        assert_eq!(node.create, Create::Done);
    }
}
