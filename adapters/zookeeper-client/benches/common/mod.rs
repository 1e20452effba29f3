//! Helpers shared by the benches (`mod common;` in each): the server, `mntr`
//! counters, the bare zookeeper-client floor's connection, medians, knobs.

// Each bench uses a subset.
#![allow(dead_code)]

use lock_testkit::ZkServer;
use std::time::Duration;

/// A standalone server on loopback as every bench uses it: small log preallocation
/// steps (the default 64 MiB makes the first write slow).
pub fn start_server() -> ZkServer {
    ZkServer::builder()
        .config("preAllocSize", "1024")
        .start()
        .expect("starting ZooKeeper (lock-testkit)")
}

/// The server's packet counters: requests received (every request and ping of
/// every session, plus one per four-letter word) and packets sent (a reply to
/// each of those, plus every watch notification).
#[derive(Clone, Copy, Debug, Default)]
pub struct Packets {
    pub received: u64,
    pub sent: u64,
}

impl std::ops::Sub for Packets {
    type Output = Packets;
    fn sub(self, earlier: Packets) -> Packets {
        Packets {
            received: self.received - earlier.received,
            sent: self.sent - earlier.sent,
        }
    }
}

impl Packets {
    /// Packets the server sent that answer no request: watch notifications (and
    /// session events, none in these benches).
    pub fn notifications(self) -> u64 {
        self.sent.saturating_sub(self.received)
    }
}

/// Reads `zk_packets_received` / `zk_packets_sent`.
pub fn packets(server: &ZkServer) -> Packets {
    let m = server.mntr().expect("mntr");
    Packets {
        received: m
            .get_u64("zk_packets_received")
            .expect("zk_packets_received"),
        sent: m.get_u64("zk_packets_sent").expect("zk_packets_sent"),
    }
}

/// What one `mntr` adds to the counters it reads (measured, so a window between
/// two reads can subtract it).
pub fn mntr_overhead(server: &ZkServer) -> Packets {
    let a = packets(server);
    let b = packets(server);
    b - a
}

/// Counters over a window, less the closing `mntr`'s own packets.
pub fn window(before: Packets, after: Packets, overhead: Packets) -> Packets {
    let d = after - before;
    Packets {
        received: d.received.saturating_sub(overhead.received),
        sent: d.sent.saturating_sub(overhead.sent),
    }
}

/// `/proc/loadavg`'s first three fields.
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

pub fn env_or(key: &str, default: &str) -> String {
    std::env::var(key).unwrap_or_else(|_| default.to_owned())
}

pub fn env_usize(key: &str, default: usize) -> usize {
    env_or(key, &default.to_string())
        .parse()
        .unwrap_or_else(|_| panic!("{key}: not a number"))
}

pub fn env_list(key: &str, default: &str) -> Vec<usize> {
    env_or(key, default)
        .split(',')
        .map(|s| s.trim().parse().unwrap_or_else(|_| panic!("{key}")))
        .collect()
}

/// The median (the mean of the middle two of an even count).
pub fn median(values: &[f64]) -> f64 {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

pub fn median_duration(samples: &[Duration]) -> Duration {
    let secs: Vec<f64> = samples.iter().map(Duration::as_secs_f64).collect();
    Duration::from_secs_f64(median(&secs).max(0.0))
}

/// A bare zookeeper-client session with `TCP_NODELAY` set on its socket (through
/// lock-nodelay, as the binding does), so that the floor pipelines like the lock.
pub async fn bare_client(cluster: &str, session_timeout: Duration) -> zookeeper_client::Client {
    let client = zookeeper_client::Client::connector()
        .with_session_timeout(session_timeout)
        .connect(cluster)
        .await
        .expect("connecting the bare client");
    set_nodelay(cluster);
    client
}

/// `TCP_NODELAY` on every connection of this process to `cluster`.
pub fn set_nodelay(cluster: &str) {
    let peers = lock_nodelay::Peers::resolve(cluster).expect("resolving");
    lock_nodelay::apply(&peers).expect("TCP_NODELAY");
}
