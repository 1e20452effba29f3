//! Helpers shared by the benches (`mod common;` in each): the server, its `mntr`
//! counters, a frame-counting proxy. What the fleet and the partition bench
//! share too (medians, knobs, `/proc`, the bare-client floor) is lock-testkit's
//! (`lock_testkit::measure`, `lock_testkit::floor`).

#![forbid(unsafe_code)]
// Each bench uses a subset.
#![allow(dead_code)]

use lock_testkit::ZkServer;
use std::time::Duration;

/// A standalone server on loopback as every bench uses it: small log preallocation
/// steps (the default 64 MiB makes the first write slow). lock-testkit runs the
/// JVM with the C1 compiler only (`-XX:TieredStopAtLevel=1`, quick to start);
/// `BENCH_SERVER_C2=1` lets the JVM use C2 as a production server does.
pub fn start_server() -> ZkServer {
    let mut builder = ZkServer::builder().config("preAllocSize", "1024");
    if std::env::var_os("BENCH_SERVER_C2").is_some_and(|v| !v.is_empty()) {
        builder = builder.jvm_arg("-XX:TieredStopAtLevel=4");
    }
    builder.start().expect("starting ZooKeeper (lock-testkit)")
}

/// The benches' runtime: tokio with 2 worker threads (the machine's cores in
/// BENCHMARKS.md's runs), timers and I/O on.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio")
}

/// The server's packet counters: requests received (every request and ping of
/// every session, plus one per four-letter word) and packets sent (a reply to
/// each of those, plus every watch notification).
#[derive(Clone, Copy, Debug, Default)]
pub struct Packets {
    pub received: u64,
    pub sent: u64,
    /// Watches triggered (one per session and path a change fired), the sum of
    /// `zk_sum_node_{created,deleted,changed,children}_watch_count`: the
    /// notifications the server queued. These matched the notifications decoded
    /// on the wire ([`Sniffer`]); `sent` minus `received` came out lower in herd
    /// drains (not traced why).
    pub fired: u64,
}

impl std::ops::Sub for Packets {
    type Output = Packets;
    fn sub(self, earlier: Packets) -> Packets {
        Packets {
            received: self.received - earlier.received,
            sent: self.sent - earlier.sent,
            fired: self.fired - earlier.fired,
        }
    }
}

/// Reads `zk_packets_received`, `zk_packets_sent` and the watches triggered.
pub fn packets(server: &ZkServer) -> Packets {
    let m = server.mntr().expect("mntr");
    let fired = ["created", "deleted", "changed", "children"]
        .iter()
        .map(|k| {
            m.get_u64(&format!("zk_sum_node_{k}_watch_count"))
                .unwrap_or(0)
        })
        .sum();
    Packets {
        received: m
            .get_u64("zk_packets_received")
            .expect("zk_packets_received"),
        sent: m.get_u64("zk_packets_sent").expect("zk_packets_sent"),
        fired,
    }
}

/// What one `mntr` adds to the counters it reads (measured, so a window between
/// two reads can subtract it).
pub fn mntr_overhead(server: &ZkServer) -> Packets {
    let a = packets(server);
    let b = packets(server);
    b - a
}

/// The server's `zk_watch_count`: watches set, summed over sessions and paths.
pub fn watch_count(server: &ZkServer) -> u64 {
    server
        .mntr()
        .expect("mntr")
        .get_u64("zk_watch_count")
        .expect("zk_watch_count")
}

/// Waits until the server holds `n` watches, then a little more for replies
/// still on their way.
pub async fn wait_watches(server: &ZkServer, n: u64) {
    while watch_count(server) < n {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
}

/// Waits until the server has read nothing but our own `mntr`s for 100 ms:
/// requests already sent (a queue being formed) are then all counted before a
/// window opens.
pub async fn wait_quiet(server: &ZkServer) {
    let overhead = mntr_overhead(server);
    let mut last = packets(server);
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = packets(server);
        if (now - last).received <= overhead.received {
            return;
        }
        last = now;
    }
}

