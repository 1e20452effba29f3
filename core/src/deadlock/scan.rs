//! On demand: every deadlock among the locks under a root
//! ([`Session::deadlocks`](crate::Session::deadlocks)).
//!
//! The scan reads the root and its direct children as lock directories: each is
//! listed, and every participant in it read (data and stat), all pipelined, no
//! watches. From that snapshot it builds the wait-for graph of [`super`], with one
//! more source of owner edges than the chase has: a waiting node exists only while
//! its owner waits there, so a held node leads to every waiting node of the same
//! owner (a kazoo client's identifier counts as its owner), besides the waits its
//! header publishes. So cycles through owners that do not publish (kazoo
//! participants, zklock acquisitions without detection) are found too, when all
//! their locks lie under the root.
//!
//! The whole scan runs twice and only edges seen in both passes count (nodes are
//! never re-created, so such an edge held throughout: the argument of [`super`]).
//! Each strongly connected set of the remaining graph is a deadlock; one shortest
//! cycle of each is reported. Cost: two round trips of `2 + d + n` requests for
//! `d` directories and `n` participants, per pass.

use super::chase::{Pass, Seen, Target};
use crate::ctx::Ctx;
use crate::event::LockEvent;
use crate::ids::{FencingToken, LockId};
use crate::names::parse_name;
use crate::oneshot::{unexpected_reply, OneShot};
use crate::participants::CycleNode;
use crate::proto::{Reply, RequestId, ZkError};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

type Graph = BTreeMap<String, BTreeSet<String>>;

pub(crate) struct Scan {
    id: LockId,
    root: String,
    pass: Pass,
    listed: BTreeSet<String>,
    first: Option<Graph>,
    pub(crate) done: bool,
}

impl Scan {
    pub(crate) fn new(id: LockId, root: String) -> Scan {
        Scan {
            id,
            root,
            pass: Pass::default(),
            listed: BTreeSet::new(),
            first: None,
            done: false,
        }
    }

    fn start_pass(&mut self, cx: &mut Ctx) {
        self.pass = Pass::default();
        self.listed.clear();
        let root = self.root.clone();
        self.pass.want_dir(cx, self.id, &root);
    }

    pub(crate) fn on_reply(
        &mut self,
        cx: &mut Ctx,
        request: RequestId,
        result: Result<Reply, ZkError>,
    ) {
        if self.done || !self.pass.requests.contains_key(&request) {
            return;
        }
        // A missing node is the pass's business (it left the graph); any other error
        // goes by the policy of tasks that own no node.
        if let Err(e) = &result {
            if *e != ZkError::NoNode {
                self.pass.requests.remove(&request);
                return self.trouble(cx, e.clone());
            }
        }
        let listing = match self.pass.requests.get(&request) {
            Some(Target::Dir(dir)) => Some(dir.clone()),
            _ => None,
        };
        if self.pass.on_reply(request, result).is_err() {
            return self.trouble(cx, unexpected_reply());
        }
        // A directory just listed: read its participants, and under the root list
        // the subdirectories. (Only this reply's directory: looking through every
        // listing on every reply made a scan of d directories cost d^2.)
        let new = listing
            .filter(|dir| !self.listed.contains(dir))
            .and_then(|dir| self.pass.children.get(&dir).map(|c| (dir, c.clone())));
        if let Some((dir, children)) = new {
            self.listed.insert(dir.clone());
            let base = if dir == "/" {
                String::new()
            } else {
                dir.clone()
            };
            for c in children {
                let path = format!("{base}/{c}");
                if parse_name(&c).is_some() {
                    self.pass.want_node(cx, self.id, &path);
                } else if dir == self.root && crate::path::validate_lock_path(&path).is_ok() {
                    self.pass.want_dir(cx, self.id, &path);
                }
            }
        }
        if !self.pass.requests.is_empty() {
            return;
        }
        let graph = self.graph();
        match self.first.take() {
            None => {
                self.first = Some(graph);
                self.start_pass(cx);
            }
            Some(first) => {
                let both: Graph = graph
                    .into_iter()
                    .map(|(a, bs)| {
                        let keep = first
                            .get(&a)
                            .map_or(BTreeSet::new(), |f| bs.intersection(f).cloned().collect());
                        (a, keep)
                    })
                    .collect();
                let cycles = cycles(&both)
                    .into_iter()
                    .map(|c| self.describe(&c))
                    .collect();
                self.done = true;
                cx.emit(self.id, LockEvent::Deadlocks { cycles });
            }
        }
    }

