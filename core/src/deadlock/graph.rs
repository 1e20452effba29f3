//! The wait-for graph of one reading of some lock directories, and its cycles:
//! what [`super::scan`] builds from each of its passes, and [`WaitFor`] from
//! [`Participants`] a caller already holds (`zklock top` keeps them current
//! from watches, so it finds the deadlocks among them without reading anything).

use crate::ids::FencingToken;
use crate::inspect::queue;
use crate::participants::{CycleNode, Participants};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// Edges by node path.
pub(crate) type Graph = BTreeMap<String, BTreeSet<String>>;

/// One participant node, as the graph needs it.
pub(crate) struct Vertex {
    /// Full path.
    pub(crate) path: String,
    pub(crate) holds: bool,
    pub(crate) owner: Option<String>,
    /// For a held node: where its header says its owner waits (full paths).
    pub(crate) published: Vec<String>,
    /// For a waiting node: its firm blockers (full paths).
    pub(crate) hard: Vec<String>,
}

/// The wait-for graph of `vertices` (see [`super`]): a waiting node leads to its
/// firm blockers; a held node to the waits it publishes and to every waiting node
/// of its owner (a waiting node exists only while its owner waits there). Edges
/// to nodes not among `vertices` lead nowhere and are dropped.
pub(crate) fn graph(vertices: &[Vertex]) -> Graph {
    let mut g = Graph::new();
    let mut held: Vec<(&str, &str)> = Vec::new(); // (owner, node)
    let mut waiting: BTreeMap<&str, Vec<&str>> = BTreeMap::new(); // owner -> nodes
    for v in vertices {
        let out = if v.holds { &v.published } else { &v.hard };
        g.entry(v.path.clone())
            .or_default()
            .extend(out.iter().cloned());
        if let Some(o) = &v.owner {
            if v.holds {
                held.push((o, &v.path));
            } else {
                waiting.entry(o).or_default().push(&v.path);
            }
        }
    }
    for (o, h) in held {
        let edges = g.entry(h.to_owned()).or_default();
        for w in waiting.get(o).into_iter().flatten() {
            edges.insert((*w).to_owned());
        }
    }
    // Published waits naming nodes that are not waiting here lead nowhere.
    let waiting_nodes: BTreeSet<&str> = waiting.into_values().flatten().collect();
    let holds: BTreeSet<&str> = vertices
        .iter()
        .filter(|v| v.holds)
        .map(|v| v.path.as_str())
        .collect();
    let all: BTreeSet<String> = g.keys().cloned().collect();
    for (a, bs) in g.iter_mut() {
        let held_a = holds.contains(a.as_str());
        bs.retain(|b| all.contains(b) && (!held_a || waiting_nodes.contains(b.as_str())));
    }
    g
}

/// The edges of `a` that `b` has too.
pub(crate) fn common(a: &Graph, b: &Graph) -> Graph {
    a.iter()
        .map(|(v, out)| {
            let keep = b
                .get(v)
                .map_or(BTreeSet::new(), |o| out.intersection(o).cloned().collect());
            (v.clone(), keep)
        })
        .collect()
}

/// The strongly connected sets of `g` that hold a cycle (two nodes or more, or
/// one with an edge to itself), each in path order, by their first node.
/// Tarjan's algorithm, without recursion: linear in the edges.
pub(crate) fn deadlocked_sets(g: &Graph) -> Vec<Vec<String>> {
    let names: Vec<&String> = g.keys().collect();
    let index_of: BTreeMap<&str, usize> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i))
        .collect();
    let out: Vec<Vec<usize>> = names
        .iter()
        .map(|n| {
            g[*n]
                .iter()
                .filter_map(|m| index_of.get(m.as_str()).copied())
                .collect()
        })
        .collect();
    const NONE: usize = usize::MAX;
    let (mut index, mut low) = (vec![NONE; names.len()], vec![0; names.len()]);
    let mut on_stack = vec![false; names.len()];
    let (mut stack, mut next, mut sets) = (Vec::new(), 0, Vec::new());
    for start in 0..names.len() {
        if index[start] != NONE {
            continue;
        }
        // (node, how many of its edges were followed)
        let mut calls = vec![(start, 0usize)];
        index[start] = next;
        low[start] = next;
        next += 1;
        stack.push(start);
        on_stack[start] = true;
        while let Some(&mut (v, ref mut followed)) = calls.last_mut() {
            if let Some(&w) = out[v].get(*followed) {
                *followed += 1;
                if index[w] == NONE {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    calls.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            calls.pop();
            if let Some(&(parent, _)) = calls.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut set = Vec::new();
                loop {
                    let w = stack.pop().expect("v is on the stack");
                    on_stack[w] = false;
                    set.push(w);
                    if w == v {
                        break;
                    }
                }
                if set.len() > 1 || out[v].contains(&v) {
                    let mut set: Vec<String> = set.into_iter().map(|i| names[i].clone()).collect();
                    set.sort();
                    sets.push(set);
                }
            }
        }
    }
    sets.sort();
    sets
}

