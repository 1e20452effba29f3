//! Checking the settings of the servers a client is connected to: the
//! [`ServerCheck`]s a binding reports through a
//! [`ServerChecker`](crate::ServerChecker), after asking each server for its
//! `conf` in the background.

use crate::server::conf::{ConfError, ServerConf};
use crate::server::hazard::Hazard;
use std::net::SocketAddr;
use std::time::Duration;

/// One check of a server's settings, from
/// [`LockClient::server_checks`](crate::LockClient::server_checks).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerCheck {
    /// The server's address.
    pub server: SocketAddr,
    /// Its settings, or why they could not be read (most often
    /// [`ConfError::Refused`]: ZooKeeper 3.8 allows only `srvr` unless
    /// `4lw.commands.whitelist` says more). Nothing is guessed.
    pub conf: Result<ServerConf, ConfError>,
    /// The hazards of the session on this server; empty when the settings are
    /// safe or unknown.
    pub hazards: Vec<Hazard>,
}

impl ServerCheck {
    /// Judges `server`'s answer to `conf` (or the I/O error of asking) for a
    /// session with timeout `session_timeout`.
    ///
    /// ```
    /// use std::time::Duration;
    /// let server = "127.0.0.1:2181".parse().unwrap();
    /// let answer = Ok("tickTime=2000\nsyncLimit=5\nminSessionTimeout=4000\n\
    ///                  maxSessionTimeout=40000\n".to_owned());
    /// let check = zklock::ServerCheck::new(server, answer, Duration::from_secs(20));
    /// assert!(check.conf.is_ok() && check.hazards.is_empty());
    /// ```
    pub fn new(
        server: SocketAddr,
        answer: std::io::Result<String>,
        session_timeout: Duration,
    ) -> ServerCheck {
        let conf = ServerConf::from_answer(answer);
        let hazards = match &conf {
            Ok(conf) => Hazard::check(conf, session_timeout),
            Err(_) => Vec::new(),
        };
        ServerCheck {
            server,
            conf,
            hazards,
        }
    }
}
