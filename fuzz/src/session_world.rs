//! The world: a small, honest ZooKeeper the `session` target's harness serves from.
//!
//! A child module of `session.rs`, in a file of its own so that neither grows
//! past reading size.

#![allow(dead_code)]

use super::*;

#[derive(Clone, Debug)]
pub(super) struct Node {
    pub(super) data: Vec<u8>,
    pub(super) czxid: i64,
    pub(super) mzxid: i64,
    pub(super) version: i32,
    pub(super) owner: i64,
    pub(super) container: bool,
    pub(super) had_children: bool,
}

#[derive(Clone, Debug, Default)]
pub(super) struct World {
    pub(super) nodes: BTreeMap<String, Node>,
    /// Next sequence number per directory (ZooKeeper's parent cversion).
    pub(super) counters: BTreeMap<String, i32>,
    pub(super) seq_start: i32,
    pub(super) zxid: i64,
    /// One-shot data watches of our current session.
    pub(super) watches: BTreeSet<String>,
    /// One-shot child watches of our current session.
    pub(super) child_watches: BTreeSet<String>,
    /// Fired, not yet delivered.
    pub(super) queue: VecDeque<(String, WatchKind)>,
    /// Our live session on the server, if any.
    pub(super) session: Option<i64>,
    /// Every node path ever created.
    pub(super) ever: BTreeSet<String>,
}

pub(super) fn parent_of(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) => "/",
        Some(i) => &path[..i],
        None => "",
    }
}

pub(super) fn name_of(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or("")
}

impl World {
    pub(super) fn children(&self, dir: &str) -> Vec<String> {
        let prefix = if dir == "/" {
            "/".to_owned()
        } else {
            format!("{dir}/")
        };
        self.nodes
            .range(prefix.clone()..)
            .take_while(|(p, _)| p.starts_with(&prefix))
            .filter(|(p, _)| !p[prefix.len()..].contains('/'))
            .map(|(p, _)| p[prefix.len()..].to_owned())
            .collect()
    }

    pub(super) fn exists(&self, path: &str) -> bool {
        path == "/" || self.nodes.contains_key(path)
    }

    pub(super) fn stat(&self, path: &str) -> Stat {
        let n = &self.nodes[path];
        Stat {
            czxid: n.czxid,
            mzxid: n.mzxid,
            version: n.version,
            cversion: 0,
            ephemeral_owner: if n.container { i64::MIN } else { n.owner },
            num_children: self.children(path).len() as i32,
            data_length: n.data.len() as i32,
            ctime: 0,
        }
    }

    pub(super) fn bump(&mut self, dir: &str) -> i32 {
        let start = self.seq_start;
        let c = self.counters.entry(dir.to_owned()).or_insert(start);
        let seq = *c;
        *c = c.wrapping_add(1);
        seq
    }

    pub(super) fn fire(&mut self, path: &str, kind: WatchKind) {
        if self.watches.remove(path) {
            self.queue.push_back((path.to_owned(), kind));
        }
    }

    pub(super) fn fire_children(&mut self, path: &str, kind: WatchKind) {
        if self.child_watches.remove(path) {
            self.queue.push_back((path.to_owned(), kind));
        }
    }

    pub(super) fn create(
        &mut self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
        owner: i64,
    ) -> Result<(String, Stat), ZkError> {
        let parent = parent_of(path).to_owned();
        if parent.is_empty() || !self.exists(&parent) {
            return Err(ZkError::NoNode);
        }
        if let Some(p) = self.nodes.get(&parent) {
            if p.owner != 0 && !p.container {
                return Err(ZkError::NoChildrenForEphemerals);
            }
        }
        let sequential = matches!(mode, CreateMode::EphemeralSequential);
        let ephemeral = matches!(
            mode,
            CreateMode::Ephemeral | CreateMode::EphemeralSequential
        );
        if ephemeral && owner == 0 {
            return Err(ZkError::BadArguments);
        }
        let full = if sequential {
            // The counter moves even when the create fails below (as the server's
            // cversion does not, but it cannot fail below for a fresh suffix).
            let seq = self.bump(&parent);
            format!("{path}{}", format_sequence(seq))
        } else {
            path.to_owned()
        };
        if self.exists(&full) {
            return Err(ZkError::NodeExists);
        }
        if !sequential {
            self.bump(&parent);
        }
        self.zxid += 1;
        self.ever.insert(full.clone());
        self.nodes.insert(
            full.clone(),
            Node {
                data: data.to_vec(),
                czxid: self.zxid,
                mzxid: self.zxid,
                version: 0,
                owner: if ephemeral { owner } else { 0 },
                container: matches!(mode, CreateMode::Container),
                had_children: false,
            },
        );
        if let Some(p) = self.nodes.get_mut(&parent) {
            p.had_children = true;
        }
        self.fire_children(&parent, WatchKind::NodeChildrenChanged);
        let stat = self.stat(&full);
        Ok((full, stat))
    }

