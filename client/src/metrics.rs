//! Metrics through the [`metrics`] facade, for every binding, in one place.
//! Without an installed recorder every call lands on the facade's no-op recorder:
//! no allocation (labels are `&'static str`, except the opt-in path prefix), no lock.
//!
//! The names, labels and meanings are in the crate docs' [metrics table](crate#metrics)
//! and the README's: both are [`METRICS`], which [`describe_metrics`] hands to the
//! recorder (a test keeps the three the same).
//!
//! With [`ConnectOptions::metrics_path_prefix`](crate::ConnectOptions::metrics_path_prefix)
//! every metric but `zklock_requests_total` also has a `prefix` label: the lock
//! path's first components (a bounded set when lock paths are `/app/kind/id`).

use ::metrics::{
    counter, describe_counter, describe_gauge, describe_histogram, gauge, histogram, Label, Unit,
};
use lock_core::{FailReason, LockEvent, LockSpec, LostReason, Op, Progress, Recipe};
use std::time::Instant;

/// What kind of metric.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Counter,
    Gauge,
    Histogram,
}

/// One metric: its name, kind, labels and meaning, as the tables show them.
struct Described {
    name: &'static str,
    kind: Kind,
    /// The labels column (without the opt-in `prefix`); only the tables' test
    /// reads it (the labels themselves are given where each value is recorded).
    #[cfg_attr(not(test), allow(dead_code))]
    labels: &'static str,
    /// The meaning column; without its backticks, the `# HELP` text.
    what: &'static str,
}

/// Every metric, in the tables' order.
const METRICS: &[Described] = &[
    Described {
        name: "zklock_acquire_wait_seconds",
        kind: Kind::Histogram,
        labels: "`recipe`, `outcome`",
        what: "from asking for a lock to its grant (`outcome=\"acquired\"`) or to giving up: `timeout`, `cancelled`, `would_block`, `deadlock`, `self_deadlock`, `revoked`, `session_expired`, `node_deleted`, `closed`, `permits_mismatch`, `error`",
    },
    Described {
        name: "zklock_acquisitions_total",
        kind: Kind::Counter,
        labels: "`recipe`, `outcome`",
        what: "acquisitions that stopped waiting, by outcome",
    },
    Described {
        name: "zklock_handoff_seconds",
        kind: Kind::Histogram,
        labels: "`recipe`",
        what: "for an acquisition that waited behind another participant: from this client's notification that the node it waited behind was deleted to its grant (what the handoff costs on this side: a listing round trip when it is next, more when it must queue again)",
    },
    Described {
        name: "zklock_hold_seconds",
        kind: Kind::Histogram,
        labels: "`recipe`, `end`",
        what: "from the grant to the release (`end=\"released\"`) or the loss (`lost`)",
    },
    Described {
        name: "zklock_lost_total",
        kind: Kind::Counter,
        labels: "`recipe`, `reason`",
        what: "held locks lost: `session_expired`, `suspended_too_long`, `node_deleted`, `node_not_owned`, `closed`, `lease_expired`",
    },
    Described {
        name: "zklock_suspensions_total",
        kind: Kind::Counter,
        labels: "`recipe`",
        what: "held locks suspended (connection lost)",
    },
    Described {
        name: "zklock_resumptions_total",
        kind: Kind::Counter,
        labels: "`recipe`",
        what: "suspended locks verified held again",
    },
    Described {
        name: "zklock_deadlocks_broken_total",
        kind: Kind::Counter,
        labels: "`recipe`",
        what: "waits given up as a deadlock cycle's victim",
    },
    Described {
        name: "zklock_requests_total",
        kind: Kind::Counter,
        labels: "`op`",
        what: "ZooKeeper requests handed to the binding: `create`, `get_children`, `watch_children`, `get_data`, `set_data`, `delete`, `multi`, `remove_watch`, `sync`",
    },
    Described {
        name: "zklock_locks_held",
        kind: Kind::Gauge,
        labels: "`recipe`",
        what: "locks held now (suspended ones included)",
    },
    Described {
        name: "zklock_locks_waiting",
        kind: Kind::Gauge,
        labels: "`recipe`",
        what: "acquisitions waiting now",
    },
];

/// Bucket bounds, in seconds, that fit zklock's `_seconds` histograms: from a
/// loopback round trip (half a millisecond) to a minute-long wait, about three per
/// decade.
///
/// The `metrics` facade leaves the shape of a histogram to the recorder, and some
/// pick a summary unless told the buckets: `metrics-exporter-prometheus`'s
/// `PrometheusBuilder` renders quantiles (`# TYPE ... summary`) by default. Give it
/// these for zklock's metrics and they render as Prometheus histograms, which add up
/// across processes:
///
/// ```text
/// PrometheusBuilder::new()
///     .set_buckets_for_metric(Matcher::Prefix("zklock_".into()), zklock::HISTOGRAM_BUCKETS)?
///     .install()?;
/// ```
pub const HISTOGRAM_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    60.0,
];

