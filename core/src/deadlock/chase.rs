//! One chase: explore the wait-for graph from our waiting node, then confirm the
//! cycle found by reading every edge again (see the module above for why).

use super::MAX_NODES;
use crate::ctx::Ctx;
use crate::ids::{FencingToken, LockId};
use crate::inspect::{queue, Place};
use crate::names::parse_name;
use crate::owner::{self, NodeData};
use crate::participants::CycleNode;
use crate::path::{split_parent, validate_lock_path};
use crate::proto::{Op, Reply, RequestId, Stat, ZkError};
use crate::requests::Purpose;
use std::collections::{BTreeMap, VecDeque};

/// What a chase ended with.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(crate) enum ChaseResult {
    /// Still reading.
    Pending,
    /// No confirmed cycle through our node (or the chase gave up: an error, a
    /// vanished node, the size bound).
    NoCycle,
    /// A confirmed cycle, and whether we are its victim.
    Cycle { victim: bool, cycle: Vec<CycleNode> },
}

#[derive(Clone, Debug)]
pub(crate) enum Seen<T> {
    Pending,
    Got(T),
    Gone,
}

#[derive(Clone, PartialEq, Eq, Debug)]
pub(crate) enum Target {
    Dir(String),
    Node(String),
}

/// One round of reads: listings and node reads, pipelined.
#[derive(Default)]
pub(crate) struct Pass {
    pub(crate) dirs: BTreeMap<String, Seen<Vec<Place>>>,
    /// The raw names of every listing (to find subdirectories).
    pub(crate) children: BTreeMap<String, Vec<String>>,
    pub(crate) nodes: BTreeMap<String, Seen<(NodeData, Stat)>>,
    pub(crate) requests: BTreeMap<RequestId, Target>,
}

impl Pass {
    pub(crate) fn want_dir(&mut self, cx: &mut Ctx, lock: LockId, dir: &str) {
        if self.dirs.contains_key(dir) {
            return;
        }
        self.dirs.insert(dir.to_owned(), Seen::Pending);
        let op = Op::GetChildren {
            path: dir.to_owned(),
        };
        if let Some(r) = cx.send(lock, Purpose::Chase, op) {
            self.requests.insert(r, Target::Dir(dir.to_owned()));
        }
    }

    pub(crate) fn want_node(&mut self, cx: &mut Ctx, lock: LockId, path: &str) {
        if self.nodes.contains_key(path) {
            return;
        }
        self.nodes.insert(path.to_owned(), Seen::Pending);
        let op = Op::read(path);
        if let Some(r) = cx.send(lock, Purpose::Chase, op) {
            self.requests.insert(r, Target::Node(path.to_owned()));
        }
    }

    /// Files a reply; `Err(())` when the chase must give up.
    pub(crate) fn on_reply(
        &mut self,
        request: RequestId,
        result: Result<Reply, ZkError>,
    ) -> Result<(), ()> {
        let Some(target) = self.requests.remove(&request) else {
            return Ok(());
        };
        match (target, result) {
            (Target::Dir(d), Ok(Reply::Children(c))) => {
                self.dirs.insert(d.clone(), Seen::Got(queue(&c).0));
                self.children.insert(d, c);
            }
            (Target::Dir(d), Err(ZkError::NoNode)) => {
                self.dirs.insert(d, Seen::Gone);
            }
            (Target::Node(p), Ok(Reply::Data { data, stat })) => {
                let scheme = parse_name(split_parent(&p).1).map(|n| n.scheme);
                let d = owner::parse(scheme.unwrap_or_default(), &data);
                self.nodes.insert(p, Seen::Got((d, stat)));
            }
            (Target::Node(p), Err(ZkError::NoNode)) => {
                self.nodes.insert(p, Seen::Gone);
            }
            _ => return Err(()),
        }
        Ok(())
    }

    pub(crate) fn place(&self, path: &str) -> Option<&Place> {
        let (dir, name) = split_parent(path);
        match self.dirs.get(dir)? {
            Seen::Got(places) => places.iter().find(|p| p.name == name),
            _ => None,
        }
    }

