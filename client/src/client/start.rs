//! Starting a core task for a handle: the core call, the task's slot, and for an
//! acquisition its tracing span and metrics.

use super::{LockClient, Task};
use crate::error::Error;
use crate::shared::SharedState;
use lock_core::LockId;

impl LockClient {
    /// Starts a task in the core and gives it a slot; its id comes back at once.
    pub(crate) fn start_task(&self, task: Task, election: Option<u64>) -> Result<LockId, Error> {
        self.shared().with(|s: &mut SharedState| {
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
                    let started =
                        crate::metrics::AcquisitionMetrics::start(&spec, s.metrics_prefix);
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
                slot.span = span;
                slot.metrics = metrics;
            }
            Ok(id)
        })
    }
}
