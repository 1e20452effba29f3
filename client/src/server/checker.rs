//! [`ServerChecker`]: the binding's way to report the servers' settings into the
//! shared state, from a thread of its own.

use crate::server::check::ServerCheck;
use crate::shared::Shared;
use std::net::SocketAddr;
use std::sync::Arc;

/// Where a binding reports the settings of the servers it connects to, from
/// [`Link::server_checker`](crate::Link::server_checker): `Send`, for the
/// background thread that asks (a check must never hold up lock operations).
/// Each report becomes a [`ServerCheck`]; its new hazards become
/// [`ConnectionEvent::ServerHazard`](crate::ConnectionEvent::ServerHazard)s and
/// `tracing` warnings.
#[derive(Clone)]
pub struct ServerChecker {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for ServerChecker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ServerChecker")
    }
}

impl ServerChecker {
    pub(crate) fn new(shared: Arc<Shared>) -> ServerChecker {
        ServerChecker { shared }
    }

    /// Reports `server`'s answer to the `conf` four-letter word, or the I/O
    /// error of asking, judged against the client's negotiated session timeout.
    pub fn report(&self, server: SocketAddr, answer: std::io::Result<String>) {
        let check = ServerCheck::new(server, answer, self.shared.session_timeout());
        self.shared.with_quiet(|s| s.server_checked(check));
    }
}
