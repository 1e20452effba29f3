//! The session probe: learning the session id the crate hides, and telling the core.
//!
//! The crate hides the session id. The driver learns
//! the id from the `ephemeralOwner` of a marker node (`probe_session`): created once
//! per session, checked with one `exists` after every reconnect. A marker that is
//! gone means the crate silently opened a new session after an expiry; the core
//! then gets `Connected` with the new id and reports the old session's locks lost.

use super::{Driver, Msg};
use crate::wire;
use lock_client::{ConnectFailure, Error};
use lock_core::{SessionEvent, ZkError};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

impl Driver {
    /// Tells the core what it must know about the connection.
    pub(super) fn sync_core(&mut self) {
        let l = &self.conn;
        let usable = l.zk.is_some() && l.connected && l.verified && l.suspect_since.is_none();
        let desired = if usable { l.sid } else { None };
        let connected = self.link.is_connected();
        match desired {
            Some(sid) if connected && self.link.session_id() == Some(sid) => {}
            // A different id than before means the old session is gone; the core
            // ends its locks itself. The core forgets its server at every
            // disconnection (a silence too, the connection kept): after it heard
            // of the connection, what the check learns is for this one.
            Some(session_id) => {
                self.feed(SessionEvent::Connected { session_id });
                self.check_server();
            }
            None if connected => {
                let since_contact = self.conn.heard_at.elapsed();
                self.feed(SessionEvent::Disconnected { since_contact });
            }
            None => {}
        }
    }

    pub(super) fn start_probe(&mut self) {
        let Some(zk) = self.conn.zk.clone() else {
            return;
        };
        let epoch = self.conn.epoch;
        self.conn.probing = Some(epoch);
        self.conn.probe_retry_at = None;
        self.conn.probe_issued = Instant::now();
        self.note("probe sent");
        let gen = self.conn.gen;
        let marker = self.conn.marker.clone();
        let prefix = self.settings.marker_prefix.clone();
        let (auth, acl) = (self.settings.auth.clone(), self.settings.acl.clone());
        let tx = self.tx.clone();
        self.pool.run(
            move || wire::probe_session(&zk, marker.as_deref(), &prefix, &auth, &acl),
            move |result| {
                let _ = tx.send(Msg::Session { gen, epoch, result });
            },
        );
    }

    pub(super) fn on_session_probe(&mut self, epoch: u64, result: Result<(i64, String), ZkError>) {
        let outcome = match &result {
            Ok((sid, _)) => format!("probe: session {sid:#x}"),
            Err(e) => format!("probe: {e}"),
        };
        self.note(&outcome);
        if self.conn.epoch != epoch {
            return; // the connection changed meanwhile; another probe follows
        }
        self.conn.probing = None;
        let now = Instant::now();
        match result {
            Ok((sid, marker)) => {
                // Before the core (or `connect`'s caller) sends anything on it, and
                // before the server's settings are judged for the session.
                self.adopt_session_timeout();
                self.set_nodelay();
                if !self.conn.connected {
                    // Connected before the listener was added.
                    self.conn.connected = true;
                    self.conn.connected_at = now;
                }
                self.conn.verified = true;
                let counter = if self.conn.sid == Some(sid) {
                    &self.counters.reconnects
                } else {
                    &self.counters.sessions
                };
                counter.fetch_add(1, Ordering::AcqRel);
                self.conn.sid = Some(sid);
                self.conn.marker = Some(marker);
                self.conn.failures = 0;
                self.contact(now);
                self.heard(self.conn.probe_issued);
                for (issued_in, path) in std::mem::take(&mut self.conn.suspicious) {
                    if issued_in != Some(sid) {
                        self.delete_internal(path);
                    }
                }
                self.ever_connected = true;
                // The core hears of the session before `connect` returns: a caller
                // asking for `session_id()` right away must see it.
                self.sync_core();
                if let Some(waiter) = self.connect_waiter.take() {
                    let _ = waiter.send(Ok(()));
                }
            }
            Err(ZkError::ConnectionLoss) => {
                // Reconnecting (the listener will say so) or closed for good (likewise).
                self.conn.probe_error = Some(ZkError::ConnectionLoss);
                self.conn.probe_retry_at = Some(now + self.timing.reply_deadline);
            }
            Err(e) => {
                self.conn.probe_error = Some(e.clone());
                if !self.ever_connected && e == ZkError::AuthFailed {
                    self.fail_connect(Error::AuthFailed {
                        source: Some(lock_client::Cause::new(e)),
                    });
                } else if !self.ever_connected && self.chroot_missing(&e) {
                    let chroot = self.settings.chroot.clone();
                    self.fail_connect(Error::connect(ConnectFailure::NoChroot { chroot }));
                } else if !self.ever_connected {
                    let failure = ConnectFailure::SessionMarker {
                        prefix: self.settings.marker_prefix.clone(),
                    };
                    self.fail_connect(Error::connect_caused_by(failure, e));
                } else {
                    self.conn.probe_retry_at = Some(now + Duration::from_secs(1));
                }
            }
        }
    }

    /// Whether the marker's `NoNode` means that the chroot does not exist: the
    /// marker is created at the chroot's root.
    fn chroot_missing(&self, e: &ZkError) -> bool {
        let at_root = self.settings.marker_prefix.rfind('/') == Some(0);
        *e == ZkError::NoNode && at_root && !self.settings.chroot.is_empty()
    }

    /// Turns Nagle's algorithm off on the crate's connection, new after every
    /// (re)connect: the crate (0.8.0) leaves it on and writes each request on its
    /// own, so a request written while an earlier one is unanswered would wait for
    /// that reply (the `getChildren` and the own-node `getData`, issued together
    /// once the `create` is answered, would take 2 round trips instead of 1).
    /// lock-nodelay finds the socket among the process's descriptors by the
    /// server's address (see its docs). Quick (no network traffic), so done here,
    /// on the driver thread, before the core hears of the connection.
    pub(super) fn set_nodelay(&mut self) {
        if let Some(peers) = &self.conn.peers {
            // Without it everything works, with Nagle's delays.
            let _ = lock_nodelay::apply(peers);
        }
    }

    /// Asks the server the crate is now connected to for its settings (`conf`)
    /// and has lock-client judge them for this session (a `ServerHazard` event
    /// and a warning when a majority could expire the session while this server
    /// still answers it). On a thread of its own: nothing waits for it.
    pub(super) fn check_server(&self) {
        let checker = self.link.server_checker();
        let _ = lock_nodelay::ask_connected_servers_all_after(
            std::time::Duration::ZERO,
            self.settings.hosts.join(","),
            &["srvr", "conf"],
            move |all| checker.report_probes(lock_client::ServerProbe::from_answers(all)),
        );
    }
}
