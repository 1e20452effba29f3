//! The embedded server's shared state: one [`ZkModel`], the clients attached to it,
//! and what each client's driver still has to deliver to its link.

use crate::model::ZkModel;
use lock_client::Notifier;
use lock_core::{Op, Reply, SessionEvent, WatchKind, ZkError};
use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

/// Something a client's driver hands to its link, in order.
#[derive(Debug)]
pub(crate) enum Delivery {
    Session(SessionEvent),
    Watch(String, WatchKind),
}

/// The state of a client's connection.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Conn {
    Up,
    /// Cut off since `since` until `until`. `noticed` once the client reported
    /// `Disconnected` (at once for a disconnect, after 2/3 of the session timeout
    /// for a partition, as real clients notice a silent connection).
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
    pub timeout: Duration,
    pub conn: Conn,
    pub inbox: VecDeque<Delivery>,
    pub notifier: Notifier,
}

/// The server: the model and its clients, under one mutex.
pub(crate) struct State {
    pub model: ZkModel,
    pub clients: HashMap<u64, Client>,
    pub next_key: u64,
}

impl State {
    pub(crate) fn new() -> State {
        State {
            model: ZkModel::new(),
            clients: HashMap::new(),
            next_key: 0,
        }
    }

    /// Attaches a client with a new session; returns its key.
    pub(crate) fn attach(&mut self, timeout: Duration, notifier: Notifier) -> u64 {
        self.next_key += 1;
        let key = self.next_key;
        let session = self.model.create_session();
        let mut inbox = VecDeque::new();
        inbox.push_back(Delivery::Session(SessionEvent::Connected {
            session_id: session,
        }));
        let client = Client {
            session,
            timeout,
            conn: Conn::Up,
            inbox,
            notifier,
        };
        self.clients.insert(key, client);
        key
    }

    /// Runs `op` for client `key` as the server would. Watch firings for the
    /// client's own session are returned (they precede the reply on the wire);
    /// other sessions' are queued for their drivers, which are woken.
    pub(crate) fn apply(
        &mut self,
        key: u64,
        op: &Op,
    ) -> (Vec<(String, WatchKind)>, Result<Reply, ZkError>) {
        let Some(client) = self.clients.get(&key) else {
            return (Vec::new(), Err(ZkError::Closed));
        };
        if !matches!(client.conn, Conn::Up) {
            // Sent before the client reported the cut: lost with the connection.
            return (Vec::new(), Err(ZkError::ConnectionLoss));
        }
        let session = client.session;
        let result = self.model.apply(session, op);
        let own = self.route(Some(session));
        (own, result)
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
            if let Some(client) = self.clients.values_mut().find(|c| c.session == n.session) {
                // While cut off, a firing waits for the reconnect (as a client's
                // re-registered watch reports a change it missed).
                client.inbox.push_back(Delivery::Watch(n.path, n.kind));
                if matches!(client.conn, Conn::Up) {
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
        let mut next = None;
        if let Some(client) = self.clients.get_mut(&key) {
            if let Conn::Down {
                since,
                until,
                notice_at,
                noticed,
            } = client.conn
            {
                let expiry = since + client.timeout;
                let alive = self.model.session_is_alive(client.session);
                if !noticed && now >= notice_at.min(until) {
                    client.conn = Conn::Down {
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
                if alive && now >= expiry {
                    expired = Some(client.session);
                } else if now >= until {
                    client.conn = Conn::Up;
                    if alive {
                        // After the notice of the cut if it is still queued (a cut
                        // that ends before it is noticed is noticed as it ends).
                        let at = usize::from(matches!(
                            client.inbox.front(),
                            Some(Delivery::Session(SessionEvent::Disconnected { .. }))
                        ));
                        let connected = SessionEvent::Connected {
                            session_id: client.session,
                        };
                        client.inbox.insert(at, Delivery::Session(connected));
                    }
                } else {
                    let noticed_now = matches!(client.conn, Conn::Down { noticed: true, .. });
                    let notice = (!noticed_now).then_some(notice_at);
                    next = [Some(until), notice, alive.then_some(expiry)]
                        .into_iter()
                        .flatten()
                        .min();
                }
            }
        }
        if let Some(session) = expired {
            // The server's session tracker: other sessions hear of the deleted nodes.
            self.model.expire_session(session);
            self.route(None);
            return self.take(key, now);
        }
        let Some(client) = self.clients.get_mut(&key) else {
            return (vec![Delivery::Session(SessionEvent::Closed)], None);
        };
        if matches!(client.conn, Conn::Up) && !self.model.session_is_alive(client.session) {
            // Back after an expiry: told so, then given a new session.
            let session = self.model.create_session();
            client.session = session;
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
            Conn::Up => client.inbox.drain(..).collect(),
            // Cut off: only the notice of the cut goes through.
            Conn::Down { .. } => match client.inbox.front() {
                Some(Delivery::Session(SessionEvent::Disconnected { .. })) => {
                    client.inbox.pop_front().into_iter().collect()
                }
                _ => Vec::new(),
            },
        };
        (deliveries, next)
    }

    /// Client `key` is gone: its session closes (its nodes go, waking others).
    pub(crate) fn detach(&mut self, key: u64) {
        if let Some(client) = self.clients.remove(&key) {
            self.model.close_session(client.session);
            self.route(None);
        }
    }
}
