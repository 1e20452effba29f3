//! Opening, giving up and reopening `zookeeper` clients.
//!
//! The crate's first connection attempt has no timeout (only its reconnects have
//! one): a client that is neither connected nor reporting any state change for
//! `stuck_after` (`T + 4 s`) is given up and replaced, and so is a first client
//! that has not given a verified session `stuck_after` after it was opened.

use super::{Driver, Msg};
use crate::wire;
use lock_client::{ConnectFailure, Error};
use lock_core::{SessionEvent, WatchKind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use zookeeper::{WatchedEvent, WatchedEventType, ZkState, ZooKeeper};

/// Lets go of a client on a thread of its own: the crate's `close` (also run by its
/// `Drop`) blocks until the server answers, forever on a dead connection.
pub(super) fn reap(zk: Arc<ZooKeeper>, closed: Arc<AtomicBool>) {
    let _ = std::thread::Builder::new()
        .name("lock-zookeeper-reaper".into())
        .spawn(move || {
            // A close cut short by a reconnect is tried again, so that a session the
            // crate silently opened meanwhile does not live on.
            for _ in 0..3 {
                if closed.load(Ordering::Acquire) || zk.close().is_ok() {
                    break;
                }
            }
        });
}

impl Driver {
    /// Opens a new `zookeeper` client (a new session).
    pub(super) fn open(&mut self, now: Instant) {
        self.conn.reopen_at = None;
        let gen = self.conn.gen + 1;
        let tx = self.tx.clone();
        let watcher = move |event: WatchedEvent| {
            let kind = match event.event_type {
                WatchedEventType::NodeCreated => WatchKind::NodeCreated,
                WatchedEventType::NodeDeleted => WatchKind::NodeDeleted,
                WatchedEventType::NodeDataChanged => WatchKind::NodeDataChanged,
                WatchedEventType::NodeChildrenChanged => WatchKind::NodeChildrenChanged,
                _ => return,
            };
            if let Some(path) = event.path {
                let _ = tx.send(Msg::Watch { gen, path, kind });
            }
        };
        let connect = self.connect_string();
        match wire::open(&connect, self.settings.requested_timeout, watcher) {
            Ok(zk) => {
                let closed_flag = Arc::new(AtomicBool::new(false));
                let tx = self.tx.clone();
                let flag = closed_flag.clone();
                // Runs on the crate's I/O thread under its listener lock: only send.
                zk.add_listener(move |state| {
                    if state == ZkState::Closed {
                        flag.store(true, Ordering::Release);
                    }
                    let _ = tx.send(Msg::State { gen, state });
                });
                self.counters.clients_opened.fetch_add(1, Ordering::AcqRel);
                let l = &mut self.conn;
                l.gen = gen;
                l.zk = Some(Arc::new(zk));
                l.closed_flag = closed_flag;
                l.connected = false;
                l.connected_at = now;
                l.epoch += 1;
                l.verified = false;
                l.sid = None;
                l.marker = None;
                l.suspect_since = None;
                l.last_contact = now;
                // The server creates the session after this.
                l.heard_at = now;
                l.ping_since = None;
                l.probing = None;
                l.last_state_at = now;
                l.last_state = None;
                l.probe_error = None;
                l.opened_at = now;
                l.trail.clear();
                l.peers = lock_nodelay::Peers::resolve(&connect).ok();
                // The listener may have missed the first `Connected` (it is added after
                // the crate started connecting): the probe blocks until connected.
                self.start_probe();
            }
            Err(e) => {
                if !self.ever_connected && now >= self.connect_deadline {
                    self.fail_connect(Error::connect_caused_by(ConnectFailure::Client, e));
                } else {
                    self.schedule_reopen(now);
                }
            }
        }
    }

    /// The connect string with the hosts shuffled (the crate always starts with the
    /// first host; shuffling spreads clients over an ensemble).
    pub(super) fn connect_string(&mut self) -> String {
        let mut hosts = self.settings.hosts.clone();
        for i in (1..hosts.len()).rev() {
            let j = (self.next_random() % (i as u64 + 1)) as usize;
            hosts.swap(i, j);
        }
        format!("{}{}", hosts.join(","), self.settings.chroot)
    }

    pub(super) fn next_random(&mut self) -> u64 {
        // xorshift64*
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub(super) fn on_state(&mut self, state: ZkState) {
        let now = Instant::now();
        self.conn.last_state_at = now;
        self.conn.last_state = Some(state);
        self.note(&format!("{state:?}"));
        match state {
            ZkState::Connected => {
                if self.conn.connected {
                    return; // the first `Connected`, after a probe already proved it
                }
                self.conn.connected = true;
                self.conn.connected_at = now;
                self.conn.last_contact = now;
                self.conn.suspect_since = None;
                if self.conn.probing != Some(self.conn.epoch) {
                    self.start_probe();
                }
            }
            ZkState::Closed => self.link_down(now),
            // Connecting, NotConnected, ConnectedReadOnly (never asked for), AuthFailed:
            // not usable. The crate reconnects by itself (within the same session, or,
            // after an expiry, silently in a new one: the probe tells).
            _ => {
                if self.conn.connected || self.conn.probing.is_some() || self.conn.verified {
                    self.conn.epoch += 1;
                }
                self.conn.connected = false;
                self.conn.verified = false;
                self.conn.probing = None;
                self.conn.suspect_since = None;
                self.conn.ping_since = None;
                self.sync_core();
            }
        }
    }

    /// The client is closed for good (or abandoned): its session is over for us.
    pub(super) fn link_down(&mut self, now: Instant) {
        if let Some(zk) = self.conn.zk.take() {
            reap(zk, self.conn.closed_flag.clone());
        }
        let l = &mut self.conn;
        l.connected = false;
        l.verified = false;
        l.probing = None;
        l.sid = None;
        l.marker = None;
        l.suspect_since = None;
        l.ping_since = None;
        l.queue.clear();
        l.outstanding.clear();
        l.suspicious.clear();
        l.epoch += 1;
        if self.link.session_id().is_some() {
            // The server may still hold the session (a client given up on, or closed
            // by the crate, within the session timeout): the core deletes its nodes
            // from the next session rather than leave the queues stuck behind them.
            self.feed(SessionEvent::Abandoned);
        }
        if !self.ever_connected && now >= self.connect_deadline {
            let attempts = Attempts {
                every_client_closed: true,
                progress: self.connect_progress(now),
            };
            self.fail_connect(self.no_session(attempts));
            return;
        }
        self.schedule_reopen(now);
    }

    /// Where the first connection stands, for the error of a `connect` that timed
    /// out: enough to tell a server that never answered from a session probe that
    /// never returned, or from clients the crate kept closing.
    pub(super) fn connect_progress(&self, now: Instant) -> String {
        let l = &self.conn;
        let opened = self.counters.clients_opened.load(Ordering::Acquire);
        let current = if l.zk.is_none() {
            "none open".to_owned()
        } else {
            let state = match l.last_state {
                Some(state) => format!(
                    "last reported {state:?} {:?} ago",
                    now.saturating_duration_since(l.last_state_at)
                ),
                None => format!(
                    "opened {:?} ago, no state reported",
                    now.saturating_duration_since(l.last_state_at)
                ),
            };
            let probe = match (&l.probing, &l.probe_error) {
                (Some(_), _) => "session probe unanswered".to_owned(),
                (None, Some(e)) => format!("session probe failed: {e}"),
                (None, None) => "no session probe".to_owned(),
            };
            let trail: Vec<String> = l
                .trail
                .iter()
                .map(|(t, e)| format!("{e} at {t:.2?}"))
                .collect();
            format!("{state}, {probe}; since opened: {}", trail.join(", "))
        };
        format!("{opened} client(s) opened; current client: {current}")
    }

    /// The error of a first connect that got no session within the connect
    /// timeout, after `attempts`.
    pub(super) fn no_session(&self, attempts: Attempts) -> Error {
        let failure = ConnectFailure::NoSession {
            connect_timeout: self.settings.connect_timeout,
        };
        Error::connect_caused_by(failure, attempts)
    }

    /// Adds to the current client's trail (see `CurrentClient::trail`).
    pub(super) fn note(&mut self, what: &str) {
        let l = &mut self.conn;
        if l.trail.len() < 40 {
            l.trail.push((l.opened_at.elapsed(), what.to_owned()));
        }
    }

    pub(super) fn schedule_reopen(&mut self, now: Instant) {
        let failures = self.conn.failures.min(6);
        self.conn.failures += 1;
        let pause = (Duration::from_millis(50) * (1 << failures)).min(self.session_timeout);
        self.conn.reopen_at = Some(now + pause);
    }

    pub(super) fn fail_connect(&mut self, error: Error) {
        if let Some(waiter) = self.connect_waiter.take() {
            let _ = waiter.send(Err(error));
        }
        self.stop = true;
    }
}

/// How far the attempts of a first connect got: the source of its
/// [`ConnectFailure::NoSession`], for a reader (the progress is a description:
/// the clients opened, the current one's last state and session probe, its trail).
#[derive(Debug)]
pub(super) struct Attempts {
    /// The zookeeper crate closed every client before it reached a server.
    pub(super) every_client_closed: bool,
    /// [`Driver::connect_progress`].
    pub(super) progress: String,
}

impl std::fmt::Display for Attempts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.every_client_closed {
            f.write_str("the zookeeper crate closed every client before it reached a server; ")?;
        }
        f.write_str(&self.progress)
    }
}

impl std::error::Error for Attempts {}
