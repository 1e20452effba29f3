//! The client-wide connection state as the shared state keeps it: where it stands
//! ([`ConnectionState`]), its changes ([`ConnectionEvent`]) and the tracker that
//! follows the binding's reports and queues the changes for every subscribed
//! [`ConnectionEvents`](crate::ConnectionEvents) stream.

use crate::server::check::ServerCheck;
use crate::server::hazard::Hazard;
use lock_core::SessionEvent;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::task::{Poll, Waker};

/// Where the client's connection to ZooKeeper stands, from
/// [`LockClient::connection_state`](crate::LockClient::connection_state).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum ConnectionState {
    /// No session: before the first connection, or after a session was lost while
    /// the binding opens a new one.
    Connecting,
    /// Connected on this session.
    Connected {
        /// The session in use.
        session_id: i64,
    },
    /// The connection dropped; the session may still live on the server. Held
    /// locks are suspended.
    Suspended {
        /// The session the client hopes to get back to.
        session_id: i64,
    },
    /// Closed for good.
    Closed,
}

/// A change of the connection, from [`ConnectionEvents`](crate::ConnectionEvents).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum ConnectionEvent {
    /// Connected on a new session: the first one, or the one after a loss.
    Connected {
        /// The new session.
        session_id: i64,
    },
    /// The connection dropped (Curator's SUSPENDED): held locks are suspended, and
    /// are reported lost before the server could expire the session unless the
    /// connection comes back first.
    Suspended,
    /// Back on the same session (Curator's RECONNECTED): locks resume once their
    /// nodes are verified.
    Reconnected {
        /// The session, unchanged.
        session_id: i64,
    },
    /// The session is gone (expired, or given up by the client library; Curator's
    /// LOST): every lock taken on it is lost. A `Connected` on a new session
    /// follows when the binding opens one.
    SessionLost {
        /// The session that is gone.
        session_id: i64,
    },
    /// A server the client is connected to has settings under which a majority
    /// can expire the session (and grant its locks to others) while this server
    /// still answers it: see [`Hazard`] for the rule and the fix. Once per
    /// server and kind of hazard, when the binding could read the server's
    /// settings (its `conf` four-letter word); also logged as a `tracing`
    /// warning. A new stream starts with the hazards found so far (a check
    /// often ends before the user subscribes); [`LockClient::server_checks`](crate::LockClient::server_checks)
    /// has every check made.
    ServerHazard {
        /// The server's address.
        server: SocketAddr,
        /// What is wrong and how to fix it.
        hazard: Hazard,
    },
    /// The client is closed; the last event.
    Closed,
}

/// The client's side of the connection state, in the shared state.
#[derive(Default)]
pub(crate) struct Tracker {
    state: Option<ConnectionState>,
    subscribers: Vec<(u64, Subscriber)>,
    next_id: u64,
    /// The latest check of each server's settings, in the order first checked.
    checks: Vec<ServerCheck>,
    /// The hazards reported so far: each is reported once.
    reported: Vec<(SocketAddr, crate::server::hazard::HazardKind)>,
    /// Counts the session changes reported: a report about the server learned
    /// under another count is about another connection.
    generation: u64,
}

#[derive(Default)]
struct Subscriber {
    events: VecDeque<ConnectionEvent>,
    wakers: Vec<Waker>,
}

impl Tracker {
    // Getters.

    pub(crate) fn state(&self) -> ConnectionState {
        self.state.unwrap_or(ConnectionState::Connecting)
    }

    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    pub(crate) fn checks(&self) -> Vec<ServerCheck> {
        self.checks.clone()
    }

    // Inputs.

    /// Follows what the binding reports; the wakers of every subscriber with news
    /// go to `to_wake`.
    pub(crate) fn handle_session(&mut self, event: &SessionEvent, to_wake: &mut Vec<Waker>) {
        use ConnectionState as State;
        self.generation += 1;
        let before = self.state();
        let (after, events): (State, Vec<ConnectionEvent>) = match (*event, before) {
            (_, State::Closed) => return,
            (SessionEvent::Connected { session_id }, State::Connecting) => (
                State::Connected { session_id },
                vec![ConnectionEvent::Connected { session_id }],
            ),
            (
                SessionEvent::Connected { session_id },
                State::Connected { session_id: old } | State::Suspended { session_id: old },
            ) if old != session_id => (
                State::Connected { session_id },
                vec![
                    ConnectionEvent::SessionLost { session_id: old },
                    ConnectionEvent::Connected { session_id },
                ],
            ),
            (SessionEvent::Connected { session_id }, State::Suspended { .. }) => (
                State::Connected { session_id },
                vec![ConnectionEvent::Reconnected { session_id }],
            ),
            (SessionEvent::Disconnected { .. }, State::Connected { session_id }) => (
                State::Suspended { session_id },
                vec![ConnectionEvent::Suspended],
            ),
            (
                SessionEvent::Expired | SessionEvent::Abandoned,
                State::Connected { session_id } | State::Suspended { session_id },
            ) => (
                State::Connecting,
                vec![ConnectionEvent::SessionLost { session_id }],
            ),
            (SessionEvent::Closed, _) => (State::Closed, vec![ConnectionEvent::Closed]),
            _ => return,
        };
        self.state = Some(after);
        for event in &events {
            match event {
                ConnectionEvent::Suspended | ConnectionEvent::SessionLost { .. } => {
                    tracing::warn!(?event, "zklock connection")
                }
                _ => tracing::info!(?event, "zklock connection"),
            }
        }
        self.publish(&events, to_wake);
    }

