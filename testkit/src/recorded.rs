//! [`RecordedMetrics`]: a process-wide recording recorder for the `metrics` facade,
//! so that tests can assert what zklock reported.

use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use metrics_util::MetricKind;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

/// One metric: its kind, name and labels (sorted `key=value`).
type Series = (MetricKind, String, Vec<String>);

/// What the process reported through the `metrics` facade since
/// [`install`](Self::install): counters and gauges as they stand, histograms as
/// every value recorded (the debugging recorder hands each value out once; this
/// keeps them).
pub struct RecordedMetrics {
    snapshotter: Snapshotter,
    histograms: Mutex<HashMap<Series, Vec<f64>>>,
}

impl RecordedMetrics {
    /// Installs the recorder for the whole process (once per test binary: a
    /// second call panics, as the facade takes one global recorder).
    pub fn install() -> RecordedMetrics {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        recorder
            .install()
            .expect("a metrics recorder is already installed in this test binary");
        RecordedMetrics {
            snapshotter,
            histograms: Mutex::new(HashMap::new()),
        }
    }

    /// Every series now: name and labels, and its value (a counter's count, a
    /// gauge's value, a histogram's number of values).
    fn read(&self) -> HashMap<Series, f64> {
        let mut histograms = self.histograms.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = HashMap::new();
        for (key, _, _, value) in self.snapshotter.snapshot().into_vec() {
            let (kind, key) = key.into_parts();
            let mut labels: Vec<String> = key
                .labels()
                .map(|l| format!("{}={}", l.key(), l.value()))
                .collect();
            labels.sort();
            let series = (kind, key.name().to_owned(), labels);
            let value = match value {
                DebugValue::Counter(n) => n as f64,
                DebugValue::Gauge(v) => v.into_inner(),
                DebugValue::Histogram(values) => {
                    let kept = histograms.entry(series.clone()).or_default();
                    kept.extend(values.into_iter().map(|v| v.into_inner()));
                    kept.len() as f64
                }
            };
            out.insert(series, value);
        }
        out
    }

    fn find(&self, kind: MetricKind, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        self.read().remove(&series(kind, name, labels))
    }

    /// The counter `name` with exactly `labels` (0 if never reported).
    pub fn counter(&self, name: &str, labels: &[(&str, &str)]) -> u64 {
        self.find(MetricKind::Counter, name, labels).unwrap_or(0.0) as u64
    }

    /// The gauge `name` with exactly `labels` (0 if never reported).
    pub fn gauge(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.find(MetricKind::Gauge, name, labels).unwrap_or(0.0)
    }

    /// Every value recorded in the histogram `name` with exactly `labels`.
    pub fn histogram(&self, name: &str, labels: &[(&str, &str)]) -> Vec<f64> {
        self.read();
        let histograms = self.histograms.lock().unwrap_or_else(|p| p.into_inner());
        let series = series(MetricKind::Histogram, name, labels);
        histograms.get(&series).cloned().unwrap_or_default()
    }

    /// Waits until `check` holds (reports may come from another thread a moment
    /// later); panics naming `what` after `bound`.
    pub fn wait_for(&self, what: &str, bound: Duration, mut check: impl FnMut(&Self) -> bool) {
        let step = Duration::from_millis(10);
        let reported = crate::util::poll(bound, step, || check(self).then_some(()));
        assert!(
            reported.is_some(),
            "metrics: {what} not reported within {bound:?}"
        );
    }
}

fn series(kind: MetricKind, name: &str, labels: &[(&str, &str)]) -> Series {
    let mut labels: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
    labels.sort();
    (kind, name.to_owned(), labels)
}
