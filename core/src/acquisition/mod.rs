//! One acquisition of one lock: the protocol shared by every recipe.
//!
//! All recipes are the same walk over the lock directory and differ only in two
//! numbers, given by [`Recipe`]: which lower participants block us
//! ([`Recipe::is_blocked_by`]) and how many of them we tolerate ([`Recipe::permits`]):
//!
//! * write / exclusive / leader: blocked by every lower participant, 1 permit;
//! * read: blocked by lower exclusive participants only, 1 permit;
//! * semaphore(n): blocked by every lower participant, n permits.
//!
//! We hold when fewer than `permits` blockers are lower than our node. Otherwise we
//! put a getData watch on the `permits` closest lower blockers (the "window"): only
//! the deletion of one of those can let us through, and a deletion elsewhere cannot
//! (for one permit this is the classic herd-free "watch your predecessor"; for n
//! permits a single watch would miss holders releasing out of order).
//!
//! The set of lower blockers is cached from the listing. Sequence numbers only grow,
//! so it can only shrink: when a watched node goes, we drop it from the cache and
//! decide again without asking the server. If the cache says we can no longer be
//! blocked we hold at once (0 round trips after the notification); otherwise we list
//! again (one round trip: in a queue the rest of the cache is usually stale, and
//! checking it node by node would cost a round trip per stale node).

use crate::ctx::Ctx;
use crate::deadlock::chase::{Chase, Outcome};
use crate::deadlock::publish::Publication;
use crate::event::{FailReason, Grant, LockEvent, LostReason};
use crate::ids::{FencingToken, LockId};
use crate::names::{
    node_prefix, parse_name, parse_sequence, relative_sequence, rwlock_node_prefix,
    semaphore_node_prefix, sort_by_sequence, AttemptId, NodeKind,
};
use crate::output::Progress;
use crate::path::{ancestors, split_parent};
use crate::proto::{CreateMode, Op, Reply, RequestId, Stat, WatchKind, WatchType, ZkError};
use crate::requests::Purpose;
use crate::spec::{LockSpec, Recipe};
use crate::time::Timestamp;
use crate::timers::TimerKind;
use std::collections::BTreeMap;

mod holder;
pub(crate) mod lease;

use lease::Lease;

/// Name of the crash-detection marker inside a lock directory (a persistent node
/// that exists while a holder is inside a critical section).
pub(crate) const SECTION_MARKER: &str = "zkl-section";

/// Data a holder finds in its own node when someone asks it to let go: Curator's
/// revocation marker and the ZooKeeper recipe's `unlock`.
const REVOKE_MARKERS: [&[u8]; 2] = [crate::revoke::REVOKE, b"unlock"];

/// Where the acquisition is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum State {
    /// Trying to acquire: creating, listing or watching lower participants.
    Waiting,
    /// The listing says we hold but our node's stat (the token) is not known yet.
    Granting,
    /// Held (possibly suspended).
    Held,
    /// The user released; deleting our node.
    Releasing,
    /// The user has seen the terminal event; removing whatever node we left.
    Cleanup,
    /// Nothing left to do: the session drops it.
    Done,
}

/// How a session ended, as far as its nodes are concerned.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Ended {
    /// The server expired it: its ephemeral nodes are gone.
    Expired,
    /// The client gave it up; the server may keep it (and our nodes) a while.
    Abandoned,
    /// The client was closed: nothing more can be sent.
    Closed,
}

/// What a decision to hold rests on.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Look {
    /// A listing just answered: our node was there when it was made.
    Listing,
    /// The cached lower set, after a notification.
    Cache,
}

/// What we know about our `create`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Create {
    /// Not sent yet (not connected when acquired).
    NotSent,
    /// Sent in this connection; the reply will tell.
    InFlight(RequestId),
    /// Sent, but the reply was lost with the connection: the node may exist.
    Unknown,
    /// We saw our node (reply or listing).
    Done,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Watch {
    Pending(RequestId),
    Armed,
}

#[derive(Clone, Debug)]
struct OwnNode {
    path: String,
    seq: i32,
    stat: Option<Stat>,
}

pub(crate) struct Acquisition {
    id: LockId,
    spec: LockSpec,
    /// The directory our node is created and queued in: the lock's path, or for a
    /// semaphore in Curator's or kazoo's layout its internal mutex (see [`lease`]).
    dir: String,
    /// A semaphore in Curator's or kazoo's layout: the lease taken once the
    /// internal mutex is ours (see [`lease`]).
    lease: Option<Box<Lease>>,
    attempt: AttemptId,
    create_path: String,
    state: State,
    create: Create,
    own: Option<OwnNode>,
    /// Lower blockers from the last listing, farthest first: (relative seq, name).
    lower: Vec<(i32, String)>,
    /// Watches on lower blockers, by name.
    watched: BTreeMap<String, Watch>,
    /// The `getData` on our own node in flight, whose reply we act on.
    own_read: Option<RequestId>,
    /// A watch on our own node is set (or being set) on the server. Set while
    /// waiting (see [`Acquisition::evaluate`]) and while held when the spec needs it
    /// ([`LockSpec::watches_node`]); never on a plain lock's uncontended path.
    own_watched: bool,
    list: Option<RequestId>,
    delete: Option<RequestId>,
    /// A delete of our node went out and its outcome is unknown (in flight at a
    /// disconnect, or failed with a connection loss): it may have been applied, so
    /// a later `NoNode` may be our own doing rather than someone else's.
    delete_maybe_applied: bool,
    /// Duplicate nodes of ours still to delete.
    extra: Vec<String>,
    parent_tries: u32,
    suspended: bool,
    revocation_seen: bool,
    /// Whether the crash marker exists, when known without asking (from a listing in
    /// which we could be granted); `None` once we waited, as it may have changed.
    marker_known: Option<bool>,
    marker_check: Option<RequestId>,
    /// Our section marker is set (release deletes it in the same multi).
    section_open: bool,
    section_request: Option<RequestId>,
    /// A section call whose outcome is unknown (in flight at a disconnect, or not
    /// yet answered): `Some(open)`. Sent again once our node is verified.
    section_wanted: Option<bool>,
    /// Fenced writes awaiting a reply: (write id, request).
    writes: Vec<(u64, RequestId)>,
    /// A listing came back without our node while its create was in flight.
    relist_after_create: bool,
    /// Released by [`Acquisition::abandon`]: the node goes, the section marker stays.
    abandoned: bool,
    /// Deadlock detection: we have waited past `detect_after` and publish our wait.
    detecting: bool,
    /// When we started waiting (the first look that did not grant).
    wait_started: Option<Timestamp>,
    /// The deadlock chase in progress.
    chase: Option<Chase>,
    /// Where our owner waits, as published in our held node's header.
    publication: Publication,
    /// For a downgrade (a read taken by the owner of the held write half of the
    /// same read/write lock, on this session): the names of those write nodes,
    /// which do not block us (see [`Acquisition::downgrade_from`]).
    downgrade: Vec<String>,
    /// Deadlock detection: the nodes our owner holds on this session (kept by the
    /// session while detection is on), where a chase must come back to.
    owner_held: Vec<String>,
}

