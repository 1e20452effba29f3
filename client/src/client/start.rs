//! Starting a core task for a handle: acquisitions from a [`LockSpec`] (what the
//! lock objects call), and for every task the core call, its slot, and for an
//! acquisition its tracing span and metrics.

use crate::error::Error;
use crate::guard::LockGuard;
use crate::handle::{LockClient, Task};
use crate::pending::PendingLock;
use crate::shared::SharedState;
use lock_core::{LockId, LockSpec};
use std::time::Instant;

impl LockClient {
    /// Runs any [`LockSpec`] (e.g. a leader-election participant, or a lock with
    /// another naming scheme), giving up at `deadline` if given.
    ///
    /// Give the deadline here rather than with `LockSpec::deadline`, whose
    /// timestamps are on the core's private clock. A spec made
    /// [`try_only`](LockSpec::try_only) that finds the lock busy gives
    /// [`Error::WouldBlock`]. Cancel-safe: dropping the future gives up and leaves
    /// no node behind.
    ///
    /// ```
    /// # async fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
    /// use zklock::{LockSpec, NameScheme};
    /// let spec = LockSpec::write("/locks/shared-with-curator").scheme(NameScheme::Curator);
    /// let guard = locks.acquire(spec, None).await?;
    /// # drop(guard); Ok(()) }
    /// # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
    /// ```
    pub async fn acquire(
        &self,
        spec: LockSpec,
        deadline: Option<Instant>,
    ) -> Result<LockGuard, Error> {
        self.start(spec, deadline)?.await
    }

    /// Starts any [`LockSpec`] (as [`acquire`](Self::acquire)) and returns at once
    /// with the acquisition under way.
    ///
    /// # Errors
    /// [`Error::Usage`] for bad input, [`Error::Closed`] once the client is closed.
    ///
    /// ```
    /// # fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
    /// let pending = locks.start(zklock::LockSpec::write("/locks/job"), None)?;
    /// let guard = pending.wait_blocking()?;
    /// # drop(guard); Ok(()) }
    /// # demo(zklock::sim::Server::new().client()).unwrap();
    /// ```
    pub fn start(&self, spec: LockSpec, deadline: Option<Instant>) -> Result<PendingLock, Error> {
        let id = self.start_task(
            Task::Acquire {
                spec,
                deadline,
                reentrant: false,
            },
            None,
        )?;
        Ok(PendingLock::new(self.clone(), id))
    }

    /// Acquires a reentrant mutex's `spec` (see [`Mutex::reentrant`]).
    pub(crate) async fn acquire_reentrant(
        &self,
        spec: LockSpec,
        deadline: Option<Instant>,
    ) -> Result<LockGuard, Error> {
        let task = Task::Acquire {
            spec,
            deadline,
            reentrant: true,
        };
        let id = self.start_task(task, None)?;
        PendingLock::new(self.clone(), id).await
    }

    /// Blocking twin of [`acquire`](Self::acquire).
    pub fn acquire_blocking(
        &self,
        spec: LockSpec,
        deadline: Option<Instant>,
    ) -> Result<LockGuard, Error> {
        crate::blocking::block_on(self.acquire(spec, deadline))
    }

    /// Starts a task in the core and gives it a slot; its id comes back at once.
    pub(crate) fn start_task(&self, task: Task, election: Option<u64>) -> Result<LockId, Error> {
        let mut state = self.shared().lock_state();
        let started = file_task(&mut state, task, election);
        state.wake();
        started
    }
}

/// Starts `task` in the core under the locked state `s` and gives it a slot
/// (for an acquisition with its tracing span and metrics).
fn file_task(s: &mut SharedState, task: Task, election: Option<u64>) -> Result<LockId, Error> {
    if s.is_closed() {
        return Err(Error::Closed);
    }
    let now = s.now();
    let mut span = tracing::Span::none();
    let mut metrics = None;
    let id = match task {
        Task::Acquire {
            mut spec,
            deadline,
            reentrant,
        } => {
            if let Some(deadline) = deadline {
                spec = spec.deadline(s.timestamp(deadline));
            }
            let held_for = spec
                .owner_id()
                .filter(|_| reentrant)
                .map(|o| (o.to_owned(), spec.path().to_owned()));
            let lock = crate::trace::acquisition_span(&spec);
            let started = crate::metrics::AcquisitionMetrics::start(&spec, s.metrics_prefix);
            let id = s.core.acquire(spec, now)?;
            lock.record("lock", id.0);
            span = lock;
            metrics = Some(started);
            if let Some(held_for) = held_for {
                s.reentrant.insert(id, held_for);
            }
            id
        }
        Task::Observe(path) => s.core.observe(&path, now)?,
        Task::Revoke(path) => s.core.revoke(&path, now)?,
        Task::Break {
            node,
            token,
            record,
        } => {
            let record = record.as_ref().map(|(session, by)| lock_core::BreakRecord {
                session: *session,
                by: by.as_deref(),
            });
            s.core.break_node(&node, token, record, now)?
        }
        Task::Inspect(path) => s.core.inspect(&path, now)?,
        Task::Scan(root) => s.core.deadlocks(&root, now)?,
    };
    s.add_slot(id, election);
    if let Some(slot) = s.slots.get_mut(&id) {
        slot.span = (!span.is_disabled()).then(|| Box::new(span));
        slot.metrics = metrics;
    }
    Ok(id)
}
