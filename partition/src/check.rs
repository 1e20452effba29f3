//! The history checker: mutual exclusion of trusted holds, fencing-token order,
//! `Lost` before anyone else's grant for every cut-off holder that promises it,
//! and progress after every heal; plus the margin, per fault, between the cut-off
//! holder's end of trust (and its `Lost`) and the next grant.
//!
//! A hold is trusted from `granted` until `suspended`, `lost` or `released`, and
//! again from `resumed` until one of those. "At most one trusted holder at any
//! instant" is the safety rule every library must keep (a `Suspended` holder has
//! stopped trusting its lock); zklock's bindings promise more: `Lost` itself comes
//! before anyone else is granted, so a holder that only watches for `Lost` is safe
//! too. Curator and kazoo make no such promise (kazoo reports `LOST` only once it
//! reconnects), so for them only the safety rule is checked.

use std::collections::{BTreeMap, BTreeSet};

use crate::history::{binding_of, Event, EventKind, Nanos};
use lock_testkit::exclusion::Trusted;
use lock_testkit::measure::median;

/// One partition as the test made it.
#[derive(Clone, Debug)]
pub struct Fault {
    /// The partition's shape (`leader-isolated`, `follower-isolated`, ...).
    pub shape: String,
    /// When the cut was made.
    pub start: Nanos,
    /// When it was healed.
    pub heal: Nanos,
    /// The contenders on the cut-off side (the minority, or the one cut client).
    pub cut_off: BTreeSet<String>,
}

/// What the history broke.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Violation {
    /// Two contenders trusted the lock at once.
    #[error("overlap on {lock}: {} trusted it from {} and {} from {} (still overlapping)", .first.0, .first.1, .second.0, .second.1)]
    Overlap {
        /// The lock path.
        lock: String,
        /// The holder that trusted it first, and from when.
        first: (String, Nanos),
        /// The other one, and from when (while the first still trusted it).
        second: (String, Nanos),
    },
    /// A later grant had a token not above an earlier one's.
    #[error("token order on {lock}: {} got {} at {}, then {} got {} at {}", .earlier.0, .earlier.1, .earlier.2, .later.0, .later.1, .later.2)]
    TokenOrder {
        /// The lock path.
        lock: String,
        /// The earlier grant: client, token, time.
        earlier: (String, i64, Nanos),
        /// The later grant.
        later: (String, i64, Nanos),
    },
    /// A cut-off holder that promises `Lost` first was not told before another
    /// contender was granted.
    #[error("{shape}: {holder} was {} {} was granted at {}", told(*.lost, .next_grant.1), .next_grant.0, .next_grant.1)]
    LostAfterGrant {
        /// The fault.
        shape: String,
        /// The cut-off holder.
        holder: String,
        /// When it was told `Lost` (`None`: not at all).
        lost: Option<Nanos>,
        /// The next grant to another contender: who, when.
        next_grant: (String, Nanos),
    },
    /// Nobody was granted a lock after a heal (before the next fault or the end).
    #[error("{shape}: no grant on {lock} after the heal at {heal}")]
    NoProgress {
        /// The fault.
        shape: String,
        /// The lock path.
        lock: String,
        /// When the fault was healed.
        heal: Nanos,
    },
}

/// When a cut-off holder was told `Lost`, against the next grant at `grant`.
fn told(lost: Option<Nanos>, grant: Nanos) -> String {
    match lost {
        Some(at) => format!(
            "told Lost {:.3} s after",
            (at as i128 - grant as i128) as f64 / 1e9
        ),
        None => "never told Lost after".to_string(),
    }
}

/// The margins of one cut-off hold: the next grant to another contender minus
/// the holder's end of trust, and minus its `Lost` (positive: before the grant).
#[derive(Clone, Debug, PartialEq)]
pub struct Margin {
    /// The fault.
    pub shape: String,
    /// The cut-off holder.
    pub holder: String,
    /// When the next grant to another contender came (`None`: none came).
    pub next_grant: Option<Nanos>,
    /// Next grant minus the end of trust (suspended, lost or released), in seconds.
    pub trust: Option<f64>,
    /// Next grant minus `Lost`, in seconds (`None`: no grant, or no `Lost`).
    pub lost: Option<f64>,
}