    pub(super) fn delete(&mut self, path: &str, version: Option<i32>) -> Result<(), ZkError> {
        let Some(n) = self.nodes.get(path) else {
            return Err(ZkError::NoNode);
        };
        if version.is_some_and(|v| v != n.version) {
            return Err(ZkError::BadVersion);
        }
        if !self.children(path).is_empty() {
            return Err(ZkError::NotEmpty);
        }
        self.nodes.remove(path);
        self.zxid += 1;
        let parent = parent_of(path).to_owned();
        self.bump(&parent);
        self.fire(path, WatchKind::NodeDeleted);
        self.fire_children(path, WatchKind::NodeDeleted);
        self.fire_children(&parent, WatchKind::NodeChildrenChanged);
        Ok(())
    }

    pub(super) fn set_data(
        &mut self,
        path: &str,
        data: &[u8],
        version: Option<i32>,
    ) -> Result<Stat, ZkError> {
        let Some(n) = self.nodes.get_mut(path) else {
            return Err(ZkError::NoNode);
        };
        if version.is_some_and(|v| v != n.version) {
            return Err(ZkError::BadVersion);
        }
        self.zxid += 1;
        n.data = data.to_vec();
        n.version = n.version.wrapping_add(1);
        n.mzxid = self.zxid;
        self.fire(path, WatchKind::NodeDataChanged);
        Ok(self.stat(path))
    }

    /// Applies `op` for `session`, as the server would.
    pub(super) fn apply(
        &mut self,
        session: i64,
        op: &Op,
        stat_on_create: bool,
    ) -> Result<Reply, ZkError> {
        match op {
            Op::Create { path, data, mode } => {
                let (path, stat) = self.create(path, data, *mode, session)?;
                Ok(Reply::Created {
                    path,
                    stat: stat_on_create.then_some(stat),
                })
            }
            Op::GetChildren { path } => {
                if !self.exists(path) {
                    return Err(ZkError::NoNode);
                }
                Ok(Reply::Children(self.children(path)))
            }
            Op::WatchChildren { path } => {
                if !self.exists(path) {
                    return Err(ZkError::NoNode);
                }
                self.child_watches.insert(path.clone());
                Ok(Reply::Children(self.children(path)))
            }
            Op::GetData { path, watch } => {
                if !self.nodes.contains_key(path) {
                    return Err(ZkError::NoNode);
                }
                if *watch {
                    self.watches.insert(path.clone());
                }
                Ok(Reply::Data {
                    data: self.nodes[path].data.clone(),
                    stat: self.stat(path),
                })
            }
            Op::SetData {
                path,
                data,
                version,
            } => self.set_data(path, data, *version).map(Reply::Stat),
            Op::Delete { path, version } => self.delete(path, *version).map(|()| Reply::Deleted),
            Op::RemoveWatch { path, watch } => {
                match watch {
                    lock_core::WatchType::Children => self.child_watches.remove(path),
                    _ => self.watches.remove(path),
                };
                Ok(Reply::WatchRemoved)
            }
            Op::Multi(ops) => {
                let saved = self.clone();
                let mut results = Vec::new();
                for (index, op) in ops.iter().enumerate() {
                    let r = match op {
                        MultiOp::Create { path, data, mode } => self
                            .create(path, data, *mode, session)
                            .map(|(path, _)| MultiResult::Created { path }),
                        MultiOp::Delete { path, version } => {
                            self.delete(path, *version).map(|()| MultiResult::Deleted)
                        }
                        MultiOp::SetData {
                            path,
                            data,
                            version,
                        } => self
                            .set_data(path, data, *version)
                            .map(|stat| MultiResult::SetData { stat }),
                        MultiOp::Check { path, version } => match self.nodes.get(path) {
                            None => Err(ZkError::NoNode),
                            Some(n) if version.is_some_and(|v| v != n.version) => {
                                Err(ZkError::BadVersion)
                            }
                            Some(_) => Ok(MultiResult::Checked),
                        },
                        _ => Err(ZkError::BadArguments),
                    };
                    match r {
                        Ok(r) => results.push(r),
                        Err(e) => {
                            *self = saved;
                            return Err(ZkError::MultiFailed {
                                index: index as u32,
                                error: Box::new(e),
                            });
                        }
                    }
                }
                Ok(Reply::Multi(results))
            }
            _ => Err(ZkError::BadArguments),
        }
    }

    /// The session ends on the server: its ephemeral nodes go, its watches die.
    pub(super) fn end_session(&mut self, session: i64) {
        if self.session == Some(session) {
            self.session = None;
            self.watches.clear();
            self.child_watches.clear();
        }
        let doomed: Vec<String> = self
            .nodes
            .iter()
            .filter(|(_, n)| n.owner == session && !n.container)
            .map(|(p, _)| p.clone())
            .collect();
        for p in doomed {
            let _ = self.delete(&p, None);
        }
    }

    pub(super) fn reap(&mut self) {
        loop {
            let doomed: Vec<String> = self
                .nodes
                .iter()
                .filter(|(p, n)| n.container && n.had_children && self.children(p).is_empty())
                .map(|(p, _)| p.clone())
                .collect();
            if doomed.is_empty() {
                return;
            }
            for p in doomed {
                let _ = self.delete(&p, None);
                // A re-created container restarts its counter at 0.
                self.counters.insert(p, 0);
            }
        }
    }

    pub(super) fn ours(&self, session: i64) -> Vec<String> {
        self.nodes
            .iter()
            .filter(|(_, n)| n.owner == session && !n.container)
            .map(|(p, _)| p.clone())
            .collect()
    }
}
