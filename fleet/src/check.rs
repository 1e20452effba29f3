//! The overlap check and the latency figures, over the holds of every worker.

use crate::record::Hold;
use lock_testkit::exclusion::Trusted;
use std::collections::BTreeMap;
use std::time::Duration;

/// Two trusted holders of one lock at once (the holders are sessions).
pub type Overlap = lock_testkit::exclusion::Overlap<usize>;

/// Every trusted span of a lock that begins while another session trusts it.
pub fn overlaps(holds: &[Hold]) -> Vec<Overlap> {
    lock_testkit::exclusion::overlaps(holds.iter().flat_map(|h| {
        (h.segments.iter()).map(|&(from, to)| {
            let span = Trusted {
                from,
                to: Some(to),
                holder: h.session,
            };
            (h.lock.as_str(), span)
        })
    }))
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
