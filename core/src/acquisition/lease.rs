//! Semaphores in Curator's and kazoo's layouts: a pool of lease nodes behind an
//! internal mutex, kept exactly as Curator 5.4's `InterProcessSemaphoreV2` and
//! kazoo's `Semaphore` keep them, so that their clients and ours share one
//! semaphore.
//!
//! | layout  | internal mutex (the queue)                 | lease nodes                           | permit count          |
//! |---------|--------------------------------------------|---------------------------------------|-----------------------|
//! | Curator | `<path>/locks/_c_<uuid>-lock-<seq>`        | `<path>/leases/_c_<uuid>-lease-<seq>` | each client's own     |
//! | kazoo   | `<path>-__lock__/<hex32>__lock__<seq>`     | `<path>/<hex32>`                      | `<path>`'s data       |
//!
//! Both peers take a lease the same way: wait for the internal mutex (a fair FIFO
//! queue: our ordinary walk, in the mutex's directory), then, holding it, look at
//! the pool: with room, add a lease node; without, wait for the pool's children
//! to change and look again; then release the mutex and keep the lease. Only the
//! mutex holder adds leases, so while it looks the pool can only shrink: room seen
//! is room still there when the lease node is added. The peers differ in the
//! order, and we follow each: Curator adds its lease node first and holds once the
//! pool has at most `n` children, its own included; kazoo counts first and adds
//! its node while the pool has fewer than `n` children. Like the peers, every
//! child of the pool counts.
//!
//! kazoo stores the permit count as the pool's data: a different count is
//! refused with [`FailReason::PermitsMismatch`], and a pool we create carries our
//! count. Curator's layout records no count (every client passes its own, or a
//! `SharedCount` kept elsewhere), so a mismatch cannot be seen there.
//!
//! Once held, the lease node is our node: held, suspended, lost and released as
//! any lock's node, its `czxid` the fencing token. Cleanup removes the lease node
//! and the mutex node both.

use super::node::OwnNode;
use super::{Acquisition, Ctx, State};
use crate::event::FailReason;
use crate::names::{
    node_prefix, parse_kazoo_lease, parse_name, parse_sequence, semaphore_lease_dir as pool_dir,
    semaphore_mutex_dir as mutex_dir, AttemptId, NameScheme, NodeKind,
};
use crate::output::Progress;
use crate::path::ancestors;
use crate::proto::{CreateMode, Op, Reply, RequestId, ZkError};
use crate::requests::Purpose;
use crate::spec::{LockSpec, Recipe};

/// Whose layout the pool follows.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Layout {
    /// `InterProcessSemaphoreV2`: `<path>/locks`, `<path>/leases`.
    Curator,
    /// kazoo's `Semaphore`: `<path>-__lock__`, `<path>`.
    Kazoo,
}

/// What we know about the create of our lease node.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum LeaseCreate {
    NotSent,
    InFlight(RequestId),
    /// Sent, the reply lost with the connection: the node may exist.
    Unknown,
    /// Its outcome is known (the node, if any, is in `node`).
    Done,
}

/// The longest directory a node of `spec` is created in: the lock path, or for a
/// semaphore in a peer's layout the longer of its mutex and pool directories
/// (what the room for participant data is measured against).
pub(crate) fn longest_dir(spec: &LockSpec) -> String {
    match spec.recipe {
        Recipe::Semaphore { .. } => [
            mutex_dir(spec.scheme, &spec.path),
            pool_dir(spec.scheme, &spec.path),
        ]
        .into_iter()
        .flatten()
        .max_by_key(String::len)
        .unwrap_or_else(|| spec.path.clone()),
        _ => spec.path.clone(),
    }
}

/// The lease half of a semaphore in a peer's layout.
pub(crate) struct Lease {
    layout: Layout,
    permits: u32,
    mutex_dir: String,
    pool: String,
    /// kazoo: the lease node's full path (`<pool>/<hex32>`, not sequential);
    /// Curator: the prefix the server suffixes with the sequence.
    create_path: String,
    attempt: AttemptId,
    data: Vec<u8>,
    /// The internal mutex is ours and the lease step runs.
    active: bool,
    /// The lease is ours: the acquisition's own node is the lease node now.
    granted: bool,
    create: LeaseCreate,
    /// Our lease node, once known (until it becomes the acquisition's own node).
    node: Option<OwnNode>,
    list: Option<RequestId>,
    pool_read: Option<RequestId>,
    pool_create: Option<RequestId>,
    /// kazoo: the pool's permit count was read and agrees (or we created the pool).
    pool_checked: bool,
    /// Curator: a listing came back without our node while its create was in flight.
    relist_after_create: bool,
    /// Duplicate lease nodes of ours, for the acquisition to delete.
    spare: Vec<String>,
}

