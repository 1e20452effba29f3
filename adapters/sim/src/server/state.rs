//! The embedded server's shared state: one [`ZkModel`], the clients attached to it,
//! and what each client's driver still has to deliver to its link.

use crate::model::{ClientWatches, SessionTracker, ZkModel};
use lock_client::Notifier;
use lock_core::{Op, Reply, RequestId, SessionEvent, WatchKind, ZkError};
use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

/// Something a client's driver hands to its link, in order.
#[derive(Debug)]
pub(crate) enum Delivery {
    Session(SessionEvent),
    Watch(String, WatchKind),
    /// The reply to a request, when it was not delivered at once (replies held,
    /// or lost with a cut connection as `ConnectionLoss`).
    Reply(RequestId, Result<Reply, ZkError>),
}

impl Delivery {
    /// A reply lost with the connection (delivered right after the notice of the cut).
    fn is_lost_reply(&self) -> bool {
        matches!(self, Delivery::Reply(_, Err(ZkError::ConnectionLoss)))
    }
}

/// A request applied and answered at once: the firings for the client's own
/// session (they precede the reply on the wire), then the reply.
pub(crate) type Applied = (Vec<(String, WatchKind)>, Result<Reply, ZkError>);

/// The state of a client's connection.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Reachability {
    Up,
    /// Cut off since `since` until `until`. `noticed` once the client reported
    /// `Disconnected` (at once for a disconnect, after its read timeout for a
    /// partition, as real clients notice a silent connection). Its session expires
    /// as the [`SessionTracker`] says.
    Down {
        since: Instant,
        until: Instant,
        notice_at: Instant,
        noticed: bool,
    },
}

/// One client of the server.
pub(crate) struct Client {
    pub session: i64,
    /// The negotiated session timeout (a new session after an expiry gets it too).
    pub timeout: Duration,
    pub conn: Reachability,
    pub inbox: VecDeque<Delivery>,
    pub notifier: Notifier,
    /// Replies (and watch firings) to this client wait in the inbox, undelivered,
    /// until the next cut loses them (`Server::hold_replies`).
    pub holding: bool,
    /// The watches the client's library knows it has (a firing counts once it is
    /// queued for delivery), to set again after a reconnect, as zookeeper-client
    /// does.
    pub watches: ClientWatches,
    /// The zxid of the last reply the client received (for `SetWatches`).
    pub seen_zxid: i64,
}

/// The server: the model and its clients, under one mutex.
pub(crate) struct ServerState {
    pub model: ZkModel,
    /// The live sessions, by the key of the client that owns them.
    pub sessions: SessionTracker<Instant, u64>,
    pub clients: HashMap<u64, Client>,
    pub next_key: u64,
    /// Requests received from every client (as `zk_packets_received` counts them).
    pub requests: u64,
}

impl ServerState {
    pub(crate) fn new() -> ServerState {
        ServerState {
            model: ZkModel::new(),
            sessions: SessionTracker::default(),
            clients: HashMap::new(),
            next_key: 0,
            requests: 0,
        }
    }

    /// Attaches a client with a new session; returns its key.
    pub(crate) fn attach(&mut self, timeout: Duration, notifier: Notifier) -> u64 {
        self.next_key += 1;
        let key = self.next_key;
        let session = self.model.create_session();
        self.sessions.open(session, key, timeout);
        let mut inbox = VecDeque::new();
        inbox.push_back(Delivery::Session(SessionEvent::Connected {
            session_id: session,
        }));
        let client = Client {
            session,
            timeout,
            conn: Reachability::Up,
            inbox,
            notifier,
            holding: false,
            watches: ClientWatches::default(),
            seen_zxid: self.model.zxid(),
        };
        self.clients.insert(key, client);
        key
    }

