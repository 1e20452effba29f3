//! One row per lock directory under the root: what `zklock top` shows. A row
//! keeps creation times, not ages, so that the view ages it without reading.

use crate::render::{kind_text, owner_text, scheme_name};
use lock_zookeeper_client::Participants;
use std::collections::BTreeSet;

/// One lock directory.
#[derive(Clone, Debug)]
pub(crate) struct Row {
    pub(crate) path: String,
    /// The kinds of its nodes (`write`, `read`, `semaphore(3)`, ...), `/`-joined.
    pub(crate) recipe: String,
    /// Each holder: owner (an election candidate's id, or `-`), `ctime` (ms
    /// since the epoch, 0 when unknown), fencing token.
    pub(crate) holders: Vec<(String, i64, i64)>,
    pub(crate) waiting: usize,
    /// The `ctime` of the oldest waiter (whose `ctime` is known).
    pub(crate) oldest_wait: Option<i64>,
    /// The `ctime` of the oldest holder (whose `ctime` is known).
    pub(crate) oldest_hold: Option<i64>,
    /// The naming schemes of its nodes, `/`-joined.
    pub(crate) scheme: String,
    /// A node of the lock is in a deadlock.
    pub(crate) deadlocked: bool,
}

/// The row of one lock directory (`None` when nobody holds or waits).
pub(crate) fn row(who: &Participants) -> Option<Row> {
    if who.holders.is_empty() && who.waiters.is_empty() {
        return None;
    }
    let all = || who.holders.iter().chain(&who.waiters);
    let joined = |names: BTreeSet<String>| names.into_iter().collect::<Vec<_>>().join("/");
    let recipe = joined(all().map(kind_text).collect());
    let scheme = joined(all().map(|p| scheme_name(p.scheme).to_owned()).collect());
    let holders = who
        .holders
        .iter()
        .map(|p| (owner_text(p), p.ctime, p.token.0))
        .collect::<Vec<_>>();
    let oldest = |ctimes: Vec<i64>| ctimes.into_iter().filter(|c| *c > 0).min();
    Some(Row {
        path: who.path.clone(),
        recipe,
        oldest_hold: oldest(holders.iter().map(|h| h.1).collect()),
        holders,
        waiting: who.waiters.len(),
        oldest_wait: oldest(who.waiters.iter().map(|p| p.ctime).collect()),
        scheme,
        deadlocked: false,
    })
}
