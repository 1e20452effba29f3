//! Why a ZooKeeper server cannot be reached: a probe of each server of a connect
//! string (a TCP connection, then `srvr`, then a TLS hello if `srvr` got no
//! answer or an empty one), and the one wording of what each did, for every binding and the CLI.
//!
//! The bindings probe beside a first connect that has not succeeded at once, to
//! give up in about a round trip when no server can ever give a session
//! (nothing listens, no such host, not ZooKeeper, TLS on one side only) instead
//! of waiting out the connect timeout, and after a failed connect, to say why.

use crate::Peers;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// How long a probe waits for a TCP connection, and again for an answer.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// What one server's port did when probed ([`probe_all`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reach {
    /// It answered as a ZooKeeper server, in the protocol the client speaks.
    ZooKeeper,
    /// Refused (nothing listens there).
    Refused,
    /// The host name does not resolve (the resolver's reason).
    Unresolved(String),
    /// No TCP connection within [`PROBE_TIMEOUT`] (a firewall, a host down).
    Silent,
    /// A TCP connection, then no answer within [`PROBE_TIMEOUT`].
    NoAnswer,
    /// It answered something else than ZooKeeper, or closed the connection
    /// without a word.
    NotZooKeeper,
    /// It speaks TLS and the client does not.
    TlsExpected,
    /// The client speaks TLS and it answered ZooKeeper in plain text.
    PlainText,
    /// Another network error.
    Failed(String),
}

impl Reach {
    /// Whether this server can never give the client a session as things are
    /// (retrying within the connect timeout would not help).
    pub fn is_definite(&self) -> bool {
        matches!(
            self,
            Reach::Refused
                | Reach::Unresolved(_)
                | Reach::NotZooKeeper
                | Reach::TlsExpected
                | Reach::PlainText
        )
    }
}

impl std::fmt::Display for Reach {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reach::ZooKeeper => f.write_str("answers as a ZooKeeper server"),
            Reach::Refused => f.write_str("connection refused (nothing listens there)"),
            Reach::Unresolved(e) => write!(f, "cannot resolve the host: {e}"),
            Reach::Silent => write!(f, "no answer within {PROBE_TIMEOUT:?}"),
            Reach::NoAnswer => write!(
                f,
                "accepts TCP connections but gave no ZooKeeper session \
                 (no answer within {PROBE_TIMEOUT:?}; overloaded?)"
            ),
            Reach::NotZooKeeper => f.write_str(
                "accepts TCP connections but does not answer as ZooKeeper \
                 (not a ZooKeeper server? too many connections from this host?)",
            ),
            Reach::TlsExpected => f.write_str("speaks TLS (connect with TLS options)"),
            Reach::PlainText => f.write_str("answers ZooKeeper in plain text, not TLS"),
            Reach::Failed(e) => f.write_str(e),
        }
    }
}

/// Probes every server of `connect_string` at once (one thread each), `tls`
/// saying whether the client speaks TLS; each server as written (`host:port`)
/// with what it did. Blocking: at most about 3 [`PROBE_TIMEOUT`]s.
///
/// ```no_run
/// for (server, reach) in lock_nodelay::probe_all("127.0.0.1:1,zk2:2181/app", false) {
///     println!("{server}: {reach}");
/// }
/// ```
pub fn probe_all(connect_string: &str, tls: bool) -> Vec<(String, Reach)> {
    let hosts = Peers::hosts(connect_string);
    std::thread::scope(|s| {
        let probes: Vec<_> = hosts
            .iter()
            .map(|host| {
                s.spawn(move || match host {
                    Ok((name, port)) if name.contains(':') => {
                        (format!("[{name}]:{port}"), probe(name, *port, tls))
                    }
                    Ok((name, port)) => (format!("{name}:{port}"), probe(name, *port, tls)),
                    Err(entry) => (entry.to_string(), Reach::Failed("not host:port".into())),
                })
            })
            .collect();
        probes
            .into_iter()
            .map(|p| p.join().expect("a probe does not panic"))
            .collect()
    })
}