    /// Runs request `id` for client `key` as the server would. Watch firings for the
    /// client's own session are returned (they precede the reply on the wire);
    /// other sessions' are queued for their drivers, which are woken. `None` while
    /// the client's replies are held: the firings and the reply wait in its inbox.
    pub(crate) fn apply(&mut self, key: u64, id: RequestId, op: &Op) -> Option<Applied> {
        let Some(client) = self.clients.get(&key) else {
            return Some((Vec::new(), Err(ZkError::Closed)));
        };
        if !matches!(client.conn, Reachability::Up) {
            // Sent before the client reported the cut: lost with the connection.
            return Some((Vec::new(), Err(ZkError::ConnectionLoss)));
        }
        self.requests += 1;
        let session = client.session;
        let result = self.model.apply(session, op);
        let zxid = self.model.zxid();
        let own = self.route(Some(session));
        let client = self.clients.get_mut(&key)?;
        own.iter()
            .for_each(|(path, kind)| client.watches.fired(path, *kind));
        let watch = client.watches.on_send(op);
        if !client.holding {
            if result.is_ok() {
                client.watches.set(watch);
            }
            client.seen_zxid = zxid;
            return Some((own, result));
        }
        let firings = own.into_iter().map(|(p, k)| Delivery::Watch(p, k));
        client.inbox.extend(firings);
        client.inbox.push_back(Delivery::Reply(id, result));
        None
    }

    /// Client `key`'s connection is cut now, to come back at `until`: what it
    /// noticed is decided by [`take`](Self::take). The server drops the
    /// connection's watches with it (ZooKeeper's `DataTree.removeCnxn`): changes
    /// while cut off fire nothing until the client sets its watches again on the
    /// reconnect (see [`take`](Self::take)). Held replies are lost with the
    /// connection (`ConnectionLoss`, after the notice of the cut); firings already
    /// queued (held ones too) wait for the reconnect.
    pub(crate) fn cut(&mut self, key: u64, now: Instant, until: Instant, notice_at: Instant) {
        let Some(c) = self.clients.get_mut(&key) else {
            return;
        };
        self.model.remove_watches(c.session);
        self.sessions.lost_contact(c.session, now);
        c.conn = Reachability::Down {
            since: now,
            until,
            notice_at,
            noticed: false,
        };
        if std::mem::take(&mut c.holding) {
            let (mut lost, rest): (VecDeque<_>, VecDeque<_>) = c
                .inbox
                .drain(..)
                .map(|d| match d {
                    Delivery::Reply(id, _) => Delivery::Reply(id, Err(ZkError::ConnectionLoss)),
                    other => other,
                })
                .partition(Delivery::is_lost_reply);
            lost.extend(rest);
            c.inbox = lost;
        }
        c.notifier.notify();
    }

    /// Hands every queued firing to its session's client; those of `own` are
    /// returned instead.
    pub(crate) fn route(&mut self, own: Option<i64>) -> Vec<(String, WatchKind)> {
        let mut mine = Vec::new();
        for n in self.model.take_notifications() {
            if Some(n.session) == own {
                mine.push((n.path, n.kind));
                continue;
            }
            let owner = self.sessions.owner(n.session);
            if let Some(client) = owner.and_then(|key| self.clients.get_mut(&key)) {
                client.watches.fired(&n.path, n.kind);
                client.inbox.push_back(Delivery::Watch(n.path, n.kind));
                if matches!(client.conn, Reachability::Up) {
                    client.notifier.notify();
                }
            }
        }
        mine
    }

