//! The overlap check and the latency figures, over the holds of every worker.

use crate::record::Hold;
use std::collections::BTreeMap;
use std::time::Duration;

/// Two holders of one lock at once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Overlap {
    /// The lock.
    pub lock: String,
    /// The earlier holder's session and trusted span.
    pub first: (usize, u64, u64),
    /// The later holder's session and trusted span, which began before the
    /// earlier one ended.
    pub second: (usize, u64, u64),
}

/// Every pair of trusted spans of one lock that overlap (each span compared
/// with the latest-ending span before it, which finds every lock that ever
/// had two trusted holders).
pub fn overlaps(holds: &[Hold]) -> Vec<Overlap> {
    let mut by_lock: BTreeMap<&str, Vec<(u64, u64, usize)>> = BTreeMap::new();
    for h in holds {
        let spans = by_lock.entry(&h.lock).or_default();
        spans.extend(h.segments.iter().map(|&(a, b)| (a, b, h.session)));
    }
    let mut found = Vec::new();
    for (lock, mut spans) in by_lock {
        spans.sort_unstable();
        let mut latest: Option<(u64, u64, usize)> = None;
        for span in spans {
            if let Some(prev) = latest {
                if span.0 < prev.1 {
                    found.push(Overlap {
                        lock: lock.to_owned(),
                        first: (prev.2, prev.0, prev.1),
                        second: (span.2, span.0, span.1),
                    });
                }
            }
            if latest.is_none_or(|prev| span.1 > prev.1) {
                latest = Some(span);
            }
        }
    }
    found
}

/// p50, p99 and max of a sample (zero if empty).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Spread {
    /// How many values.
    pub count: usize,
    /// The median.
    pub p50: Duration,
    /// The 99th percentile (nearest rank).
    pub p99: Duration,
    /// The largest.
    pub max: Duration,
}

impl Spread {
    /// The spread of `values` (nanoseconds).
    pub fn of(mut values: Vec<u64>) -> Spread {
        if values.is_empty() {
            return Spread::default();
        }
        values.sort_unstable();
        let rank = |q: f64| {
            let i = ((q * values.len() as f64).ceil() as usize).clamp(1, values.len()) - 1;
            Duration::from_nanos(values[i])
        };
        Spread {
            count: values.len(),
            p50: rank(0.5),
            p99: rank(0.99),
            max: Duration::from_nanos(*values.last().unwrap()),
        }
    }
}

/// The figures of a run's holds inside the window `[start, end]` (ns).
#[derive(Clone, Debug, Default)]
pub struct Figures {
    /// Holds granted in the window.
    pub grants: usize,
    /// Grant latency (request to grant) of cold locks: nearly always free.
    pub cold_grant: Spread,
    /// Grant latency of hot locks (mostly queue wait).
    pub hot_grant: Spread,
    /// Release of the previous holder to grant of a waiter that queued before
    /// that release, on hot locks.
    pub handoff: Spread,
}

/// Computes [`Figures`] for the holds granted in `[start, end]`.
pub fn figures(holds: &[Hold], start: u64, end: u64) -> Figures {
    let inside = |h: &&Hold| h.granted >= start && h.granted <= end;
    let latency = |hot: bool| {
        Spread::of(
            holds
                .iter()
                .filter(inside)
                .filter(|h| h.hot == hot)
                .map(|h| h.granted - h.requested)
                .collect(),
        )
    };
    let mut by_lock: BTreeMap<&str, Vec<&Hold>> = BTreeMap::new();
    for h in holds.iter().filter(|h| h.hot) {
        by_lock.entry(&h.lock).or_default().push(h);
    }
    let mut handoffs = Vec::new();
    for chain in by_lock.values_mut() {
        chain.sort_by_key(|h| h.granted);
        for pair in chain.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            if b.requested < a.released && b.granted >= start && b.granted <= end {
                handoffs.push(b.granted.saturating_sub(a.released));
            }
        }
    }
    Figures {
        grants: holds.iter().filter(inside).count(),
        cold_grant: latency(false),
        hot_grant: latency(true),
        handoff: Spread::of(handoffs),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hold(lock: &str, session: usize, requested: u64, granted: u64, released: u64) -> Hold {
        Hold {
            lock: lock.into(),
            hot: true,
            session,
            requested,
            granted,
            released,
            segments: vec![(granted, released)],
        }
    }

    #[test]
    fn finds_two_holders_at_once() {
        let holds = vec![
            hold("/a", 1, 0, 10, 20),
            hold("/a", 2, 5, 25, 30),
            hold("/b", 3, 0, 12, 40),
            // Begins inside session 3's hold of /b.
            hold("/b", 4, 0, 39, 50),
        ];
        let found = overlaps(&holds);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].lock, "/b");
        assert_eq!(found[0].first, (3, 12, 40));
        assert_eq!(found[0].second, (4, 39, 50));
    }

    #[test]
    fn a_span_inside_a_long_one_is_found() {
        // The long hold ends last; the third span overlaps it, not the second.
        let holds = vec![
            hold("/a", 1, 0, 0, 100),
            hold("/a", 2, 0, 10, 20),
            hold("/a", 3, 0, 30, 40),
        ];
        assert_eq!(overlaps(&holds).len(), 2);
    }

    #[test]
    fn suspended_gaps_do_not_count() {
        let mut a = hold("/a", 1, 0, 0, 100);
        // Suspended at 10, resumed at 90: another holder in between would be a bug
        // of ours only if it overlapped a trusted span.
        a.segments = vec![(0, 10), (90, 100)];
        let b = hold("/a", 2, 0, 20, 80);
        assert_eq!(overlaps(&[a, b]).len(), 0);
    }

    #[test]
    fn handoffs_count_only_queued_waiters() {
        let holds = vec![
            hold("/a", 1, 0, 10, 20),
            // Queued at 15, before the release at 20: a handoff of 3.
            hold("/a", 2, 15, 23, 30),
            // Asked at 40, after the release at 30: not a handoff.
            hold("/a", 3, 40, 41, 50),
        ];
        let f = figures(&holds, 0, 100);
        assert_eq!(f.grants, 3);
        assert_eq!(f.handoff.count, 1);
        assert_eq!(f.handoff.max, Duration::from_nanos(3));
    }

    #[test]
    fn spread_uses_nearest_rank() {
        let s = Spread::of((1..=100).collect());
        assert_eq!(s.p50, Duration::from_nanos(50));
        assert_eq!(s.p99, Duration::from_nanos(99));
        assert_eq!(s.max, Duration::from_nanos(100));
    }
}
