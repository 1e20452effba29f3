//! What `zklock doctor` learns of one server of the connect string: each
//! fact as the server told it, or why it could not be learnt.

use super::{admin, Options};
use crate::usage::Server;
use lock_zookeeper_client::{four_letter_word_refused, ConfError, Hazard, ServerConf};
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

/// The four-letter words probed: read-only and cheap. Left out: `cons`,
/// `dump`, `wchc`, `wchp`, `reqs` (their answers grow with the load), `srst`,
/// `crst`, `stmk` (they change the server's state), `gtmk`.
pub(crate) const WORDS: [&str; 9] = [
    "ruok", "srvr", "stat", "conf", "envi", "mntr", "isro", "wchs", "dirs",
];

/// One server's findings.
pub(crate) struct ServerReport {
    /// `host:port` as the connect string has it.
    pub(crate) entry: String,
    /// Its address, or why it has none.
    pub(crate) addr: Result<SocketAddr, String>,
    /// Whether it answered a four-letter word or took a session; why not.
    pub(crate) reachable: Result<(), String>,
    /// Why no four-letter word was answered, when none was (on a TLS port,
    /// none is: they go over plain TCP).
    pub(crate) words_error: Option<String>,
    /// From `srvr`: `Mode:` (`None` when `srvr` is refused or unreachable).
    pub(crate) mode: Option<String>,
    /// From `srvr`: `Zookeeper version:`.
    pub(crate) version: Option<String>,
    /// The probed words the server answers.
    pub(crate) allowed: Vec<&'static str>,
    /// The probed words its `4lw.commands.whitelist` refuses.
    pub(crate) refused: Vec<&'static str>,
    /// From `conf`.
    pub(crate) conf: Result<ServerConf, ConfError>,
    /// From the AdminServer, when asked (`--admin-port`).
    pub(crate) admin: Option<Result<ServerConf, String>>,
    /// The session opened with the options given: negotiated timeout.
    pub(crate) session: Result<Session, String>,
    /// The hazards of that session on this server (by `conf`, else by the
    /// AdminServer's settings, which cannot show the lag one).
    pub(crate) hazards: Vec<Hazard>,
}

/// What a session with the options given showed.
pub(crate) struct Session {
    /// The session timeout the server granted.
    pub(crate) negotiated: Duration,
    /// `TCP_NODELAY` on our connection; `None`: not checkable here.
    pub(crate) nodelay: Option<bool>,
}

impl ServerReport {
    /// The settings the rules were judged on: `conf`'s, else the AdminServer's.
    pub(crate) fn settings(&self) -> Option<&ServerConf> {
        self.conf
            .as_ref()
            .ok()
            .or_else(|| self.admin.as_ref()?.as_ref().ok())
    }

    /// Whether `srvr` says the server is a standalone one (no lag rule).
    pub(crate) fn standalone(&self) -> bool {
        self.mode.as_deref() == Some("standalone")
    }
}