impl Acquisition {
    pub(crate) fn new(id: LockId, spec: LockSpec, attempt: AttemptId) -> Self {
        let lease = Lease::for_spec(&spec, attempt).map(Box::new);
        let dir = match &lease {
            Some(lease) => lease.mutex_dir().to_owned(),
            None => spec.path.clone(),
        };
        let prefix = match spec.recipe {
            // The internal mutex of a semaphore in a peer's layout.
            _ if lease.is_some() => node_prefix(spec.scheme, attempt, NodeKind::Write),
            Recipe::Semaphore { permits } => semaphore_node_prefix(spec.scheme, attempt, permits),
            _ if spec.rwlock => rwlock_node_prefix(spec.scheme, attempt, spec.recipe.node_kind()),
            _ => node_prefix(spec.scheme, attempt, spec.recipe.node_kind()),
        };
        let create_path = format!("{dir}/{prefix}");
        Acquisition {
            id,
            spec,
            dir,
            lease,
            attempt,
            create_path,
            state: State::Waiting,
            create: Create::NotSent,
            own: None,
            lower: Vec::new(),
            watched: BTreeMap::new(),
            own_read: None,
            own_watched: false,
            list: None,
            delete: None,
            delete_maybe_applied: false,
            extra: Vec::new(),
            parent_tries: 0,
            suspended: false,
            revocation_seen: false,
            marker_known: None,
            marker_check: None,
            section_open: false,
            section_request: None,
            section_wanted: None,
            writes: Vec::new(),
            relist_after_create: false,
            abandoned: false,
            detecting: false,
            wait_started: None,
            chase: None,
            publication: Publication::default(),
            downgrade: Vec::new(),
            owner_held: Vec::new(),
        }
    }

    /// Makes this read acquisition a downgrade from the write nodes `names`, held
    /// by its owner on this session (Curator's rule: a read is not blocked by a
    /// write its own holder holds). Nothing lower than a held write node exists,
    /// so with those skipped the read holds at its first listing, unless another
    /// writer queued between: that one waits for our owner's write, so the read
    /// would wait for its own owner, and it fails with
    /// [`FailReason::SelfDeadlock`] instead.
    pub(crate) fn downgrade_from(&mut self, names: Vec<String>) {
        self.downgrade = names;
    }

    /// The full path of our node, once known.
    pub(crate) fn node_path(&self) -> Option<&str> {
        self.own.as_ref().map(|o| o.path.as_str())
    }

    pub(crate) fn state(&self) -> State {
        self.state
    }

    pub(crate) fn spec(&self) -> &LockSpec {
        &self.spec
    }

    pub(crate) fn is_suspended(&self) -> bool {
        self.suspended
    }

    /// Starts (or restarts after a reconnect) whatever the state needs. Every
    /// request of the previous connection is forgotten by then.
    pub(crate) fn recover(&mut self, cx: &mut Ctx) {
        cx.requests.forget_lock(self.id);
        self.lease_forget();
        self.chase = None;
        self.publication.forget();
        cx.timers.cancel(self.id, TimerKind::Retry);
        self.watched.clear();
        self.own_read = None;
        self.own_watched = false;
        self.list = None;
        self.delete_maybe_applied |= self.delete.is_some();
        self.delete = None;
        self.marker_check = None;
        self.section_request = None;
        if let Create::InFlight(_) = self.create {
            self.create = Create::Unknown;
        }
        for path in self.extra.clone() {
            cx.send(
                self.id,
                Purpose::DeleteExtra { path: path.clone() },
                delete_op(&path),
            );
        }
        match self.state {
            State::Waiting => match self.create {
                Create::NotSent => self.send_create(cx),
                // Find our node by attempt id (adopt it), or create again.
                Create::Unknown | Create::Done | Create::InFlight(_) => self.send_list(cx),
            },
            // Is our node still ours? (With a watch only if the hold needs one.)
            State::Granting | State::Held => self.send_own_read(cx, self.spec.watches_node()),
            State::Releasing => self.send_delete(cx),
            State::Cleanup => self.continue_cleanup(cx),
            State::Done => {}
        }
    }