/// What a lease step leads to.
enum Outcome {
    /// Nothing to do until a reply or a watch.
    Pending,
    /// The pool is full; its children are watched.
    Full,
    /// Our lease node exists and counts: hold it.
    Hold,
    /// The acquisition fails.
    Fail(FailReason),
    /// Trouble worth retrying after a pause.
    Trouble(ZkError),
}

impl Lease {
    /// The lease half of `spec`, if it is a semaphore in a peer's layout.
    pub(crate) fn for_spec(spec: &LockSpec, attempt: AttemptId) -> Option<Lease> {
        let Recipe::Semaphore { permits } = spec.recipe else {
            return None;
        };
        let (layout, create_path) = match spec.scheme {
            NameScheme::Curator => (
                Layout::Curator,
                format!(
                    "{}/{}",
                    pool_dir(spec.scheme, &spec.path)?,
                    node_prefix(spec.scheme, attempt, NodeKind::Semaphore)
                ),
            ),
            NameScheme::Kazoo => (Layout::Kazoo, format!("{}/{attempt}", spec.path)),
            _ => return None,
        };
        Some(Lease {
            layout,
            permits,
            mutex_dir: mutex_dir(spec.scheme, &spec.path)?,
            pool: pool_dir(spec.scheme, &spec.path)?,
            create_path,
            attempt,
            data: crate::owner::node_data(spec.scheme, spec.owner.as_deref(), &spec.data),
            active: false,
            granted: false,
            create: LeaseCreate::NotSent,
            node: None,
            list: None,
            pool_read: None,
            pool_create: None,
            pool_checked: false,
            relist_after_create: false,
            spare: Vec::new(),
        })
    }

    /// The internal mutex's directory (where the acquisition queues).
    pub(crate) fn mutex_dir(&self) -> &str {
        &self.mutex_dir
    }

    /// Whether the lease is still to be taken once the mutex is ours.
    pub(super) fn pending(&self) -> bool {
        !self.granted
    }

    /// Every request in flight is forgotten (a disconnect, a recovery): the step
    /// starts again once the mutex is confirmed ours.
    pub(super) fn forget(&mut self) {
        self.active = false;
        self.list = None;
        self.pool_read = None;
        self.pool_create = None;
        self.relist_after_create = false;
        if let LeaseCreate::InFlight(_) = self.create {
            self.create = LeaseCreate::Unknown;
        }
    }

    /// The session ended. After an expiry (or a close) our lease node is gone;
    /// after an abandonment it may live on, and cleanup looks for it.
    pub(super) fn session_ended(&mut self, expired: bool) {
        self.forget();
        if expired {
            self.node = None;
            if self.create != LeaseCreate::NotSent {
                self.create = LeaseCreate::Done;
            }
        }
    }

    fn send_step(&mut self, cx: &mut Ctx, id: crate::ids::LockId) {
        match self.layout {
            Layout::Kazoo if !self.pool_checked => self.send_pool_read(cx, id),
            Layout::Kazoo => self.send_list(cx, id),
            Layout::Curator => match self.create {
                LeaseCreate::NotSent => {
                    self.send_create(cx, id);
                    self.send_list(cx, id);
                }
                LeaseCreate::InFlight(_) => {}
                LeaseCreate::Unknown | LeaseCreate::Done => self.send_list(cx, id),
            },
        }
    }

    fn send_list(&mut self, cx: &mut Ctx, id: crate::ids::LockId) {
        let op = Op::WatchChildren {
            path: self.pool.clone(),
        };
        self.list = cx.send(id, Purpose::LeaseList, op);
    }

    fn send_create(&mut self, cx: &mut Ctx, id: crate::ids::LockId) {
        let mode = match self.layout {
            Layout::Curator => CreateMode::EphemeralSequential,
            Layout::Kazoo => CreateMode::Ephemeral,
        };
        let op = Op::Create {
            path: self.create_path.clone(),
            data: self.data.clone(),
            mode,
        };
        if let Some(r) = cx.send(id, Purpose::LeaseCreate, op) {
            self.create = LeaseCreate::InFlight(r);
        }
    }

