//! Metrics through the [`metrics`] facade, for every binding, in one place.
//!
//! The rest of the crate calls three hooks: [`Acquisition::start`] when an
//! acquisition begins, [`Acquisition::on_event`] for each of its events, and
//! [`request_sent`] when the link hands a request to the binding. Without an
//! installed recorder every call lands on the facade's no-op recorder: no
//! allocation (labels are `&'static str`, except the opt-in path prefix), no lock.
//!
//! The names, labels and meanings are in the crate docs' [metrics table](crate#metrics).
//!
//! With [`ConnectOptions::metrics_path_prefix`](crate::ConnectOptions::metrics_path_prefix)
//! every metric but `zklock_requests_total` also has a `prefix` label: the lock
//! path's first components (a bounded set when lock paths are `/app/kind/id`).

use ::metrics::{counter, gauge, histogram, Label};
use lock_core::{FailReason, LockEvent, LockSpec, LostReason, Op, Recipe};
use std::time::Instant;

/// Where an acquisition stands, for the gauges.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Stage {
    Waiting,
    Held,
    Ended,
}

/// The metrics of one acquisition, kept in its slot.
#[derive(Debug)]
pub(crate) struct Acquisition {
    labels: Vec<Label>,
    started: Instant,
    granted: Option<Instant>,
    stage: Stage,
}

impl Acquisition {
    /// An acquisition of `spec` begins now; `prefix_depth` is the opt-in number of
    /// path components for the `prefix` label.
    pub(crate) fn start(spec: &LockSpec, prefix_depth: Option<usize>) -> Acquisition {
        let mut labels = vec![Label::from_static_parts("recipe", recipe(spec.recipe()))];
        if let Some(depth) = prefix_depth {
            labels.push(Label::new("prefix", path_prefix(spec.path(), depth)));
        }
        let acquisition = Acquisition {
            labels,
            started: Instant::now(),
            granted: None,
            stage: Stage::Waiting,
        };
        gauge!("zklock_locks_waiting", acquisition.labels.iter()).increment(1.0);
        acquisition
    }

    /// An event of the acquisition.
    pub(crate) fn on_event(&mut self, event: &LockEvent) {
        let now = Instant::now();
        match event {
            LockEvent::Acquired(_) if self.stage == Stage::Waiting => {
                self.end_wait("acquired", now);
                self.granted = Some(now);
                self.stage = Stage::Held;
                gauge!("zklock_locks_held", self.labels.iter()).increment(1.0);
            }
            LockEvent::Suspended => {
                counter!("zklock_suspensions_total", self.labels.iter()).increment(1)
            }
            LockEvent::Resumed => {
                counter!("zklock_resumptions_total", self.labels.iter()).increment(1)
            }
            LockEvent::Failed(reason) if self.stage == Stage::Waiting => {
                if matches!(reason, FailReason::Deadlock { .. }) {
                    counter!("zklock_deadlocks_broken_total", self.labels.iter()).increment(1);
                }
                self.end_wait(fail_outcome(reason), now);
                self.stage = Stage::Ended;
            }
            LockEvent::Lost(reason) if self.stage == Stage::Held => {
                let labels = self.with(("reason", lost_reason(reason)));
                counter!("zklock_lost_total", labels.iter()).increment(1);
                self.end_hold("lost", now);
            }
            LockEvent::Released if self.stage == Stage::Held => self.end_hold("released", now),
            _ => {}
        }
    }

    fn end_wait(&self, outcome: &'static str, now: Instant) {
        gauge!("zklock_locks_waiting", self.labels.iter()).decrement(1.0);
        let labels = self.with(("outcome", outcome));
        counter!("zklock_acquisitions_total", labels.iter()).increment(1);
        histogram!("zklock_acquire_wait_seconds", labels.iter())
            .record(now.saturating_duration_since(self.started));
    }

    fn end_hold(&mut self, end: &'static str, now: Instant) {
        gauge!("zklock_locks_held", self.labels.iter()).decrement(1.0);
        let since = self.granted.unwrap_or(now);
        let labels = self.with(("end", end));
        histogram!("zklock_hold_seconds", labels.iter())
            .record(now.saturating_duration_since(since));
        self.stage = Stage::Ended;
    }

    /// This acquisition's labels and one more.
    fn with(&self, (key, value): (&'static str, &'static str)) -> Vec<Label> {
        let mut labels = self.labels.clone();
        labels.push(Label::from_static_parts(key, value));
        labels
    }
}

impl Drop for Acquisition {
    /// A slot forgotten before its terminal event (the link went away mid-way)
    /// takes its share of the gauges with it.
    fn drop(&mut self) {
        match self.stage {
            Stage::Waiting => gauge!("zklock_locks_waiting", self.labels.iter()).decrement(1.0),
            Stage::Held => gauge!("zklock_locks_held", self.labels.iter()).decrement(1.0),
            Stage::Ended => {}
        }
    }
}

/// The link hands `op` to the binding.
pub(crate) fn request_sent(op: &Op) {
    counter!("zklock_requests_total", "op" => op_name(op)).increment(1);
}

/// The first `depth` components of `path` (`/a/b/c`, 2: `/a/b`).
fn path_prefix(path: &str, depth: usize) -> String {
    let end = path
        .match_indices('/')
        .nth(depth)
        .map_or(path.len(), |(at, _)| at);
    path[..end].to_owned()
}

fn recipe(recipe: Recipe) -> &'static str {
    match recipe {
        Recipe::Write => "write",
        Recipe::Read => "read",
        Recipe::Semaphore { .. } => "semaphore",
        Recipe::Leader => "leader",
        _ => "other",
    }
}

fn fail_outcome(reason: &FailReason) -> &'static str {
    match reason {
        FailReason::Timeout => "timeout",
        FailReason::Cancelled => "cancelled",
        FailReason::SessionExpired => "session_expired",
        FailReason::NodeDeleted => "node_deleted",
        FailReason::Closed => "closed",
        FailReason::Zk(_) => "error",
        FailReason::WouldBlock => "would_block",
        FailReason::Revoked => "revoked",
        FailReason::PermitsMismatch { .. } => "permits_mismatch",
        FailReason::Deadlock { .. } => "deadlock",
        FailReason::SelfDeadlock { .. } => "self_deadlock",
        _ => "other",
    }
}

fn lost_reason(reason: &LostReason) -> &'static str {
    match reason {
        LostReason::SessionExpired => "session_expired",
        LostReason::SuspendedTooLong => "suspended_too_long",
        LostReason::NodeDeleted => "node_deleted",
        LostReason::NodeNotOwned => "node_not_owned",
        LostReason::Closed => "closed",
        LostReason::LeaseExpired => "lease_expired",
        _ => "other",
    }
}

fn op_name(op: &Op) -> &'static str {
    match op {
        Op::Create { .. } => "create",
        Op::GetChildren { .. } => "get_children",
        Op::WatchChildren { .. } => "watch_children",
        Op::GetData { .. } => "get_data",
        Op::SetData { .. } => "set_data",
        Op::Delete { .. } => "delete",
        Op::Multi(_) => "multi",
        Op::RemoveWatch { .. } => "remove_watch",
        Op::Sync { .. } => "sync",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::path_prefix;

    #[test]
    fn path_prefix_keeps_the_first_components() {
        assert_eq!(path_prefix("/app/orders/42", 2), "/app/orders");
        assert_eq!(path_prefix("/app/orders/42", 1), "/app");
        assert_eq!(path_prefix("/app", 3), "/app");
        assert_eq!(path_prefix("/app/orders/42", 0), "");
    }
}