/// One shortest cycle per strongly connected set of `g` (see
/// [`deadlocked_sets`]), through its first node in path order.
pub(crate) fn cycles(g: &Graph) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    for set in deadlocked_sets(g) {
        let members: BTreeSet<&String> = set.iter().collect();
        let v = &set[0];
        // Breadth first inside the set.
        let mut parent: BTreeMap<&String, &String> = BTreeMap::new();
        let mut queue = VecDeque::from([v]);
        'bfs: while let Some(a) = queue.pop_front() {
            for b in g.get(a).into_iter().flatten() {
                if !members.contains(b) {
                    continue;
                }
                if b == v {
                    let mut cycle = vec![a.clone()];
                    while let Some(p) = parent.get(cycle.last().expect("non-empty")) {
                        cycle.push((*p).clone());
                    }
                    cycle.reverse();
                    found.push(cycle);
                    break 'bfs;
                }
                if !parent.contains_key(b) && b != v {
                    parent.insert(b, a);
                    queue.push_back(b);
                }
            }
        }
    }
    found
}

/// The wait-for graph of lock directories already read, one [`Participants`]
/// each (as [`Session::inspect`](crate::Session::inspect) reports them), with
/// the rules of the deadlock scan ([`Session::deadlocks`](crate::Session::deadlocks)).
///
/// Unlike the scan, which reads everything twice and keeps only edges seen both
/// times, this takes each listing as it is: a cycle here existed if every
/// listing was current at once (a caller that keeps its listings current from
/// watches has that, up to the notifications on their way). [`WaitFor::common`]
/// of two readings, the second after the first, is the scan's confirmation.
#[derive(Clone, Debug, Default)]
pub struct WaitFor {
    edges: Graph,
    /// Every node, as a cycle reports it, with the lock directory it belongs to.
    nodes: BTreeMap<String, (CycleNode, String)>,
}

impl WaitFor {
    /// The graph of the participants of `locks`.
    pub fn new<'a>(locks: impl IntoIterator<Item = &'a Participants>) -> WaitFor {
        let mut vertices = Vec::new();
        let mut nodes = BTreeMap::new();
        for lock in locks {
            let all: Vec<_> = lock
                .holders
                .iter()
                .map(|p| (p, true))
                .chain(lock.waiters.iter().map(|p| (p, false)))
                .collect();
            // The firm blockers, by the names in each directory (the scan's rule).
            let mut by_dir: BTreeMap<&str, Vec<String>> = BTreeMap::new();
            for (p, _) in &all {
                by_dir.entry(&p.dir).or_default().push(p.node.clone());
            }
            let mut hard: BTreeMap<String, Vec<String>> = BTreeMap::new();
            for (dir, names) in by_dir {
                for place in queue(&names).0 {
                    let hard_paths = place.hard.iter().map(|b| join(dir, b)).collect();
                    hard.insert(join(dir, &place.name), hard_paths);
                }
            }
            for (p, holds) in all {
                let path = join(&p.dir, &p.node);
                vertices.push(Vertex {
                    path: path.clone(),
                    holds,
                    owner: p.owner.clone(),
                    published: if holds {
                        p.owner_waits_at.clone()
                    } else {
                        Vec::new()
                    },
                    hard: if holds {
                        Vec::new()
                    } else {
                        hard.remove(&path).unwrap_or_default()
                    },
                });
                let node = CycleNode {
                    node: path.clone(),
                    owner: p.owner.clone(),
                    holds,
                    token: FencingToken(p.token.0),
                    session: p.session,
                    ctime: p.ctime,
                };
                nodes.insert(path, (node, lock.path.clone()));
            }
        }
        WaitFor {
            edges: graph(&vertices),
            nodes,
        }
    }

    /// The edges of this graph that `later` (a reading made after this one
    /// ended) has too: each held throughout between the two readings, so every
    /// cycle of the result existed (see [`super`]).
    pub fn common(&self, later: &WaitFor) -> WaitFor {
        WaitFor {
            edges: common(&self.edges, &later.edges),
            nodes: later.nodes.clone(),
        }
    }

    /// One shortest cycle per deadlock (a strongly connected set of nodes), in
    /// wait order, as [`LockEvent::Deadlocks`](crate::LockEvent::Deadlocks) reports them.
    pub fn cycles(&self) -> Vec<Vec<CycleNode>> {
        cycles(&self.edges)
            .into_iter()
            .map(|c| {
                c.iter()
                    .filter_map(|n| Some(self.nodes.get(n)?.0.clone()))
                    .collect()
            })
            .collect()
    }

    /// The lock directories ([`Participants::path`]) with a node in a deadlock:
    /// every lock of a deadlocked set, not only those of its shortest cycle.
    pub fn deadlocked_locks(&self) -> BTreeSet<String> {
        deadlocked_sets(&self.edges)
            .into_iter()
            .flatten()
            .filter_map(|n| Some(self.nodes.get(&n)?.1.clone()))
            .collect()
    }
}

