//! Inspection of semaphores in Curator's and kazoo's layouts (see
//! [`names::semaphore_mutex_dir`](crate::names::semaphore_mutex_dir)): the holders are
//! the lease nodes, the waiters the nodes queued in the internal mutex.
//!
//! An inspection of `path` lists the layouts' directories beside `path` itself, in
//! the same burst: Curator's `<path>/locks` and `<path>/leases`, kazoo's
//! `<path>-__lock__` (kazoo's lease pool is `path`, listed anyway), then reads every
//! node found, and for kazoo leases the permit count in `path`'s data. Missing
//! directories are empty. The queue head of a Curator semaphore creates its lease
//! node before it counts the pool, so the newest lease node of the head's session is
//! shown as the first waiter, waiting for the other leases (for a moment after it is
//! granted it still shows so, until it releases the queue).

use crate::ctx::{Ctx, InFlight};
use crate::ids::{FencingToken, LockId};
use crate::names::{
    parse_kazoo_lease, parse_name, semaphore_lease_dir, semaphore_mutex_dir, sort_by_sequence,
    NameScheme, NodeKind,
};
use crate::owner;
use crate::participants::Participant;
use crate::proto::{Op, Reply, RequestId, Stat, ZkError};
use crate::requests::Purpose;

/// Where a listing looks.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Source {
    CuratorQueue,
    CuratorPool,
    KazooQueue,
}

struct Node {
    dir: String,
    name: String,
    scheme: NameScheme,
    lease: bool,
    seq: i32,
    data: Option<(Vec<u8>, Stat)>,
}

/// The lease-layout half of one inspection.
pub(crate) struct LeaseView {
    path: String,
    lists: Vec<(RequestId, Source)>,
    nodes: Vec<Node>,
    reads: Vec<(RequestId, usize)>,
    count_read: InFlight,
    kazoo_count: Option<u32>,
}

impl LeaseView {
    pub(crate) fn new(path: String) -> Self {
        LeaseView {
            path,
            lists: Vec::new(),
            nodes: Vec::new(),
            reads: Vec::new(),
            count_read: InFlight::default(),
            kazoo_count: None,
        }
    }

    /// Whether `name`, a child of the inspected path, belongs to a layout (a
    /// Curator directory or a kazoo lease) rather than being foreign.
    pub(crate) fn claims(name: &str) -> bool {
        matches!(name, "locks" | "leases") || parse_kazoo_lease(name).is_some()
    }

    /// Lists the layouts' directories (again, after a reconnect).
    pub(crate) fn recover(&mut self, cx: &mut Ctx, id: LockId) {
        *self = LeaseView::new(std::mem::take(&mut self.path));
        let dirs = [
            (
                semaphore_mutex_dir(NameScheme::Curator, &self.path),
                Source::CuratorQueue,
            ),
            (
                semaphore_lease_dir(NameScheme::Curator, &self.path),
                Source::CuratorPool,
            ),
            (
                semaphore_mutex_dir(NameScheme::Kazoo, &self.path),
                Source::KazooQueue,
            ),
        ];
        for (dir, source) in dirs {
            let dir = dir.expect("a layout");
            if let Some(r) = cx.send(id, Purpose::Inspect, Op::GetChildren { path: dir }) {
                self.lists.push((r, source));
            }
        }
    }

    /// The inspected path's own children: kazoo's lease nodes among them are read.
    pub(crate) fn kazoo_pool(&mut self, cx: &mut Ctx, id: LockId, children: &[String]) {
        let mut any = false;
        for name in children.iter().filter(|c| parse_kazoo_lease(c).is_some()) {
            any = true;
            let node = Node {
                dir: self.path.clone(),
                name: name.clone(),
                scheme: NameScheme::Kazoo,
                lease: true,
                seq: 0,
                data: None,
            };
            self.add(cx, id, node);
        }
        if any {
            let op = Op::read(self.path.clone());
            self.count_read.send(cx, id, Purpose::Inspect, op);
        }
    }

    /// Records `node` and reads it.
    fn add(&mut self, cx: &mut Ctx, id: LockId, node: Node) {
        let op = Op::read(format!("{}/{}", node.dir, node.name));
        if let Some(r) = cx.send(id, Purpose::Inspect, op) {
            self.reads.push((r, self.nodes.len()));
        }
        self.nodes.push(node);
    }

    /// Whether every listing and read has been answered.
    pub(crate) fn settled(&self) -> bool {
        self.lists.is_empty() && self.reads.is_empty() && !self.count_read.is_pending()
    }

