//! The client-wide connection state ([`LockClient::connection_state`]) and its
//! stream of changes ([`LockClient::connection_events`]), what Curator's
//! `ConnectionStateListener` and kazoo's `add_listener` give: one place to learn
//! that the session is in doubt, back, or gone, whatever locks are held.

pub use crate::shared::tracker::{ConnectionEvent, ConnectionState};

use crate::handle::LockClient;
use crate::server::check::ServerCheck;
use crate::shared::Shared;
use std::future::poll_fn;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The connection's changes from the moment it was made, from
/// [`LockClient::connection_events`] (and first the
/// [`ServerHazard`](ConnectionEvent::ServerHazard)s found before). Each stream
/// gets every event; an unread one waits (nothing is dropped). It does not keep the client open: once the client is
/// closed, [`next`](Self::next) returns `Closed` and then `None`.
///
/// ```
/// # async fn demo(locks: zklock::LockClient) {
/// use zklock::ConnectionEvent;
/// let mut events = locks.connection_events();
/// # locks.close().await; // the stream ends with the client
/// while let Some(event) = events.next().await {
///     match event {
///         ConnectionEvent::Suspended => eprintln!("ZooKeeper unreachable: pausing"),
///         ConnectionEvent::Reconnected { .. } => eprintln!("back"),
///         ConnectionEvent::SessionLost { session_id } => eprintln!("session {session_id:#x} lost"),
///         _ => {}
///     }
/// }
/// # }
/// # futures::executor::block_on(demo(zklock::sim::Server::new().client()));
/// ```
pub struct ConnectionEvents {
    shared: Arc<Shared>,
    id: u64,
}

impl std::fmt::Debug for ConnectionEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectionEvents")
            .field("id", &self.id)
            .finish()
    }
}

impl ConnectionEvents {
    /// The next change, waiting for it; `None` after `Closed`. Cancel-safe.
    pub async fn next(&mut self) -> Option<ConnectionEvent> {
        poll_fn(|cx| {
            self.shared
                .with(|s| s.connection.poll_next(self.id, cx.waker()))
        })
        .await
    }

    crate::blocking::twins!(fn next_blocking(&mut self) -> Option<ConnectionEvent> = next;);

    /// Like [`next_blocking`](Self::next_blocking), giving up with `None` once
    /// `timeout` has passed without a change (none is lost).
    pub fn next_timeout_blocking(&mut self, timeout: Duration) -> Option<ConnectionEvent> {
        crate::blocking::block_on_until(self.next(), Some(Instant::now() + timeout)).flatten()
    }
}

impl Drop for ConnectionEvents {
    fn drop(&mut self) {
        self.shared.with(|s| s.connection.unsubscribe(self.id));
    }
}

impl LockClient {
    /// Where the connection stands now, as the binding last reported it.
    ///
    /// ```
    /// let config = lock_core::Config::new(std::time::Duration::from_secs(10), 7);
    /// let (locks, mut link) = zklock::pair(config);
    /// assert_eq!(locks.connection_state(), zklock::ConnectionState::Connecting);
    /// let connected = lock_core::SessionEvent::Connected { session_id: 7 };
    /// link.handle_session(connected, std::time::Instant::now());
    /// assert_eq!(
    ///     locks.connection_state(),
    ///     zklock::ConnectionState::Connected { session_id: 7 }
    /// );
    /// ```
    pub fn connection_state(&self) -> ConnectionState {
        self.shared().with(|s| s.connection.state())
    }

    /// A stream of the connection's changes from now on (read
    /// [`connection_state`](Self::connection_state) for where it stands first):
    /// suspended, reconnected on the same session, session lost, connected on a new
    /// session, closed. For the client as a whole, whatever locks are held; each
    /// lock also reports its own `Suspended` / `Resumed` / `Lost`.
    pub fn connection_events(&self) -> ConnectionEvents {
        let shared = self.inner.shared.clone();
        let id = shared.with(|s| s.connection.subscribe());
        ConnectionEvents { shared, id }
    }

    /// The checks of the settings of the servers the client was connected to,
    /// one per server (the latest), in the order first made: each server's
    /// settings (or why they could not be read) and their [`Hazard`](crate::Hazard)s for this
    /// session. The binding checks a server in the background after connecting
    /// to it, so a check may come a moment later (hazards also come as
    /// [`ConnectionEvent::ServerHazard`]).
    pub fn server_checks(&self) -> Vec<ServerCheck> {
        self.shared().with(|s| s.connection.checks())
    }
}
