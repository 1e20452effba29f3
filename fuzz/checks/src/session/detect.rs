//! The `session` target's owners, deadlock detection, inspection and deadlock
//! scans: the steps that drive them and the checks of their results.

use super::{name_of, parent_of, AcquireStep, Harness, TaskKind};
use lock_core::names::{compare_sequences, parse_name};
use lock_core::owner;
use lock_core::{
    CycleNode, LockEvent, NameScheme, Op, Participant, Reply, Request, UsageError, ZkError,
};
use std::cmp::Ordering;
use std::time::Duration;

/// Owners the fuzzer names: few, so one owner holds one lock and waits on another,
/// and peers' headers name our owners too (cycles through our own owner).
pub const OWNERS: [&str; 3] = ["job-a", "job-b", "job-c"];

/// Roots of deadlock scans: `/a` holds the lock directory `/a/b` beside its own
/// participants; `/locks` holds `/locks/job`.
pub const SCAN_ROOTS: [&str; 4] = ["/a", "/locks", "/x", "/a/b"];

/// `detect_deadlocks(after)`: shorter than most `Advance` steps, or longer than
/// most waits.
pub fn detect_after(short: bool) -> Duration {
    Duration::from_millis(if short { 20 } else { 2_000 })
}

/// The documented refusal of deadlock detection, if any.
pub fn detection_refusal(a: &AcquireStep, owner: Option<&str>, data: &[u8]) -> Option<UsageError> {
    a.detect?;
    let scheme = a.scheme.scheme();
    if owner.is_none() {
        Some(UsageError::Unsupported(
            "deadlock detection needs an owner (LockSpec::owner)",
        ))
    } else if scheme == NameScheme::Native || (scheme == NameScheme::Kazoo && data.is_empty()) {
        None
    } else {
        Some(UsageError::Unsupported(
            "deadlock detection needs NameScheme::Native, or NameScheme::Kazoo without data (the owner is the node's data)",
        ))
    }
}

/// The directories an inspection of `path` also lists: the queues and lease pools
/// of semaphores in Curator's and kazoo's layouts on it.
fn semaphore_layout_dirs(path: &str) -> Vec<String> {
    use lock_core::names::{semaphore_lease_dir, semaphore_mutex_dir};
    [NameScheme::Curator, NameScheme::Kazoo]
        .into_iter()
        .flat_map(|s| [semaphore_mutex_dir(s, path), semaphore_lease_dir(s, path)])
        .flatten()
        .collect()
}

impl Harness {
    /// Directories read without watches: inspected ones, scan roots and their
    /// children, and (honest world) where published waits point; a dishonest world
    /// can make a chase follow any path its crafted data names, and reads are
    /// harmless.
    pub(super) fn plain_readable(&self, dir: &str) -> bool {
        self.inspected.contains(dir)
            || self
                .inspected
                .iter()
                .any(|p| semaphore_layout_dirs(p).iter().any(|d| d == dir))
            || self.scan_roots.contains(dir)
            || self.scan_roots.contains(parent_of(dir))
            || self.published_dirs.contains(dir)
            || !self.honest
    }

    /// Records an honest answer to a plain listing or read (inspection checks).
    pub(super) fn note_read(&mut self, r: &Request, result: &Result<Reply, ZkError>) {
        match (&r.op, result) {
            (Op::GetChildren { path }, Ok(Reply::Children(c))) => {
                self.listings.push((r.id, path.clone(), c.clone()))
            }
            // A missing directory lists as empty.
            (Op::GetChildren { path }, Err(ZkError::NoNode)) => {
                self.listings.push((r.id, path.clone(), Vec::new()))
            }
            (Op::GetData { path, watch: false }, Ok(Reply::Data { .. }) | Err(ZkError::NoNode)) => {
                self.reads.push((r.id, path.clone(), result.is_ok()))
            }
            _ => {}
        }
    }

    /// A peer's node gets an owner header publishing waits at world participants.
    pub(super) fn peer_owner(&mut self, pick: u8, owner: u8, waits: &[u8]) {
        let Some(node) = crate::pick(&self.peer_nodes(), pick).cloned() else {
            return;
        };
        let parts = self.world.participants();
        let waits: Vec<String> = waits
            .iter()
            .take(4)
            .map(|w| parts[usize::from(*w) % parts.len()].clone())
            .collect();
        for w in &waits {
            self.published_dirs.insert(parent_of(w).to_owned());
        }
        let owner = OWNERS[usize::from(owner) % OWNERS.len()];
        let mut data = owner::header(Some(owner), &waits);
        let old = self.world.zk.get(&node).expect("a peer node").data;
        data.extend_from_slice(owner::user_data(&old));
        self.log(|| format!("peer {node} owned by {owner} waits at {waits:?}"));
        let _ = self.world.set_data(&node, &data);
    }

