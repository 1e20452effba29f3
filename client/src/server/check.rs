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

/// What one server answered to the `srvr` and `conf` four-letter words (or the
/// I/O errors of asking), for [`ServerChecker::report_probes`](crate::ServerChecker::report_probes).
#[derive(Debug)]
#[non_exhaustive]
pub struct ServerProbe {
    /// The server's address.
    pub server: SocketAddr,
    /// Its answer to `srvr` (allowed by ZooKeeper's default whitelist): its
    /// `Mode`.
    pub srvr: std::io::Result<String>,
    /// Its answer to `conf` (often refused): its `tickTime`.
    pub conf: std::io::Result<String>,
}

impl ServerProbe {
    /// A server's answers.
    pub fn new(
        server: SocketAddr,
        srvr: std::io::Result<String>,
        conf: std::io::Result<String>,
    ) -> ServerProbe {
        ServerProbe { server, srvr, conf }
    }

    /// Probes from each server's answers to `srvr` then `conf`, in that order
    /// (as `lock_nodelay::ask_connected_servers_all_after` gives them for the
    /// words `["srvr", "conf"]`); a missing answer counts as unreachable.
    pub fn from_answers(all: Vec<(SocketAddr, Vec<std::io::Result<String>>)>) -> Vec<ServerProbe> {
        all.into_iter()
            .map(|(server, answers)| {
                let mut answers = answers.into_iter();
                let mut next = || {
                    answers
                        .next()
                        .unwrap_or_else(|| Err(std::io::Error::other("not asked")))
                };
                let srvr = next();
                let conf = next();
                ServerProbe::new(server, srvr, conf)
            })
            .collect()
    }

    /// The server's `Mode` line in its `srvr` answer (`standalone`, `leader`,
    /// `follower`, `observer`, `read-only`), if it answered.
    pub fn mode(&self) -> Option<&str> {
        let answer = self.srvr.as_ref().ok()?;
        answer
            .lines()
            .find_map(|line| line.strip_prefix("Mode:"))
            .map(str::trim)
    }

    /// What this answer alone tells of the server: standalone (`Mode:
    /// standalone`), or a member of an ensemble (leader, follower or observer)
    /// whose `conf` gave its `tickTime`; nothing otherwise (`conf` refused, a
    /// read-only or unreachable server).
    pub fn role(&self) -> Option<lock_core::ServerRole> {
        match self.mode()? {
            "standalone" => Some(lock_core::ServerRole::Standalone),
            "leader" | "follower" | "observer" => {
                let conf = ServerConf::parse(self.conf.as_deref().ok()?).ok()?;
                conf.sync_limit?;
                Some(lock_core::ServerRole::Member {
                    tick_time: conf.tick_time,
                })
            }
            _ => None,
        }
    }

    /// What holds for every server of `probes` (the session's server is one of
    /// them, which one is not known): standalone if all are; a member with the
    /// longest of their ticks if all are members with a known tick; `None` when
    /// there is no probe or they disagree (the conservative bound then applies).
    ///
    /// ```
    /// use zklock::ServerProbe;
    /// use std::time::Duration;
    /// let server = "127.0.0.1:2181".parse().unwrap();
    /// let srvr = Ok("Zookeeper version: 3.8.0\nMode: follower\nNode count: 5\n".to_owned());
    /// let conf = Ok("tickTime=200\nminSessionTimeout=400\nmaxSessionTimeout=4000\n\
    ///                syncLimit=5\n".to_owned());
    /// let role = ServerProbe::role_of_all(&[ServerProbe::new(server, srvr, conf)]);
    /// assert_eq!(role, Some(zklock::ServerRole::Member { tick_time: Duration::from_millis(200) }));
    /// ```
    pub fn role_of_all(probes: &[ServerProbe]) -> Option<lock_core::ServerRole> {
        use lock_core::ServerRole;
        let mut all = None;
        for probe in probes {
            all = match (all, probe.role()?) {
                (None, role) => Some(role),
                (Some(ServerRole::Standalone), ServerRole::Standalone) => {
                    Some(ServerRole::Standalone)
                }
                (
                    Some(ServerRole::Member { tick_time: a }),
                    ServerRole::Member { tick_time: b },
                ) => Some(ServerRole::Member {
                    tick_time: a.max(b),
                }),
                _ => return None,
            };
        }
        all
    }
}

/// A copy of an answer (an I/O error keeps its kind and text).
#[cfg(test)]
mod tests {
    use super::*;
    use lock_core::ServerRole;

    const CONF: &str = "tickTime=100\nminSessionTimeout=200\nmaxSessionTimeout=60000\n\
                        initLimit=10\nsyncLimit=5\n";

    fn probe(mode: &str, conf: std::io::Result<String>) -> ServerProbe {
        ServerProbe::new(
            "127.0.0.1:1".parse().unwrap(),
            Ok(format!(
                "Zookeeper version: 3.8.0\nLatency min/avg/max: 0/0.0/0\nMode: {mode}\n"
            )),
            conf,
        )
    }

    #[test]
    fn roles_from_answers() {
        let refused =
            || Ok("conf is not executed because it is not in the whitelist.\n".to_owned());
        assert_eq!(
            probe("standalone", refused()).role(),
            Some(ServerRole::Standalone)
        );
        assert_eq!(
            probe("leader", Ok(CONF.into())).role(),
            Some(ServerRole::Member {
                tick_time: Duration::from_millis(100)
            })
        );
        // A member whose tick is unknown, a read-only server, an unreachable one:
        // nothing.
        assert_eq!(probe("follower", refused()).role(), None);
        assert_eq!(probe("read-only", Ok(CONF.into())).role(), None);
        let unreachable = ServerProbe::new(
            "127.0.0.1:1".parse().unwrap(),
            Err(std::io::Error::other("refused")),
            Ok(CONF.into()),
        );
        assert_eq!(unreachable.role(), None);
    }

    #[test]
    fn what_holds_for_every_connected_server() {
        let member = |tick: &str| probe("follower", Ok(CONF.replace("100", tick)));
        assert_eq!(ServerProbe::role_of_all(&[]), None);
        assert_eq!(
            ServerProbe::role_of_all(&[member("100"), member("300")]),
            Some(ServerRole::Member {
                tick_time: Duration::from_millis(300)
            })
        );
        let standalone = || probe("standalone", Ok(String::new()));
        assert_eq!(
            ServerProbe::role_of_all(&[standalone(), standalone()]),
            Some(ServerRole::Standalone)
        );
        assert_eq!(
            ServerProbe::role_of_all(&[standalone(), member("100")]),
            None
        );
        assert_eq!(
            ServerProbe::role_of_all(&[standalone(), probe("follower", Ok(String::new()))]),
            None
        );
    }
}
