//! [`Node`]: our node's life, the part of an acquisition that owns its create,
//! the reads of it (stat, data, watch), its delete and the duplicates a retried
//! create left. [`OwnNode`] (our node as far as we know it) is shared with the
//! lease step.

use crate::ctx::Ctx;
use crate::ctx::InFlight;
use crate::event::{FailReason, LostReason};
use crate::ids::LockId;
use crate::names::{parse_sequence, relative_sequence, sort_by_sequence, AttemptId};
use crate::output::Progress;
use crate::path::split_parent;
use crate::proto::{CreateMode, MultiOp, Op, Reply, RequestId, Stat, ZkError};
use crate::requests::Purpose;
use crate::spec::LockSpec;
use std::sync::Arc;

/// Data a holder finds in its own node when someone asks it to let go: Curator's
/// revocation marker and the ZooKeeper recipe's `unlock`.
const REVOKE_MARKERS: [&[u8]; 2] = [crate::revoke::REVOKE, b"unlock"];

/// What the reply to our create asks of the acquisition.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(super) enum CreateOutcome {
    /// Not the reply to the create in flight: nothing to do.
    Stale,
    /// Our node exists (now [`Node::path`]), with its stat if the reply had it.
    Created { stat: Option<Stat> },
    /// Whether our node exists is unknown (a reply not to the create asked
    /// for): it is looked for by attempt id, as after a connection loss; the
    /// acquisition fails with the reason unless it is cleaning up.
    Unknown(FailReason),
    /// The lock directory (or an ancestor) is missing: not created.
    NoParent,
    /// Refused: not created.
    Failed(FailReason),
    /// Lost with the connection: the node may exist.
    Trouble(ZkError),
}

/// What a read of our node found.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(super) enum ReadOutcome {
    /// Our node, still ours: its data and stat.
    Identity { data: Vec<u8>, stat: Stat },
    /// Gone, or not ours any more.
    Gone(LostReason),
    /// Retry after a pause.
    Trouble(ZkError),
    /// A lasting refusal.
    Failed(ZkError),
}

/// What the reply to our node's delete says.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(super) enum DeleteOutcome {
    /// Our node is gone: deleted by us (or by a delete of ours whose answer
    /// was lost).
    Deleted,
    /// Our node was already gone, and no delete of ours can have done it:
    /// someone else deleted it.
    DeletedByOther,
    /// Lost with the connection: it may have been applied.
    Trouble(ZkError),
    /// Refused (a failed marker of the release's multi is the acquisition's to
    /// read: it gets the whole reply).
    Failed(ZkError),
}

/// Our node (or lease node): its path, its sequence and, once read, its stat.
#[derive(Clone, Debug)]
pub(super) struct OwnNode {
    /// Shared with the grant, and with the session's watch index while our
    /// node is watched: one allocation for the path however many hold it.
    pub(super) path: Arc<str>,
    pub(super) seq: i32,
    pub(super) stat: Option<NodeStat>,
}

/// What an acquisition keeps of its node's [`Stat`]: the token. (The whole
/// `Stat` is 56 bytes, kept for every held lock; the rest is read where it
/// arrives.)
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct NodeStat {
    /// The node's creating zxid: the fencing token.
    pub(super) czxid: i64,
}

impl OwnNode {
    /// Our node at `path`, sequence `seq`, its stat not read yet.
    pub(super) fn unread(path: impl Into<Arc<str>>, seq: i32) -> OwnNode {
        OwnNode {
            path: path.into(),
            seq,
            stat: None,
        }
    }
}

impl From<Stat> for NodeStat {
    fn from(stat: Stat) -> Self {
        NodeStat { czxid: stat.czxid }
    }
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
    /// Its outcome is known: we saw our node (reply or listing), or for a
    /// lease node, also that it is gone.
    Done,
}

