//! One row per lock directory under the root: what `zklock top` shows.

use crate::ls::{age_ms, kind_name, scheme_name};
use lock_zookeeper_client::zookeeper_client::{self, Client};
use lock_zookeeper_client::{Cycle, Error, LockClient, Participants};
use std::collections::BTreeSet;

/// How many lock directories are inspected at once.
const IN_FLIGHT: usize = 64;

/// One lock directory.
#[derive(Clone, Debug)]
pub(crate) struct Row {
    pub(crate) path: String,
    /// The kinds of its nodes (`write`, `read`, `semaphore(3)`, ...), `/`-joined.
    pub(crate) recipe: String,
    /// Each holder: owner (or `-`), age in ms (if known), fencing token.
    pub(crate) holders: Vec<(String, Option<i64>, i64)>,
    pub(crate) waiting: usize,
    /// The age of the oldest waiter, in ms.
    pub(crate) longest_wait: Option<i64>,
    /// The age of the oldest holder, in ms.
    pub(crate) longest_hold: Option<i64>,
    /// The naming schemes of its nodes, `/`-joined.
    pub(crate) scheme: String,
    /// A node of the lock is on a deadlock cycle.
    pub(crate) deadlocked: bool,
}

/// Everything under `root` now: one row per lock directory with participants
/// (`root` itself and its children, as `zklock deadlocks` scans them), in path
/// order.
pub(crate) async fn gather(
    raw: &Client,
    locks: &LockClient,
    root: &str,
    now: i64,
) -> Result<Vec<Row>, Error> {
    let children = match raw.list_children(root).await {
        Ok(children) => children,
        Err(zookeeper_client::Error::NoNode) => Vec::new(),
        Err(e) => return Err(Error::Connect(format!("listing {root}: {e}"))),
    };
    let base = root.trim_end_matches('/');
    let mut dirs = vec![root.to_owned()];
    dirs.extend(children.iter().map(|c| format!("{base}/{c}")));
    let cycles = locks.deadlocks(root.to_owned()).await?;
    let on_cycle = deadlocked_locks(&cycles);
    let mut rows = Vec::new();
    for chunk in dirs.chunks(IN_FLIGHT) {
        let mut tasks = tokio::task::JoinSet::new();
        for dir in chunk {
            let (locks, dir) = (locks.clone(), dir.clone());
            tasks.spawn(async move { locks.participants(dir).await });
        }
        while let Some(done) = tasks.join_next().await {
            let who = done.map_err(|e| Error::Connect(e.to_string()))??;
            if !who.holders.is_empty() || !who.waiters.is_empty() {
                let deadlocked = on_cycle.contains(who.path.as_str());
                rows.push(row(&who, now, deadlocked));
            }
        }
    }
    rows.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(rows)
}

/// The lock directories with a node on one of `cycles`.
fn deadlocked_locks(cycles: &[Cycle]) -> BTreeSet<String> {
    cycles
        .iter()
        .flatten()
        .map(|n| {
            n.node
                .rsplit_once('/')
                .map_or(&*n.node, |(dir, _)| dir)
                .to_owned()
        })
        .collect()
}

fn row(who: &Participants, now: i64, deadlocked: bool) -> Row {
    let all = || who.holders.iter().chain(&who.waiters);
    let joined = |names: BTreeSet<String>| names.into_iter().collect::<Vec<_>>().join("/");
    let recipe = joined(
        all()
            .map(|p| match p.permits {
                Some(n) => format!("{}({n})", kind_name(p.kind)),
                None => kind_name(p.kind).to_owned(),
            })
            .collect(),
    );
    let scheme = joined(all().map(|p| scheme_name(p.scheme).to_owned()).collect());
    let holders = who
        .holders
        .iter()
        .map(|p| {
            let owner = p.owner.clone().unwrap_or_else(|| "-".to_owned());
            (owner, age_ms(p.ctime, now), p.token.0)
        })
        .collect::<Vec<_>>();
    let oldest = |ages: Vec<Option<i64>>| ages.into_iter().flatten().max();
    Row {
        path: who.path.clone(),
        recipe,
        longest_hold: oldest(holders.iter().map(|h| h.1).collect()),
        holders,
        waiting: who.waiters.len(),
        longest_wait: oldest(who.waiters.iter().map(|p| age_ms(p.ctime, now)).collect()),
        scheme,
        deadlocked,
    }
}