    pub(crate) fn node(&self, path: &str) -> Option<&(NodeData, Stat)> {
        match self.nodes.get(path)? {
            Seen::Got(n) => Some(n),
            _ => None,
        }
    }

    fn ready(&self, path: &str) -> bool {
        let dir = split_parent(path).0;
        !matches!(self.dirs.get(dir), Some(Seen::Pending) | None)
            && !matches!(self.nodes.get(path), Some(Seen::Pending) | None)
    }
}

/// What a chase reads to follow the waits of holders that publish none.
#[derive(Default)]
struct Hints {
    /// Directories listed, and whether the reads of their waiters were sent.
    dirs: BTreeMap<String, bool>,
    /// Waiting nodes read for the hint.
    nodes: Vec<String>,
}

/// Whether held node `h` is taken to wait at waiting node `w` by inference: `h`
/// publishes nothing (a foreign client's node: kazoo's `Lock` writes its
/// identifier as the data; or a zklock node named in the kazoo scheme) but names an
/// owner, and `w` waits for the same owner on the same session. A kazoo client is
/// one session, and its identifier names the contender: a contender holding one
/// lock while waiting for another holds the first until it gets the second.
fn inferred(pass: &Pass, h: &str, w: &str) -> bool {
    let (Some((dh, sh)), Some((dw, sw))) = (pass.node(h), pass.node(w)) else {
        return false;
    };
    h != w
        && !dh.header
        && dh.waits.is_empty()
        && dh.owner.is_some()
        && dh.owner == dw.owner
        && sh.ephemeral_owner == sw.ephemeral_owner
        && pass.place(w).is_some_and(|p| !p.holds)
}

/// A path read from someone's data is followed only if it names a participant
/// node under a valid lock path.
fn plausible(path: &str) -> bool {
    let (dir, name) = split_parent(path);
    parse_name(name).is_some() && validate_lock_path(dir).is_ok()
}

pub(crate) struct Chase {
    lock: LockId,
    start: String,
    owner: String,
    /// Full paths of the nodes our owner holds on this session: where the cycle
    /// must come back to, looked at for foreign holders' waits (see `hints`).
    owner_held: Vec<String>,
    /// Once a foreign holder was reached: the directories of `owner_held`, listed,
    /// and in them the waiting nodes our owner's nodes block, read. A foreign
    /// owner waits at its waiting nodes on the same session; one that closes a
    /// cycle through us waits in one of these directories.
    hints: Option<Hints>,
    explore: Pass,
    /// Explored nodes' predecessors (the breadth-first tree).
    parent: BTreeMap<String, Option<String>>,
    /// Reached, not yet expanded.
    todo: VecDeque<String>,
    /// The cycle being confirmed (start first) and the second pass.
    confirm: Option<(Vec<String>, Pass)>,
    done: bool,
}

impl Chase {
    /// Starts a chase from our waiting node `start`, for `owner`, which holds the
    /// nodes `owner_held` on this session.
    pub(crate) fn start(
        cx: &mut Ctx,
        lock: LockId,
        start: String,
        owner: String,
        owner_held: Vec<String>,
    ) -> Chase {
        let mut c = Chase {
            lock,
            start: start.clone(),
            owner,
            owner_held,
            hints: None,
            explore: Pass::default(),
            parent: BTreeMap::new(),
            todo: VecDeque::new(),
            confirm: None,
            done: false,
        };
        c.reach(cx, start, None);
        c
    }

    fn reach(&mut self, cx: &mut Ctx, path: String, from: Option<String>) {
        if self.parent.contains_key(&path) || !plausible(&path) {
            return;
        }
        self.parent.insert(path.clone(), from);
        self.explore.want_dir(cx, self.lock, split_parent(&path).0);
        self.explore.want_node(cx, self.lock, &path);
        self.todo.push_back(path);
    }

