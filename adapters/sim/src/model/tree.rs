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
//! use lock_sim::ZkModel;
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

use crate::model::paths::{join, split, validate_path};
use crate::model::watches::{Notification, WatchTable, WatchType};
use lock_core::{CreateMode, MultiOp, MultiResult, Op, Reply, Stat, WatchKind, ZkError};
use std::collections::{BTreeMap, BTreeSet};

/// The pseudo-session of administrative operations (tests, a human with `zkCli`):
/// it leaves no watches and cannot create ephemeral nodes.
pub const NO_SESSION: i64 = 0;

/// The `ephemeralOwner` the server reports for container nodes (`Long.MIN_VALUE`).
pub const CONTAINER_OWNER: i64 = i64::MIN;

/// Session ids are minted from here up (the shape of a real server's ids).
const SESSION_BASE: i64 = 0x0100_0000_0000_0000;

#[derive(Clone, Debug)]
struct Znode {
    data: Vec<u8>,
    czxid: i64,
    mzxid: i64,
    pzxid: i64,
    version: i32,
    cversion: i32,
    ephemeral_owner: i64,
    mode: CreateMode,
    children: BTreeSet<String>,
}

impl Znode {
    fn new(data: Vec<u8>, zxid: i64, mode: CreateMode, owner: i64) -> Self {
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

    fn stat(&self) -> Stat {
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
        }
    }

    fn is_ephemeral(&self) -> bool {
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
    nodes: BTreeMap<String, Znode>,
    zxid: i64,
    /// Live sessions and their ephemeral nodes.
    sessions: BTreeMap<i64, BTreeSet<String>>,
    next_session: i64,
    watches: WatchTable,
    notifications: Vec<Notification>,
}

impl Default for ZkModel {
    fn default() -> Self {
        Self::new()
    }
}

/// The reserved nodes of a fresh server, which nobody may delete.
const SPECIAL: [&str; 3] = ["/", "/zookeeper", "/zookeeper/quota"];

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