/// One server: every address of `host` until one accepts.
fn probe(host: &str, port: u16, tls: bool) -> Reach {
    let addrs: Vec<SocketAddr> = match (host, port).to_socket_addrs() {
        Ok(addrs) => addrs.collect(),
        Err(e) => return Reach::Unresolved(e.to_string()),
    };
    if addrs.is_empty() {
        return Reach::Unresolved("no address".to_owned());
    }
    let mut outcome = Reach::Refused;
    for addr in addrs {
        // The newline (as `echo srvr | nc` sends it) makes 5 bytes, a TLS record
        // header's length: a TLS port then closes at once instead of waiting.
        match exchange(addr, b"srvr\n") {
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {}
            Err(e) if e.kind() == io::ErrorKind::TimedOut => outcome = Reach::Silent,
            Err(e) => outcome = Reach::Failed(e.to_string()),
            Ok(answer) => return judge(addr, answer, tls),
        }
    }
    outcome
}

/// What the answer to `srvr` from `addr` says (asking again with a TLS hello
/// when it was silence).
fn judge(addr: SocketAddr, srvr: Option<Vec<u8>>, tls: bool) -> Reach {
    let Some(answer) = srvr else {
        return if answers_tls(addr) {
            tls_reach(tls)
        } else {
            Reach::NoAnswer
        };
    };
    let text = String::from_utf8_lossy(&answer).to_ascii_lowercase();
    // An answer, or the refusal of a word left out of `4lw.commands.whitelist`.
    // A port with `client.portUnification` speaks both: TLS if it answers a hello.
    if text.contains("zookeeper") || text.contains("whitelist") {
        return if tls && !answers_tls(addr) {
            Reach::PlainText
        } else {
            Reach::ZooKeeper
        };
    }
    if speaks_tls(&answer) || (answer.is_empty() && answers_tls(addr)) {
        return tls_reach(tls);
    }
    Reach::NotZooKeeper
}

/// Whether `addr` answers a TLS hello in TLS.
fn answers_tls(addr: SocketAddr) -> bool {
    matches!(exchange(addr, CLIENT_HELLO), Ok(Some(hello)) if speaks_tls(&hello))
}

/// Whether `bytes` start with a TLS record (a handshake or an alert).
fn speaks_tls(bytes: &[u8]) -> bool {
    matches!(bytes, [0x15 | 0x16, 0x03, ..])
}

/// A server that speaks TLS, to a client that does (`tls`) or not.
fn tls_reach(tls: bool) -> Reach {
    if tls {
        Reach::ZooKeeper
    } else {
        Reach::TlsExpected
    }
}

/// Connects to `addr`, sends `bytes` and reads until the server closes (or 4 KiB
/// came): `None` when nothing came within [`PROBE_TIMEOUT`]; the connect's error.
fn exchange(addr: SocketAddr, bytes: &[u8]) -> io::Result<Option<Vec<u8>>> {
    let mut stream = TcpStream::connect_timeout(&addr, PROBE_TIMEOUT)?;
    let deadline = Instant::now() + PROBE_TIMEOUT;
    if stream.write_all(bytes).is_err() {
        return Ok(Some(Vec::new()));
    }
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    while answer.len() < buf.len() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || stream.set_read_timeout(Some(left)).is_err() {
            break;
        }
        match stream.read(&mut buf) {
            Ok(0) => return Ok(Some(answer)),
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            // A reset after some bytes, or at once: what came is the answer.
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return Ok(Some(answer)),
            Err(_) => break,
        }
    }
    Ok((!answer.is_empty()).then_some(answer))
}

/// A TLS 1.2 ClientHello (two suites, no extensions): any TLS server answers
/// it with a handshake or an alert record, both starting `0x16`/`0x15, 0x03`.
const CLIENT_HELLO: &[u8] = &[
    0x16, 0x03, 0x01, 0x00, 0x2f, // record: handshake, 47 bytes
    0x01, 0x00, 0x00, 0x2b, // ClientHello, 43 bytes
    0x03, 0x03, // TLS 1.2
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26,
    27, 28, 29, 30, 31, 32,   // random
    0x00, // no session id
    0x00, 0x04, 0xc0, 0x2f, 0x13, 0x01, // two cipher suites
    0x01, 0x00, // null compression
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hello_is_well_formed() {
        assert_eq!(CLIENT_HELLO.len(), 5 + 0x2f);
        assert_eq!(CLIENT_HELLO.len(), 5 + 4 + 0x2b);
    }
}
