//! The ZooKeeper data model: a tree of znodes, sessions and watches, without time.
//!
//! [`ZkModel`] is a pure data structure that behaves like a standalone ZooKeeper
//! server's `DataTree` plus its request checks: every write is a transaction with its
//! own zxid (also a write that fails, as on the server), reads never change the zxid,
//! and watch firings are queued as [`Notification`]s for whoever delivers them
//! ([`ZkModel::take_notifications`]). The scheduler ([`Sim`](crate::Sim)) adds
//! time, connections and faults on top.
//!
//! ```
//! use lock_core::{CreateMode, WatchKind};
//! use zklock::sim::ZkModel;
//!
//! let mut zk = ZkModel::new();
//! let s = zk.create_session();
//! zk.create(s, "/locks", b"", CreateMode::Container).unwrap();
//! let (path, _) = zk.create(s, "/locks/n-", b"", CreateMode::EphemeralSequential).unwrap();
//! assert_eq!(path, "/locks/n-0000000000");
//! zk.get_data(s, &path, true).unwrap(); // leave a watch
//! zk.expire_session(s);                 // ephemerals go, watches of others fire
//! assert_eq!(zk.children("/locks"), Some(vec![]));
//! // The expired session's own watch died with it: nothing to deliver.
//! assert!(zk.take_notifications().iter().all(|n| n.kind != WatchKind::NodeDeleted));
//! zk.reap_containers();                 // an emptied container is reaped
//! assert!(zk.stat("/locks").is_none());
//! ```

use crate::model::paths::join;
use crate::model::watches::{Notification, WatchTable};
use lock_core::{CreateMode, Stat, ZkError};
use std::collections::{BTreeMap, BTreeSet};

/// The pseudo-session of administrative operations (tests, a human with `zkCli`):
/// it leaves no watches and cannot create ephemeral nodes.
pub const NO_SESSION: i64 = 0;

/// The `ephemeralOwner` the server reports for container nodes (`Long.MIN_VALUE`).
pub const CONTAINER_OWNER: i64 = i64::MIN;

/// Session ids are minted from here up (the shape of a real server's ids).
pub(super) const SESSION_BASE: i64 = 0x0100_0000_0000_0000;

#[derive(Clone, Debug)]
pub(super) struct Znode {
    pub(super) data: Vec<u8>,
    pub(super) czxid: i64,
    pub(super) mzxid: i64,
    pub(super) pzxid: i64,
    pub(super) version: i32,
    pub(super) cversion: i32,
    pub(super) ephemeral_owner: i64,
    pub(super) mode: CreateMode,
    pub(super) children: BTreeSet<String>,
}

impl Znode {
    pub(super) fn new(data: Vec<u8>, zxid: i64, mode: CreateMode, owner: i64) -> Self {
        Znode {
            data,
            czxid: zxid,
            mzxid: zxid,
            pzxid: zxid,
            version: 0,
            cversion: 0,
            ephemeral_owner: owner,
            mode,
            children: BTreeSet::new(),
        }
    }

    pub(super) fn stat(&self) -> Stat {
        Stat {
            czxid: self.czxid,
            mzxid: self.mzxid,
            version: self.version,
            cversion: self.cversion,
            ephemeral_owner: self.ephemeral_owner,
            num_children: i32::try_from(self.children.len()).unwrap_or(i32::MAX),
            data_length: i32::try_from(self.data.len()).unwrap_or(i32::MAX),
            // The model keeps no clock: creation order stands in for time.
            ctime: self.czxid,
            mtime: self.mzxid,
        }
    }

    pub(super) fn is_ephemeral(&self) -> bool {
        matches!(
            self.mode,
            CreateMode::Ephemeral | CreateMode::EphemeralSequential
        )
    }
}

/// A read-only view of one znode, for inspection.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct NodeInfo {
    /// Full path.
    pub path: String,
    /// Data.
    pub data: Vec<u8>,
    /// Stat, as the server reports it.
    pub stat: Stat,
    /// zxid of the last change of the children (created or deleted).
    pub pzxid: i64,
    /// How the node was created.
    pub mode: CreateMode,
}

/// The in-memory ZooKeeper server state. See the [crate docs](crate) and [`ZkModel::new`].
#[derive(Clone, Debug)]
pub struct ZkModel {
    pub(super) nodes: BTreeMap<String, Znode>,
    pub(super) zxid: i64,
    /// Live sessions and their ephemeral nodes.
    pub(super) sessions: BTreeMap<i64, BTreeSet<String>>,
    pub(super) next_session: i64,
    pub(super) watches: WatchTable,
    pub(super) notifications: Vec<Notification>,
}

impl Default for ZkModel {
    fn default() -> Self {
        Self::new()
    }
}

/// The reserved nodes of a fresh server, which nobody may delete.
pub(super) const SPECIAL: [&str; 3] = ["/", "/zookeeper", "/zookeeper/quota"];

impl ZkModel {
    /// A fresh server: `/`, `/zookeeper` and `/zookeeper/quota`, zxid 0.
    pub fn new() -> Self {
        let mut nodes = BTreeMap::new();
        let mut root = Znode::new(Vec::new(), 0, CreateMode::Persistent, 0);
        root.children.insert("zookeeper".to_owned());
        let mut zk = Znode::new(Vec::new(), 0, CreateMode::Persistent, 0);
        zk.children.insert("quota".to_owned());
        nodes.insert("/".to_owned(), root);
        nodes.insert("/zookeeper".to_owned(), zk);
        nodes.insert(
            "/zookeeper/quota".to_owned(),
            Znode::new(Vec::new(), 0, CreateMode::Persistent, 0),
        );
        ZkModel {
            nodes,
            zxid: 0,
            sessions: BTreeMap::new(),
            next_session: SESSION_BASE,
            watches: WatchTable::default(),
            notifications: Vec::new(),
        }
    }

