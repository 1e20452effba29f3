//! [`ZkModel`]'s writes: `create`, `delete`, `setData`, `multi` and [`ZkModel::apply`]
//! of any request, each a transaction with its own zxid (a failed one too, as on
//! the server's `PrepRequestProcessor`).

use super::paths::{split, validate_path};
use super::tree::{ZkModel, Znode, CONTAINER_OWNER, NO_SESSION, SPECIAL};
use super::watches::WatchType;
use lock_core::{CreateMode, MultiOp, MultiResult, Op, Reply, Stat, WatchKind, ZkError};
use std::collections::BTreeSet;

impl ZkModel {
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
        // A failed multi still consumes its zxid: kept with everything else.
        let saved = self.clone();
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
                _ => Err(ZkError::Unimplemented),
            };
            match r {
                Ok(r) => results.push(r),
                Err(e) => {
                    *self = saved;
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
            _ => Err(ZkError::Unimplemented),
        }
    }

    pub(super) fn do_create(
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

    pub(super) fn do_delete(
        &mut self,
        path: &str,
        version: Option<i32>,
        zxid: i64,
    ) -> Result<(), ZkError> {
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
    pub(super) fn remove_node(&mut self, path: &str, zxid: i64) {
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

    pub(super) fn do_set(
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

    pub(super) fn do_check(&self, path: &str, version: Option<i32>) -> Result<(), ZkError> {
        validate_path(path, false).map_err(|_| ZkError::BadArguments)?;
        let node = self.nodes.get(path).ok_or(ZkError::NoNode)?;
        if version.is_some_and(|v| v != node.version) {
            return Err(ZkError::BadVersion);
        }
        Ok(())
    }
}