    fn send_pool_read(&mut self, cx: &mut Ctx, id: crate::ids::LockId) {
        let op = Op::GetData {
            path: self.pool.clone(),
            watch: false,
        };
        self.pool_read = cx.send(id, Purpose::PoolData, op);
    }

    /// kazoo: creates the pool with our permit count as its data (kazoo's
    /// `ensure_path` and `set`, in one step), after its missing ancestors.
    fn send_pool_create(&mut self, cx: &mut Ctx, id: crate::ids::LockId, parents: bool) {
        if parents {
            for dir in ancestors(&self.pool) {
                let op = Op::Create {
                    path: dir,
                    data: Vec::new(),
                    mode: CreateMode::Container,
                };
                cx.send(id, Purpose::CreateParent, op);
            }
        }
        let op = Op::Create {
            path: self.pool.clone(),
            data: self.permits.to_string().into_bytes(),
            mode: CreateMode::Persistent,
        };
        self.pool_create = cx.send(id, Purpose::PoolCreate, op);
    }

    /// Curator: the lease directory is missing: its containers, then our lease
    /// node and a listing, in one burst.
    fn send_parents_then_create(&mut self, cx: &mut Ctx, id: crate::ids::LockId) {
        let mut dirs = ancestors(&self.pool);
        dirs.push(self.pool.clone());
        for dir in dirs {
            let op = Op::Create {
                path: dir,
                data: Vec::new(),
                mode: CreateMode::Container,
            };
            cx.send(id, Purpose::CreateParent, op);
        }
        self.send_create(cx, id);
        self.send_list(cx, id);
    }

    /// kazoo: the permit count in the pool's data, as kazoo reads it (data that
    /// is no number is someone else's use of the node, and ignored).
    fn check_count(&self, data: &[u8]) -> Result<(), FailReason> {
        let stored = std::str::from_utf8(data)
            .ok()
            .and_then(|s| s.trim().parse::<i64>().ok());
        match stored {
            Some(theirs) if theirs != i64::from(self.permits) => Err(FailReason::PermitsMismatch {
                ours: self.permits,
                theirs: u32::try_from(theirs.max(0)).unwrap_or(u32::MAX),
            }),
            _ => Ok(()),
        }
    }

    fn on_pool_data(
        &mut self,
        cx: &mut Ctx,
        id: crate::ids::LockId,
        result: Result<Reply, ZkError>,
    ) -> Outcome {
        match result {
            Ok(Reply::Data { data, .. }) => {
                if let Err(reason) = self.check_count(&data) {
                    return Outcome::Fail(reason);
                }
                self.pool_checked = true;
                self.send_list(cx, id);
                Outcome::Pending
            }
            Ok(_) => Outcome::Trouble(ZkError::Other("unexpected reply".into())),
            Err(ZkError::NoNode) => {
                self.send_pool_create(cx, id, false);
                Outcome::Pending
            }
            Err(e) if e.is_connection_loss() => Outcome::Trouble(e),
            Err(e) => Outcome::Fail(FailReason::Zk(e)),
        }
    }

    fn on_pool_create(
        &mut self,
        cx: &mut Ctx,
        id: crate::ids::LockId,
        result: Result<Reply, ZkError>,
        parent_tries: &mut u32,
        max_parent_tries: u32,
    ) -> Outcome {
        match result {
            Ok(_) => {
                self.pool_checked = true;
                self.send_list(cx, id);
                Outcome::Pending
            }
            // Someone else created it meanwhile: read its count.
            Err(ZkError::NodeExists) => {
                self.send_pool_read(cx, id);
                Outcome::Pending
            }
            Err(ZkError::NoNode) => {
                *parent_tries += 1;
                if *parent_tries > max_parent_tries {
                    return Outcome::Fail(FailReason::Zk(ZkError::NoNode));
                }
                self.send_pool_create(cx, id, true);
                Outcome::Pending
            }
            Err(e) if e.is_connection_loss() => Outcome::Trouble(e),
            Err(e) => Outcome::Fail(FailReason::Zk(e)),
        }
    }