/// Checks `server`, one of the connect string's.
pub(crate) async fn check(options: &Options<'_>, server: &Server) -> ServerReport {
    let (entry, host, port) = (&server.text, server.host.as_str(), server.port);
    let mut report = ServerReport {
        entry: entry.clone(),
        addr: Err(String::new()),
        reachable: Err("not asked".into()),
        words_error: None,
        mode: None,
        version: None,
        allowed: Vec::new(),
        refused: Vec::new(),
        conf: Err(ConfError::Unreachable("not asked".into())),
        admin: None,
        session: Err("not opened".into()),
        hazards: Vec::new(),
    };
    let timeout = options.probe_timeout;
    let addrs: Vec<SocketAddr> = match (host, port).to_socket_addrs() {
        Ok(addrs) => addrs.collect(),
        Err(e) => {
            report.addr = Err(format!("cannot resolve {host}: {e}"));
            return report;
        }
    };
    // The first address that takes a connection (`localhost` may resolve to
    // ::1 first for a server listening on 127.0.0.1 only), else the first.
    let listening = addrs
        .iter()
        .filter(|_| addrs.len() > 1)
        .find(|addr| std::net::TcpStream::connect_timeout(addr, timeout).is_ok());
    let Some(&addr) = listening.or(addrs.first()) else {
        report.addr = Err(format!("{host} has no address"));
        return report;
    };
    report.addr = Ok(addr);
    for word in WORDS {
        // ZooKeeper answers every word it knows, if only with a refusal.
        let answer = lock_nodelay::four_letter_word(addr, word, timeout).and_then(|text| {
            if text.is_empty() {
                Err(std::io::Error::other("closed without an answer"))
            } else {
                Ok(text)
            }
        });
        if let Err(e) = &answer {
            if report.allowed.is_empty() && report.refused.is_empty() {
                report.words_error = Some(e.to_string());
                report.conf = Err(ConfError::Unreachable(e.to_string()));
                break;
            }
        }
        match &answer {
            Ok(text) if four_letter_word_refused(text) => report.refused.push(word),
            Ok(_) => report.allowed.push(word),
            Err(_) => {}
        }
        match word {
            "srvr" => {
                if let Ok(text) = &answer {
                    report.mode = field(text, "Mode").map(str::to_owned).or_else(|| {
                        text.contains("not currently serving")
                            .then(|| "not serving".to_owned())
                    });
                    report.version = field(text, "Zookeeper version").map(str::to_owned);
                }
            }
            "conf" => report.conf = ServerConf::from_answer(answer),
            _ => {}
        }
    }
    if let Some(why) = &report.words_error {
        // A TLS port answers no four-letter word, but may take a session.
        if options.conn.tls_ca.is_none() {
            report.reachable = Err(why.clone());
            return report;
        }
    }
    if let Some(port) = options.admin_port {
        let admin_addr = SocketAddr::new(addr.ip(), port);
        report.admin = Some(admin::configuration(admin_addr, timeout));
    }
    report.session = session(options, entry, addr).await;
    report.reachable = match (&report.words_error, &report.session) {
        (Some(why), Err(_)) => Err(why.clone()),
        _ => Ok(()),
    };
    if let Some(settings) = report.settings() {
        let timeout = match &report.session {
            Ok(session) => session.negotiated,
            Err(_) => settings.negotiate(options.session_timeout),
        };
        report.hazards = Hazard::check(settings, timeout);
    }
    report
}

/// The value of the `name: value` line of a `srvr` answer.
fn field<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(':').map(str::trim))
}

/// Opens a session on this one server with the options given: its negotiated
/// timeout and our connection's `TCP_NODELAY`.
async fn session(options: &Options<'_>, entry: &str, addr: SocketAddr) -> Result<Session, String> {
    let locks = crate::connect_to(
        options.conn,
        entry,
        Some(options.connect_timeout),
        // doctor creates no node.
        lock_zookeeper_client::NodeAcl::Open,
    )
    .await
    .map_err(|e| crate::explain::error(&e))?;
    let negotiated = locks.session_timeout();
    let nodelay = lock_nodelay::connections(&lock_nodelay::Peers::new([addr]))
        .ok()
        .and_then(|connections| connections.first().map(|c| c.nodelay));
    let _ = tokio::time::timeout(Duration::from_secs(5), locks.close()).await;
    Ok(Session {
        negotiated,
        nodelay,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn srvr_fields() {
        let srvr = "Zookeeper version: 3.8.0-abc, built on 2024-12-29 17:54 UTC\n\
                    Latency min/avg/max: 0/0.0/0\nMode: follower\nNode count: 5\n";
        assert_eq!(field(srvr, "Mode"), Some("follower"));
        assert_eq!(
            field(srvr, "Zookeeper version"),
            Some("3.8.0-abc, built on 2024-12-29 17:54 UTC")
        );
        assert_eq!(field(srvr, "Zxid"), None);
    }
}
