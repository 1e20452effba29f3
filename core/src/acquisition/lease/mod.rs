//! Semaphores in Curator's and kazoo's layouts: a pool of lease nodes behind an
//! internal mutex, kept exactly as Curator 5.4's `InterProcessSemaphoreV2` and
//! kazoo's `Semaphore` keep them, so that their clients and ours share one
//! semaphore (their node names: [`crate::names`]).
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

use crate::acquisition::node::{Create, OwnNode};
use crate::ctx::Ctx;
use crate::ctx::InFlight;
use crate::event::FailReason;
use crate::names::{
    node_prefix, semaphore_lease_dir as pool_dir, semaphore_mutex_dir as mutex_dir, AttemptId,
    NameScheme, NodeKind,
};
use crate::proto::ZkError;
use crate::spec::{LockSpec, Recipe};

mod create;
mod drive;

pub(in crate::acquisition) use drive::LeaseCaller;
mod listing;
mod pool;

/// Whose layout the pool follows.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Layout {
    /// `InterProcessSemaphoreV2`: `<path>/locks`, `<path>/leases`.
    Curator,
    /// kazoo's `Semaphore`: `<path>-__lock__`, `<path>`.
    Kazoo,
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
    create: Create,
    /// Our lease node, once known (until it becomes the acquisition's own node).
    node: Option<OwnNode>,
    list: InFlight,
    pool_read: InFlight,
    pool_create: InFlight,
    /// kazoo: the pool's permit count was read and agrees (or we created the pool).
    pool_checked: bool,
    /// Curator: a listing came back without our node while its create was in flight.
    relist_after_create: bool,
    /// Duplicate lease nodes of ours, for the acquisition to delete.
    spare: Vec<String>,
}

/// What a lease step leads to (acted on in [`drive`]).
enum LeaseVerdict {
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
            data: crate::owner::node_data(
                spec.scheme,
                spec.rare().owner.as_deref(),
                &spec.rare().data,
            ),
            active: false,
            granted: false,
            create: Create::NotSent,
            node: None,
            list: InFlight::default(),
            pool_read: InFlight::default(),
            pool_create: InFlight::default(),
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
        self.list.forget();
        self.pool_read.forget();
        self.pool_create.forget();
        self.relist_after_create = false;
        if let Create::InFlight(_) = self.create {
            self.create = Create::Unknown;
        }
    }

    /// The session ended. After an expiry (or a close) our lease node is gone;
    /// after an abandonment it may live on, and cleanup looks for it.
    pub(super) fn session_ended(&mut self, expired: bool) {
        self.forget();
        if expired {
            self.node = None;
            if self.create != Create::NotSent {
                self.create = Create::Done;
            }
        }
    }

    fn send_step(&mut self, cx: &mut Ctx, id: crate::ids::LockId) {
        match self.layout {
            Layout::Kazoo if !self.pool_checked => self.send_pool_read(cx, id),
            Layout::Kazoo => self.send_list(cx, id),
            Layout::Curator => match self.create {
                Create::NotSent => {
                    self.send_create(cx, id);
                    self.send_list(cx, id);
                }
                Create::InFlight(_) => {}
                Create::Unknown | Create::Done => self.send_list(cx, id),
            },
        }
    }
}