    /// The terminal event of an inspection or a scan.
    pub(super) fn on_read_task_event(&mut self, i: usize, event: &LockEvent) {
        let (id, dir, after) = {
            let l = &self.locks[i];
            (l.id, l.dir.clone(), l.started_after)
        };
        match event {
            LockEvent::Participants(p) => {
                self.outcome.inspections += 1;
                check!(
                    self,
                    p.path == dir,
                    "{id} inspected {dir}, reports {}",
                    p.path
                );
                for list in [&p.holders, &p.waiters] {
                    let sorted = list
                        .windows(2)
                        .all(|w| compare_sequences(w[0].sequence, w[1].sequence) == Ordering::Less);
                    check!(self, sorted, "{id}: participants out of order: {p:?}");
                }
                check!(
                    self,
                    p.holders.iter().all(|h| h.waits_for.is_empty()),
                    "{id}: a holder waits: {p:?}"
                );
                if self.honest {
                    self.check_participants(id, &dir, after, p);
                }
            }
            LockEvent::Deadlocks { cycles } => {
                self.outcome.scans += 1;
                self.outcome.scan_cycles += cycles.len();
                for c in cycles {
                    check!(self, !c.is_empty(), "{id}: an empty cycle");
                    for n in c {
                        let d = parent_of(&n.node);
                        check!(
                            self,
                            d == dir || parent_of(d) == dir,
                            "{id}: cycle node {} outside the scan of {dir}",
                            n.node
                        );
                        self.check_existed(id, &n.node);
                    }
                }
            }
            _ => {}
        }
    }

    /// Honest world: a node a cycle names existed at some point.
    fn check_existed(&mut self, id: lock_core::LockId, node: &str) {
        if self.honest {
            check!(
                self,
                self.world.ever.contains(node),
                "{id}: cycle node {node} never existed"
            );
        }
    }

    /// Honest world: the result lists exactly the participants of one listing of
    /// the directory answered after the inspection started, minus those whose read
    /// found them gone.
    fn check_participants(
        &mut self,
        id: lock_core::LockId,
        dir: &str,
        after: u64,
        p: &lock_core::Participants,
    ) {
        let got: std::collections::BTreeSet<&str> = p
            .holders
            .iter()
            .chain(&p.waiters)
            .map(|x: &Participant| x.node.as_str())
            .collect();
        let read = |name: &str, listed: u64, found: bool| {
            let path = format!("{dir}/{name}");
            self.reads
                .iter()
                .any(|(r, q, f)| r.0 > listed && *q == path && *f == found)
        };
        let matches = self
            .listings
            .iter()
            .filter(|(r, d, _)| r.0 > after && d == dir)
            .any(|(r, _, children)| {
                let foreign = children.iter().filter(|c| parse_name(c).is_none()).count();
                foreign == p.foreign
                    && got.iter().all(|n| children.iter().any(|c| c == n))
                    && children
                        .iter()
                        .filter(|c| parse_name(c).is_some())
                        .all(|c| read(c, r.0, got.contains(c.as_str())))
            });
        check!(
            self,
            matches,
            "{id}: participants {got:?} (foreign {}) match no listing of {dir} since #{after}",
            p.foreign
        );
    }

    /// A `Deadlock` failure: only a waiting acquisition with an owner and detection
    /// on; the cycle starts at our node and follows real edges. (The weaker form of
    /// "the tree holds a cycle now": each edge is checked against the names and
    /// owners the core reports, and every node existed in the world; the tree may
    /// have changed since the last confirming read.)
    pub(super) fn check_deadlock_victim(&mut self, i: usize, cycle: &[CycleNode]) {
        self.outcome.deadlock_failures += 1;
        let l = &self.locks[i];
        let (id, dir, owner) = (l.id, l.dir.clone(), l.owner.clone());
        check!(
            self,
            l.kind == TaskKind::Lock && owner.is_some() && l.detect,
            "{id} failed with Deadlock without an owner and detection"
        );
        let Some(first) = cycle.first() else {
            self.fail(format!("{id}: Deadlock with an empty cycle"));
        };
        check!(
            self,
            parent_of(&first.node) == dir && self.is_our_node(&first.node) && !first.holds,
            "{id}: the cycle does not start at our waiting node: {cycle:?}"
        );
        check!(
            self,
            first.owner == owner,
            "{id}: our node's owner is {:?}, not {owner:?}",
            first.owner
        );
        for (k, n) in cycle.iter().enumerate() {
            let next = &cycle[(k + 1) % cycle.len()];
            if n.holds {
                // A holder leads to where its owner waits.
                check!(
                    self,
                    n.owner.is_some() && n.owner == next.owner && !next.holds,
                    "{id}: held {} leads to {} of another owner: {cycle:?}",
                    n.node,
                    next.node
                );
            } else {
                // A waiter leads to a lower node of its directory.
                let lower = parent_of(&n.node) == parent_of(&next.node)
                    && match (
                        parse_name(name_of(&n.node)),
                        parse_name(name_of(&next.node)),
                    ) {
                        (Some(a), Some(b)) => compare_sequences(b.seq, a.seq) == Ordering::Less,
                        _ => false,
                    };
                check!(
                    self,
                    lower,
                    "{id}: waiting {} does not wait for {}: {cycle:?}",
                    n.node,
                    next.node
                );
            }
            self.check_existed(id, &n.node);
            if self.honest {
                check!(
                    self,
                    n.session != self.world.peer_session || !self.is_our_node(&n.node),
                    "{id}: {} is ours but has a peer's session",
                    n.node
                );
            }
        }
    }
}