    /// Whether `request` belongs to this chase.
    pub(crate) fn owns(&self, request: RequestId) -> bool {
        self.explore.requests.contains_key(&request)
            || self
                .confirm
                .as_ref()
                .is_some_and(|(_, p)| p.requests.contains_key(&request))
    }

    pub(crate) fn on_reply(
        &mut self,
        cx: &mut Ctx,
        request: RequestId,
        result: Result<Reply, ZkError>,
    ) -> ChaseResult {
        if self.done {
            return ChaseResult::NoCycle;
        }
        let outcome = match &mut self.confirm {
            Some((_, pass)) => {
                if pass.on_reply(request, result).is_err() {
                    ChaseResult::NoCycle
                } else if pass.requests.is_empty() {
                    self.verify()
                } else {
                    ChaseResult::Pending
                }
            }
            None => {
                if self.explore.on_reply(request, result).is_err() {
                    ChaseResult::NoCycle
                } else {
                    self.read_hints(cx);
                    self.advance(cx)
                }
            }
        };
        if outcome != ChaseResult::Pending {
            self.done = true;
        }
        outcome
    }

    /// Lists the directories of our owner's held nodes (once), and reads the
    /// waiting nodes there that those nodes block.
    fn ask_hints(&mut self, cx: &mut Ctx) {
        let mut hints = Hints::default();
        for held in &self.owner_held {
            let dir = split_parent(held).0.to_owned();
            self.explore.want_dir(cx, self.lock, &dir);
            hints.dirs.insert(dir, false);
        }
        self.hints = Some(hints);
        self.read_hints(cx);
    }

    fn read_hints(&mut self, cx: &mut Ctx) {
        let Some(hints) = &mut self.hints else { return };
        for (dir, sent) in hints.dirs.iter_mut().filter(|(_, sent)| !**sent) {
            let places = match self.explore.dirs.get(dir) {
                Some(Seen::Got(places)) => places,
                Some(Seen::Gone) => {
                    *sent = true;
                    continue;
                }
                _ => continue,
            };
            *sent = true;
            let ours: Vec<&str> = self
                .owner_held
                .iter()
                .filter(|h| split_parent(h).0 == dir)
                .map(|h| split_parent(h).1)
                .collect();
            for place in places.iter().filter(|p| !p.holds) {
                if place.hard.iter().any(|b| ours.contains(&b.as_str())) {
                    hints.nodes.push(format!("{dir}/{}", place.name));
                }
            }
        }
        let wanted: Vec<String> = hints
            .nodes
            .iter()
            .filter(|n| !self.explore.nodes.contains_key(*n))
            .cloned()
            .collect();
        for path in wanted {
            self.explore.want_node(cx, self.lock, &path);
        }
    }

    fn hints_pending(&self) -> bool {
        self.hints.as_ref().is_some_and(|h| {
            h.dirs.values().any(|sent| !sent)
                || h.nodes
                    .iter()
                    .any(|n| matches!(self.explore.nodes.get(n), Some(Seen::Pending)))
        })
    }

    /// Expands what the first pass can, breadth first.
    fn advance(&mut self, cx: &mut Ctx) -> ChaseResult {
        while let Some(path) = self.todo.front().cloned() {
            if !self.explore.ready(&path) {
                break;
            }
            let Some(place) = self.explore.place(&path).cloned() else {
                self.todo.pop_front();
                continue; // gone since it was named: a dead end
            };
            let Some((data, _)) = self.explore.node(&path).cloned() else {
                self.todo.pop_front();
                continue;
            };
            if place.holds && path == self.start {
                // Granted meanwhile: no wait to chase.
                return ChaseResult::NoCycle;
            }
            let silent = data.waits.is_empty() && !data.header && data.owner.is_some();
            if place.holds && silent && data.owner.as_deref() != Some(self.owner.as_str()) {
                // A holder that publishes nothing: its owner's waits are found by
                // looking where it could close a cycle through us.
                if self.hints.is_none() {
                    self.ask_hints(cx);
                }
                if self.hints_pending() {
                    break;
                }
            }
            self.todo.pop_front();
            if place.holds {
                if data.owner.as_deref() == Some(self.owner.as_str()) {
                    // Our owner holds this node and waits at our start: a cycle.
                    return self.begin_confirm(cx, path);
                }
                let waits: Vec<String> = if silent {
                    self.explore
                        .nodes
                        .keys()
                        .filter(|w| inferred(&self.explore, &path, w))
                        .cloned()
                        .collect()
                } else {
                    data.waits
                };
                for w in waits {
                    self.reach(cx, w, Some(path.clone()));
                }
            } else {
                let dir = split_parent(&path).0.to_owned();
                for b in &place.hard {
                    self.reach(cx, format!("{dir}/{b}"), Some(path.clone()));
                }
            }
            if self.parent.len() > MAX_NODES {
                return ChaseResult::NoCycle;
            }
        }
        if self.explore.requests.is_empty() && self.todo.is_empty() {
            return ChaseResult::NoCycle;
        }
        ChaseResult::Pending
    }