    /// A reply to one of our requests: `None` if it is not ours, else `Err` for
    /// trouble that the inspection retries.
    pub(crate) fn on_reply(
        &mut self,
        cx: &mut Ctx,
        id: LockId,
        request: RequestId,
        result: &Result<Reply, ZkError>,
    ) -> Option<Result<(), ZkError>> {
        if let Some(pos) = self.lists.iter().position(|(r, _)| *r == request) {
            let (_, source) = self.lists.remove(pos);
            let children = match result {
                Ok(Reply::Children(c)) => c.clone(),
                Err(ZkError::NoNode) => Vec::new(),
                Ok(_) => return Some(Err(ZkError::unexpected_reply())),
                Err(e) => return Some(Err(e.clone())),
            };
            let (scheme, lease) = match source {
                Source::CuratorQueue => (NameScheme::Curator, false),
                Source::CuratorPool => (NameScheme::Curator, true),
                Source::KazooQueue => (NameScheme::Kazoo, false),
            };
            let dir = if lease {
                semaphore_lease_dir(scheme, &self.path)
            } else {
                semaphore_mutex_dir(scheme, &self.path)
            }
            .expect("a layout");
            for name in children {
                let Some(p) = parse_name(&name).filter(|p| p.scheme == scheme) else {
                    continue;
                };
                let node = Node {
                    dir: dir.clone(),
                    name,
                    scheme,
                    lease,
                    seq: p.seq,
                    data: None,
                };
                self.add(cx, id, node);
            }
            return Some(Ok(()));
        }
        if self.count_read.take_reply(request) {
            if let Ok(Reply::Data { data, .. }) = result {
                self.kazoo_count = std::str::from_utf8(data)
                    .ok()
                    .and_then(|s| s.trim().parse().ok());
            }
            return Some(Ok(()));
        }
        let pos = self.reads.iter().position(|(r, _)| *r == request)?;
        let (_, i) = self.reads.remove(pos);
        match result {
            Ok(Reply::Data { data, stat }) => self.nodes[i].data = Some((data.clone(), *stat)),
            // Gone since the listing: it left.
            Err(ZkError::NoNode) => {}
            Ok(_) => return Some(Err(ZkError::unexpected_reply())),
            Err(e) => return Some(Err(e.clone())),
        }
        Some(Ok(()))
    }

    /// The holders and waiters found, per layout: (holders, waiters).
    pub(crate) fn participants(&self) -> (Vec<Participant>, Vec<Participant>) {
        let (mut holders, mut waiters) = (Vec::new(), Vec::new());
        for scheme in [NameScheme::Curator, NameScheme::Kazoo] {
            let present = |lease: bool| {
                let mut v: Vec<&Node> = self
                    .nodes
                    .iter()
                    .filter(|n| n.scheme == scheme && n.lease == lease && n.data.is_some())
                    .collect();
                sort_by_sequence(&mut v, |n| n.seq);
                v
            };
            let mut leases = present(true);
            // kazoo's lease names carry no sequence: oldest first by creation.
            leases.sort_by_key(|n| n.data.as_ref().map(|(_, s)| s.czxid));
            let mut queue = present(false);
            let session = |n: &Node| n.data.as_ref().map(|(_, s)| s.ephemeral_owner);
            // Curator's queue head adds its lease before it counts: its session's
            // newest lease node waits for room.
            let mut pending = None;
            if scheme == NameScheme::Curator {
                if let (Some(head), Some(newest)) = (queue.first(), leases.last()) {
                    if session(head) == session(newest) {
                        pending = leases.pop();
                        queue.remove(0);
                    }
                }
            }
            let lease_names: Vec<String> = leases.iter().map(|n| n.name.clone()).collect();
            holders.extend(leases.iter().map(|n| self.participant(n, Vec::new())));
            let mut ahead: Vec<String> = Vec::new();
            if let Some(n) = pending {
                waiters.push(self.participant(n, lease_names.clone()));
                ahead.push(n.name.clone());
            }
            for n in queue {
                let waits = if ahead.is_empty() {
                    lease_names.clone()
                } else {
                    ahead.clone()
                };
                waiters.push(self.participant(n, waits));
                ahead.push(n.name.clone());
            }
        }
        (holders, waiters)
    }

    fn participant(&self, n: &Node, waits_for: Vec<String>) -> Participant {
        let (data, stat) = n.data.clone().expect("read");
        let d = owner::parse(n.scheme, &data);
        Participant {
            node: n.name.clone(),
            dir: n.dir.clone(),
            kind: NodeKind::Semaphore,
            permits: match n.scheme {
                NameScheme::Kazoo => self.kazoo_count,
                _ => None,
            },
            scheme: n.scheme,
            sequence: n.seq,
            owner: d.owner,
            session: stat.ephemeral_owner,
            ctime: stat.ctime,
            token: FencingToken(stat.czxid),
            data: d.user,
            waits_for,
            owner_waits_at: d.waits,
        }
    }
}
