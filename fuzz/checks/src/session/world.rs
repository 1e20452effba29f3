//! The world: the ZooKeeper server the `session` target's harness serves from.
//!
//! The server is lock-sim's [`ZkModel`], the project's one ZooKeeper model; this
//! module keeps only what the harness needs beside it: which session is ours, the
//! session of the peers' nodes, every path ever created, the firings not yet
//! delivered (the harness picks their delivery order), and, while our connection
//! is cut, the watches our client will set again when it reconnects.

use lock_core::{CreateMode, Op, Reply, Stat, ZkError};
use lock_sim::{Notification, WatchType, ZkModel, NO_SESSION};
use std::collections::{BTreeSet, VecDeque};

/// The nodes a fresh server has, which no step may pick (the old in-harness
/// model had none of them, so corpus bytes keep picking what they picked).
const RESERVED: [&str; 3] = ["/", "/zookeeper", "/zookeeper/quota"];

#[derive(Clone, Debug)]
pub(super) struct World {
    /// The server's tree (read it here; change it through the world's methods,
    /// which keep the counters and the undelivered firings).
    pub(super) zk: ZkModel,
    /// Where the sequence counter of a path created for the first time starts
    /// (the case's [`SeqStart`]: a directory that has been busy for a long time). A
    /// path created again (a reaped container) starts at 0, like any new node.
    seq_start: i32,
    /// Every node path ever created.
    pub(super) ever: BTreeSet<String>,
    /// Fired for our session, not yet delivered.
    pub(super) queue: VecDeque<Notification>,
    /// Our live session on the server, if any.
    pub(super) session: Option<i64>,
    /// The session the peers' nodes belong to (never ours).
    pub(super) peer_session: i64,
    /// The zxid of the last reply our client got from the server: what it sends
    /// with `SetWatches` when it reconnects.
    last_seen_zxid: i64,
    /// While our connection is cut: the data and child watches our client had.
    cut_watches: Option<(Vec<String>, Vec<String>)>,
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
    /// A fresh server with the peers' session open.
    pub(super) fn new(seq_start: i32) -> World {
        let mut zk = ZkModel::new();
        let peer_session = zk.create_session();
        World {
            ever: zk.paths().map(str::to_owned).collect(),
            zk,
            seq_start,
            queue: VecDeque::new(),
            session: None,
            peer_session,
            last_seen_zxid: 0,
            cut_watches: None,
        }
    }

    /// After every change of the model: new paths get their counters, and our
    /// session's firings join the undelivered ones.
    fn note_changes(&mut self) {
        let new: Vec<String> = self
            .zk
            .paths()
            .filter(|p| !self.ever.contains(*p))
            .map(str::to_owned)
            .collect();
        for path in new {
            self.zk
                .set_cversion(&path, self.seq_start)
                .expect("the path was just listed");
            self.ever.insert(path);
        }
        for n in self.zk.take_notifications() {
            if Some(n.session) == self.session {
                self.queue.push_back(n);
            }
        }
    }

    // ----- reads ----------------------------------------------------------------

    /// The child names of `dir` in name order (none if it does not exist).
    pub(super) fn children(&self, dir: &str) -> Vec<String> {
        self.zk.children(dir).unwrap_or_default()
    }

    /// Every node's path in path order, without the server's reserved ones.
    pub(super) fn paths(&self) -> Vec<String> {
        self.zk
            .paths()
            .filter(|p| !RESERVED.contains(p))
            .map(str::to_owned)
            .collect()
    }

    /// The paths of the participant nodes (names of a known scheme), in path order.
    pub(super) fn participants(&self) -> Vec<String> {
        let mut parts = self.paths();
        parts.retain(|p| lock_core::names::parse_name(name_of(p)).is_some());
        parts
    }

    // ----- requests -------------------------------------------------------------

