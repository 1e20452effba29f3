//! [`ZkModel`]'s watches: firings queued for delivery, a connection's watches
//! dropped and set again (`SetWatches`), and the trigger rules of the server's
//! `WatchManager` applied to a change.

use super::tree::ZkModel;
use super::watches::{Notification, WatchType};
use lock_core::WatchKind;
use std::collections::BTreeSet;

impl ZkModel {
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

    pub(super) fn trigger(
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
}
