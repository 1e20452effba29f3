//! Starting tasks: each user call checks its input before anything is sent (paths,
//! data sizes, what a recipe supports, an owner waiting behind itself), then files
//! the task and starts it if connected.

use super::task::Task;
use super::{Conn, Session};
use crate::acquisition::{Acquisition, State};
use crate::break_lock::{BreakNode, BreakRecord};
use crate::deadlock::scan::Scan;
use crate::event::UsageError;
use crate::ids::LockId;
use crate::inspect::Inspect;
use crate::limits;
use crate::names::{AttemptId, NameScheme};
use crate::observer::Observer;
use crate::path::validate_lock_path;
use crate::revoke::Revoke;
use crate::spec::{LockSpec, Recipe};
use crate::time::Timestamp;
use crate::timers::TimerKind;

/// Whether `spec` (to acquire) is the read half of the read/write lock whose write
/// half `held` its owner holds: a downgrade, which does not queue behind that
/// write (Curator's rule). A mutex's owner taking the read half waits as before.
fn is_downgrade(spec: &LockSpec, held: &LockSpec) -> bool {
    spec.recipe == Recipe::Read && spec.rwlock && held.recipe == Recipe::Write && held.rwlock
}

/// Refuses a scheme that has no node layout for `spec`'s recipe: go-zookeeper
/// names only a mutex (its `Lock`), and `Other` is read from listings only.
/// Writing Go's mutex name for a reader or a semaphore would make every Go `Lock`
/// take it for an exclusive holder, and a peer recipe that does not exist cannot be
/// interoperated with.
fn check_layout(spec: &LockSpec) -> Result<(), UsageError> {
    let has = match spec.scheme {
        NameScheme::Go => "a mutex (go-zookeeper's Lock)",
        NameScheme::Other => "no layout: it is read from listings only",
        _ => return Ok(()),
    };
    let recipe = match spec.recipe {
        Recipe::Write if spec.rwlock => "write half of a read/write lock",
        Recipe::Write if spec.scheme == NameScheme::Go => return Ok(()),
        Recipe::Write => "mutex",
        Recipe::Read => "read lock",
        Recipe::Semaphore { .. } => "semaphore",
        Recipe::Leader => "leader election",
    };
    Err(UsageError::NoLayout {
        scheme: spec.scheme,
        recipe,
        has,
    })
}

