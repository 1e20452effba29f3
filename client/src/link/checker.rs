//! [`ServerChecker`]: the binding's way to report the servers' settings into the
//! shared state, from a thread of its own.

use crate::server::check::{ServerCheck, ServerProbe};
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
    /// The connection it was made for (see [`report_probes`](Self::report_probes)).
    generation: u64,
}

impl std::fmt::Debug for ServerChecker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ServerChecker")
    }
}

impl ServerChecker {
    pub(crate) fn new(shared: Arc<Shared>) -> ServerChecker {
        let generation = shared.with(|s| s.connection.generation());
        ServerChecker { shared, generation }
    }

    /// Reports `server`'s answer to the `conf` four-letter word, or the I/O
    /// error of asking, judged against the client's negotiated session timeout.
    pub fn report(&self, server: SocketAddr, answer: std::io::Result<String>) {
        let check = ServerCheck::new(server, answer, self.shared.session_timeout());
        self.shared
            .with(|s| s.connection.handle_server_check(check, s.wakeups.ready()));
    }

    /// Reports what each server this process is connected to (of the session's
    /// connect string) answered to `srvr` and `conf`, asked after the connection
    /// this checker was made for was established: each `conf` is judged as by
    /// [`report`](Self::report), and what holds for every one of them (the
    /// session's server is one of them; which one is not known) is told to the
    /// core as the session's [`ServerRole`](lock_core::ServerRole) (see
    /// [`ServerProbe::role_of_all`]), unless the connection changed meanwhile.
    /// Make the checker once the link has been told of the connection
    /// (`SessionEvent::Connected`), then ask.
    pub fn report_probes(&self, probes: Vec<ServerProbe>) {
        let role = ServerProbe::role_of_all(&probes);
        for probe in probes {
            self.report(probe.server, probe.conf);
        }
        if let Some(role) = role {
            let generation = self.generation;
            self.shared.with(|s| {
                let now = s.now();
                // Told to the core only if the connection is still the one probed.
                if generation == s.connection.generation() {
                    s.core.learn_server(role, now);
                }
            });
        }
    }
}