/// A diagnostic TCP proxy that decodes ZooKeeper frames and counts requests by
/// operation and server packets by kind (reply, notification, ping reply): to
/// see what `mntr`'s totals are made of. Two threads per connection; every
/// frame is forwarded whole as soon as it is read.
pub struct Sniffer {
    addr: std::net::SocketAddr,
    counts: std::sync::Arc<std::sync::Mutex<std::collections::BTreeMap<String, u64>>>,
}

impl Sniffer {
    pub fn start(upstream: std::net::SocketAddr) -> Sniffer {
        use std::net::{TcpListener, TcpStream};
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().unwrap();
        let counts = std::sync::Arc::new(std::sync::Mutex::new(Default::default()));
        let shared = std::sync::Arc::clone(&counts);
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                let Ok(server) = TcpStream::connect(upstream) else {
                    continue;
                };
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                let (c2, s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                let (up, down) = (shared.clone(), shared.clone());
                std::thread::spawn(move || pump(client, server, true, up));
                std::thread::spawn(move || pump(s2, c2, false, down));
            }
        });
        Sniffer { addr, counts }
    }

    pub fn connect_string(&self) -> String {
        self.addr.to_string()
    }

    pub fn snapshot(&self) -> std::collections::BTreeMap<String, u64> {
        self.counts.lock().unwrap().clone()
    }

    /// What changed between two snapshots, as `name=count` pairs.
    pub fn diff(
        before: &std::collections::BTreeMap<String, u64>,
        after: &std::collections::BTreeMap<String, u64>,
    ) -> String {
        after
            .iter()
            .filter_map(|(k, v)| {
                let d = v - before.get(k).copied().unwrap_or(0);
                (d > 0).then(|| format!("{k}={d}"))
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

fn pump(
    mut from: std::net::TcpStream,
    mut to: std::net::TcpStream,
    requests: bool,
    counts: std::sync::Arc<std::sync::Mutex<std::collections::BTreeMap<String, u64>>>,
) {
    use std::io::{Read, Write};
    let mut first = true;
    loop {
        let mut len = [0u8; 4];
        if from.read_exact(&mut len).is_err() {
            break;
        }
        let n = i32::from_be_bytes(len).max(0) as usize;
        let mut body = vec![0u8; n];
        if from.read_exact(&mut body).is_err() {
            break;
        }
        let int = |at: usize| {
            body.get(at..at + 4)
                .map(|b| i32::from_be_bytes(b.try_into().unwrap()))
        };
        // The first frame each way is the session handshake (no header).
        let kind = if first {
            (if requests { "connect" } else { "connected" }).to_owned()
        } else if requests {
            op_name(int(4).unwrap_or(0))
        } else {
            match int(0) {
                Some(-1) => "notification".to_owned(),
                Some(-2) => "ping-reply".to_owned(),
                _ => "reply".to_owned(),
            }
        };
        first = false;
        *counts.lock().unwrap().entry(kind).or_default() += 1;
        if to.write_all(&len).is_err() || to.write_all(&body).is_err() {
            break;
        }
    }
    let _ = to.shutdown(std::net::Shutdown::Both);
}

fn op_name(op: i32) -> String {
    match op {
        1 => "create".into(),
        2 => "delete".into(),
        3 => "exists".into(),
        4 => "getData".into(),
        5 => "setData".into(),
        8 => "getChildren".into(),
        11 => "ping".into(),
        12 => "getChildren2".into(),
        13 => "check".into(),
        14 => "multi".into(),
        15 => "create2".into(),
        17 => "checkWatches".into(),
        18 => "removeWatches".into(),
        101 => "setWatches".into(),
        105 => "setWatches2".into(),
        -11 => "closeSession".into(),
        other => format!("op{other}"),
    }
}
