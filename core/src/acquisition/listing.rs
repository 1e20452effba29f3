//! The listing of the lock directory: adopting our node (deleting duplicates),
//! and the set of lower blockers that the window is then chosen from.

use super::{Acquisition, Create, Look, OwnNode, State, DELAY_MARKER, SECTION_MARKER};
use crate::ctx::Ctx;
use crate::event::FailReason;
use crate::names::{parse_participant, relative_sequence, sort_by_sequence, NameScheme, NodeKind};
use crate::output::Progress;
use crate::path::split_parent;
use crate::proto::{Op, Reply, ZkError};
use crate::requests::Purpose;
use crate::spec::Recipe;

impl Acquisition {
    pub(super) fn send_list(&mut self, cx: &mut Ctx) {
        let op = Op::GetChildren {
            path: self.queue.dir.clone(),
        };
        self.queue.list.send(cx, self.id, Purpose::List, op);
    }

    /// See [`Session::look_again`](crate::Session::look_again).
    pub(crate) fn look_again(&mut self, cx: &mut Ctx) {
        if self.state == State::Waiting
            && cx.connected
            && self.node.own.is_some()
            && !self.queue.list.is_pending()
        {
            self.send_list(cx);
        }
    }

    pub(super) fn on_list(&mut self, cx: &mut Ctx, result: Result<Reply, ZkError>) {
        let children = match result {
            Ok(Reply::Children(c)) => c,
            // Not a listing: nothing is awaited any more, so ask again later.
            Ok(_) => return self.trouble(cx, ZkError::Other("unexpected reply".into())),
            Err(ZkError::NoNode) => Vec::new(),
            Err(e) if e.is_connection_loss() => return self.trouble(cx, e),
            Err(e) => {
                if self.state == State::Cleanup {
                    return self.trouble(cx, e);
                }
                return self.fail(cx, FailReason::Zk(e));
            }
        };
        let mut mine: Vec<(i32, String)> = Vec::new();
        let mut others = Vec::new();
        let marker_seen = children.iter().any(|c| c == SECTION_MARKER);
        // Our own markers are neither participants nor foreign.
        for name in children
            .iter()
            .filter(|c| *c != SECTION_MARKER && *c != DELAY_MARKER)
        {
            // Every participant counts, of a scheme zklock does not know too (as
            // an exclusive one: see names::parse_participant); only a known name
            // carries an attempt id that can be ours.
            match parse_participant(name) {
                Some(p) if p.scheme != NameScheme::Other && p.attempt == self.node.attempt => {
                    mine.push((p.seq, name.clone()))
                }
                Some(p) => others.push((p, name)),
                None => cx.stats.foreign_children += 1,
            }
        }
        // Adopt our node. More than one of ours means a create was retried after a
        // connection loss although the first one had been applied: keep the oldest,
        // delete the others.
        if let Some(own) = &self.node.own {
            mine.sort_by_key(|(seq, _)| relative_sequence(*seq, own.seq));
        } else {
            sort_by_sequence(&mut mine, |(seq, _)| *seq);
        }
        let own_name = self
            .node
            .own
            .as_ref()
            .map(|o| split_parent(&o.path).1.to_owned());
        let keep = match &own_name {
            Some(n) => mine.iter().position(|(_, m)| m == n),
            None => (!mine.is_empty()).then_some(0),
        };
        let cleanup = self.state == State::Cleanup;
        for (i, (_, name)) in mine.iter().enumerate() {
            // In cleanup everything of ours goes (our known node by its own delete);
            // otherwise every duplicate but the one we keep. (The path is built
            // only for a node to delete: a listing of one's own node allocates
            // nothing here.)
            let spare = if cleanup {
                let known = self.node.own.as_ref().and_then(|o| {
                    o.path
                        .strip_prefix(self.queue.dir.as_str())
                        .and_then(|rest| rest.strip_prefix('/'))
                });
                known != Some(name.as_str())
            } else {
                Some(i) != keep
            };
            if spare {
                self.node
                    .delete_extra(cx, self.id, format!("{}/{}", self.queue.dir, name));
            }
        }
        if cleanup {
            if self.node.create == Create::Unknown {
                self.node.create = Create::Done;
            }
            return self.continue_cleanup(cx);
        }
        if self.state != State::Waiting {
            return;
        }
        let Some(keep) = keep else {
            return match self.node.create {
                // It existed and is gone: someone deleted it (or the session lost it).
                Create::Done => self.fail(cx, FailReason::NodeDeleted),
                // The create never happened: do it now.
                Create::Unknown | Create::NotSent => {
                    self.node.create = Create::NotSent;
                    self.send_create(cx)
                }
                // Only without FIFO order (a binding that cannot keep it): the
                // listing overtook our create. List again once the create is answered.
                Create::InFlight(_) => self.queue.relist_after_create = true,
            };
        };
        let (seq, name) = mine[keep].clone();
        if self.node.own.is_none() {
            let path = format!("{}/{}", self.queue.dir, name);
            cx.progress(self.id, Progress::Created { node: path.clone() });
            self.node.own = Some(OwnNode {
                path,
                seq,
                stat: None,
            });
        }
        // A binding may hand us the listing before the create's reply, although
        // the server answered the create first: that reply, right behind, brings
        // our node's stat, so it is not read for it (a grant waits in Granting).
        let create_in_flight = matches!(self.node.create, Create::InFlight(_));
        if !create_in_flight {
            self.node.create = Create::Done;
        }
        if !create_in_flight || self.spec.watches_node() {
            self.node.ensure_read(cx, self.id, &self.spec);
        }
        let recipe = self.walk_recipe();
        if let Recipe::Semaphore { permits: ours } = recipe {
            let theirs = others.iter().find_map(|(p, _)| match p.permits {
                Some(theirs) if p.kind == NodeKind::Semaphore && theirs != ours => Some(theirs),
                _ => None,
            });
            if let Some(theirs) = theirs {
                return self.fail(cx, FailReason::PermitsMismatch { ours, theirs });
            }
        }
        let mut downgrading = false;
        let mut lower: Vec<(i32, String)> = others
            .into_iter()
            .map(|(p, n)| (relative_sequence(p.seq, seq), p, n))
            .filter(|(rel, p, _)| *rel < 0 && recipe.is_blocked_by(p.kind))
            .filter(|(_, _, n)| {
                let ours = self.detection.downgrade.contains(n);
                downgrading |= ours;
                !ours
            })
            .map(|(rel, _, n)| (rel, n.clone()))
            .collect();
        lower.sort();
        if downgrading && !lower.is_empty() && self.spec.wait {
            // Our owner's write node is still held, and a writer queued between it
            // and us: that writer waits for our owner, we would wait for it.
            let (path, owner) = (self.spec.path.clone(), self.spec.owner.clone());
            return self.fail(
                cx,
                FailReason::SelfDeadlock {
                    path,
                    owner: owner.unwrap_or_default(),
                    held: NodeKind::Write,
                },
            );
        }
        self.queue.lower = lower;
        // A grant straight from this listing knows the marker for free.
        self.holder.set_marker_known(Some(marker_seen));
        self.evaluate(cx, Look::Listing);
    }
}