    /// What client `key` must hear now, and when it must look again (a cut to
    /// notice, a session to expire, a reconnect). Advances its connection.
    pub(crate) fn take(&mut self, key: u64, now: Instant) -> (Vec<Delivery>, Option<Instant>) {
        let mut expired = None;
        let mut reconnected = None;
        let mut next = None;
        if let Some(client) = self.clients.get_mut(&key) {
            if let Reachability::Down {
                since,
                until,
                notice_at,
                noticed,
            } = client.conn
            {
                let expiry = self.sessions.expiry(client.session);
                let alive = self.sessions.contains(client.session);
                if !noticed && now >= notice_at.min(until) {
                    client.conn = Reachability::Down {
                        since,
                        until,
                        notice_at,
                        noticed: true,
                    };
                    client
                        .inbox
                        .push_front(Delivery::Session(SessionEvent::Disconnected {
                            // The server last heard from it as the cut began.
                            since_contact: now.saturating_duration_since(since),
                        }));
                }
                if self.sessions.is_due(client.session, now) {
                    expired = Some(client.session);
                } else if now >= until {
                    client.conn = Reachability::Up;
                    if alive {
                        // After the notice of the cut if it is still queued (a cut
                        // that ends before it is noticed is noticed as it ends).
                        // And after the replies lost with the connection.
                        let at = client
                            .inbox
                            .iter()
                            .take_while(|d| {
                                d.is_lost_reply()
                                    || matches!(
                                        d,
                                        Delivery::Session(SessionEvent::Disconnected { .. })
                                    )
                            })
                            .count();
                        self.sessions.in_contact(client.session);
                        let connected = SessionEvent::Connected {
                            session_id: client.session,
                        };
                        client.inbox.insert(at, Delivery::Session(connected));
                        reconnected = Some(client.session);
                    }
                } else {
                    let noticed_now =
                        matches!(client.conn, Reachability::Down { noticed: true, .. });
                    let notice = (!noticed_now).then_some(notice_at);
                    next = [Some(until), notice, expiry].into_iter().flatten().min();
                }
            }
        }
        if let Some(session) = reconnected {
            // zookeeper-client sets its watches again first thing (`SetWatches` with
            // the last zxid it saw): those whose node changed meanwhile fire now.
            if let Some(client) = self.clients.get_mut(&key) {
                let zxid = client.seen_zxid;
                client
                    .watches
                    .reconnect(&mut self.model, session, zxid, true);
            }
            let missed = self.route(Some(session));
            if let Some(client) = self.clients.get_mut(&key) {
                for (path, kind) in missed {
                    client.watches.fired(&path, kind);
                    client.inbox.push_back(Delivery::Watch(path, kind));
                }
            }
        }
        if let Some(session) = expired {
            // The server's session tracker: other sessions hear of the deleted nodes.
            self.expire_session(session);
            self.route(None);
            return self.take(key, now);
        }
        let Some(client) = self.clients.get_mut(&key) else {
            return (vec![Delivery::Session(SessionEvent::Closed)], None);
        };
        if matches!(client.conn, Reachability::Up) && !self.sessions.contains(client.session) {
            // Back after an expiry: told so, then given a new session.
            let session = self.model.create_session();
            self.sessions.open(session, key, client.timeout);
            client.session = session;
            client.watches.clear();
            client.seen_zxid = self.model.zxid();
            client.inbox.clear();
            client
                .inbox
                .push_back(Delivery::Session(SessionEvent::Expired));
            client
                .inbox
                .push_back(Delivery::Session(SessionEvent::Connected {
                    session_id: session,
                }));
        }
        let deliveries = match client.conn {
            // Held: nothing reaches the client until the cut.
            Reachability::Up if client.holding => Vec::new(),
            Reachability::Up => client.inbox.drain(..).collect(),
            // Cut off: only the notice of the cut goes through, with the replies
            // lost with the connection.
            Reachability::Down { .. } => match client.inbox.front() {
                Some(Delivery::Session(SessionEvent::Disconnected { .. })) => {
                    let n = 1 + client
                        .inbox
                        .iter()
                        .skip(1)
                        .take_while(|d| d.is_lost_reply())
                        .count();
                    client.inbox.drain(..n).collect()
                }
                _ => Vec::new(),
            },
        };
        (deliveries, next)
    }

    /// The session tracker (or a fault) expires `session`: its nodes go, and the
    /// sessions watching them hear of it. Its client learns of the expiry when it
    /// is back in contact.
    pub(crate) fn expire_session(&mut self, session: i64) {
        if self.sessions.expired(session).is_some() {
            self.model.expire_session(session);
            self.route(None);
        }
    }

    /// Client `key` is gone: its session closes (its nodes go, waking others).
    pub(crate) fn detach(&mut self, key: u64) {
        if let Some(client) = self.clients.remove(&key) {
            self.sessions.expired(client.session);
            self.model.close_session(client.session);
            self.route(None);
        }
    }
}