/// What [`check`] found.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Everything the history broke.
    pub violations: Vec<Violation>,
    /// One per cut-off hold per fault.
    pub margins: Vec<Margin>,
    /// Grants in the history.
    pub grants: usize,
}

/// One hold of one contender.
#[derive(Clone, Debug)]
struct Hold {
    client: String,
    lock: String,
    granted: Nanos,
    /// Trusted intervals; the last may be open.
    trusted: Vec<(Nanos, Option<Nanos>)>,
    lost: Option<Nanos>,
    end: Option<Nanos>,
}

impl Hold {
    fn close_trust(&mut self, at: Nanos) {
        if let Some(last) = self.trusted.last_mut() {
            last.1.get_or_insert(at);
        }
    }

    fn trust_open(&self) -> bool {
        self.trusted.last().is_some_and(|t| t.1.is_none())
    }

    /// The end of the trust that was in force at `at`, or began after it.
    fn trust_end_from(&self, at: Nanos) -> Option<Nanos> {
        self.trusted
            .iter()
            .find(|(_, end)| end.is_none_or(|end| end >= at))
            .and_then(|(_, end)| *end)
    }
}

/// The holds in a history, per contender in time order.
fn holds(events: &[Event]) -> Vec<Hold> {
    let mut by_client: BTreeMap<&str, Vec<&Event>> = BTreeMap::new();
    for event in events {
        by_client
            .entry(event.client.as_str())
            .or_default()
            .push(event);
    }
    let mut holds = Vec::new();
    for (_, mut events) in by_client {
        events.sort_by_key(|e| e.at);
        let mut current: Option<Hold> = None;
        for event in events {
            match &event.kind {
                EventKind::Granted(_) => {
                    if let Some(mut previous) = current.take() {
                        previous.close_trust(event.at);
                        previous.end = Some(event.at);
                        holds.push(previous);
                    }
                    current = Some(Hold {
                        client: event.client.clone(),
                        lock: event.lock.clone(),
                        granted: event.at,
                        trusted: vec![(event.at, None)],
                        lost: None,
                        end: None,
                    });
                }
                EventKind::Suspended => {
                    if let Some(hold) = &mut current {
                        hold.close_trust(event.at);
                    }
                }
                EventKind::Resumed => {
                    if let Some(hold) = current.as_mut().filter(|h| !h.trust_open()) {
                        hold.trusted.push((event.at, None));
                    }
                }
                EventKind::Lost(_) | EventKind::Released => {
                    if let Some(mut hold) = current.take() {
                        hold.close_trust(event.at);
                        if matches!(event.kind, EventKind::Lost(_)) {
                            hold.lost = Some(event.at);
                        }
                        hold.end = Some(event.at);
                        holds.push(hold);
                    }
                }
                _ => {}
            }
        }
        holds.extend(current);
    }
    holds
}

/// Whether a contender promises `Lost` before anyone else's grant: zklock's
/// bindings (`async-...`, `blocking-...`).
pub fn promises_lost(client: &str) -> bool {
    matches!(binding_of(client), "async" | "blocking")
}

/// At most one trusted holder at any instant, per lock.
fn overlaps(holds: &[Hold]) -> Vec<Violation> {
    let spans = holds.iter().flat_map(|hold| {
        (hold.trusted.iter()).map(|&(from, to)| {
            let holder = hold.client.as_str();
            (hold.lock.as_str(), Trusted { from, to, holder })
        })
    });
    let found = lock_testkit::exclusion::overlaps(spans).into_iter();
    found
        .map(|o| Violation::Overlap {
            lock: o.lock,
            first: (o.first.holder.to_string(), o.first.from),
            second: (o.second.holder.to_string(), o.second.from),
        })
        .collect()
}