    /// The zxid of the last transaction.
    pub fn zxid(&self) -> i64 {
        self.zxid
    }

    pub(super) fn next_zxid(&mut self) -> i64 {
        self.zxid += 1;
        self.zxid
    }

    // ----- sessions -------------------------------------------------------------

    /// Opens a new session and returns its id.
    pub fn create_session(&mut self) -> i64 {
        self.next_session += 1;
        let id = self.next_session;
        self.sessions.insert(id, BTreeSet::new());
        // Creating a session is a transaction on a real server.
        self.next_zxid();
        id
    }

    /// Whether `session` is open.
    pub fn session_is_alive(&self, session: i64) -> bool {
        self.sessions.contains_key(&session)
    }

    /// Every open session, in id order.
    pub fn sessions(&self) -> Vec<i64> {
        self.sessions.keys().copied().collect()
    }

    /// The ephemeral nodes `session` owns, in path order.
    pub fn ephemerals(&self, session: i64) -> Vec<String> {
        self.sessions
            .get(&session)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Expires `session` as the server's session tracker does: its watches go, its
    /// ephemeral nodes are deleted (firing other sessions' watches), in one
    /// transaction. Returns the deleted paths; empty if the session was not open.
    pub fn expire_session(&mut self, session: i64) -> Vec<String> {
        let Some(ephemerals) = self.sessions.remove(&session) else {
            return Vec::new();
        };
        self.watches.remove_session(session);
        let zxid = self.next_zxid();
        let mut deleted = Vec::new();
        for path in ephemerals {
            if self.nodes.contains_key(&path) {
                self.remove_node(&path, zxid);
                deleted.push(path);
            }
        }
        deleted
    }

    /// Closes `session` (the client said goodbye): same effect as expiry.
    pub fn close_session(&mut self, session: i64) -> Vec<String> {
        self.expire_session(session)
    }

    pub(super) fn check_session(&self, session: i64) -> Result<(), ZkError> {
        if session == NO_SESSION || self.sessions.contains_key(&session) {
            Ok(())
        } else {
            Err(ZkError::SessionExpired)
        }
    }

    // ----- containers -----------------------------------------------------------

    /// One pass of the server's `ContainerManager`: deletes every container node that
    /// has had children (cversion > 0) and has none now, each in its own transaction.
    /// A parent container emptied by this pass is reaped by the next one, as on the
    /// server. Returns the reaped paths.
    pub fn reap_containers(&mut self) -> Vec<String> {
        let candidates: Vec<String> = self
            .nodes
            .iter()
            .filter(|(_, n)| {
                matches!(n.mode, CreateMode::Container) && n.cversion > 0 && n.children.is_empty()
            })
            .map(|(p, _)| p.clone())
            .collect();
        for path in &candidates {
            let zxid = self.next_zxid();
            self.remove_node(path, zxid);
        }
        candidates
    }

    // ----- inspection -----------------------------------------------------------

    /// Sets a node's child version, which is also the next sequence number the server
    /// hands out under it (for wraparound tests: set `i32::MAX`).
    pub fn set_cversion(&mut self, path: &str, cversion: i32) -> Result<(), ZkError> {
        let node = self.nodes.get_mut(path).ok_or(ZkError::NoNode)?;
        node.cversion = cversion;
        Ok(())
    }

    /// A node's stat, without leaving a watch.
    pub fn stat(&self, path: &str) -> Option<Stat> {
        self.nodes.get(path).map(Znode::stat)
    }

    /// A node's data and metadata, without leaving a watch.
    pub fn get(&self, path: &str) -> Option<NodeInfo> {
        self.nodes.get(path).map(|n| NodeInfo {
            path: path.to_owned(),
            data: n.data.clone(),
            stat: n.stat(),
            pzxid: n.pzxid,
            mode: n.mode,
        })
    }

    /// A node's child names in name order, without leaving a watch.
    pub fn children(&self, path: &str) -> Option<Vec<String>> {
        self.nodes
            .get(path)
            .map(|n| n.children.iter().cloned().collect())
    }

    /// Whether a node exists.
    pub fn contains(&self, path: &str) -> bool {
        self.nodes.contains_key(path)
    }

    /// Every node's path, in path order.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.nodes.keys().map(String::as_str)
    }

    /// The number of nodes, the reserved ones included.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// A readable dump of the tree under `path` (one node per line, indented).
    pub fn dump(&self, path: &str) -> String {
        let mut out = String::new();
        self.dump_into(path, 0, &mut out);
        out
    }

    fn dump_into(&self, path: &str, depth: usize, out: &mut String) {
        let Some(n) = self.nodes.get(path) else {
            return;
        };
        let owner = match n.ephemeral_owner {
            0 => String::new(),
            CONTAINER_OWNER => " container".to_owned(),
            s => format!(" owner={s:#x}"),
        };
        out.push_str(&format!(
            "{:indent$}{path} czxid={} cversion={}{owner}\n",
            "",
            n.czxid,
            n.cversion,
            indent = depth * 2
        ));
        for c in &n.children {
            self.dump_into(&join(path, c), depth + 1, out);
        }
    }
}