    /// The wait-for graph of this pass.
    fn graph(&self) -> Graph {
        let mut g = Graph::new();
        let mut held: Vec<(String, String)> = Vec::new(); // (owner, node)
        let mut waiting: BTreeMap<String, Vec<String>> = BTreeMap::new(); // owner -> nodes
        for (dir, places) in &self.pass.dirs {
            let Seen::Got(places) = places else { continue };
            let base = if dir == "/" { "" } else { dir.as_str() };
            for p in places {
                let path = format!("{base}/{}", p.name);
                let Some((data, _)) = self.pass.node(&path) else {
                    continue;
                };
                let edges = g.entry(path.clone()).or_default();
                if p.holds {
                    for w in &data.waits {
                        edges.insert(w.clone());
                    }
                    if let Some(o) = &data.owner {
                        held.push((o.clone(), path));
                    }
                } else {
                    for b in &p.hard {
                        let b = format!("{base}/{b}");
                        if self.pass.node(&b).is_some() {
                            edges.insert(b);
                        }
                    }
                    if let Some(o) = &data.owner {
                        waiting.entry(o.clone()).or_default().push(path);
                    }
                }
            }
        }
        for (o, h) in held {
            for w in waiting.get(&o).into_iter().flatten() {
                g.entry(h.clone()).or_default().insert(w.clone());
            }
        }
        // Published waits naming nodes that are not waiting here lead nowhere.
        let waiting_nodes: BTreeSet<String> = waiting.into_values().flatten().collect();
        let all: BTreeSet<String> = g.keys().cloned().collect();
        for (a, bs) in g.iter_mut() {
            let held_a = self.pass.place(a).is_some_and(|p| p.holds);
            bs.retain(|b| all.contains(b) && (!held_a || waiting_nodes.contains(b)));
        }
        g
    }

    fn describe(&self, cycle: &[String]) -> Vec<CycleNode> {
        cycle
            .iter()
            .map(|n| {
                let (data, stat) = self.pass.node(n).cloned().unwrap_or_default();
                CycleNode {
                    node: n.clone(),
                    owner: data.owner,
                    holds: self.pass.place(n).is_some_and(|p| p.holds),
                    token: FencingToken(stat.czxid),
                    session: stat.ephemeral_owner,
                    ctime: stat.ctime,
                }
            })
            .collect()
    }
}

impl OneShot for Scan {
    fn id_and_done(&mut self) -> (LockId, &mut bool) {
        (self.id, &mut self.done)
    }

    fn recover(&mut self, cx: &mut Ctx) {
        cx.requests.forget_lock(self.id);
        self.first = None;
        self.start_pass(cx);
    }
}

/// One shortest cycle per strongly connected set of `g` (of two nodes or more),
/// through its first node in path order.
fn cycles(g: &Graph) -> Vec<Vec<String>> {
    let reach = |from: &str| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo: Vec<&str> = vec![from];
        while let Some(v) = todo.pop() {
            for w in g.get(v).into_iter().flatten() {
                if seen.insert(w.clone()) {
                    todo.push(w);
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&String, BTreeSet<String>> = g.keys().map(|k| (k, reach(k))).collect();
    let mut covered = BTreeSet::new();
    let mut out = Vec::new();
    for (v, r) in &reaches {
        if covered.contains(*v) || !r.contains(*v) {
            continue;
        }
        let scc: BTreeSet<String> = r
            .iter()
            .filter(|w| reaches.get(w).is_some_and(|rw| rw.contains(*v)))
            .cloned()
            .collect();
        covered.extend(scc.iter().cloned());
        // Shortest cycle through v, breadth first inside its set.
        let mut parent: BTreeMap<String, String> = BTreeMap::new();
        let mut queue = VecDeque::from([(*v).clone()]);
        'bfs: while let Some(a) = queue.pop_front() {
            for b in g.get(&a).into_iter().flatten() {
                if !scc.contains(b) {
                    continue;
                }
                if b == *v {
                    let mut cycle = vec![a.clone()];
                    while let Some(p) = parent.get(cycle.last().expect("non-empty")) {
                        cycle.push(p.clone());
                    }
                    cycle.reverse();
                    out.push(cycle);
                    break 'bfs;
                }
                if !parent.contains_key(b) && b != *v {
                    parent.insert(b.clone(), a.clone());
                    queue.push_back(b.clone());
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_shortest_cycle_per_strongly_connected_set() {
        let mut g = Graph::new();
        for (a, b) in [
            ("a", "b"),
            ("b", "c"),
            ("c", "a"),
            ("b", "a"),
            ("x", "y"),
            ("y", "x"),
            ("y", "z"),
        ] {
            g.entry(a.into()).or_default().insert(b.into());
        }
        let c = cycles(&g);
        assert_eq!(
            c,
            vec![
                vec!["a".to_owned(), "b".to_owned()],
                vec!["x".to_owned(), "y".to_owned()]
            ]
        );
    }
}