    fn send_create(&mut self, cx: &mut Ctx) {
        let op = Op::Create {
            path: self.create_path.clone(),
            data: crate::owner::node_data(
                self.spec.scheme,
                self.spec.owner.as_deref(),
                &self.spec.data,
            ),
            mode: CreateMode::EphemeralSequential,
        };
        if let Some(id) = cx.send(self.id, Purpose::CreateNode, op) {
            self.create = Create::InFlight(id);
            // Pipelined: per-session FIFO means this listing already holds our node.
            self.send_list(cx);
        }
    }

    fn send_parents_then_create(&mut self, cx: &mut Ctx) {
        let mut dirs = ancestors(&self.dir);
        dirs.push(self.dir.clone());
        for dir in dirs {
            let op = Op::Create {
                path: dir,
                data: Vec::new(),
                mode: CreateMode::Container,
            };
            cx.send(self.id, Purpose::CreateParent, op);
        }
        self.send_create(cx);
    }

    fn send_list(&mut self, cx: &mut Ctx) {
        let op = Op::GetChildren {
            path: self.dir.clone(),
        };
        self.list = cx.send(self.id, Purpose::List, op);
    }

    /// Reads our own node (its stat, its data), leaving a watch on it if `watch`.
    fn send_own_read(&mut self, cx: &mut Ctx, watch: bool) {
        let Some(own) = &self.own else { return };
        let op = Op::GetData {
            path: own.path.clone(),
            watch,
        };
        self.own_read = cx.send(self.id, Purpose::OwnData, op);
        self.own_watched |= watch && self.own_read.is_some();
    }

    /// Reads our node if something is missing: its stat (a client that returns none
    /// with `create`, or a node adopted from a listing), or a watch the spec needs.
    fn ensure_own_read(&mut self, cx: &mut Ctx) {
        let watch = self.spec.watches_node();
        let stat_known = self.own.as_ref().is_some_and(|o| o.stat.is_some());
        if self.own_read.is_none() && ((watch && !self.own_watched) || !stat_known) {
            self.send_own_read(cx, watch);
        }
    }

    /// Held and the watch on our node is no longer needed (it was set while we
    /// waited): drop it, so our own release does not notify us.
    fn drop_own_watch(&mut self, cx: &mut Ctx) {
        if !self.own_watched || self.spec.watches_node() {
            return;
        }
        let Some(own) = &self.own else { return };
        // Another task of this session may watch our node too (the one queued
        // behind us): the server's watch is then still needed, for it.
        if cx.watches.remove(self.id, &own.path) {
            let op = Op::RemoveWatch {
                path: own.path.clone(),
                watch: WatchType::Data,
            };
            cx.send(self.id, Purpose::RemoveOwnWatch, op);
        }
        self.own_watched = false;
        // A read still in flight answers for a node we no longer need news of.
        self.own_read = None;
    }

    fn send_delete(&mut self, cx: &mut Ctx) {
        let Some(own) = &self.own else { return };
        // A section maybe opened (its reply lost) is closed too: if the marker is not
        // there, the multi fails on it and the node is deleted alone.
        let section = self.section_open || self.section_wanted == Some(true);
        let op = if section && self.state == State::Releasing && !self.abandoned {
            // A clean release closes the section in the same transaction.
            Op::Multi(vec![
                crate::proto::MultiOp::Delete {
                    path: self.marker_path(),
                    version: None,
                },
                crate::proto::MultiOp::Delete {
                    path: own.path.clone(),
                    version: None,
                },
            ])
        } else {
            delete_op(&own.path)
        };
        self.delete = cx.send(self.id, Purpose::DeleteOwn, op);
    }

    /// Deletes a duplicate node of ours (once; recovery sends it again if needed).
    fn delete_extra(&mut self, cx: &mut Ctx, path: String) {
        if !self.extra.contains(&path) {
            cx.send(
                self.id,
                Purpose::DeleteExtra { path: path.clone() },
                delete_op(&path),
            );
            self.extra.push(path);
        }
    }

    fn marker_path(&self) -> String {
        format!("{}/{SECTION_MARKER}", self.spec.path)
    }

    /// Dispatches a reply that the request book attributed to us.
    pub(crate) fn on_reply(
        &mut self,
        cx: &mut Ctx,
        request: RequestId,
        purpose: Purpose,
        result: Result<Reply, ZkError>,
    ) {
        match purpose {
            Purpose::CreateParent => {}
            Purpose::CreateNode => self.on_create(cx, request, result),
            Purpose::List => {
                if self.list == Some(request) {
                    self.list = None;
                    self.on_list(cx, result);
                }
            }
            Purpose::WatchPeer { name } => self.on_peer_data(cx, request, name, result),
            Purpose::OwnData => {
                if self.own_read == Some(request) {
                    self.own_read = None;
                    self.on_own_data(cx, result);
                }
            }
            Purpose::RemoveOwnWatch | Purpose::Inspect => {}
            Purpose::Chase => self.on_chase_reply(cx, request, result),
            Purpose::Publish => {
                if let Some(own) = &self.own {
                    let path = own.path.clone();
                    self.publication
                        .on_reply(cx, self.id, &path, request, &result);
                }
            }
            Purpose::DeleteOwn => {
                if self.delete == Some(request) {
                    self.delete = None;
                    self.on_delete(cx, result);
                }
            }
            Purpose::MarkerCheck => {
                if self.marker_check == Some(request) {
                    self.marker_check = None;
                    self.on_marker_check(cx, result);
                }
            }
            Purpose::Section { open } => {
                if self.section_request == Some(request) {
                    self.section_request = None;
                    self.on_section_reply(cx, open, result);
                }
            }
            Purpose::FencedWrite { write } => self.on_fenced_reply(cx, request, write, result),
            Purpose::LeaseCreate | Purpose::LeaseList | Purpose::PoolData | Purpose::PoolCreate => {
                self.on_lease_reply(cx, request, purpose, result)
            }
            Purpose::DeleteExtra { path } => match result {
                Ok(_) | Err(ZkError::NoNode) => {
                    self.extra.retain(|p| *p != path);
                    if self.state == State::Cleanup {
                        self.continue_cleanup(cx);
                    }
                }
                Err(e) => self.trouble(cx, e),
            },
        }
    }