    /// The reply to our lease node's create. In cleanup, a node it made is spare.
    fn on_create(
        &mut self,
        cx: &mut Ctx,
        id: crate::ids::LockId,
        result: Result<Reply, ZkError>,
        cleanup: bool,
        parent_tries: &mut u32,
        max_parent_tries: u32,
    ) -> Outcome {
        match result {
            Ok(Reply::Created { path, stat }) => {
                let seq = match self.layout {
                    Layout::Curator => path
                        .strip_prefix(self.create_path.as_str())
                        .and_then(parse_sequence),
                    Layout::Kazoo => (path == self.create_path).then_some(0),
                };
                self.create = LeaseCreate::Done;
                let Some(seq) = seq else {
                    // Not the node we asked for: never adopt it. Ours, if made, is
                    // found by its attempt id like after a lost reply.
                    self.create = LeaseCreate::Unknown;
                    return Outcome::Fail(FailReason::Zk(ZkError::Other(format!(
                        "unexpected created path {path:?}"
                    ))));
                };
                if cleanup {
                    self.spare.push(path);
                    return Outcome::Pending;
                }
                cx.progress(id, Progress::Created { node: path.clone() });
                self.node = Some(OwnNode { path, seq, stat });
                match self.layout {
                    // Made while the pool had room: ours.
                    Layout::Kazoo => Outcome::Hold,
                    // The listing right behind decides.
                    Layout::Curator => {
                        if std::mem::take(&mut self.relist_after_create) && self.list.is_none() {
                            self.send_list(cx, id);
                        }
                        Outcome::Pending
                    }
                }
            }
            Ok(other) => {
                self.create = LeaseCreate::Unknown;
                Outcome::Fail(FailReason::Zk(ZkError::Other(format!(
                    "unexpected reply {other:?}"
                ))))
            }
            // kazoo: a create of ours whose reply was lost made it: it is ours.
            Err(ZkError::NodeExists) if self.layout == Layout::Kazoo => {
                self.create = LeaseCreate::Done;
                if cleanup {
                    self.spare.push(self.create_path.clone());
                    return Outcome::Pending;
                }
                self.node = Some(OwnNode {
                    path: self.create_path.clone(),
                    seq: 0,
                    stat: None,
                });
                Outcome::Hold
            }
            Err(ZkError::NoNode) => {
                self.create = LeaseCreate::NotSent;
                if cleanup {
                    self.create = LeaseCreate::Done;
                    return Outcome::Pending;
                }
                *parent_tries += 1;
                if *parent_tries > max_parent_tries {
                    return Outcome::Fail(FailReason::Zk(ZkError::NoNode));
                }
                match self.layout {
                    Layout::Curator => self.send_parents_then_create(cx, id),
                    // The pool went (deleted by hand): check it again.
                    Layout::Kazoo => {
                        self.pool_checked = false;
                        self.send_pool_read(cx, id);
                    }
                }
                Outcome::Pending
            }
            Err(e) if e.is_connection_loss() => {
                self.create = LeaseCreate::Unknown;
                Outcome::Trouble(e)
            }
            Err(e) => {
                self.create = if cleanup {
                    LeaseCreate::Done
                } else {
                    LeaseCreate::NotSent
                };
                Outcome::Fail(FailReason::Zk(e))
            }
        }
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
    fn on_list(
        &mut self,
        cx: &mut Ctx,
        id: crate::ids::LockId,
        result: Result<Reply, ZkError>,
        cleanup: bool,
    ) -> Outcome {
        let children = match result {
            Ok(Reply::Children(c)) => c,
            Ok(_) => return Outcome::Trouble(ZkError::Other("unexpected reply".into())),
            Err(ZkError::NoNode) => Vec::new(),
            Err(e) if e.is_connection_loss() => return Outcome::Trouble(e),
            Err(e) if cleanup => return Outcome::Trouble(e),
            Err(e) => return Outcome::Fail(FailReason::Zk(e)),
        };
        if !cleanup {
            // The children watch this listing left is armed from now on. A firing
            // delivered meanwhile (an earlier watch of this session on the pool,
            // set by another task or an earlier listing, fired by a change the
            // listing already shows) took our entry in the watch index with it:
            // put it back, or the next change would reach nobody.
            cx.watches.add(id, &self.pool);
        }
        let mine = self.ours(&children);
        let pool = self.pool.clone();
        let full = |name: &str| format!("{pool}/{name}");
        if cleanup {
            // Looking for a lease node whose create's reply was lost: all of ours go.
            if self.create == LeaseCreate::Unknown {
                self.create = LeaseCreate::Done;
            }
            self.spare
                .extend(mine.iter().map(|(_, n)| full(n.as_str())));
            return Outcome::Pending;
        }
        // Keep the node we know, else the oldest of ours; the others are
        // duplicates of a create retried after a connection loss.
        let known = self.node.as_ref().map(|n| n.path.clone());
        let keep = match &known {
            Some(k) => mine.iter().position(|(_, n)| full(n) == *k),
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
                    self.node = Some(OwnNode {
                        path: full(name),
                        seq,
                        stat: None,
                    });
                }
                if !matches!(self.create, LeaseCreate::InFlight(_)) {
                    self.create = LeaseCreate::Done;
                }
                // Holding one already (found again after a lost reply): kazoo
                // holds at once ("do we already have a lease?"); Curator counts.
                let counted = match self.layout {
                    Layout::Kazoo => true,
                    Layout::Curator => children.len() <= self.permits as usize,
                };
                if counted {
                    Outcome::Hold
                } else {
                    Outcome::Full
                }
            }
            None => {
                if let LeaseCreate::InFlight(_) = self.create {
                    // Only out of FIFO order: list again once the create is answered.
                    self.relist_after_create = true;
                    return Outcome::Pending;
                }
                // Not there: never made, or gone (deleted by hand); Curator then
                // starts over with a new node, as kazoo does.
                self.node = None;
                self.create = LeaseCreate::NotSent;
                match self.layout {
                    Layout::Curator => {
                        self.send_create(cx, id);
                        self.send_list(cx, id);
                        Outcome::Pending
                    }
                    Layout::Kazoo if children.len() < self.permits as usize => {
                        self.send_create(cx, id);
                        Outcome::Pending
                    }
                    Layout::Kazoo => Outcome::Full,
                }
            }
        }
    }

    /// Whether cleanup has nothing more to find (a create in flight or lost may
    /// still have made a node). Sends the listing that finds a lost one.
    fn cleanup_settled(&mut self, cx: &mut Ctx, id: crate::ids::LockId) -> bool {
        match self.create {
            LeaseCreate::InFlight(_) => false,
            LeaseCreate::Unknown => match self.layout {
                // The name is known: just delete it (no node is fine).
                Layout::Kazoo => {
                    self.create = LeaseCreate::Done;
                    self.spare.push(self.create_path.clone());
                    true
                }
                Layout::Curator => {
                    if self.list.is_none() {
                        self.send_list(cx, id);
                    }
                    false
                }
            },
            LeaseCreate::NotSent | LeaseCreate::Done => true,
        }
    }
}