impl Session {
    /// Starts an acquisition. Its progress comes as events for the returned id.
    ///
    /// Bad input (an invalid path, oversized data, a semaphore of 0 permits, a leader
    /// without a participant id, crash detection on a shared recipe) is refused here,
    /// before anything is sent.
    pub fn acquire(&mut self, spec: LockSpec, now: Timestamp) -> Result<LockId, UsageError> {
        self.check_open()?;
        validate_lock_path(&spec.path)?;
        // A peer's semaphore layout nests its nodes deeper than the lock path.
        let room = limits::room_for_data(
            self.config.max_packet,
            &crate::acquisition::lease::longest_dir(&spec),
        )?;
        // The owner header counts toward the data size.
        let len =
            crate::owner::node_data(spec.scheme, spec.rare().owner.as_deref(), &spec.rare().data)
                .len();
        if len > room {
            return Err(UsageError::DataTooLarge { len, max: room });
        }
        check_layout(&spec)?;
        match spec.recipe {
            Recipe::Semaphore { permits: 0 } => return Err(UsageError::ZeroPermits),
            // A peer's semaphore layout (a lease pool behind an internal mutex, see
            // acquisition::lease) has no place for published waits.
            Recipe::Semaphore { .. }
                if spec.scheme != NameScheme::Native && spec.rare().detect_after.is_some() =>
            {
                return Err(UsageError::Unsupported(
                    "deadlock detection on a semaphore needs NameScheme::Native",
                ))
            }
            Recipe::Leader if spec.rare().data.is_empty() => {
                return Err(UsageError::EmptyParticipant)
            }
            _ => {}
        }
        if spec.detect_crashes && !matches!(spec.recipe, Recipe::Write | Recipe::Leader) {
            return Err(UsageError::Unsupported(
                "crash detection needs an exclusive recipe",
            ));
        }
        if spec.rare().lock_delay.is_some()
            && !matches!(spec.recipe, Recipe::Write | Recipe::Leader)
        {
            return Err(UsageError::Unsupported(
                "lock-delay needs an exclusive recipe",
            ));
        }
        // go-zookeeper's `Lock` reads every child of the lock directory as
        // `...-<sequence>` and fails (`Lock()` returns an error) on a name that
        // does not end in a number: the markers these two features keep beside
        // the participants would stop every Go peer on the path. Refused rather
        // than break them (safe either way: a failing Go peer holds nothing).
        if spec.scheme == NameScheme::Go
            && (spec.detect_crashes || spec.rare().lock_delay.is_some())
        {
            return Err(UsageError::Unsupported(
                "crash detection and lock-delay keep a marker node in the lock directory, which go-zookeeper's Lock cannot read: not with NameScheme::Go",
            ));
        }
        if spec.rare().detect_after.is_some() {
            if spec.rare().owner.is_none() {
                return Err(UsageError::Unsupported(
                    "deadlock detection needs an owner (LockSpec::owner)",
                ));
            }
            // The kazoo scheme carries the owner as the node's data (kazoo's
            // identifier), and chases infer where such an owner waits.
            let kazoo_owner = spec.scheme == NameScheme::Kazoo && spec.rare().data.is_empty();
            if spec.scheme != NameScheme::Native && !kazoo_owner {
                return Err(UsageError::Unsupported(
                    "deadlock detection needs NameScheme::Native, or NameScheme::Kazoo without data (the owner is the node's data)",
                ));
            }
            self.detection = true;
        }
        self.check_self_deadlock(&spec)?;
        let downgrade = self.downgrade_from(&spec);
        let id = self.new_id();
        let attempt = AttemptId(self.rng.next_u128()).as_uuid_v4();
        if let Some(deadline) = spec.rare().deadline {
            self.timers.set(id, TimerKind::Deadline, deadline);
        }
        let mut acquisition = Acquisition::new(id, spec, attempt);
        acquisition.downgrade_from(downgrade);
        self.start(id, Task::Acquisition(Box::new(acquisition)), now);
        // A deadline already past fails at once rather than at the next timeout call.
        self.handle_timeout(now);
        Ok(id)
    }

    /// Follows the leader of the election at `path` without taking part: reports
    /// [`LockEvent::LeaderChanged`](crate::LockEvent::LeaderChanged) now and at every change, until
    /// [`cancel`](Self::cancel)led (then [`FailReason::Cancelled`]).
    ///
    /// [`FailReason::Cancelled`]: crate::FailReason::Cancelled
    pub fn observe(&mut self, path: &str, now: Timestamp) -> Result<LockId, UsageError> {
        self.start_on_path(path, now, |id, path| {
            Task::Observer(Box::new(Observer::new(id, path)))
        })
    }

    /// Asks the holders of the lock at `path` (or, for a participant node's path,
    /// that node's owner, waiting or holding) to let go, by writing `__REVOKE__` to
    /// their node. Ends with [`LockEvent::RevocationSent`](crate::LockEvent::RevocationSent) naming the nodes asked.
    pub fn revoke(&mut self, path: &str, now: Timestamp) -> Result<LockId, UsageError> {
        self.start_on_path(path, now, |id, path| {
            Task::Revoke(Box::new(Revoke::new(id, path)))
        })
    }

    /// Breaks a lock: deletes the participant node `node` (a full path) without
    /// its owner's release, if it is still the node whose fencing token
    /// (`czxid`) is `token` (so a node inspected earlier, and only that one, is
    /// deleted). Ends with [`LockEvent::Broken`](crate::LockEvent::Broken) saying
    /// whether our delete removed it. See [`crate::BreakOutcome`].
    ///
    /// With `record`, the delete leaves the record of the break beside it, in
    /// the same `multi` (`<dir>/zkl-broken`, read back as
    /// [`Participants::last_break`](crate::Participants::last_break)); leave it
    /// out where a peer would trip over an extra child (go-zookeeper's `Lock`
    /// fails on it, kazoo's semaphore counts it as a lease).
    ///
    /// The node's owner learns only from ZooKeeper: at once if it watches its
    /// node (a zklock holder does from at most two sync intervals after its
    /// grant), else at its next request on the node (a fenced write, its
    /// release, its check after a reconnect), each of which then reports the
    /// lock lost.
    pub fn break_node(
        &mut self,
        node: &str,
        token: crate::FencingToken,
        record: Option<BreakRecord<'_>>,
        now: Timestamp,
    ) -> Result<LockId, UsageError> {
        let record = record.map(|r| {
            let name = node.rsplit('/').next().unwrap_or(node);
            crate::LastBreak::record(name, token, r.session, r.by)
        });
        self.start_on_path(node, now, |id, node| {
            Task::Break(Box::new(BreakNode::new(id, node, token, record)))
        })
    }

