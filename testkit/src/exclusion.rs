//! The safety rule every lock test checks after the fact, "at most one trusted
//! holder of a lock at any instant", over spans recorded by many processes on
//! one clock ([`monotonic_ns`]).

/// CLOCK_MONOTONIC in nanoseconds: one clock for every process on the machine
/// (network namespaces or not, and what `System.nanoTime()` and Python's
/// `time.monotonic_ns()` read on Linux), so that spans recorded by different
/// processes merge by time. `std::time::Instant` reads the same clock but cannot
/// be sent to another process.
pub fn monotonic_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// A span in which `holder` trusted a lock (ns; `to`: `None` while still trusted).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Trusted<H> {
    /// When the trust began.
    pub from: u64,
    /// When it ended.
    pub to: Option<u64>,
    /// Who trusted the lock.
    pub holder: H,
}

/// Two holders trusting one lock at once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Overlap<H> {
    /// The lock.
    pub lock: String,
    /// The span that began first (of those before `second`, the one trusted longest).
    pub first: Trusted<H>,
    /// A span of another holder that began before `first` ended.
    pub second: Trusted<H>,
}

/// Every span of `(lock, span)` that begins while another holder's span of the
/// same lock is trusted, paired with the longest-trusted span before it (which
/// finds every lock that ever had two trusted holders).
pub fn overlaps<'l, H: Ord + Copy>(
    spans: impl IntoIterator<Item = (&'l str, Trusted<H>)>,
) -> Vec<Overlap<H>> {
    let mut per_lock = std::collections::BTreeMap::<&str, Vec<Trusted<H>>>::new();
    for (lock, span) in spans {
        per_lock.entry(lock).or_default().push(span);
    }
    let ends_after = |a: &Trusted<H>, b: &Trusted<H>| match (a.to, b.to) {
        (None, _) => true,
        (_, None) => false,
        (Some(a), Some(b)) => a > b,
    };
    let mut found = Vec::new();
    for (lock, mut list) in per_lock {
        list.sort();
        let mut widest: Option<Trusted<H>> = None;
        for span in list {
            if let Some(open) = widest {
                if open.to.is_none_or(|end| end > span.from) && open.holder != span.holder {
                    found.push(Overlap {
                        lock: lock.to_owned(),
                        first: open,
                        second: span,
                    });
                }
            }
            if widest.is_none_or(|open| ends_after(&span, &open)) {
                widest = Some(span);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(
        lock: &'static str,
        holder: u32,
        from: u64,
        to: Option<u64>,
    ) -> (&'static str, Trusted<u32>) {
        (lock, Trusted { from, to, holder })
    }

    #[test]
    fn finds_every_second_holder_and_nothing_else() {
        let found = overlaps([
            span("/a", 1, 10, Some(20)),
            span("/a", 2, 20, Some(30)), // begins as the first ends: no overlap
            span("/b", 3, 12, Some(40)),
            span("/b", 4, 39, Some(50)), // begins inside 3's span
            span("/c", 5, 0, Some(100)), // long span: both later ones overlap it
            span("/c", 6, 10, Some(20)),
            span("/c", 7, 30, Some(40)),
            span("/d", 8, 0, Some(10)), // suspended from 10 to 90: a gap
            span("/d", 9, 20, Some(80)),
            span("/d", 8, 90, Some(100)),
            span("/e", 10, 0, None), // still trusted at the end
            span("/e", 11, 50, Some(60)),
            span("/f", 12, 0, Some(10)), // one holder's spans never conflict
            span("/f", 12, 5, Some(15)),
        ]);
        let pairs: Vec<_> = found
            .iter()
            .map(|o| (o.lock.as_str(), o.first.holder, o.second.holder))
            .collect();
        assert_eq!(
            pairs,
            [("/b", 3, 4), ("/c", 5, 6), ("/c", 5, 7), ("/e", 10, 11)]
        );
        assert_eq!((found[0].first.from, found[0].second.from), (12, 39));
    }

    #[test]
    fn the_clock_moves_forward() {
        let a = monotonic_ns();
        let b = monotonic_ns();
        assert!(a > 0 && b >= a);
    }
}