    fn next_zxid(&mut self) -> i64 {
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

    fn check_session(&self, session: i64) -> Result<(), ZkError> {
        if session == NO_SESSION || self.sessions.contains_key(&session) {
            Ok(())
        } else {
            Err(ZkError::SessionExpired)
        }
    }

    // ----- watches --------------------------------------------------------------

    /// Removes and returns the watch firings queued since the last call, in the
    /// order the server would send them.
    pub fn take_notifications(&mut self) -> Vec<Notification> {
        std::mem::take(&mut self.notifications)
    }

    /// Whether firings are queued.
    pub fn has_notifications(&self) -> bool {
        !self.notifications.is_empty()
    }

    /// Drops every watch `session` left (its connection closed).
    pub fn remove_watches(&mut self, session: i64) {
        self.watches.remove_session(session);
    }

    /// Whether `session` has a watch of type `ty` on `path`.
    pub fn has_watch(&self, session: i64, ty: WatchType, path: &str) -> bool {
        self.watches.contains(ty, path, session)
    }

    /// Every watch `session` has, as (type, path), in order.
    pub fn watches_of(&self, session: i64) -> Vec<(WatchType, String)> {
        self.watches.of_session(session)
    }

    /// The number of registered watches of all sessions.
    pub fn watch_count(&self) -> usize {
        self.watches.len()
    }

    /// Re-registers a reconnecting client's watches (the `SetWatches` request), with
    /// the server's rules: given the last zxid the client saw, a data watch whose node
    /// is gone fires `NodeDeleted`, whose node changed since fires `NodeDataChanged`;
    /// an exists watch whose node now exists fires `NodeCreated`; a child watch fires
    /// `NodeDeleted` or `NodeChildrenChanged` likewise. The others are set again.
    pub fn set_watches(
        &mut self,
        session: i64,
        relative_zxid: i64,
        data: &[String],
        exist: &[String],
        child: &[String],
    ) {
        if !self.sessions.contains_key(&session) {
            return;
        }
        let zxid = self.zxid;
        let fire = |n: &mut Vec<Notification>, path: &str, kind| {
            n.push(Notification {
                session,
                path: path.to_owned(),
                kind,
                zxid,
            })
        };
        for path in data {
            match self.nodes.get(path) {
                None => fire(&mut self.notifications, path, WatchKind::NodeDeleted),
                Some(n) if n.mzxid > relative_zxid => {
                    fire(&mut self.notifications, path, WatchKind::NodeDataChanged)
                }
                Some(_) => self.watches.add(WatchType::Data, path, session),
            }
        }
        for path in exist {
            if self.nodes.contains_key(path) {
                fire(&mut self.notifications, path, WatchKind::NodeCreated);
            } else {
                self.watches.add(WatchType::Data, path, session);
            }
        }
        for path in child {
            match self.nodes.get(path) {
                None => fire(&mut self.notifications, path, WatchKind::NodeDeleted),
                Some(n) if n.pzxid > relative_zxid => fire(
                    &mut self.notifications,
                    path,
                    WatchKind::NodeChildrenChanged,
                ),
                Some(_) => self.watches.add(WatchType::Child, path, session),
            }
        }
    }

    fn trigger(
        &mut self,
        ty: WatchType,
        path: &str,
        kind: WatchKind,
        except: &BTreeSet<i64>,
    ) -> BTreeSet<i64> {
        let fired = self.watches.take(ty, path, except);
        for &session in &fired {
            self.notifications.push(Notification {
                session,
                path: path.to_owned(),
                kind,
                zxid: self.zxid,
            });
        }
        fired
    }

    // ----- reads ----------------------------------------------------------------

    /// `getData(path, watch)`: the data and stat; with `watch`, a data watch (only
    /// if the node exists: a missing node answers `NoNode` and leaves no watch).
    pub fn get_data(
        &mut self,
        session: i64,
        path: &str,
        watch: bool,
    ) -> Result<(Vec<u8>, Stat), ZkError> {
        self.check_session(session)?;
        validate_path(path, false).map_err(|_| ZkError::BadArguments)?;
        let node = self.nodes.get(path).ok_or(ZkError::NoNode)?;
        let out = (node.data.clone(), node.stat());
        if watch && session != NO_SESSION {
            self.watches.add(WatchType::Data, path, session);
        }
        Ok(out)
    }

    /// `removeWatches(path, type)`: drops `session`'s watch of that type on `path`; whether
    /// there was one (the server answers `NoWatcher` when not; bindings report
    /// [`Reply::WatchRemoved`] either way, and so does [`ZkModel::apply`]).
    pub fn remove_watch(
        &mut self,
        session: i64,
        path: &str,
        watch: lock_core::WatchType,
    ) -> Result<bool, ZkError> {
        self.check_session(session)?;
        validate_path(path, false).map_err(|_| ZkError::BadArguments)?;
        let table = match watch {
            lock_core::WatchType::Children => WatchType::Child,
            _ => WatchType::Data,
        };
        Ok(self.watches.remove(table, path, session))
    }

    /// `exists(path, watch)`: the stat or `None`; with `watch`, a data watch, also on
    /// a missing node (it then fires `NodeCreated`).
    pub fn exists(
        &mut self,
        session: i64,
        path: &str,
        watch: bool,
    ) -> Result<Option<Stat>, ZkError> {
        self.check_session(session)?;
        validate_path(path, false).map_err(|_| ZkError::BadArguments)?;
        if watch && session != NO_SESSION {
            self.watches.add(WatchType::Data, path, session);
        }
        Ok(self.nodes.get(path).map(Znode::stat))
    }

    /// `getChildren(path, watch)`: child names in name order; with `watch`, a child
    /// watch (only if the node exists).
    pub fn get_children(
        &mut self,
        session: i64,
        path: &str,
        watch: bool,
    ) -> Result<Vec<String>, ZkError> {
        self.check_session(session)?;
        validate_path(path, false).map_err(|_| ZkError::BadArguments)?;
        let node = self.nodes.get(path).ok_or(ZkError::NoNode)?;
        let out = node.children.iter().cloned().collect();
        if watch && session != NO_SESSION {
            self.watches.add(WatchType::Child, path, session);
        }
        Ok(out)
    }

    // ----- writes ---------------------------------------------------------------

    /// `create(path, data, mode)` by `session`. Returns the actual path (with the
    /// `%010d` suffix of the parent's cversion for sequential modes) and the stat.
    pub fn create(
        &mut self,
        session: i64,
        path: &str,
        data: &[u8],
        mode: CreateMode,
    ) -> Result<(String, Stat), ZkError> {
        self.check_session(session)?;
        let zxid = self.next_zxid();
        let actual = self.do_create(session, path, data, mode, zxid)?;
        let stat = self.nodes[&actual].stat();
        Ok((actual, stat))
    }

    /// `delete(path, version)` (`None`: any version).
    pub fn delete(
        &mut self,
        session: i64,
        path: &str,
        version: Option<i32>,
    ) -> Result<(), ZkError> {
        self.check_session(session)?;
        let zxid = self.next_zxid();
        self.do_delete(path, version, zxid)
    }

    /// `setData(path, data, version)` (`None`: any version). Returns the new stat.
    pub fn set_data(
        &mut self,
        session: i64,
        path: &str,
        data: &[u8],
        version: Option<i32>,
    ) -> Result<Stat, ZkError> {
        self.check_session(session)?;
        let zxid = self.next_zxid();
        self.do_set(path, data, version, zxid)
    }

    /// An atomic `multi`: every op applies (one transaction, one zxid) or none does;
    /// a failure is [`ZkError::MultiFailed`] with the first failing op's index and error.
    pub fn multi(&mut self, session: i64, ops: &[MultiOp]) -> Result<Vec<MultiResult>, ZkError> {
        self.check_session(session)?;
        let zxid = self.next_zxid();
        let saved_nodes = self.nodes.clone();
        let saved_sessions = self.sessions.clone();
        let saved_watches = self.watches.clone();
        let fired_before = self.notifications.len();
        let mut results = Vec::with_capacity(ops.len());
        for (index, op) in ops.iter().enumerate() {
            let r = match op {
                MultiOp::Create { path, data, mode } => self
                    .do_create(session, path, data, *mode, zxid)
                    .map(|path| MultiResult::Created { path }),
                MultiOp::Delete { path, version } => self
                    .do_delete(path, *version, zxid)
                    .map(|()| MultiResult::Deleted),
                MultiOp::SetData {
                    path,
                    data,
                    version,
                } => self
                    .do_set(path, data, *version, zxid)
                    .map(|stat| MultiResult::SetData { stat }),
                MultiOp::Check { path, version } => {
                    self.do_check(path, *version).map(|()| MultiResult::Checked)
                }
                _ => Err(ZkError::Other("unsupported multi op".to_owned())),
            };
            match r {
                Ok(r) => results.push(r),
                Err(e) => {
                    self.nodes = saved_nodes;
                    self.sessions = saved_sessions;
                    self.watches = saved_watches;
                    self.notifications.truncate(fired_before);
                    return Err(ZkError::MultiFailed {
                        index: u32::try_from(index).unwrap_or(u32::MAX),
                        error: Box::new(e),
                    });
                }
            }
        }
        Ok(results)
    }

    /// Applies one request as the server would for `session`.
    pub fn apply(&mut self, session: i64, op: &Op) -> Result<Reply, ZkError> {
        match op {
            Op::Create { path, data, mode } => {
                self.create(session, path, data, *mode)
                    .map(|(path, stat)| Reply::Created {
                        path,
                        stat: Some(stat),
                    })
            }
            Op::GetChildren { path } => {
                self.get_children(session, path, false).map(Reply::Children)
            }
            Op::WatchChildren { path } => {
                self.get_children(session, path, true).map(Reply::Children)
            }
            Op::GetData { path, watch } => self
                .get_data(session, path, *watch)
                .map(|(data, stat)| Reply::Data { data, stat }),
            Op::SetData {
                path,
                data,
                version,
            } => self
                .set_data(session, path, data, *version)
                .map(Reply::Stat),
            Op::Delete { path, version } => self
                .delete(session, path, *version)
                .map(|()| Reply::Deleted),
            Op::Multi(ops) => self.multi(session, ops).map(Reply::Multi),
            Op::RemoveWatch { path, watch } => self
                .remove_watch(session, path, *watch)
                .map(|_| Reply::WatchRemoved),
            // One server is its own leader: a sync has nothing to wait for.
            Op::Sync { .. } => Ok(Reply::Synced),
            _ => Err(ZkError::Other("unsupported op".to_owned())),
        }
    }

    fn do_create(
        &mut self,
        session: i64,
        path: &str,
        data: &[u8],
        mode: CreateMode,
        zxid: i64,
    ) -> Result<String, ZkError> {
        let sequential = matches!(mode, CreateMode::EphemeralSequential);
        validate_path(path, sequential).map_err(|_| ZkError::BadArguments)?;
        if path == "/" {
            return Err(ZkError::NodeExists);
        }
        let ephemeral = matches!(
            mode,
            CreateMode::Ephemeral | CreateMode::EphemeralSequential
        );
        let owner = match mode {
            CreateMode::Ephemeral | CreateMode::EphemeralSequential if session == NO_SESSION => {
                return Err(ZkError::BadArguments)
            }
            CreateMode::Ephemeral | CreateMode::EphemeralSequential => session,
            CreateMode::Container => CONTAINER_OWNER,
            CreateMode::Persistent => 0,
            _ => return Err(ZkError::BadArguments),
        };
        let (parent_path, _) = split(path);
        let parent = self.nodes.get(parent_path).ok_or(ZkError::NoNode)?;
        let actual = if sequential {
            format!("{path}{:010}", parent.cversion)
        } else {
            path.to_owned()
        };
        if self.nodes.contains_key(&actual) {
            return Err(ZkError::NodeExists);
        }
        if parent.is_ephemeral() {
            return Err(ZkError::NoChildrenForEphemerals);
        }
        let (_, name) = split(&actual);
        let name = name.to_owned();
        let parent = self.nodes.get_mut(parent_path).expect("checked above");
        parent.cversion = parent.cversion.wrapping_add(1);
        parent.pzxid = zxid;
        parent.children.insert(name);
        self.nodes
            .insert(actual.clone(), Znode::new(data.to_vec(), zxid, mode, owner));
        if ephemeral {
            self.sessions
                .entry(session)
                .or_default()
                .insert(actual.clone());
        }
        let none = BTreeSet::new();
        self.trigger(WatchType::Data, &actual, WatchKind::NodeCreated, &none);
        self.trigger(
            WatchType::Child,
            parent_path,
            WatchKind::NodeChildrenChanged,
            &none,
        );
        Ok(actual)
    }

    fn do_delete(&mut self, path: &str, version: Option<i32>, zxid: i64) -> Result<(), ZkError> {
        validate_path(path, false).map_err(|_| ZkError::BadArguments)?;
        if SPECIAL.contains(&path) {
            return Err(ZkError::BadArguments);
        }
        let node = self.nodes.get(path).ok_or(ZkError::NoNode)?;
        if version.is_some_and(|v| v != node.version) {
            return Err(ZkError::BadVersion);
        }
        if !node.children.is_empty() {
            return Err(ZkError::NotEmpty);
        }
        self.remove_node(path, zxid);
        Ok(())
    }

    /// Removes an existing childless node and fires the watches.
    fn remove_node(&mut self, path: &str, zxid: i64) {
        let node = self.nodes.remove(path).expect("caller checked");
        if node.is_ephemeral() {
            if let Some(set) = self.sessions.get_mut(&node.ephemeral_owner) {
                set.remove(path);
            }
        }
        let (parent_path, name) = split(path);
        if let Some(parent) = self.nodes.get_mut(parent_path) {
            parent.children.remove(name);
            // Deleting a child moves the parent's pzxid, not its cversion.
            parent.pzxid = zxid;
        }
        let none = BTreeSet::new();
        let fired = self.trigger(WatchType::Data, path, WatchKind::NodeDeleted, &none);
        self.trigger(WatchType::Child, path, WatchKind::NodeDeleted, &fired);
        let parent_path = parent_path.to_owned();
        self.trigger(
            WatchType::Child,
            &parent_path,
            WatchKind::NodeChildrenChanged,
            &none,
        );
    }

    fn do_set(
        &mut self,
        path: &str,
        data: &[u8],
        version: Option<i32>,
        zxid: i64,
    ) -> Result<Stat, ZkError> {
        validate_path(path, false).map_err(|_| ZkError::BadArguments)?;
        let node = self.nodes.get_mut(path).ok_or(ZkError::NoNode)?;
        if version.is_some_and(|v| v != node.version) {
            return Err(ZkError::BadVersion);
        }
        node.data = data.to_vec();
        node.version = node.version.wrapping_add(1);
        node.mzxid = zxid;
        let stat = node.stat();
        self.trigger(
            WatchType::Data,
            path,
            WatchKind::NodeDataChanged,
            &BTreeSet::new(),
        );
        Ok(stat)
    }

    fn do_check(&self, path: &str, version: Option<i32>) -> Result<(), ZkError> {
        validate_path(path, false).map_err(|_| ZkError::BadArguments)?;
        let node = self.nodes.get(path).ok_or(ZkError::NoNode)?;
        if version.is_some_and(|v| v != node.version) {
            return Err(ZkError::BadVersion);
        }
        Ok(())
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