    /// Applies `op` for `session`, as the server would. `stat_on_create`: whether
    /// the binding's create replies carry the stat.
    pub(super) fn apply(
        &mut self,
        session: i64,
        op: &Op,
        stat_on_create: bool,
    ) -> Result<Reply, ZkError> {
        let mut result = self.zk.apply(session, op);
        self.note_changes();
        if let Ok(Reply::Created { stat, .. }) = &mut result {
            if !stat_on_create {
                *stat = None;
            }
        }
        result
    }

    /// The error the server would answer `op` with now, changing nothing.
    pub(super) fn error_for(&self, session: i64, op: &Op) -> Option<ZkError> {
        self.zk.clone().apply(session, op).err()
    }

    /// Our client got a reply the server sent now.
    pub(super) fn replied(&mut self) {
        self.last_seen_zxid = self.zk.zxid();
    }

    // ----- what the harness does to the server directly ----------------------

    /// A create by `session` (the peers' or [`NO_SESSION`], an administrator).
    pub(super) fn create(
        &mut self,
        session: i64,
        path: &str,
        data: &[u8],
        mode: CreateMode,
    ) -> Result<String, ZkError> {
        let r = self.zk.create(session, path, data, mode).map(|(p, _)| p);
        self.note_changes();
        r
    }

    /// An administrator deletes `path`, any version.
    pub(super) fn delete(&mut self, path: &str) -> Result<(), ZkError> {
        let r = self.zk.delete(NO_SESSION, path, None);
        self.note_changes();
        r
    }

    /// An administrator writes `data` to `path`, any version.
    pub(super) fn set_data(&mut self, path: &str, data: &[u8]) -> Result<Stat, ZkError> {
        let r = self.zk.set_data(NO_SESSION, path, data, None);
        self.note_changes();
        r
    }

    /// One pass of the server's container reaper.
    pub(super) fn reap(&mut self) {
        self.zk.reap_containers();
        self.note_changes();
    }

    // ----- sessions and connections ------------------------------------------

    /// A new session of ours.
    pub(super) fn open_session(&mut self) -> i64 {
        let s = self.zk.create_session();
        self.session = Some(s);
        self.last_seen_zxid = self.zk.zxid();
        self.cut_watches = None;
        s
    }

    /// Our session, if any, ends on the server: its ephemeral nodes go, its
    /// watches die.
    pub(super) fn end_session(&mut self) {
        if let Some(session) = self.session.take() {
            self.cut_watches = None;
            self.zk.expire_session(session);
            self.note_changes();
        }
    }

    /// The data and child watches our client knows it has: taken before the
    /// requests whose replies a cut loses are applied (the client library registers
    /// a watch when the reply comes).
    pub(super) fn client_watches(&self) -> (Vec<String>, Vec<String>) {
        let watches = self.session.map(|s| self.zk.watches_of(s));
        let (child, data): (Vec<_>, Vec<_>) = watches
            .into_iter()
            .flatten()
            .partition(|(table, _)| *table == WatchType::Child);
        let paths = |w: Vec<(WatchType, String)>| w.into_iter().map(|(_, p)| p).collect();
        (paths(data), paths(child))
    }

    /// Our connection is cut: the server drops its watches with it (ZooKeeper's
    /// `DataTree.removeCnxn`); the client keeps `known` to set them again.
    pub(super) fn cut(&mut self, known: (Vec<String>, Vec<String>)) {
        let Some(s) = self.session else {
            return;
        };
        self.zk.remove_watches(s);
        if self.cut_watches.is_none() {
            self.cut_watches = Some(known);
        }
    }

    /// Our client reconnects to its live session and sets its watches again with
    /// the last zxid it saw (`SetWatches`: those whose node changed since fire now).
    pub(super) fn resume(&mut self) {
        let (Some(s), Some((data, child))) = (self.session, self.cut_watches.take()) else {
            return;
        };
        self.zk
            .set_watches(s, self.last_seen_zxid, &data, &[], &child);
        self.note_changes();
    }
}