impl Acquisition {
    /// The kind of walk our node makes in [`Acquisition::dir`]: the semaphore's
    /// own recipe, or for a semaphore in a peer's layout its internal mutex.
    pub(super) fn walk_recipe(&self) -> Recipe {
        match self.lease {
            Some(_) => Recipe::Write,
            None => self.spec.recipe,
        }
    }

    /// Whether the walk's grant is the internal mutex of a lease still to take.
    pub(super) fn lease_pending(&self) -> bool {
        self.lease.as_ref().is_some_and(|l| l.pending())
    }

    /// The internal mutex is ours: take a lease (once; a recovery starts again).
    pub(super) fn lease_start(&mut self, cx: &mut Ctx) {
        let id = self.id;
        let Some(lease) = self.lease.as_deref_mut() else {
            return;
        };
        if lease.active || lease.granted {
            return;
        }
        lease.active = true;
        lease.send_step(cx, id);
    }

    /// A watch fired on `path`; true if it was the pool's children watch.
    pub(super) fn on_pool_watch(&mut self, cx: &mut Ctx, path: &str) -> bool {
        let id = self.id;
        let waiting = self.state == State::Waiting;
        let Some(lease) = self.lease.as_deref_mut() else {
            return false;
        };
        if lease.pool != path {
            return false;
        }
        if waiting && lease.active && lease.list.is_none() && lease.pool_read.is_none() {
            lease.send_step(cx, id);
        }
        true
    }

    /// A reply to one of the lease's requests.
    pub(super) fn on_lease_reply(
        &mut self,
        cx: &mut Ctx,
        request: RequestId,
        purpose: Purpose,
        result: Result<Reply, ZkError>,
    ) {
        let id = self.id;
        let cleanup = self.state == State::Cleanup;
        let max_tries = cx.config.max_parent_retries;
        let mut tries = self.parent_tries;
        let Some(lease) = self.lease.as_deref_mut() else {
            return;
        };
        // Only the step of a mutex we hold acts; cleanup hears of nodes made.
        let live = (self.state == State::Waiting && lease.active) || cleanup;
        let outcome = match purpose {
            Purpose::LeaseCreate if lease.create == LeaseCreate::InFlight(request) => {
                lease.on_create(cx, id, result, cleanup || !live, &mut tries, max_tries)
            }
            Purpose::LeaseList if lease.list == Some(request) => {
                lease.list = None;
                if !live {
                    return;
                }
                lease.on_list(cx, id, result, cleanup)
            }
            Purpose::PoolData if lease.pool_read == Some(request) => {
                lease.pool_read = None;
                if !live || cleanup {
                    return;
                }
                lease.on_pool_data(cx, id, result)
            }
            Purpose::PoolCreate if lease.pool_create == Some(request) => {
                lease.pool_create = None;
                if !live || cleanup {
                    return;
                }
                lease.on_pool_create(cx, id, result, &mut tries, max_tries)
            }
            _ => return,
        };
        self.parent_tries = tries;
        self.act_on(cx, outcome);
    }

