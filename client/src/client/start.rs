//! Starting a core task for a handle: acquisitions from a [`LockSpec`] (what the
//! lock objects call), and for every task the core call, its slot, and for an
//! acquisition its tracing span and metrics.

use crate::error::Error;
use crate::guard::LockGuard;
use crate::handle::LockClient;
use crate::pending::PendingLock;
use crate::shared::SharedState;
use lock_core::{LockId, LockSpec, Session, Timestamp, UsageError};
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
        let id = self.start_acquisition(spec, deadline, false, None)?;
        Ok(PendingLock::new(self.clone(), id))
    }

    /// Blocking twin of [`acquire`](Self::acquire).
    pub fn acquire_blocking(
        &self,
        spec: LockSpec,
        deadline: Option<Instant>,
    ) -> Result<LockGuard, Error> {
        crate::blocking::block_on(self.acquire(spec, deadline))
    }

    /// Starts an acquisition of `spec` in the core and gives it a slot with its
    /// tracing span and metrics. A `reentrant` mutex's grant becomes a counted
    /// hold of its owner at once, so that the owner re-enters it even before the
    /// first guard is handed out.
    pub(crate) fn start_acquisition(
        &self,
        mut spec: LockSpec,
        deadline: Option<Instant>,
        reentrant: bool,
        election: Option<u64>,
    ) -> Result<LockId, Error> {
        let held_for = spec
            .owner_id()
            .filter(|_| reentrant)
            .map(|o| (o.to_owned(), spec.path().to_owned()));
        let span = crate::trace::acquisition_span(&spec);
        self.start_task(|s, now| {
            if let Some(deadline) = deadline {
                spec = spec.deadline(s.time.timestamp(deadline));
            }
            let metrics = crate::metrics::AcquisitionMetrics::start(&spec, s.locks.metrics_prefix);
            let id = s.core.acquire(spec, now)?;
            span.record("lock", id.0);
            if let Some((owner, path)) = held_for {
                s.locks.expect_reentrant(id, owner, path);
            }
            let slot = s.locks.add(id, election);
            slot.span = (!span.is_disabled()).then(|| Box::new(span));
            slot.metrics = Some(metrics);
            Ok(id)
        })
    }

    /// Starts a task that is not an acquisition (`start` calls the core's
    /// `observe`, `revoke`, `inspect`, ...) and gives it a slot.
    pub(crate) fn start_other(
        &self,
        start: impl FnOnce(&mut Session, Timestamp) -> Result<LockId, UsageError>,
    ) -> Result<LockId, Error> {
        self.start_task(|s, now| {
            let id = start(&mut s.core, now)?;
            s.locks.add(id, None);
            Ok(id)
        })
    }

    /// Runs `start` (which starts a task in the core and gives it a slot) unless
    /// the client is closed, then wakes the link.
    fn start_task(
        &self,
        start: impl FnOnce(&mut SharedState, Timestamp) -> Result<LockId, UsageError>,
    ) -> Result<LockId, Error> {
        self.shared().with(|s| {
            if s.closing.is_closed() {
                return Err(Error::Closed);
            }
            let now = s.now();
            let id = start(s, now)?;
            s.mark_link();
            Ok(id)
        })
    }
}