    fn on_create(&mut self, cx: &mut Ctx, request: RequestId, result: Result<Reply, ZkError>) {
        if self.create != Create::InFlight(request) {
            return;
        }
        match result {
            Ok(Reply::Created { path, stat }) => {
                let seq = path
                    .strip_prefix(self.create_path.as_str())
                    .and_then(parse_sequence);
                let Some(seq) = seq else {
                    // Not the node we asked for (a confused adapter or server): never
                    // adopt, hold or delete it. Ours, if created, is found by attempt
                    // id and removed, as after a connection loss.
                    self.create = Create::Unknown;
                    if self.state == State::Cleanup {
                        return self.continue_cleanup(cx);
                    }
                    return self.fail(
                        cx,
                        FailReason::Zk(ZkError::Other(format!("unexpected created path {path:?}"))),
                    );
                };
                self.create = Create::Done;
                if let Some(stat) = &stat {
                    let data = crate::owner::node_data(
                        self.spec.scheme,
                        self.spec.owner.as_deref(),
                        &self.spec.data,
                    );
                    self.publication.created(
                        data,
                        stat,
                        self.spec.scheme,
                        self.spec.owner.as_deref(),
                    );
                }
                cx.progress(self.id, Progress::Created { node: path.clone() });
                self.own = Some(OwnNode { path, seq, stat });
                match self.state {
                    // The listing came first and found us free: the stat was missing.
                    State::Granting => {
                        self.state = State::Waiting;
                        self.grant(cx);
                    }
                    State::Waiting => {
                        self.ensure_own_read(cx);
                        if std::mem::take(&mut self.relist_after_create) && self.list.is_none() {
                            self.send_list(cx);
                        }
                    }
                    State::Cleanup => self.continue_cleanup(cx),
                    _ => {}
                }
            }
            Ok(other) => {
                // Not a create's reply: whether our node exists is unknown, so look for
                // it by attempt id (as after a connection loss) rather than forget it.
                self.create = Create::Unknown;
                if self.state == State::Cleanup {
                    return self.continue_cleanup(cx);
                }
                self.fail(
                    cx,
                    FailReason::Zk(ZkError::Other(format!("unexpected reply {other:?}"))),
                );
            }
            Err(ZkError::NoNode) => {
                // The lock directory (or an ancestor) is missing: create the containers,
                // then our node, in one pipelined burst.
                self.create = Create::NotSent;
                self.list = None;
                if self.state == State::Cleanup {
                    return self.continue_cleanup(cx);
                }
                self.parent_tries += 1;
                if self.parent_tries > cx.config.max_parent_retries {
                    return self.fail(cx, FailReason::Zk(ZkError::NoNode));
                }
                self.send_parents_then_create(cx);
            }
            Err(e) if e.is_connection_loss() => {
                self.create = Create::Unknown;
                self.trouble(cx, e);
            }
            Err(e) => {
                self.create = Create::NotSent;
                self.list = None;
                if self.state == State::Cleanup {
                    return self.continue_cleanup(cx);
                }
                self.fail(cx, FailReason::Zk(e));
            }
        }
    }