    fn act_on(&mut self, cx: &mut Ctx, outcome: Outcome) {
        let spare = self
            .lease
            .as_deref_mut()
            .map(|l| std::mem::take(&mut l.spare))
            .unwrap_or_default();
        for path in spare {
            // kazoo's lease path is fixed: a late reply to a create of it (or a
            // listing) names the node we hold, which is no spare.
            if self.own.as_ref().is_some_and(|o| o.path == path) {
                continue;
            }
            self.delete_extra(cx, path);
        }
        if self.state == State::Cleanup {
            return match outcome {
                Outcome::Trouble(e) => self.trouble(cx, e),
                _ => self.continue_cleanup(cx),
            };
        }
        match outcome {
            Outcome::Pending => {}
            Outcome::Hold => self.lease_hold(cx),
            Outcome::Full if !self.spec.wait => self.fail(cx, FailReason::WouldBlock),
            Outcome::Full => {
                if let Some(lease) = &self.lease {
                    let node = lease.pool.clone();
                    cx.progress(self.id, Progress::QueuedBehind { node });
                }
            }
            Outcome::Fail(reason) => self.fail(cx, reason),
            Outcome::Trouble(e) => self.trouble(cx, e),
        }
    }

    /// The lease is ours: release the internal mutex (as the peers do once they
    /// have their lease) and hold the lease node as our own.
    fn lease_hold(&mut self, cx: &mut Ctx) {
        let Some(lease) = self.lease.as_deref_mut() else {
            return;
        };
        let Some(mut node) = lease.node.take() else {
            return;
        };
        lease.active = false;
        lease.granted = true;
        if let Some(mutex) = self.own.take() {
            if self.own_watched {
                cx.watches.remove(self.id, &mutex.path);
            }
            // kazoo's lease node has no sequence: the grant carries the mutex's,
            // our place in the queue.
            if lease.layout == Layout::Kazoo {
                node.seq = mutex.seq;
            }
            self.delete_extra(cx, mutex.path);
        }
        self.own_watched = false;
        self.own_read = None;
        self.own = Some(node);
        self.ensure_own_read(cx);
        self.grant(cx);
    }

    /// The acquisition ended: a lease node not (yet) our own goes too.
    pub(super) fn lease_terminal(&mut self, cx: &mut Ctx) {
        let Some(lease) = self.lease.as_deref_mut() else {
            return;
        };
        lease.active = false;
        if let Some(node) = lease.node.take() {
            lease.spare.push(node.path);
        }
        if lease.layout == Layout::Kazoo && lease.create == LeaseCreate::Unknown {
            lease.create = LeaseCreate::Done;
            lease.spare.push(lease.create_path.clone());
        }
        let spare = std::mem::take(&mut lease.spare);
        for path in spare {
            self.delete_extra(cx, path);
        }
    }

    /// Cleanup: whether nothing of the lease can remain unaccounted for.
    pub(super) fn lease_cleanup_settled(&mut self, cx: &mut Ctx) -> bool {
        let id = self.id;
        let Some(lease) = self.lease.as_deref_mut() else {
            return true;
        };
        let settled = lease.cleanup_settled(cx, id);
        let spare = std::mem::take(&mut lease.spare);
        for path in spare {
            self.delete_extra(cx, path);
        }
        settled
    }

    /// Requests in flight are gone (a disconnect, a recovery).
    pub(super) fn lease_forget(&mut self) {
        if let Some(lease) = self.lease.as_deref_mut() {
            lease.forget();
        }
    }

    /// The session ended (see [`Lease::session_ended`]).
    pub(super) fn lease_session_ended(&mut self, expired: bool) {
        if let Some(lease) = self.lease.as_deref_mut() {
            lease.session_ended(expired);
        }
    }
}
