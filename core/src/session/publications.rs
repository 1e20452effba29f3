//! Deadlock detection across the session's tasks: after every call, each held
//! node of an owner publishes where that owner waits (see [`crate::deadlock`]).

use super::task::Task;
use super::Session;
use crate::time::Timestamp;
use std::collections::BTreeMap;

impl Session {
    /// Keeps every held node of an owner publishing where that owner waits (the
    /// detecting waiters past their `detect_after`), see [`crate::deadlock`].
    pub(super) fn sync_publications(&mut self, now: Timestamp) {
        if !self.detection {
            return;
        }
        // By owner: where it waits, and the nodes it holds.
        let mut waits: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut held: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for a in self.tasks.values().filter_map(Task::acquisition) {
            if let Some((owner, path)) = a.published_wait() {
                waits.entry(owner.to_owned()).or_default().push(path);
            }
            if let Some((owner, path)) = a.held_node() {
                let nodes = held.entry(owner.to_owned()).or_default();
                nodes.push(path.to_owned());
            }
        }
        for w in waits.values_mut() {
            w.sort();
            w.dedup();
        }
        let (mut cx, tasks) = self.ctx_parts(now);
        for t in tasks.values_mut() {
            if let Task::Acquisition(a) = t {
                let wanted = a
                    .spec()
                    .rare()
                    .owner
                    .as_ref()
                    .and_then(|o| waits.get(o))
                    .cloned()
                    .unwrap_or_default();
                a.publish(&mut cx, wanted);
                let h = a.spec().rare().owner.as_ref().and_then(|o| held.get(o));
                a.set_owner_held(h.map_or(&[], Vec::as_slice));
            }
        }
    }
}