    fn begin_confirm(&mut self, cx: &mut Ctx, last: String) -> ChaseResult {
        let mut cycle = vec![last];
        while let Some(Some(p)) = self.parent.get(cycle.last().expect("non-empty")) {
            cycle.push(p.clone());
        }
        cycle.reverse(); // start first
        debug_assert_eq!(cycle[0], self.start);
        let mut pass = Pass::default();
        for node in &cycle {
            pass.want_dir(cx, self.lock, split_parent(node).0);
            pass.want_node(cx, self.lock, node);
        }
        if pass.requests.is_empty() {
            return ChaseResult::NoCycle; // disconnected: nothing went out
        }
        self.confirm = Some((cycle, pass));
        ChaseResult::Pending
    }

    /// Every edge of the cycle, checked in both passes.
    fn verify(&self) -> ChaseResult {
        let Some((cycle, second)) = &self.confirm else {
            return ChaseResult::NoCycle;
        };
        let first = &self.explore;
        let n = cycle.len();
        let mut out = Vec::with_capacity(n);
        // Which nodes are entered by an inferred owner edge (their owner publishes
        // nothing: never a victim, it cannot be told to give up).
        let mut silent_entry = vec![false; n];
        for (i, node) in cycle.iter().enumerate() {
            let next = &cycle[(i + 1) % n];
            let (Some(p1), Some(p2)) = (first.place(node), second.place(node)) else {
                return ChaseResult::NoCycle;
            };
            let (Some((d1, s1)), Some((d2, s2))) = (first.node(node), second.node(node)) else {
                return ChaseResult::NoCycle;
            };
            if p1.holds != p2.holds {
                return ChaseResult::NoCycle;
            }
            let edge = if p2.holds {
                let closes = i == n - 1;
                let published = d1.waits.contains(next) && d2.waits.contains(next);
                let silent =
                    !published && inferred(first, node, next) && inferred(second, node, next);
                silent_entry[(i + 1) % n] = silent;
                s1.mzxid == s2.mzxid
                    && if closes {
                        d2.owner.as_deref() == Some(self.owner.as_str())
                    } else {
                        published || silent
                    }
            } else {
                let (dir, name) = split_parent(next);
                dir == split_parent(node).0
                    && p1.hard.iter().any(|b| b == name)
                    && p2.hard.iter().any(|b| b == name)
            };
            if !edge {
                return ChaseResult::NoCycle;
            }
            out.push(CycleNode {
                node: node.clone(),
                owner: d2.owner.clone(),
                holds: p2.holds,
                token: FencingToken(s2.czxid),
                session: s2.ephemeral_owner,
                ctime: s2.ctime,
            });
        }
        // Candidates: waiting nodes entered by a published owner edge, and the
        // start (entered by our own owner's edge from the last node).
        let victim = (0..n)
            .filter(|&i| !out[i].holds && out[(i + n - 1) % n].holds)
            .filter(|&i| i == 0 || !silent_entry[i])
            .max_by_key(|&i| out[i].token);
        ChaseResult::Cycle {
            victim: victim == Some(0),
            cycle: out,
        }
    }
}