/// Describes every metric to the installed recorder: its `# HELP` text (and
/// for the histograms the unit, seconds), which Prometheus' exposition shows
/// with a `# TYPE` line. Each client calls it when it is created, so a recorder
/// installed before the first client needs nothing more; call it after
/// installing one later. Without a recorder it does nothing.
///
/// ```
/// // After installing a recorder, e.g. metrics-exporter-prometheus':
/// zklock::describe_metrics();
/// ```
pub fn describe_metrics() {
    for metric in METRICS {
        let help = metric.what.replace('`', "");
        match metric.kind {
            Kind::Counter => describe_counter!(metric.name, help),
            Kind::Gauge => describe_gauge!(metric.name, help),
            Kind::Histogram => describe_histogram!(metric.name, Unit::Seconds, help),
        }
    }
}

/// Where an acquisition stands, for the gauges.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Stage {
    Waiting,
    Held,
    Ended,
}

/// The metrics of one acquisition, kept in its slot (one per held lock and
/// waiting acquisition, so kept small: the labels are built when a metric is
/// recorded, not stored, and the node waited behind is kept as a hash).
#[derive(Debug)]
pub(crate) struct AcquisitionMetrics {
    /// The `recipe` label's value.
    recipe: &'static str,
    /// The opt-in `prefix` label's value.
    prefix: Option<Box<str>>,
    started: Instant,
    /// When it was granted, as nanoseconds after `started` (0: not yet): 8
    /// bytes where an `Option<Instant>` takes 16.
    granted: u64,
    stage: Stage,
    /// A hash of the node it waits behind now (full path), 0 for none: only
    /// compared with the path of a deleted node, and a collision would at
    /// worst time one handoff from a wrong deletion.
    behind: u64,
    /// When the deletion of `behind` was reported, as `granted` (0: not yet).
    behind_left: u64,
}

/// `at` as nanoseconds after `started`, never 0 (0 stands for "not yet").
fn after(started: Instant, at: Instant) -> u64 {
    let nanos = at.saturating_duration_since(started).as_nanos();
    u64::try_from(nanos).unwrap_or(u64::MAX).max(1)
}

/// The instant `after` gave `nanos` for, if any.
fn instant(started: Instant, nanos: u64) -> Option<Instant> {
    (nanos != 0).then(|| started + std::time::Duration::from_nanos(nanos))
}

/// The hash `AcquisitionMetrics::behind` keeps of a path (never 0).
pub(crate) fn path_hash(path: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    path.hash(&mut hasher);
    hasher.finish().max(1)
}

impl AcquisitionMetrics {
    /// An acquisition of `spec` begins now; `prefix_depth` is the opt-in number of
    /// path components for the `prefix` label.
    pub(crate) fn start(spec: &LockSpec, prefix_depth: Option<usize>) -> AcquisitionMetrics {
        let acquisition = AcquisitionMetrics {
            recipe: recipe(spec.recipe()),
            prefix: prefix_depth.map(|depth| path_prefix(spec.path(), depth).into()),
            started: Instant::now(),
            granted: 0,
            stage: Stage::Waiting,
            behind: 0,
            behind_left: 0,
        };
        gauge!("zklock_locks_waiting", acquisition.labels().iter()).increment(1.0);
        acquisition
    }

    /// An event of the acquisition.
    pub(crate) fn on_event(&mut self, event: &LockEvent) {
        let now = Instant::now();
        match event {
            LockEvent::Acquired(_) if self.stage == Stage::Waiting => {
                if let Some(left) = instant(self.started, self.behind_left) {
                    histogram!("zklock_handoff_seconds", self.labels().iter())
                        .record(now.saturating_duration_since(left));
                }
                self.end_wait("acquired", now);
                self.granted = after(self.started, now);
                self.stage = Stage::Held;
                gauge!("zklock_locks_held", self.labels().iter()).increment(1.0);
            }
            LockEvent::Suspended => {
                counter!("zklock_suspensions_total", self.labels().iter()).increment(1)
            }
            LockEvent::Resumed => {
                counter!("zklock_resumptions_total", self.labels().iter()).increment(1)
            }
            LockEvent::Failed(reason) if self.stage == Stage::Waiting => {
                if matches!(reason, FailReason::Deadlock { .. }) {
                    counter!("zklock_deadlocks_broken_total", self.labels().iter()).increment(1);
                }
                self.end_wait(fail_outcome(reason), now);
                self.stage = Stage::Ended;
            }
            LockEvent::Lost(reason) if self.stage == Stage::Held => {
                let labels = self.with(Some(("reason", lost_reason(reason))));
                counter!("zklock_lost_total", labels.iter()).increment(1);
                self.end_hold("lost", now);
            }
            LockEvent::Released if self.stage == Stage::Held => self.end_hold("released", now),
            _ => {}
        }
    }