/// Checks a merged history (any order) against the faults made during it.
pub fn check(events: &[Event], faults: &[Fault]) -> Report {
    let holds = holds(events);
    let mut report = Report::default();
    let mut grants: BTreeMap<&str, Vec<(Nanos, &str, i64)>> = BTreeMap::new();
    for event in events {
        if let EventKind::Granted(token) = event.kind {
            grants.entry(event.lock.as_str()).or_default().push((
                event.at,
                event.client.as_str(),
                token,
            ));
        }
    }
    for list in grants.values_mut() {
        list.sort();
    }
    report.grants = grants.values().map(Vec::len).sum();

    report.violations.extend(overlaps(&holds));

    // Fencing tokens increase with grant order.
    for (lock, list) in &grants {
        for pair in list.windows(2) {
            let ((at1, c1, t1), (at2, c2, t2)) = (pair[0], pair[1]);
            if t2 <= t1 {
                report.violations.push(Violation::TokenOrder {
                    lock: lock.to_string(),
                    earlier: (c1.to_string(), t1, at1),
                    later: (c2.to_string(), t2, at2),
                });
            }
        }
    }

    // Cut-off holders: told before anyone else is granted; the margins.
    for fault in faults {
        for hold in holds.iter().filter(|h| fault.cut_off.contains(&h.client)) {
            let alive_at_cut =
                hold.granted <= fault.start && hold.end.is_none_or(|e| e > fault.start);
            let granted_in_cut = hold.granted > fault.start && hold.granted < fault.heal;
            if !(alive_at_cut || granted_in_cut) {
                continue;
            }
            let from = hold.granted.max(fault.start);
            let next = grants.get(hold.lock.as_str()).and_then(|list| {
                list.iter()
                    .find(|(at, client, _)| *at > from && *client != hold.client)
                    .map(|(at, client, _)| (*at, *client))
            });
            let seconds = |a: Nanos, b: Nanos| (a as i128 - b as i128) as f64 / 1e9;
            let trust_end = hold.trust_end_from(from).or(hold.end);
            report.margins.push(Margin {
                shape: fault.shape.clone(),
                holder: hold.client.clone(),
                next_grant: next.map(|(at, _)| at),
                trust: next.zip(trust_end).map(|((at, _), end)| seconds(at, end)),
                lost: next.zip(hold.lost).map(|((at, _), lost)| seconds(at, lost)),
            });
            if let Some((at, client)) = next {
                if promises_lost(&hold.client) && hold.end.is_none_or(|end| end >= at) {
                    report.violations.push(Violation::LostAfterGrant {
                        shape: fault.shape.clone(),
                        holder: hold.client.clone(),
                        lost: hold.lost,
                        next_grant: (client.to_string(), at),
                    });
                }
            }
        }
    }

    // Progress after every heal, on every lock.
    let mut starts: Vec<Nanos> = faults.iter().map(|f| f.start).collect();
    starts.sort_unstable();
    for fault in faults {
        let until = starts
            .iter()
            .copied()
            .find(|&s| s > fault.heal)
            .unwrap_or(Nanos::MAX);
        for (lock, list) in &grants {
            if !list
                .iter()
                .any(|(at, _, _)| *at > fault.heal && *at <= until)
            {
                report.violations.push(Violation::NoProgress {
                    shape: fault.shape.clone(),
                    lock: lock.to_string(),
                    heal: fault.heal,
                });
            }
        }
    }
    report
}

impl Report {
    /// Min / median / max of the margins per shape and binding, one line each:
    /// `shape binding n=.. lost min/median/max .. trust min/median/max ..` (seconds).
    pub fn summary(&self) -> String {
        #[derive(Default)]
        struct Group {
            lost: Vec<f64>,
            trust: Vec<f64>,
            holds: usize,
        }
        let mut groups: BTreeMap<(&str, &str), Group> = BTreeMap::new();
        for margin in &self.margins {
            let group = groups
                .entry((margin.shape.as_str(), binding_of(&margin.holder)))
                .or_default();
            group.holds += 1;
            group.lost.extend(margin.lost);
            group.trust.extend(margin.trust);
        }
        let stats = |values: &mut Vec<f64>| {
            if values.is_empty() {
                return "-".to_string();
            }
            values.sort_by(f64::total_cmp);
            let (min, max, median) = (values[0], values[values.len() - 1], median(values));
            format!("{min:+.3}/{median:+.3}/{max:+.3} (n={})", values.len())
        };
        let mut out = String::from(
            "shape binding holds | next grant minus Lost: min/median/max s | minus end of trust\n",
        );
        for ((shape, binding), mut group) in groups {
            out += &format!(
                "{shape} {binding} {} | {} | {}\n",
                group.holds,
                stats(&mut group.lost),
                stats(&mut group.trust)
            );
        }
        out
    }
}

#[cfg(test)]
mod tests;