    /// Lists the holders and waiters of the lock at `path`, in queue order, with
    /// their owners, sessions, ages and tokens, and what each waiter waits for: one
    /// pipelined round trip (a listing, then a `getData` per participant, no
    /// watches). Ends with [`LockEvent::Participants`](crate::LockEvent::Participants).
    pub fn inspect(&mut self, path: &str, now: Timestamp) -> Result<LockId, UsageError> {
        self.start_on_path(path, now, |id, path| {
            Task::Inspect(Box::new(Inspect::new(id, path)))
        })
    }

    /// Scans the lock directories under `root` (the root itself and its direct
    /// children) for deadlocks, and ends with [`LockEvent::Deadlocks`](crate::LockEvent::Deadlocks): one cycle of
    /// waits per deadlock, each node with its owner, session, token and age. Every
    /// edge is read twice (see [`crate::deadlock`]); cycles through participants of
    /// any client count, as long as their owners are named in their data.
    pub fn deadlocks(&mut self, root: &str, now: Timestamp) -> Result<LockId, UsageError> {
        self.start_on_path(root, now, |id, root| {
            Task::Scan(Box::new(Scan::new(id, root)))
        })
    }

    /// Starts a task that owns no node on the lock path `path` (an observer, a
    /// revocation, an inspection, a scan): the same checks for each.
    fn start_on_path(
        &mut self,
        path: &str,
        now: Timestamp,
        task: impl FnOnce(LockId, String) -> Task,
    ) -> Result<LockId, UsageError> {
        self.check_open()?;
        validate_lock_path(path)?;
        limits::room_for_data(self.config.max_packet, path)?;
        let id = self.new_id();
        self.start(id, task(id, path.to_owned()), now);
        Ok(id)
    }

    /// An owner never waits behind its own node: a waiting acquisition of a single
    /// permit that a node the same owner holds on the path would block can only
    /// end by timing out. A try-only acquisition cannot wait, so it is let through.
    fn check_self_deadlock(&self, spec: &LockSpec) -> Result<(), UsageError> {
        let Some(owner) = spec.rare().owner.as_deref() else {
            return Ok(());
        };
        if !spec.wait || spec.recipe.permits() != 1 {
            return Ok(());
        }
        let held = self.held_by(&spec.path, owner).find(|a| {
            spec.recipe.is_blocked_by(a.spec().recipe.node_kind()) && !is_downgrade(spec, a.spec())
        });
        match held {
            Some(a) => Err(UsageError::SelfDeadlock {
                path: spec.path.clone(),
                owner: owner.to_owned(),
                held: a.spec().recipe.node_kind(),
            }),
            None => Ok(()),
        }
    }

    /// For a read that downgrades (see [`is_downgrade`]): the names of the write
    /// nodes its owner holds on the path, which do not block it.
    fn downgrade_from(&self, spec: &LockSpec) -> Vec<String> {
        let Some(owner) = spec.rare().owner.as_deref() else {
            return Vec::new();
        };
        self.held_by(&spec.path, owner)
            .filter(|a| is_downgrade(spec, a.spec()))
            .filter_map(|a| a.node_path())
            .map(|p| crate::path::split_parent(p).1.to_owned())
            .collect()
    }

    /// The acquisitions of `owner` that hold the lock at `path` (or are being
    /// granted it).
    fn held_by<'a>(
        &'a self,
        path: &'a str,
        owner: &'a str,
    ) -> impl Iterator<Item = &'a Acquisition> {
        self.tasks
            .values()
            .filter_map(Task::acquisition)
            .filter(move |a| {
                a.spec().path == path
                    && a.spec().rare().owner.as_deref() == Some(owner)
                    && matches!(a.state(), State::Held | State::Granting)
            })
    }

    fn check_open(&self) -> Result<(), UsageError> {
        match self.conn {
            Conn::Closed => Err(UsageError::Closed),
            _ => Ok(()),
        }
    }

    fn new_id(&mut self) -> LockId {
        self.next_id += 1;
        LockId(self.next_id)
    }
}
