//! ZooKeeper's four-letter-word admin commands (`ruok`, `srvr`, `mntr`, ...).

use std::collections::BTreeMap;
use std::net::SocketAddr;

use crate::error::{Error, Result};

const NOT_SERVING: &str = "not currently serving requests";

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

    /// Without a `Mode:` line, the whole answer is the mode's text.
    pub(crate) fn of_srvr(text: &str) -> Mode {
        if text.contains(NOT_SERVING) {
            return Mode::NotServing;
        }
        let word = text.lines().find_map(|line| line.strip_prefix("Mode:"));
        match word.map(str::trim) {
            Some("standalone") => Mode::Standalone,
            Some("leader") => Mode::Leader,
            Some("follower") => Mode::Follower,
            Some("observer") => Mode::Observer,
            Some("read-only") => Mode::ReadOnly,
            Some(other) => Mode::Other(other.to_string()),
            None => Mode::Other(text.trim().to_string()),
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
    pub(crate) fn parse(text: &str) -> Metrics {
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

    #[test]
    fn parses_srvr() {
        let srvr = "Zookeeper version: 3.8.0-${mvngit.commit.id}, built on 2024-12-29\n\
                    Zxid: 0x10000002a\nMode: follower\nNode count: 5\n";
        assert_eq!(Mode::of_srvr(srvr), Mode::Follower);
        let not_serving = "This ZooKeeper instance is not currently serving requests\n";
        assert_eq!(Mode::of_srvr(not_serving), Mode::NotServing);
        assert!(!Mode::NotServing.is_serving());
    }

    #[test]
    fn parses_mntr() {
        let m = Metrics::parse(
            "zk_version\t3.8.0, built on 2024-12-29 17:54 UTC\nzk_avg_latency\t0.5\nzk_packets_received\t10\n",
        );
        assert_eq!(m.get_u64("zk_packets_received"), Some(10));
        assert_eq!(
            m.get("zk_version"),
            Some("3.8.0, built on 2024-12-29 17:54 UTC")
        );
    }
}