    fn on_list(&mut self, cx: &mut Ctx, result: Result<Reply, ZkError>) {
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
        for name in children.iter().filter(|c| *c != SECTION_MARKER) {
            match parse_name(name) {
                Some(p) if p.attempt == self.attempt => mine.push((p.seq, name.clone())),
                Some(p) => others.push((p, name)),
                None => cx.stats.foreign_children += 1,
            }
        }
        // Adopt our node. More than one of ours means a create was retried after a
        // connection loss although the first one had been applied: keep the oldest,
        // delete the others.
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
        let cleanup = self.state == State::Cleanup;
        for (i, (_, name)) in mine.iter().enumerate() {
            let path = format!("{}/{}", self.dir, name);
            // In cleanup everything of ours goes (our known node by its own delete);
            // otherwise every duplicate but the one we keep.
            let spare = if cleanup {
                self.own.as_ref().map(|o| &o.path) != Some(&path)
            } else {
                Some(i) != keep
            };
            if spare {
                self.delete_extra(cx, path);
            }
        }
        if cleanup {
            if self.create == Create::Unknown {
                self.create = Create::Done;
            }
            return self.continue_cleanup(cx);
        }
        if self.state != State::Waiting {
            return;
        }
        let Some(keep) = keep else {
            return match self.create {
                // It existed and is gone: someone deleted it (or the session lost it).
                Create::Done => self.fail(cx, FailReason::NodeDeleted),
                // The create never happened: do it now.
                Create::Unknown | Create::NotSent => {
                    self.create = Create::NotSent;
                    self.send_create(cx)
                }
                // Only without FIFO order (a binding that cannot keep it): the
                // listing overtook our create. List again once the create is answered.
                Create::InFlight(_) => self.relist_after_create = true,
            };
        };
        let (seq, name) = mine[keep].clone();
        if self.own.is_none() {
            let path = format!("{}/{}", self.dir, name);
            cx.progress(self.id, Progress::Created { node: path.clone() });
            self.own = Some(OwnNode {
                path,
                seq,
                stat: None,
            });
        }
        // A binding may hand us the listing before the create's reply, although
        // the server answered the create first: that reply, right behind, brings
        // our node's stat, so it is not read for it (a grant waits in Granting).
        let create_in_flight = matches!(self.create, Create::InFlight(_));
        if !create_in_flight {
            self.create = Create::Done;
        }
        if !create_in_flight || self.spec.watches_node() {
            self.ensure_own_read(cx);
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
                let ours = self.downgrade.contains(n);
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
        self.lower = lower;
        // A grant straight from this listing knows the marker for free.
        self.marker_known = Some(marker_seen);
        self.evaluate(cx, Look::Listing);
    }

    /// Decides from the cached lower blockers: hold, or watch the window.
    fn evaluate(&mut self, cx: &mut Ctx, look: Look) {
        if self.state != State::Waiting {
            return;
        }
        let permits = self.walk_recipe().permits();
        // A semaphore never holds beside an exclusive participant below it (a write
        // lock or leader on the same path): that one must go first, whatever the
        // permits. `lower` is farthest first, so this is the closest such writer.
        let writer = match self.walk_recipe() {
            Recipe::Semaphore { .. } => self
                .lower
                .iter()
                .rev()
                .find(|(_, n)| {
                    parse_name(n)
                        .is_some_and(|p| matches!(p.kind, NodeKind::Write | NodeKind::Leader))
                })
                .map(|(_, n)| n.clone()),
            _ => None,
        };
        if writer.is_none() && self.lower.len() < permits {
            self.watched.clear();
            if look == Look::Cache && self.own_read.is_some() {
                // The news of our own node is still on its way (rare: a watch set
                // before it fired first). Hold only once it says the node is there.
                self.state = State::Granting;
                return;
            }
            return self.grant(cx);
        }
        if !self.spec.wait {
            return self.fail(cx, FailReason::WouldBlock);
        }
        if let (Some(after), None) = (self.spec.detect_after, self.wait_started) {
            self.wait_started = Some(cx.now);
            cx.timers.set(self.id, TimerKind::Detect, cx.now + after);
        }
        self.marker_known = None;
        // When one notification could grant us from the cache, with no further look
        // at the server (the cache holds no more than `permits` blockers), our own
        // node is watched too, and this read goes out before the peer watches:
        // per-session FIFO order then brings news of our node (deleted by an
        // administrator, say) before that notification. Without it a waiter whose
        // node was deleted would take the lock beside the one queued behind it.
        // A deeper cache lists again after a notification, and the listing shows
        // whether our node is still there: no watch needed (a long queue drains at
        // one notification and no extra request per handoff).
        if !self.own_watched && self.lower.len() <= permits {
            self.send_own_read(cx, true);
        }
        let window: Vec<String> = match writer {
            Some(w) => vec![w],
            None => self.lower[self.lower.len() - permits..]
                .iter()
                .map(|(_, n)| n.clone())
                .collect(),
        };
        self.watched.retain(|n, _| window.contains(n));
        for name in window {
            if !self.watched.contains_key(&name) {
                self.watch_peer(cx, name);
            }
        }
    }

    fn watch_peer(&mut self, cx: &mut Ctx, name: String) {
        let path = format!("{}/{}", self.dir, name);
        let op = Op::GetData {
            path: path.clone(),
            watch: true,
        };
        if let Some(id) = cx.send(self.id, Purpose::WatchPeer { name: name.clone() }, op) {
            self.watched.insert(name, Watch::Pending(id));
            cx.stats.watches_set += 1;
            cx.progress(self.id, Progress::QueuedBehind { node: path });
        }
    }

    fn grant(&mut self, cx: &mut Ctx) {
        if !cx.connected {
            // A late notification while the connection is down: a grant now could not
            // be trusted (no `Suspended` would follow). The listing after the
            // reconnect decides again.
            return;
        }
        if self.lease_pending() {
            // What the walk won is the internal mutex of a peer's semaphore: the
            // lease comes next.
            self.state = State::Waiting;
            return self.lease_start(cx);
        }
        let own = self.own.as_ref().expect("granted without a node");
        let stat = own.stat;
        let crashed = if self.spec.detect_crashes {
            self.marker_known
        } else {
            Some(false)
        };
        let (Some(stat), Some(crashed)) = (stat, crashed) else {
            self.state = State::Granting;
            // The client library gave no stat on create: a getData on our own node
            // brings the token.
            if stat.is_none()
                && self.own_read.is_none()
                && !matches!(self.create, Create::InFlight(_))
            {
                self.send_own_read(cx, self.spec.watches_node());
            }
            // We waited: whether the previous holder closed its section is unknown.
            if crashed.is_none() && self.marker_check.is_none() {
                let op = Op::GetData {
                    path: self.marker_path(),
                    watch: false,
                };
                self.marker_check = cx.send(self.id, Purpose::MarkerCheck, op);
            }
            return;
        };
        let grant = Grant {
            path: own.path.clone(),
            token: FencingToken(stat.czxid),
            sequence: own.seq,
            session_id: cx.session_id.unwrap_or_default(),
            previous_holder_crashed: crashed,
        };
        self.state = State::Held;
        self.stop_detecting(cx);
        self.drop_own_watch(cx);
        cx.timers.cancel(self.id, TimerKind::Deadline);
        if let Some(max_hold) = self.spec.max_hold {
            cx.timers.set(self.id, TimerKind::Lease, cx.now + max_hold);
        }
        cx.stats.acquired += 1;
        cx.emit(self.id, LockEvent::Acquired(grant));
        if let Some(lost_at) = cx.distrusted() {
            // Granted by a server whose leader has not been proven to hear us
            // lately: held, but not to be trusted until it has.
            self.suspend(cx, lost_at);
        }
    }

    fn on_peer_data(
        &mut self,
        cx: &mut Ctx,
        request: RequestId,
        name: String,
        result: Result<Reply, ZkError>,
    ) {
        if self.watched.get(&name) != Some(&Watch::Pending(request)) {
            return;
        }
        match result {
            Ok(_) => {
                self.watched.insert(name, Watch::Armed);
            }
            Err(ZkError::NoNode) => self.peer_gone(cx, &name),
            Err(e) if e.is_connection_loss() => self.trouble(cx, e),
            Err(e) => self.fail(cx, FailReason::Zk(e)),
        }
    }

    fn peer_gone(&mut self, cx: &mut Ctx, name: &str) {
        self.watched.remove(name);
        self.lower.retain(|(_, n)| n != name);
        if self.lower.len() < self.walk_recipe().permits() {
            // The cache can no longer block us: hold now, no round trip.
            return self.evaluate(cx, Look::Cache);
        }
        // The rest of the cache is likely stale (in a queue, everyone below our
        // predecessor left before it did): one fresh listing beats checking the
        // candidates one round trip at a time.
        if self.list.is_none() {
            self.send_list(cx);
        }
    }

    fn on_own_data(&mut self, cx: &mut Ctx, result: Result<Reply, ZkError>) {
        match result {
            Ok(Reply::Data { data, stat }) => {
                if Some(stat.ephemeral_owner) != cx.session_id {
                    return self.own_gone(cx, LostReason::NodeNotOwned);
                }
                if let Some(own) = &mut self.own {
                    own.stat.get_or_insert(stat);
                }
                if self.spec.detect_after.is_some() || self.spec.owner.is_some() {
                    self.publication.observe(
                        &data,
                        &stat,
                        self.spec.scheme,
                        self.spec.owner.as_deref(),
                    );
                }
                match self.state {
                    State::Granting => {
                        self.state = State::Waiting;
                        self.grant(cx);
                    }
                    // Resumed only once the leader is proven to hear us again.
                    State::Held if self.suspended && cx.distrusted().is_none() => {
                        self.suspended = false;
                        cx.timers.cancel(self.id, TimerKind::Grace);
                        cx.emit(self.id, LockEvent::Resumed);
                    }
                    _ => {}
                }
                self.resend_section(cx);
                let revoke = self.spec.revocable && REVOKE_MARKERS.contains(&data.as_slice());
                if revoke {
                    match self.state {
                        State::Held if !self.revocation_seen => {
                            self.revocation_seen = true;
                            cx.emit(self.id, LockEvent::RevocationRequested);
                        }
                        State::Waiting | State::Granting => self.fail(cx, FailReason::Revoked),
                        _ => {}
                    }
                }
            }
            // Not our node's data: read it again later (a grant may be waiting on it).
            Ok(_) => self.trouble(cx, ZkError::Other("unexpected reply".into())),
            Err(ZkError::NoNode) => self.own_gone(cx, LostReason::NodeDeleted),
            Err(e) if e.is_connection_loss() => self.trouble(cx, e),
            Err(e) => {
                self.own_watched = false;
                if matches!(self.state, State::Waiting | State::Granting) {
                    self.fail(cx, FailReason::Zk(e));
                }
            }
        }
    }

    /// Our node is gone (or not ours) while we still counted on it.
    fn own_gone(&mut self, cx: &mut Ctx, reason: LostReason) {
        self.own_read = None;
        self.own_watched = false;
        match self.state {
            State::Waiting | State::Granting => {
                self.own = None;
                self.fail(cx, FailReason::NodeDeleted)
            }
            State::Held => {
                self.own = None;
                self.terminal(cx, LockEvent::Lost(reason));
            }
            // Our own delete's watch firing: its reply, right behind, ends the release.
            State::Releasing if self.delete.is_some() => {}
            State::Releasing => {
                self.own = None;
                self.terminal(cx, LockEvent::Released);
            }
            State::Cleanup | State::Done => {}
        }
    }

    /// A watch fired somewhere; react if it concerns us.
    pub(crate) fn on_watch(&mut self, cx: &mut Ctx, path: &str, kind: WatchKind) {
        if self.own.as_ref().is_some_and(|o| o.path == path) {
            // While disconnected, a late firing may stem from a session expiry we have
            // not heard of yet: the check after the reconnect gives the true reason.
            if matches!(self.state, State::Cleanup | State::Done) || !cx.connected {
                return;
            }
            self.own_watched = false;
            return match kind {
                WatchKind::NodeDeleted => self.own_gone(cx, LostReason::NodeDeleted),
                // Data changed (a revocation request?): look, and watch again if
                // we still need to.
                _ => {
                    self.revocation_seen = false;
                    let watch = self.spec.watches_node() || self.state == State::Waiting;
                    self.send_own_read(cx, watch)
                }
            };
        }
        if self.on_pool_watch(cx, path) {
            return;
        }
        let (parent, name) = split_parent(path);
        if parent != self.dir || self.state != State::Waiting {
            return;
        }
        match kind {
            WatchKind::NodeDeleted if self.lower.iter().any(|(_, n)| n == name) => {
                cx.stats.handoff_notifications += 1;
                let name = name.to_owned();
                self.peer_gone(cx, &name);
            }
            // Any other firing on a watched peer (data changed, or a kind a data
            // watch never gets, which adapters may still pass on) spends our entry
            // in the watch index, though the server may still hold a watch there
            // for another task: set it again, or the peer's deletion would reach
            // nobody and we would wait behind a node that is gone.
            _ if self.watched.contains_key(name) => {
                self.watched.remove(name);
                self.watch_peer(cx, name.to_owned());
                // Someone may have published a wait there: chase now.
                if kind == WatchKind::NodeDataChanged && self.detecting && self.chase.is_none() {
                    self.start_chase(cx);
                }
            }
            _ => {}
        }
    }

    fn on_delete(&mut self, cx: &mut Ctx, result: Result<Reply, ZkError>) {
        if let Err(ZkError::MultiFailed { index, error }) = &result {
            if **error == ZkError::NoNode && *index == 0 {
                // Our section marker is already gone: delete the node alone.
                self.section_open = false;
                self.section_wanted = None;
                return self.send_delete(cx);
            }
        }
        let result = match result {
            Err(ZkError::MultiFailed { error, .. }) => Err(*error),
            other => other,
        };
        match result {
            Err(ZkError::NoNode)
                if self.state == State::Releasing && !self.delete_maybe_applied =>
            {
                // Deleted by someone else while we believed we held it (a plain lock
                // does not watch its node): what the lock protected may have
                // overlapped another holder, and the release says so.
                self.own = None;
                self.terminal(cx, LockEvent::Lost(LostReason::NodeDeleted));
            }
            Ok(_) | Err(ZkError::NoNode) => {
                self.own = None;
                match self.state {
                    State::Releasing => self.terminal(cx, LockEvent::Released),
                    State::Cleanup => self.continue_cleanup(cx),
                    _ => {}
                }
            }
            Err(e) if e.is_connection_loss() => {
                self.delete_maybe_applied = true;
                self.trouble(cx, e)
            }
            Err(e) => match self.state {
                State::Releasing => self.terminal(cx, LockEvent::Failed(FailReason::Zk(e))),
                _ => self.trouble(cx, e),
            },
        }
    }

    /// A request failed without the connection being declared down (or with an
    /// error worth retrying): start over from the state after a pause.
    fn trouble(&mut self, cx: &mut Ctx, _error: ZkError) {
        cx.stats.retries += 1;
        cx.timers
            .set(self.id, TimerKind::Retry, cx.now + cx.config.retry_interval);
    }

    /// The user releases a held lock.
    pub(crate) fn release(&mut self, cx: &mut Ctx) {
        self.state = State::Releasing;
        cx.timers.cancel(self.id, TimerKind::Grace);
        self.send_delete(cx);
    }

    /// The user lets go inside an open section: release, leaving the marker.
    pub(crate) fn abandon(&mut self, cx: &mut Ctx) {
        self.abandoned = true;
        self.release(cx);
    }

    /// The acquisition ends for the user without holding.
    pub(crate) fn fail(&mut self, cx: &mut Ctx, reason: FailReason) {
        self.terminal(cx, LockEvent::Failed(reason));
    }

    /// Emits the terminal event, then removes whatever node remains.
    fn terminal(&mut self, cx: &mut Ctx, event: LockEvent) {
        debug_assert!(event.is_terminal());
        if matches!(self.state, State::Cleanup | State::Done) {
            return;
        }
        self.abandon_writes(cx, &event);
        self.stop_detecting(cx);
        cx.emit(self.id, event);
        cx.timers.cancel_lock(self.id);
        self.state = State::Cleanup;
        self.watched.clear();
        self.lower.clear();
        self.suspended = false;
        self.list = None;
        self.lease_terminal(cx);
        self.continue_cleanup(cx);
    }

    /// Cleanup: delete our node (or find it first if a create's outcome is unknown),
    /// and duplicates; done when nothing of ours can remain.
    fn continue_cleanup(&mut self, cx: &mut Ctx) {
        if self.own.is_some() {
            if self.delete.is_none() {
                self.send_delete(cx);
            }
            return;
        }
        match self.create {
            Create::InFlight(_) => return, // its reply decides
            Create::Unknown => {
                if self.list.is_none() {
                    self.send_list(cx);
                }
                return;
            }
            Create::NotSent | Create::Done => {}
        }
        if !self.lease_cleanup_settled(cx) {
            return;
        }
        if self.extra.is_empty() {
            self.state = State::Done;
        }
    }

    /// Timers.
    pub(crate) fn on_timer(&mut self, cx: &mut Ctx, kind: TimerKind) {
        match kind {
            TimerKind::Deadline => {
                if matches!(self.state, State::Waiting | State::Granting) {
                    self.fail(cx, FailReason::Timeout);
                }
            }
            TimerKind::Grace => {
                if self.state == State::Held && self.suspended {
                    self.terminal(cx, LockEvent::Lost(LostReason::SuspendedTooLong));
                }
            }
            TimerKind::Retry => {
                if cx.connected {
                    self.recover(cx);
                }
            }
            TimerKind::Detect => self.on_detect_timer(cx),
            TimerKind::Lease => {
                if self.state == State::Held {
                    self.terminal(cx, LockEvent::Lost(LostReason::LeaseExpired));
                }
            }
            // The session's own.
            TimerKind::Sync | TimerKind::Contact => {}
        }
    }

    /// The connection dropped: outstanding requests are forgotten by the session.
    /// A held lock is suspended, and lost at `lost_at` unless the connection comes
    /// back first.
    pub(crate) fn on_disconnected(&mut self, cx: &mut Ctx, lost_at: Timestamp) {
        cx.timers.cancel(self.id, TimerKind::Retry);
        self.lease_forget();
        self.chase = None;
        self.publication.forget();
        if let Create::InFlight(_) = self.create {
            self.create = Create::Unknown;
        }
        self.list = None;
        self.delete_maybe_applied |= self.delete.is_some();
        self.delete = None;
        self.own_read = None;
        self.own_watched = false;
        self.watched.clear();
        self.marker_check = None;
        self.section_request = None;
        self.writes_unknown(cx);
        self.suspend(cx, lost_at);
    }

    /// A held lock is no longer trusted: suspended, and lost at `lost_at` unless
    /// it is resumed first (the connection comes back, or the leader is proven to
    /// hear us again).
    pub(crate) fn suspend(&mut self, cx: &mut Ctx, lost_at: Timestamp) {
        if self.state == State::Held && !self.suspended {
            self.suspended = true;
            cx.emit(self.id, LockEvent::Suspended);
            if lost_at <= cx.now {
                // The server may already have expired the session.
                self.terminal(cx, LockEvent::Lost(LostReason::SuspendedTooLong));
            } else {
                cx.timers.set(self.id, TimerKind::Grace, lost_at);
            }
        }
    }

    /// The leader was proven to hear us again: a lock suspended for want of that
    /// proof (the connection up) checks that its node is still ours, then resumes.
    pub(crate) fn on_contact_renewed(&mut self, cx: &mut Ctx) {
        if self.state == State::Held && self.suspended && cx.connected && self.own_read.is_none() {
            self.send_own_read(cx, self.spec.watches_node());
        }
    }

    /// The session is gone (expired, abandoned or closed). After an expiry so are
    /// our nodes; after an abandonment they may live on, so the paths are kept
    /// and cleanup deletes them from the next session (a create whose outcome is
    /// unknown is looked for by attempt id).
    pub(crate) fn on_session_ended(&mut self, cx: &mut Ctx, how: Ended) {
        let closed = how == Ended::Closed;
        self.lease_session_ended(how != Ended::Abandoned);
        if how == Ended::Abandoned {
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
        match self.state {
            State::Waiting | State::Granting => {
                if self.create == Create::NotSent && !closed {
                    // Never reached the old session: it will start on the next one
                    // (unless the client is closed: then it fails like the others).
                    return;
                }
                let reason = if closed {
                    FailReason::Closed
                } else {
                    FailReason::SessionExpired
                };
                self.fail(cx, reason)
            }
            State::Held => {
                let reason = if closed {
                    LostReason::Closed
                } else {
                    LostReason::SessionExpired
                };
                self.terminal(cx, LockEvent::Lost(reason))
            }
            State::Releasing => self.terminal(cx, LockEvent::Released),
            State::Cleanup => self.continue_cleanup(cx),
            State::Done => {}
        }
        if closed && self.state != State::Done {
            // A closed client can send nothing more; what it had dies with the session.
            self.state = State::Done;
        }
    }
}

/// Deadlock detection (see [`crate::deadlock`]).
impl Acquisition {
    /// Where our owner waits, if we publish it: (owner, our waiting node).
    pub(crate) fn published_wait(&self) -> Option<(&str, String)> {
        if !self.detecting || self.state != State::Waiting {
            return None;
        }
        Some((self.spec.owner.as_deref()?, self.own.as_ref()?.path.clone()))
    }

    /// The node we hold, for our owner's chases.
    pub(crate) fn held_node(&self) -> Option<(&str, &str)> {
        match self.state {
            State::Held => Some((
                self.spec.owner.as_deref()?,
                self.own.as_ref()?.path.as_str(),
            )),
            _ => None,
        }
    }

    /// Tells a detecting waiter which nodes its owner holds on this session.
    pub(crate) fn set_owner_held(&mut self, held: &[String]) {
        if self.spec.detect_after.is_some() && self.owner_held != held {
            self.owner_held = held.to_vec();
        }
    }

    /// Publishes `waits` in our held node's header (or withdraws what is there).
    pub(crate) fn publish(&mut self, cx: &mut Ctx, waits: Vec<String>) {
        if waits.is_empty() && !self.publication.active() {
            return;
        }
        if self.state != State::Held || self.suspended || !cx.connected {
            return;
        }
        let Some(own) = &self.own else { return };
        let path = own.path.clone();
        self.publication.publish(cx, self.id, &path, waits);
    }

    fn on_detect_timer(&mut self, cx: &mut Ctx) {
        let Some(after) = self.spec.detect_after else {
            return;
        };
        if self.state != State::Waiting {
            return;
        }
        cx.timers.set(self.id, TimerKind::Detect, cx.now + after);
        if !cx.connected || self.own.is_none() {
            return;
        }
        self.detecting = true;
        if self.chase.is_none() {
            self.start_chase(cx);
        }
    }

    fn start_chase(&mut self, cx: &mut Ctx) {
        let (Some(own), Some(owner)) = (&self.own, &self.spec.owner) else {
            return;
        };
        let chase = Chase::start(
            cx,
            self.id,
            own.path.clone(),
            owner.clone(),
            self.owner_held.clone(),
        );
        cx.stats.deadlock_chases += 1;
        self.chase = Some(chase);
    }

    fn on_chase_reply(&mut self, cx: &mut Ctx, request: RequestId, result: Result<Reply, ZkError>) {
        let Some(chase) = &mut self.chase else { return };
        if !chase.owns(request) {
            return;
        }
        match chase.on_reply(cx, request, result) {
            Outcome::Pending => {}
            Outcome::NoCycle => self.chase = None,
            Outcome::Cycle { victim, cycle } => {
                self.chase = None;
                cx.stats.deadlocks_seen += 1;
                if victim && self.state == State::Waiting {
                    self.fail(cx, FailReason::Deadlock { cycle });
                }
            }
        }
    }

    fn stop_detecting(&mut self, cx: &mut Ctx) {
        self.detecting = false;
        self.chase = None;
        cx.timers.cancel(self.id, TimerKind::Detect);
    }
}

fn delete_op(path: &str) -> Op {
    Op::Delete {
        path: path.to_owned(),
        version: None,
    }
}