fn join(dir: &str, name: &str) -> String {
    if dir == "/" {
        format!("/{name}")
    } else {
        format!("{dir}/{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::{NameScheme, NodeKind};
    use crate::participants::Participant;

    fn graph_of(edges: &[(&str, &str)]) -> Graph {
        let mut g = Graph::new();
        for (a, b) in edges {
            g.entry((*a).into()).or_default().insert((*b).into());
            g.entry((*b).into()).or_default();
        }
        g
    }

    #[test]
    fn one_shortest_cycle_per_strongly_connected_set() {
        let g = graph_of(&[
            ("a", "b"),
            ("b", "c"),
            ("c", "a"),
            ("b", "a"),
            ("x", "y"),
            ("y", "x"),
            ("y", "z"),
        ]);
        assert_eq!(
            cycles(&g),
            vec![
                vec!["a".to_owned(), "b".to_owned()],
                vec!["x".to_owned(), "y".to_owned()]
            ]
        );
        assert_eq!(
            deadlocked_sets(&g),
            vec![vec!["a", "b", "c"], vec!["x", "y"]]
        );
        let lone = graph_of(&[("s", "s"), ("t", "u")]);
        assert_eq!(deadlocked_sets(&lone), vec![vec!["s"]]);
    }

    #[test]
    fn a_long_chain_is_no_deadlock_and_costs_no_recursion() {
        let names: Vec<String> = (0..200_000).map(|i| format!("n{i:06}")).collect();
        let mut g = Graph::new();
        for w in names.windows(2) {
            g.entry(w[0].clone()).or_default().insert(w[1].clone());
        }
        g.entry(names[199_999].clone()).or_default();
        assert!(deadlocked_sets(&g).is_empty());
        g.get_mut(&names[199_999]).unwrap().insert(names[0].clone());
        assert_eq!(deadlocked_sets(&g)[0].len(), 200_000);
    }

    fn participant(dir: &str, seq: i32, owner: &str) -> Participant {
        let node = format!("zkl-{:032x}-write-{seq:010}", seq as u128 + 1);
        Participant {
            node,
            dir: dir.to_owned(),
            kind: NodeKind::Write,
            permits: None,
            scheme: NameScheme::Native,
            sequence: seq,
            owner: Some(owner.to_owned()),
            session: 1,
            ctime: 1,
            token: FencingToken(i64::from(seq)),
            data: Vec::new(),
            waits_for: Vec::new(),
            owner_waits_at: Vec::new(),
        }
    }

    /// `holder` holds `dir`, `waiters` wait there in order.
    fn lock(dir: &str, holder: &str, waiters: &[&str]) -> Participants {
        let held = participant(dir, 0, holder);
        let waiters = waiters
            .iter()
            .enumerate()
            .map(|(i, w)| Participant {
                waits_for: vec![held.node.clone()],
                ..participant(dir, i as i32 + 1, w)
            })
            .collect();
        Participants {
            path: dir.to_owned(),
            holders: vec![held],
            waiters,
            foreign: 0,
            exists: true,
            last_break: None,
        }
    }

    #[test]
    fn deadlocks_among_listings_read() {
        let (a, b, c) = (
            lock("/l/a", "alice", &["bob"]),
            lock("/l/b", "bob", &["alice"]),
            lock("/l/c", "carol", &["dave"]),
        );
        let graph = WaitFor::new([&a, &b, &c]);
        assert_eq!(
            graph.deadlocked_locks(),
            BTreeSet::from(["/l/a".to_owned(), "/l/b".to_owned()])
        );
        let cycles = graph.cycles();
        assert_eq!(cycles.len(), 1);
        let around: Vec<(&str, bool)> = cycles[0]
            .iter()
            .map(|n| (n.owner.as_deref().unwrap(), n.holds))
            .collect();
        // alice holds /a and waits at /b behind bob, who waits at /a behind alice.
        assert_eq!(
            around,
            [
                ("alice", true),
                ("alice", false),
                ("bob", true),
                ("bob", false)
            ]
        );
        // Read again after bob gave up waiting at /a: no edge back, no deadlock.
        let a_later = lock("/l/a", "alice", &[]);
        let later = WaitFor::new([&a_later, &b, &c]);
        assert!(later.deadlocked_locks().is_empty());
        assert!(graph.common(&later).cycles().is_empty());
        assert_eq!(graph.common(&graph).deadlocked_locks().len(), 2);
    }
}