/// Our node's life (see the module docs).
#[derive(Debug)]
pub(super) struct Node {
    /// Our attempt's id, in our node's name: how a listing tells our nodes.
    pub(super) attempt: AttemptId,
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
    pub(super) fn new(attempt: AttemptId) -> Self {
        Node {
            attempt,
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
        self.own.as_ref().map(|o| &*o.path)
    }

    /// Whether `data` found in our node asks a `revocable` holder to let go.
    pub(super) fn is_revocation(spec: &LockSpec, data: &[u8]) -> bool {
        spec.revocable && REVOKE_MARKERS.contains(&data)
    }

    // Replies.

    /// The reply to a create of ours at `create_path` (see [`CreateOutcome`]).
    pub(super) fn on_create_reply(
        &mut self,
        cx: &mut Ctx,
        id: LockId,
        request: RequestId,
        result: Result<Reply, ZkError>,
        create_path: &str,
    ) -> CreateOutcome {
        if self.create != Create::InFlight(request) {
            return CreateOutcome::Stale;
        }
        match result {
            Ok(Reply::Created { path, stat }) => {
                let seq = path.strip_prefix(create_path).and_then(parse_sequence);
                let Some(seq) = seq else {
                    // Not the node we asked for (a confused adapter or server): never
                    // adopt, hold or delete it. Identity, if created, is found by attempt
                    // id and removed, as after a connection loss.
                    self.create = Create::Unknown;
                    let reason = format!("unexpected created path {path:?}");
                    return CreateOutcome::Unknown(FailReason::Zk(ZkError::Other(reason)));
                };
                self.create = Create::Done;
                cx.progress(id, Progress::Created { node: path.clone() });
                let own = OwnNode {
                    path: path.into(),
                    seq,
                    stat: stat.map(NodeStat::from),
                };
                self.own = Some(own);
                CreateOutcome::Created { stat }
            }
            Ok(_) => {
                // Not a create's reply: whether our node exists is unknown, so look for
                // it by attempt id (as after a connection loss) rather than forget it.
                self.create = Create::Unknown;
                CreateOutcome::Unknown(FailReason::Zk(ZkError::unexpected_reply()))
            }
            Err(ZkError::NoNode) => {
                self.create = Create::NotSent;
                CreateOutcome::NoParent
            }
            Err(e) if e.is_connection_loss() => {
                self.create = Create::Unknown;
                CreateOutcome::Trouble(e)
            }
            Err(e) => {
                self.create = Create::NotSent;
                CreateOutcome::Failed(FailReason::Zk(e))
            }
        }
    }

    /// The reply to a read of our node, on the session `session_id`.
    pub(super) fn on_read_reply(
        &mut self,
        session_id: Option<i64>,
        result: Result<Reply, ZkError>,
    ) -> ReadOutcome {
        match result {
            Ok(Reply::Data { data, stat }) => {
                if Some(stat.ephemeral_owner) != session_id {
                    return ReadOutcome::Gone(LostReason::NodeNotOwned);
                }
                if let Some(own) = &mut self.own {
                    own.stat.get_or_insert(stat.into());
                }
                ReadOutcome::Identity { data, stat }
            }
            // Not our node's data: read it again later (a grant may be waiting on it).
            Ok(_) => ReadOutcome::Trouble(ZkError::unexpected_reply()),
            Err(ZkError::NoNode) => ReadOutcome::Gone(LostReason::NodeDeleted),
            Err(e) if e.is_connection_loss() => ReadOutcome::Trouble(e),
            Err(e) => {
                self.own_watched = false;
                ReadOutcome::Failed(e)
            }
        }
    }

    /// The reply to our node's delete (markers of the release's multi already
    /// dealt with by the acquisition).
    pub(super) fn on_delete_reply(&mut self, result: Result<Reply, ZkError>) -> DeleteOutcome {
        let result = match result {
            Err(ZkError::MultiFailed { error, .. }) => Err(*error),
            other => other,
        };
        match result {
            Err(ZkError::NoNode) if !self.delete_maybe_applied => {
                self.own = None;
                DeleteOutcome::DeletedByOther
            }
            Ok(_) | Err(ZkError::NoNode) => {
                self.own = None;
                DeleteOutcome::Deleted
            }
            Err(e) if e.is_connection_loss() => {
                self.delete_maybe_applied = true;
                DeleteOutcome::Trouble(e)
            }
            Err(e) => DeleteOutcome::Failed(e),
        }
    }

    /// The reply to a duplicate's delete: `Ok` once it is gone.
    pub(super) fn on_extra_reply(
        &mut self,
        path: &str,
        result: Result<Reply, ZkError>,
    ) -> Result<(), ZkError> {
        match result {
            Ok(_) | Err(ZkError::NoNode) => {
                self.extra.retain(|p| p != path);
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    // Mutators.

    /// Creates our node at `create_path` (a sequential ephemeral, carrying
    /// `spec`'s data). Returns whether it went out: the listing that follows it
    /// is the queue's.
    pub(super) fn send_create(
        &mut self,
        cx: &mut Ctx,
        id: LockId,
        spec: &LockSpec,
        create_path: String,
    ) -> bool {
        let op = Op::Create {
            path: create_path,
            data: crate::owner::node_data(
                spec.scheme,
                spec.rare().owner.as_deref(),
                &spec.rare().data,
            ),
            mode: CreateMode::EphemeralSequential,
        };
        match cx.send(id, Purpose::CreateNode, op) {
            Some(request) => {
                self.create = Create::InFlight(request);
                true
            }
            None => false,
        }
    }

    /// Our directory `dir` is missing: creates it and its ancestors as
    /// containers, if tries are left (then `true`; our create goes right behind).
    pub(super) fn send_parents(&mut self, cx: &mut Ctx, id: LockId, dir: &str) -> bool {
        self.parent_tries += 1;
        if self.parent_tries > cx.config.max_parent_retries {
            return false;
        }
        cx.send_containers(id, dir, true);
        true
    }

    /// A listing of our directory `dir` found `mine` (our nodes: sequence,
    /// name). More than one of ours means a create was retried after a
    /// connection loss although the first one had been applied: keeps our known
    /// node (else the oldest) and deletes the others; in `cleanup` everything
    /// of ours goes (our known node by its own delete). Returns the one kept.
    pub(super) fn sort_out_mine(
        &mut self,
        cx: &mut Ctx,
        id: LockId,
        mut mine: Vec<(i32, String)>,
        cleanup: bool,
        dir: &str,
    ) -> Option<(i32, String)> {
        if let Some(own) = &self.own {
            mine.sort_by_key(|(seq, _)| relative_sequence(*seq, own.seq));
        } else {
            sort_by_sequence(&mut mine, |(seq, _)| *seq);
        }
        let own_name = self
            .own
            .as_ref()
            .map(|o| split_parent(&o.path).1.to_owned());
        let keep = match &own_name {
            Some(n) => mine.iter().position(|(_, m)| m == n),
            None => (!mine.is_empty()).then_some(0),
        };
        for (i, (_, name)) in mine.iter().enumerate() {
            // (The path is built only for a node to delete: a listing of one's
            // own node allocates nothing here.)
            let spare = if cleanup {
                let known = self.own.as_ref().and_then(|o| {
                    o.path
                        .strip_prefix(dir)
                        .and_then(|rest| rest.strip_prefix('/'))
                });
                known != Some(name.as_str())
            } else {
                Some(i) != keep
            };
            if spare {
                self.delete_extra(cx, id, format!("{dir}/{name}"));
            }
        }
        keep.map(|keep| mine.swap_remove(keep))
    }

    /// A listing of our directory `dir` showed our node `name` (sequence `seq`): adopted if
    /// not known yet. Returns whether our create is still in flight (a binding
    /// may hand us the listing before the create's reply, although the server
    /// answered the create first: that reply, right behind, brings our node's
    /// stat).
    pub(super) fn adopt(
        &mut self,
        cx: &mut Ctx,
        id: LockId,
        seq: i32,
        name: &str,
        dir: &str,
    ) -> bool {
        if self.own.is_none() {
            let path = format!("{dir}/{name}");
            cx.progress(id, Progress::Created { node: path.clone() });
            self.own = Some(OwnNode::unread(path, seq));
        }
        let create_in_flight = matches!(self.create, Create::InFlight(_));
        if !create_in_flight {
            self.create = Create::Done;
        }
        create_in_flight
    }

    /// Reads our own node (its stat, its data), leaving a watch on it if `watch`.
    ///
    /// Every read of our node watches it except the read for a plain
    /// acquisition's token (a client that returns no stat with `create`): the
    /// watch costs no request of its own, and it is how a holder hears at once
    /// that its node was deleted under it (an operator's `break`, an
    /// administrator). It is kept once held (no `RemoveWatch`): our own
    /// release's delete fires it, one notification we ignore, which is why a
    /// short uncontended hold sets none (see `Acquisition::on_sync_timer`).
    pub(super) fn send_read(&mut self, cx: &mut Ctx, id: LockId, watch: bool) {
        let Some(own) = &self.own else { return };
        let op = Op::GetData {
            path: own.path.to_string(),
            watch,
        };
        let sent = (self.own_read).send_watching(cx, id, Purpose::OwnData, op, &own.path);
        self.own_watched |= watch && sent;
    }

    /// Reads our node if something is missing: its stat (a client that returns none
    /// with `create`, or a node adopted from a listing), or a watch `spec` needs.
    pub(super) fn ensure_read(&mut self, cx: &mut Ctx, id: LockId, spec: &LockSpec) {
        let watch = spec.watches_node();
        let stat_known = self.own.as_ref().is_some_and(|o| o.stat.is_some());
        if !self.own_read.is_pending() && ((watch && !self.own_watched) || !stat_known) {
            self.send_read(cx, id, watch);
        }
    }

    /// Our node's watch fired, or it is gone: no read or watch of it stands.
    pub(super) fn unwatch(&mut self) {
        self.own_read.forget();
        self.own_watched = false;
    }

    /// A revocation request was found in our node: `true` the first time since
    /// its data last changed (report it then).
    pub(super) fn note_revocation(&mut self) -> bool {
        !std::mem::replace(&mut self.revocation_seen, true)
    }

    /// Deletes our node; with `markers`, in one multi that deletes them first.
    pub(super) fn send_delete(&mut self, cx: &mut Ctx, id: LockId, markers: Vec<String>) {
        let Some(own) = &self.own else { return };
        let op = if markers.is_empty() {
            delete_op(&own.path)
        } else {
            let paths = markers.into_iter().chain([own.path.to_string()]);
            Op::Multi(
                paths
                    .map(|path| MultiOp::Delete {
                        path,
                        version: None,
                    })
                    .collect(),
            )
        };
        self.delete.send(cx, id, Purpose::DeleteOwn, op);
    }

    /// Deletes a duplicate node of ours (once; [`Node::resend_extra`] sends it
    /// again after a reconnect).
    pub(super) fn delete_extra(&mut self, cx: &mut Ctx, id: LockId, path: String) {
        if !self.extra.contains(&path) {
            send_extra_delete(cx, id, &path);
            self.extra.push(path);
        }
    }

    /// A recovery: the duplicates still to delete go again.
    pub(super) fn resend_extra(&self, cx: &mut Ctx, id: LockId) {
        for path in &self.extra {
            send_extra_delete(cx, id, path);
        }
    }

    /// A semaphore's lease is ours (see [`lease`](super::lease)): the lease node
    /// `lease` becomes our node, and the internal mutex's node goes (as the peers
    /// release their mutex once they have their lease).
    pub(super) fn hold_lease(&mut self, cx: &mut Ctx, id: LockId, spec: &LockSpec, lease: OwnNode) {
        if let Some(mutex) = self.own.take() {
            if self.own_watched {
                cx.watches.remove(id, &mutex.path);
            }
            self.delete_extra(cx, id, mutex.path.to_string());
        }
        self.unwatch();
        self.own = Some(lease);
        self.ensure_read(cx, id, spec);
    }

    /// The session ended. After an expiry (or a close) our nodes are gone with
    /// it; after an abandonment (`abandoned`) they may live on, so the paths are
    /// kept for cleanup to delete, and a create in flight may have been applied.
    pub(super) fn on_session_ended(&mut self, abandoned: bool) {
        if abandoned {
            if let Create::InFlight(_) = self.create {
                self.create = Create::Unknown;
            }
        } else {
            self.own = None;
            self.extra.clear();
            if self.create != Create::NotSent {
                self.create = Create::Done;
            }
        }
    }

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

/// A plain delete of `path`.
fn delete_op(path: &str) -> Op {
    Op::Delete {
        path: path.to_owned(),
        version: None,
    }
}

fn send_extra_delete(cx: &mut Ctx, id: LockId, path: &str) {
    let purpose = Purpose::DeleteExtra { path: path.into() };
    cx.send(id, purpose, delete_op(path));
}

#[cfg(test)]
mod tests;
