//! TCP_NODELAY on the live connection: the `zookeeper` crate (0.8.0) leaves Nagle's
//! algorithm on, and the binding turns it off (through lock-nodelay) after
//! connecting and after every reconnect, also to another server.
// lock-nodelay works on Linux only.
#![cfg(target_os = "linux")]

use lock_conformance::{shared_server, unique_path};
use lock_nodelay::{connections, Connection, Peers};
use lock_testkit::FaultProxy;
use lock_zookeeper::{Connect, LockClient};
use std::thread;
use std::time::{Duration, Instant};
use zookeeper::{WatchedEvent, ZooKeeper};

/// The process's connections to `proxy` (the client's, on the proxy's address).
fn through(proxy: &FaultProxy) -> Vec<Connection> {
    connections(&Peers::new([proxy.addr()])).expect("listing connections")
}

/// Waits until the only connection to `proxy` is a new one (not `old`) with
/// TCP_NODELAY, and returns it; fails after 20 s.
fn wait_for_nodelay(proxy: &FaultProxy, old: Option<&Connection>) -> Connection {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let now = through(proxy);
        if let [conn] = now.as_slice() {
            if conn.nodelay && old.map(|c| c.local) != Some(conn.local) {
                return *conn;
            }
        }
        assert!(
            Instant::now() < deadline,
            "no new connection with TCP_NODELAY to {}: {now:?}",
            proxy.addr()
        );
        thread::sleep(Duration::from_millis(10));
    }
}

/// Waits until the binding's check of the server's settings, a `conf` exchange
/// on a connection of its own right after connecting, is done: until then the
/// process has two connections to the server.
fn wait_checked(client: &LockClient) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while client.server_checks().is_empty() {
        assert!(Instant::now() < deadline, "the server was never checked");
        thread::sleep(Duration::from_millis(10));
    }
}

fn wait_connected(client: &LockClient) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !client.is_connected() {
        assert!(Instant::now() < deadline, "never reconnected");
        thread::sleep(Duration::from_millis(10));
    }
}

fn client(cluster: &str) -> LockClient {
    LockClient::builder(cluster)
        .session_timeout(Duration::from_secs(10))
        .connect()
        .expect("connect")
}

/// The crate alone leaves Nagle on (when a release sets TCP_NODELAY, this fails:
/// then lock-nodelay can go). The binding's connection has it off when `connect`
/// returns, and again after the proxy cuts the connection.
#[test]
fn set_after_connect_and_after_reconnect() {
    let plain_proxy = FaultProxy::start(shared_server().addr()).unwrap();
    let plain = ZooKeeper::connect(
        &plain_proxy.connect_string(),
        Duration::from_secs(10),
        |_: WatchedEvent| {},
    )
    .unwrap();
    plain.exists("/", false).unwrap();
    let plain_conns = through(&plain_proxy);
    assert_eq!(plain_conns.len(), 1, "{plain_conns:?}");
    assert!(
        !plain_conns[0].nodelay,
        "the zookeeper crate now sets TCP_NODELAY itself: lock-nodelay is no longer needed"
    );

    let proxy = FaultProxy::start(shared_server().addr()).unwrap();
    let client = client(&proxy.connect_string());
    wait_checked(&client);
    let first = through(&proxy);
    assert_eq!(first.len(), 1, "{first:?}");
    assert!(first[0].nodelay, "after connect: {first:?}");

    let accepted = proxy.accepted_connections();
    proxy.cut();
    let second = wait_for_nodelay(&proxy, Some(&first[0]));
    assert!(proxy.accepted_connections() > accepted);
    wait_connected(&client);
    assert_ne!(second.local, first[0].local);
    let path = unique_path("nodelay");
    client
        .mutex(path)
        .lock_blocking()
        .unwrap()
        .release_blocking()
        .unwrap();
    assert!(
        !through(&plain_proxy)[0].nodelay,
        "a plain session is left alone"
    );
    client.close_blocking();
    let _ = plain.close();
}

/// With two servers in the connect string, losing the one in use moves the session
/// to the other, on a socket that gets TCP_NODELAY too.
#[test]
fn set_after_moving_to_another_server() {
    // Two proxies in front of one server stand for two ensemble members.
    let a = FaultProxy::start(shared_server().addr()).unwrap();
    let b = FaultProxy::start(shared_server().addr()).unwrap();
    let client = client(&format!("{},{}", a.connect_string(), b.connect_string()));
    wait_checked(&client);
    let (in_use, other) = match (through(&a).len(), through(&b).len()) {
        (1, 0) => (a, b),
        (0, 1) => (b, a),
        counts => panic!("expected one connection, through a or b: {counts:?}"),
    };
    assert!(through(&in_use)[0].nodelay, "after connect");
    // The member goes away for good (its port refuses connections).
    drop(in_use);
    wait_for_nodelay(&other, None);
    wait_connected(&client);
    let path = unique_path("nodelay-moved");
    client
        .mutex(path)
        .lock_blocking()
        .unwrap()
        .release_blocking()
        .unwrap();
    client.close_blocking();
}
