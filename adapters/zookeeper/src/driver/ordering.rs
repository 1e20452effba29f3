//! Issuing the core's requests in an order the `zookeeper` crate cannot reorder.
//!
//! The core sends requests back to back and relies on ZooKeeper's per-session FIFO
//! order (its `getChildren` must see the `create` sent before it). The crate gives no
//! order between calls made from different threads (see `wire.rs`), so the driver
//! issues the core's requests, in the order polled, under one rule that makes every
//! reply what FIFO order would have given: a write is issued only when no read or
//! write sent before it is still unanswered, a read only when no write sent before
//! it is. Reads run concurrently; no reply can depend on an order the crate does not
//! guarantee.
//!
//! A `sync` (the core's proof of contact) is issued like a read but holds back no
//! write: its reply carries nothing a later write could change, and the proof it
//! gives rests on the times the core took, not on the order of replies (see
//! lock-core's `contact` module). Without that exemption a release issued while a
//! holder's periodic `sync` is on the wire waits a round trip for it.
//!
//! The price is small. The uncontended path is `create`, then `getChildren` and the
//! `getData` on our own node, which the core sends when the create returns: the
//! `getData` had to wait for the create's path anyway, and it brings the fencing
//! token (the crate's `create` returns no Stat), so the grant comes after 2 round
//! trips either way. (Both reads leave together only because `set_nodelay` turns
//! Nagle's algorithm off, which the crate leaves on: 3 round trips otherwise.) A contended waiter sets its watch one round trip later than
//! with full pipelining; a handoff is unchanged (0 round trips after the
//! notification).

use super::{Driver, Key, Msg, Out};
use crate::wire;
use lock_core::{CreateMode, Op, Reply, ZkError};
use std::sync::Arc;
use std::time::Instant;
use zookeeper::ZooKeeper;

/// What a request is to the ordering rule (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Order {
    /// Changes the tree: waits for every read and write sent before it.
    Write,
    /// Reads the tree: waits for the writes sent before it, and holds back the
    /// writes sent after it.
    Read,
    /// A `sync`: waits like a read, holds back nothing.
    Sync,
}

impl Order {
    pub(super) fn of(op: &Op) -> Order {
        if matches!(op, Op::Sync { .. }) {
            Order::Sync
        } else if wire::is_write(op) {
            Order::Write
        } else {
            Order::Read
        }
    }
}

/// The ordering rule (see the module docs): a request may be issued when no reply it
/// could depend on is outstanding. `outstanding` lists each unanswered request's
/// [`Order`].
fn may_issue(order: Order, outstanding: impl IntoIterator<Item = Order>) -> bool {
    outstanding.into_iter().all(|earlier| match earlier {
        Order::Write => false,
        Order::Read => order != Order::Write,
        Order::Sync => true,
    })
}

impl Driver {
    /// Issues queued requests in order, as far as the ordering rule allows.
    pub(super) fn pump(&mut self) {
        let Some(zk) = self.conn.zk.clone() else {
            // No client: the core was told the session is gone and sends nothing;
            // anything queued belonged to the old session.
            self.conn.queue.clear();
            return;
        };
        while let Some(request) = self.conn.queue.front() {
            let order = Order::of(&request.op);
            if !may_issue(order, self.conn.outstanding.values().map(|o| o.order)) {
                break;
            }
            let request = self.conn.queue.pop_front().expect("front exists");
            let ephemeral = matches!(
                request.op,
                Op::Create {
                    mode: CreateMode::EphemeralSequential | CreateMode::Ephemeral,
                    ..
                }
            );
            self.issue(&zk, Key::Core(request.id), request.op, order, ephemeral);
        }
    }

    pub(super) fn issue(
        &mut self,
        zk: &Arc<ZooKeeper>,
        key: Key,
        op: Op,
        order: Order,
        ephemeral: bool,
    ) {
        self.conn.outstanding.insert(
            key,
            Out {
                order,
                issued: Instant::now(),
                sid: self.conn.sid,
                ephemeral,
            },
        );
        let gen = self.conn.gen;
        let tx = self.tx.clone();
        let zk = zk.clone();
        let acl = self.settings.acl.clone();
        self.pool.run(
            move || wire::run_op(&zk, &op, &acl),
            move |result| {
                let _ = tx.send(Msg::Reply { gen, key, result });
            },
        );
    }

    pub(super) fn on_reply(&mut self, key: Key, result: Result<Reply, ZkError>) {
        let now = Instant::now();
        let out = self.conn.outstanding.remove(&key);
        if let Some(out) = &out {
            if result
                .as_ref()
                .map_or_else(ZkError::is_from_server, |_| true)
            {
                self.heard(out.issued);
            }
        }
        let contact = !matches!(result, Err(ZkError::ConnectionLoss));
        if contact {
            self.contact(now);
        } else if self.conn.connected {
            // The crate failed a request while it claims to be connected: it is
            // reconnecting (its listener will say so) or its I/O thread is gone.
            self.suspect(now);
        }
        if let (Some(out), Ok(Reply::Created { path, .. })) = (&out, &result) {
            if out.ephemeral {
                self.check_created(out.sid, path.clone());
            }
        }
        if let Key::Core(request) = key {
            self.link.handle_reply(request, result, now);
            self.drain();
        }
    }

    /// An ephemeral node was created. If the request was issued on an older
    /// connection and the crate meanwhile switched to a new session, the node belongs
    /// to a session the core knows nothing of: delete it, or it stays as an orphan.
    pub(super) fn check_created(&mut self, issued_in: Option<i64>, path: String) {
        let current = (self.conn.verified && self.conn.suspect_since.is_none())
            .then_some(self.conn.sid)
            .flatten();
        match current {
            Some(sid) if Some(sid) == issued_in => {}
            Some(_) => self.delete_internal(path),
            None => self.conn.suspicious.push((issued_in, path)),
        }
    }

    pub(super) fn delete_internal(&mut self, path: String) {
        let Some(zk) = self.conn.zk.clone() else {
            return;
        };
        self.next_internal += 1;
        let key = Key::Internal(self.next_internal);
        self.issue(
            &zk,
            key,
            Op::Delete {
                path,
                version: None,
            },
            Order::Write,
            false,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordering_rule() {
        use Order::{Read, Sync, Write};
        // Nothing outstanding: anything goes.
        assert!(may_issue(Write, []));
        assert!(may_issue(Read, []));
        assert!(may_issue(Sync, []));
        // A create is outstanding: the listing after it waits (it must see the
        // node), and so does a sync.
        assert!(!may_issue(Read, [Write]));
        assert!(!may_issue(Write, [Write]));
        assert!(!may_issue(Sync, [Write]));
        // Reads run together; a write waits for them (a delete must not overtake a
        // getData sent before it).
        assert!(may_issue(Read, [Read, Read]));
        assert!(!may_issue(Write, [Read]));
        // A sync holds back nothing: a release does not wait for the proof of
        // contact on the wire.
        assert!(may_issue(Write, [Sync]));
        assert!(may_issue(Read, [Sync, Read]));
        assert!(!may_issue(Write, [Sync, Read]));
    }
}
