//! ZooKeeper's four-letter-word admin commands (`ruok`, `srvr`, `mntr`, ...).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use crate::error::{Error, Result};

const NOT_SERVING: &str = "not currently serving requests";

/// Sends a four-letter word to `addr` and returns the whole answer
/// (lock-nodelay's exchange, which zklock's bindings use too).
///
/// Connecting and the exchange each respect `timeout`; the whole exchange
/// takes at most about twice `timeout`. The server closes the connection after
/// answering. The server must whitelist the command (the testkit's servers
/// whitelist all of them).
pub fn four_letter_word(addr: SocketAddr, command: &str, timeout: Duration) -> Result<String> {
    lock_nodelay::four_letter_word(addr, command, timeout).map_err(|e| Error::FourLetterWord {
        command: command.to_string(),
        addr,
        reason: e.to_string(),
    })
}

/// A server's role, from the `Mode:` line of `srvr`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Mode {
    /// A standalone server.
    Standalone,
    /// The ensemble's leader.
    Leader,
    /// A follower in an ensemble.
    Follower,
    /// A non-voting observer.
    Observer,
    /// A read-only server (partitioned from its quorum, `readonlymode.enabled`).
    ReadOnly,
    /// The server is up but not serving requests (e.g. an ensemble member
    /// without a quorum, or still starting).
    NotServing,
    /// Anything else the server said.
    Other(String),
}

impl Mode {
    /// Whether the server is serving client requests in this mode.
    pub fn is_serving(&self) -> bool {
        matches!(
            self,
            Mode::Standalone | Mode::Leader | Mode::Follower | Mode::Observer | Mode::ReadOnly
        )
    }

    fn parse(word: &str) -> Mode {
        match word {
            "standalone" => Mode::Standalone,
            "leader" => Mode::Leader,
            "follower" => Mode::Follower,
            "observer" => Mode::Observer,
            "read-only" => Mode::ReadOnly,
            other => Mode::Other(other.to_string()),
        }
    }
}

/// The parsed answer to `srvr`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerStatus {
    /// The server's role.
    pub mode: Mode,
    /// `Zookeeper version:` (e.g. `3.8.0-..., built on ...`).
    pub version: Option<String>,
    /// `Zxid:`, the last processed transaction id.
    pub zxid: Option<u64>,
    /// `Node count:`, the number of znodes.
    pub node_count: Option<u64>,
    /// `Connections:`, open client connections (including the one asking).
    pub connections: Option<u64>,
    /// `Received:`, packets received.
    pub received: Option<u64>,
    /// `Sent:`, packets sent.
    pub sent: Option<u64>,
    /// The unparsed answer.
    pub raw: String,
}

impl ServerStatus {
    /// Parses the text of a `srvr` (or `stat`) answer. Never fails: what is
    /// missing stays `None`, and a server that is not serving yields
    /// [`Mode::NotServing`].
    pub fn parse(text: &str) -> ServerStatus {
        let field = |name: &str| {
            text.lines().find_map(|line| {
                line.strip_prefix(name)
                    .and_then(|rest| rest.strip_prefix(':'))
                    .map(str::trim)
            })
        };
        let number = |name: &str| field(name).and_then(|v| v.parse().ok());
        let mode = if text.contains(NOT_SERVING) {
            Mode::NotServing
        } else {
            match field("Mode") {
                Some(word) => Mode::parse(word),
                None => Mode::Other(text.trim().to_string()),
            }
        };
        ServerStatus {
            mode,
            version: field("Zookeeper version").map(str::to_string),
            zxid: field("Zxid").and_then(|v| {
                let hex = v.strip_prefix("0x").unwrap_or(v);
                u64::from_str_radix(hex, 16).ok()
            }),
            node_count: number("Node count"),
            connections: number("Connections"),
            received: number("Received"),
            sent: number("Sent"),
            raw: text.to_string(),
        }
    }
}

/// The parsed answer to `mntr`: metric name -> value, e.g.
/// `zk_packets_received` -> `"42"`, `zk_server_state` -> `"leader"`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Metrics {
    values: BTreeMap<String, String>,
}

impl Metrics {
    /// Parses `name<TAB>value` lines; other lines are ignored.
    pub fn parse(text: &str) -> Metrics {
        let values = text
            .lines()
            .filter_map(|line| {
                let (name, value) = line.split_once('\t')?;
                Some((name.trim().to_string(), value.trim().to_string()))
            })
            .collect();
        Metrics { values }
    }

    /// The raw value of a metric.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// A metric as an unsigned integer (counters such as `zk_packets_received`).
    pub fn get_u64(&self, name: &str) -> Option<u64> {
        self.get(name)?.parse().ok()
    }

    /// The number of metrics.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether there are no metrics.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

/// Turns a "not currently serving" answer into [`Error::NotServing`].
pub(crate) fn check_serving(addr: SocketAddr, answer: String) -> Result<String> {
    if answer.contains(NOT_SERVING) {
        Err(Error::NotServing { addr })
    } else {
        Ok(answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRVR: &str =
        "Zookeeper version: 3.8.0-${mvngit.commit.id}, built on 2024-12-29 17:54 UTC\n\
        Latency min/avg/max: 0/0.0/0\nReceived: 9\nSent: 8\nConnections: 1\nOutstanding: 0\n\
        Zxid: 0x10000002a\nMode: follower\nNode count: 5\n";

    #[test]
    fn parses_srvr() {
        let s = ServerStatus::parse(SRVR);
        assert_eq!(s.mode, Mode::Follower);
        assert_eq!(s.zxid, Some(0x1_0000_002a));
        assert_eq!(s.node_count, Some(5));
        assert_eq!(s.connections, Some(1));
        assert_eq!(s.received, Some(9));
        assert_eq!(s.sent, Some(8));
        assert!(s.version.unwrap().starts_with("3.8.0"));
        let s = ServerStatus::parse("This ZooKeeper instance is not currently serving requests\n");
        assert_eq!(s.mode, Mode::NotServing);
        assert!(!s.mode.is_serving());
    }

    #[test]
    fn parses_mntr() {
        let m = Metrics::parse(
            "zk_version\t3.8.0, built on 2024-12-29 17:54 UTC\nzk_avg_latency\t0.5\nzk_packets_received\t10\n",
        );
        assert_eq!(m.len(), 3);
        assert_eq!(m.get_u64("zk_packets_received"), Some(10));
        assert_eq!(
            m.get("zk_version"),
            Some("3.8.0, built on 2024-12-29 17:54 UTC")
        );
    }
}