    /// The hash of the node it waits behind (0: none).
    pub(crate) fn behind(&self) -> u64 {
        self.behind
    }

    /// A step of the wait: queued behind a node, the handoff starts again.
    pub(crate) fn on_progress(&mut self, progress: &Progress) {
        if let Progress::QueuedBehind { node } = progress {
            self.behind = path_hash(node);
            self.behind_left = 0;
        }
    }

    /// The binding reported the deletion of the watched node at `path`.
    pub(crate) fn on_node_deleted(&mut self, path: &str) {
        if self.stage == Stage::Waiting && self.behind != 0 && self.behind == path_hash(path) {
            self.behind_left = after(self.started, Instant::now());
        }
    }

    fn end_wait(&self, outcome: &'static str, now: Instant) {
        gauge!("zklock_locks_waiting", self.labels().iter()).decrement(1.0);
        let labels = self.with(Some(("outcome", outcome)));
        counter!("zklock_acquisitions_total", labels.iter()).increment(1);
        histogram!("zklock_acquire_wait_seconds", labels.iter())
            .record(now.saturating_duration_since(self.started));
    }

    fn end_hold(&mut self, end: &'static str, now: Instant) {
        gauge!("zklock_locks_held", self.labels().iter()).decrement(1.0);
        let since = instant(self.started, self.granted).unwrap_or(now);
        let labels = self.with(Some(("end", end)));
        histogram!("zklock_hold_seconds", labels.iter())
            .record(now.saturating_duration_since(since));
        self.stage = Stage::Ended;
    }

    /// This acquisition's labels, built for one recording.
    fn labels(&self) -> Vec<Label> {
        self.with(None)
    }

    /// This acquisition's labels and `extra`, in a `Vec` sized once (a push into
    /// a full one reallocates).
    fn with(&self, extra: Option<(&'static str, &'static str)>) -> Vec<Label> {
        let mut labels = Vec::with_capacity(3);
        labels.push(Label::from_static_parts("recipe", self.recipe));
        if let Some(prefix) = &self.prefix {
            labels.push(Label::new("prefix", prefix.to_string()));
        }
        labels.extend(extra.map(|(key, value)| Label::from_static_parts(key, value)));
        labels
    }
}

impl Drop for AcquisitionMetrics {
    /// A slot forgotten before its terminal event (the link went away mid-way)
    /// takes its share of the gauges with it.
    fn drop(&mut self) {
        match self.stage {
            Stage::Waiting => gauge!("zklock_locks_waiting", self.labels().iter()).decrement(1.0),
            Stage::Held => gauge!("zklock_locks_held", self.labels().iter()).decrement(1.0),
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
    use super::{path_prefix, Kind, METRICS};

    /// The README's metrics table and the crate docs' are [`METRICS`], row for
    /// row (so the `# HELP` texts say what the tables say).
    #[test]
    fn the_tables_are_the_metrics_described() {
        let rows: Vec<String> = METRICS
            .iter()
            .map(|m| {
                let kind = match m.kind {
                    Kind::Counter => "counter",
                    Kind::Gauge => "gauge",
                    Kind::Histogram => "histogram",
                };
                format!("| `{}` | {kind} | {} | {} |", m.name, m.labels, m.what)
            })
            .collect();
        let dir = env!("CARGO_MANIFEST_DIR");
        for file in ["../README.md", "src/lib.rs"] {
            let text = std::fs::read_to_string(format!("{dir}/{file}")).unwrap();
            let table: Vec<&str> = text
                .lines()
                .map(|l| l.trim_start_matches("//!").trim())
                .filter(|l| l.starts_with("| `zklock_"))
                .collect();
            assert_eq!(table, rows, "the metrics table of {file}");
        }
    }

    #[test]
    fn path_prefix_keeps_the_first_components() {
        assert_eq!(path_prefix("/app/orders/42", 2), "/app/orders");
        assert_eq!(path_prefix("/app/orders/42", 1), "/app");
        assert_eq!(path_prefix("/app", 3), "/app");
        assert_eq!(path_prefix("/app/orders/42", 0), "");
    }
}
