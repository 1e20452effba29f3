//! The listing of the pool (leaving a children watch): finding our lease nodes,
//! counting the pool, and what cleanup still has to find.

use super::{Create, Layout, Lease, LeaseVerdict};
use crate::acquisition::node::OwnNode;
use crate::ctx::Ctx;
use crate::event::FailReason;
use crate::names::{parse_kazoo_lease, parse_name, NameScheme, NodeKind};
use crate::proto::{Op, Reply, ZkError};
use crate::requests::Purpose;

impl Lease {
    pub(super) fn send_list(&mut self, cx: &mut Ctx, id: crate::ids::LockId) {
        let op = Op::WatchChildren {
            path: self.pool.clone(),
        };
        self.list.send(cx, id, Purpose::LeaseList, op);
    }

    /// The names of our lease nodes in a listing of the pool.
    fn ours<'a>(&self, children: &'a [String]) -> Vec<(i32, &'a String)> {
        let mut mine: Vec<(i32, &String)> = children
            .iter()
            .filter_map(|c| match self.layout {
                Layout::Curator => parse_name(c)
                    .filter(|p| {
                        p.scheme == NameScheme::Curator
                            && p.kind == NodeKind::Semaphore
                            && p.attempt == self.attempt
                    })
                    .map(|p| (p.seq, c)),
                Layout::Kazoo => (parse_kazoo_lease(c) == Some(self.attempt)).then_some((0, c)),
            })
            .collect();
        crate::names::sort_by_sequence(&mut mine, |(seq, _)| *seq);
        mine
    }

    /// A listing of the pool (which left a children watch on it).
    pub(super) fn on_list(
        &mut self,
        cx: &mut Ctx,
        id: crate::ids::LockId,
        result: Result<Reply, ZkError>,
        cleanup: bool,
    ) -> LeaseVerdict {
        let children = match result {
            Ok(Reply::Children(c)) => c,
            Ok(_) => return LeaseVerdict::Trouble(ZkError::unexpected_reply()),
            Err(ZkError::NoNode) => Vec::new(),
            Err(e) if e.is_connection_loss() => return LeaseVerdict::Trouble(e),
            Err(e) if cleanup => return LeaseVerdict::Trouble(e),
            Err(e) => return LeaseVerdict::Fail(FailReason::Zk(e)),
        };
        if !cleanup {
            // The children watch this listing left is armed from now on. A firing
            // delivered meanwhile (an earlier watch of this session on the pool,
            // set by another task or an earlier listing, fired by a change the
            // listing already shows) took our entry in the watch index with it:
            // put it back, or the next change would reach nobody.
            cx.watches.add(id, &self.pool, None);
        }
        let mine = self.ours(&children);
        let pool = self.pool.clone();
        let full = |name: &str| format!("{pool}/{name}");
        if cleanup {
            // Looking for a lease node whose create's reply was lost: all of ours go.
            if self.create == Create::Unknown {
                self.create = Create::Done;
            }
            self.spare
                .extend(mine.iter().map(|(_, n)| full(n.as_str())));
            return LeaseVerdict::Pending;
        }
        // Keep the node we know, else the oldest of ours; the others are
        // duplicates of a create retried after a connection loss.
        let known = self.node.as_ref().map(|n| n.path.clone());
        let keep = match &known {
            Some(k) => mine.iter().position(|(_, n)| *full(n) == **k),
            None => (!mine.is_empty()).then_some(0),
        };
        for (i, (_, name)) in mine.iter().enumerate() {
            if Some(i) != keep {
                self.spare.push(full(name));
            }
        }
        match keep {
            Some(i) => {
                if self.node.is_none() {
                    let (seq, name) = mine[i];
                    self.node = Some(OwnNode::unread(full(name), seq));
                }
                if !matches!(self.create, Create::InFlight(_)) {
                    self.create = Create::Done;
                }
                // Holding one already (found again after a lost reply): kazoo
                // holds at once ("do we already have a lease?"); Curator counts.
                let counted = match self.layout {
                    Layout::Kazoo => true,
                    Layout::Curator => children.len() <= self.permits as usize,
                };
                if counted {
                    LeaseVerdict::Hold
                } else {
                    LeaseVerdict::Full
                }
            }
            None => {
                if let Create::InFlight(_) = self.create {
                    // Only out of FIFO order: list again once the create is answered.
                    self.relist_after_create = true;
                    return LeaseVerdict::Pending;
                }
                // Not there: never made, or gone (deleted by hand); Curator then
                // starts over with a new node, as kazoo does.
                self.node = None;
                self.create = Create::NotSent;
                match self.layout {
                    Layout::Curator => {
                        self.send_create(cx, id);
                        self.send_list(cx, id);
                        LeaseVerdict::Pending
                    }
                    Layout::Kazoo if children.len() < self.permits as usize => {
                        self.send_create(cx, id);
                        LeaseVerdict::Pending
                    }
                    Layout::Kazoo => LeaseVerdict::Full,
                }
            }
        }
    }

    /// Whether cleanup has nothing more to find (a create in flight or lost may
    /// still have made a node). Sends the listing that finds a lost one.
    pub(in crate::acquisition) fn cleanup_settled(
        &mut self,
        cx: &mut Ctx,
        id: crate::ids::LockId,
    ) -> bool {
        match self.create {
            Create::InFlight(_) => false,
            Create::Unknown => match self.layout {
                // The name is known: just delete it (no node is fine).
                Layout::Kazoo => {
                    self.create = Create::Done;
                    self.spare.push(self.create_path.clone());
                    true
                }
                Layout::Curator => {
                    if !self.list.is_pending() {
                        self.send_list(cx, id);
                    }
                    false
                }
            },
            Create::NotSent | Create::Done => true,
        }
    }
}
