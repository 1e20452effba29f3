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
use super::graph::{common, cycles, graph, Graph, Vertex};
use crate::ctx::Ctx;
use crate::event::LockEvent;
use crate::ids::{FencingToken, LockId};
use crate::names::parse_name;
use crate::oneshot::{OneShot, OneShotRun};
use crate::participants::CycleNode;
use crate::proto::{Reply, RequestId, ZkError};
use std::collections::BTreeSet;

pub(crate) struct Scan {
    pub(crate) run: OneShotRun,
    root: String,
    pass: Pass,
    listed: BTreeSet<String>,
    first: Option<Graph>,
}

impl Scan {
    pub(crate) fn new(id: LockId, root: String) -> Scan {
        Scan {
            run: OneShotRun::new(id),
            root,
            pass: Pass::default(),
            listed: BTreeSet::new(),
            first: None,
        }
    }

    fn start_pass(&mut self, cx: &mut Ctx) {
        self.pass = Pass::default();
        self.listed.clear();
        let root = self.root.clone();
        self.pass.want_dir(cx, self.run.id, &root);
    }

    pub(crate) fn on_reply(
        &mut self,
        cx: &mut Ctx,
        request: RequestId,
        result: Result<Reply, ZkError>,
    ) {
        if self.run.done || !self.pass.requests.contains_key(&request) {
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
            return self.trouble(cx, ZkError::unexpected_reply());
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
                    self.pass.want_node(cx, self.run.id, &path);
                } else if dir == self.root && crate::path::validate_lock_path(&path).is_ok() {
                    self.pass.want_dir(cx, self.run.id, &path);
                }
            }
        }
        if !self.pass.requests.is_empty() || self.run.retry_due {
            return;
        }
        let graph = self.graph();
        match self.first.take() {
            None => {
                self.first = Some(graph);
                self.start_pass(cx);
            }
            Some(first) => {
                let cycles = cycles(&common(&graph, &first))
                    .into_iter()
                    .map(|c| self.describe(&c))
                    .collect();
                self.run.done = true;
                cx.emit(self.run.id, LockEvent::Deadlocks { cycles });
            }
        }
    }

    /// The wait-for graph of this pass.
    fn graph(&self) -> Graph {
        let mut vertices = Vec::new();
        for (dir, places) in &self.pass.dirs {
            let Seen::Got(places) = places else { continue };
            let base = if dir == "/" { "" } else { dir.as_str() };
            for p in places {
                let path = format!("{base}/{}", p.name);
                let Some((data, _)) = self.pass.node(&path) else {
                    continue;
                };
                vertices.push(Vertex {
                    holds: p.holds,
                    owner: data.owner.clone(),
                    published: if p.holds {
                        data.waits.clone()
                    } else {
                        Vec::new()
                    },
                    hard: p.hard.iter().map(|b| format!("{base}/{b}")).collect(),
                    path,
                });
            }
        }
        graph(&vertices)
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
    fn run(&mut self) -> &mut OneShotRun {
        &mut self.run
    }

    fn restart(&mut self, cx: &mut Ctx) {
        self.first = None;
        self.start_pass(cx);
    }
}