    fn publish(&mut self, events: &[ConnectionEvent], to_wake: &mut Vec<Waker>) {
        for (_, sub) in &mut self.subscribers {
            sub.events.extend(events.iter().copied());
            to_wake.append(&mut sub.wakers);
        }
    }

    /// Records a check of a server's settings; hazards not reported before for
    /// that server become events and warnings.
    pub(crate) fn handle_server_check(&mut self, check: ServerCheck, to_wake: &mut Vec<Waker>) {
        let server = check.server;
        match &check.conf {
            Ok(conf) => tracing::debug!(%server, ?conf, "ZooKeeper server settings"),
            Err(error) => {
                let first = !self.checks.iter().any(|c| c.server == server);
                if first {
                    tracing::info!(%server, %error, "cannot check the server's settings")
                }
            }
        }
        let mut events = Vec::new();
        for hazard in &check.hazards {
            if !self.reported.contains(&(server, hazard.kind)) {
                self.reported.push((server, hazard.kind));
                tracing::warn!(%server, "zklock: unsafe ZooKeeper settings: {hazard}");
                events.push(ConnectionEvent::ServerHazard {
                    server,
                    hazard: *hazard,
                });
            }
        }
        match self.checks.iter_mut().find(|c| c.server == server) {
            Some(old) => *old = check,
            None => self.checks.push(check),
        }
        if self.state() != ConnectionState::Closed && !events.is_empty() {
            self.publish(&events, to_wake);
        }
    }

    // Mutators.

    /// A new subscriber starts with the hazards found so far: they describe the
    /// servers, not a moment, and a check often ends before the user subscribes.
    pub(crate) fn subscribe(&mut self) -> u64 {
        self.next_id += 1;
        let mut subscriber = Subscriber::default();
        for check in &self.checks {
            for hazard in &check.hazards {
                subscriber.events.push_back(ConnectionEvent::ServerHazard {
                    server: check.server,
                    hazard: *hazard,
                });
            }
        }
        self.subscribers.push((self.next_id, subscriber));
        self.next_id
    }

    pub(crate) fn unsubscribe(&mut self, id: u64) {
        self.subscribers.retain(|(i, _)| *i != id);
    }

    // Polls.

    /// The subscriber's next event, or `None` once closed and drained; registers
    /// `waker` when there is none yet.
    pub(crate) fn poll_next(&mut self, id: u64, waker: &Waker) -> Poll<Option<ConnectionEvent>> {
        let closed = self.state() == ConnectionState::Closed;
        let Some((_, sub)) = self.subscribers.iter_mut().find(|(i, _)| *i == id) else {
            return Poll::Ready(None);
        };
        match sub.events.pop_front() {
            Some(event) => Poll::Ready(Some(event)),
            None if closed => Poll::Ready(None),
            None => {
                super::wakeups::register(&mut sub.wakers, waker);
                Poll::Pending
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared::wakeups::tests::counter;

    #[test]
    fn subscribers_get_each_change_and_every_report_counts() {
        let (_, waker) = counter();
        let mut tracker = Tracker::default();
        let id = tracker.subscribe();
        assert!(tracker.poll_next(id, &waker).is_pending());
        let mut to_wake = Vec::new();
        let connected = SessionEvent::Connected { session_id: 7 };
        tracker.handle_session(&connected, &mut to_wake);
        tracker.handle_session(&connected, &mut to_wake);
        assert_eq!(to_wake.len(), 1, "woken once; the repeat is no change");
        assert_eq!(tracker.generation(), 2, "but it is another report");
        let event = ConnectionEvent::Connected { session_id: 7 };
        assert_eq!(tracker.poll_next(id, &waker), Poll::Ready(Some(event)));
        tracker.handle_session(&SessionEvent::Closed, &mut to_wake);
        assert_eq!(tracker.state(), ConnectionState::Closed);
        let closed = Poll::Ready(Some(ConnectionEvent::Closed));
        assert_eq!(tracker.poll_next(id, &waker), closed);
        assert_eq!(tracker.poll_next(id, &waker), Poll::Ready(None));
        tracker.unsubscribe(id);
    }
}
