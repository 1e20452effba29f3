//! TCP_NODELAY on the live connection: zookeeper-client (0.11.2) leaves Nagle's
//! algorithm on, and the binding turns it off (through lock-nodelay) after connecting
//! and after every reconnect, also to another server.
// lock-nodelay works on Linux only.
#![cfg(target_os = "linux")]

mod common;

use common::{connect, server};
use lock_nodelay::{connections, Connection, Peers};
use lock_testkit::FaultProxy;
use lock_zookeeper_client::LockClient;
use std::time::{Duration, Instant};

/// The process's connections to `proxy` (the client's, on the proxy's address).
fn through(proxy: &FaultProxy) -> Vec<Connection> {
    connections(&Peers::new([proxy.addr()])).expect("listing connections")
}

/// Waits until the only connection to `proxy` is a new one (not `old`) with
/// TCP_NODELAY, and returns it; fails after 10 s.
async fn wait_for_nodelay(proxy: &FaultProxy, old: Option<&Connection>) -> Connection {
    let deadline = Instant::now() + Duration::from_secs(10);
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
        common::sleep(Duration::from_millis(10)).await;
    }
}

/// Waits until the binding's check of the server's settings, a `conf` exchange
/// on a connection of its own right after connecting, is done: until then the
/// process has two connections to the server.
async fn wait_checked(client: &LockClient) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while client.server_checks().is_empty() {
        assert!(Instant::now() < deadline, "the server was never checked");
        common::sleep(Duration::from_millis(10)).await;
    }
}

async fn wait_connected(client: &LockClient) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !client.is_connected() {
        assert!(Instant::now() < deadline, "never reconnected");
        common::sleep(Duration::from_millis(10)).await;
    }
}

rt_tests! {
    /// zookeeper-client alone leaves Nagle on (when a release sets TCP_NODELAY,
    /// this fails: then lock-nodelay can go). The binding's connection has it off
    /// when `connect` returns, and again after the proxy cuts the connection.
    async fn set_after_connect_and_after_reconnect(rt) {
        // A plain zookeeper-client session, through a proxy of its own.
        let plain_proxy = FaultProxy::start(server().addr()).unwrap();
        let plain = zookeeper_client::Client::connector()
            .with_session_timeout(Duration::from_secs(10))
            .connect(&plain_proxy.connect_string())
            .await
            .unwrap();
        let plain_conns = through(&plain_proxy);
        assert_eq!(plain_conns.len(), 1, "{plain_conns:?}");
        assert!(
            !plain_conns[0].nodelay,
            "zookeeper-client now sets TCP_NODELAY itself: lock-nodelay is no longer needed"
        );

        let proxy = FaultProxy::start(server().addr()).unwrap();
        let client = connect(&rt, &proxy.connect_string(), Duration::from_secs(10)).await;
        // Set by the time `connect` returns.
        wait_checked(&client).await;
        let first = through(&proxy);
        assert_eq!(first.len(), 1, "{first:?}");
        assert!(first[0].nodelay, "after connect: {first:?}");

        // Cut: zookeeper-client reconnects (through the proxy) on a new socket.
        let accepted = proxy.accepted_connections();
        proxy.cut();
        let second = wait_for_nodelay(&proxy, Some(&first[0])).await;
        assert!(proxy.accepted_connections() > accepted);
        wait_connected(&client).await;
        assert_ne!(second.local, first[0].local);
        // The lock works on it.
        client.mutex("/zkc-tests/nodelay").lock().await.unwrap().release().await.unwrap();
        // The plain session was left alone (not a connection to our servers).
        assert!(!through(&plain_proxy)[0].nodelay);
        client.close().await;
        drop(plain);
    }

    /// With two servers in the connect string, losing the one in use moves the
    /// session to the other, on a socket that gets TCP_NODELAY too.
    async fn set_after_moving_to_another_server(rt) {
        // Two proxies in front of one server stand for two ensemble members.
        let a = FaultProxy::start(server().addr()).unwrap();
        let b = FaultProxy::start(server().addr()).unwrap();
        let cluster = format!("{},{}", a.connect_string(), b.connect_string());
        let client = connect(&rt, &cluster, Duration::from_secs(10)).await;
        wait_checked(&client).await;
        let (in_use, other) = match (through(&a).len(), through(&b).len()) {
            (1, 0) => (a, b),
            (0, 1) => (b, a),
            counts => panic!("expected one connection, through a or b: {counts:?}"),
        };
        assert!(through(&in_use)[0].nodelay, "after connect");
        // The member goes away for good (its port refuses connections).
        drop(in_use);
        let moved = wait_for_nodelay(&other, None).await;
        wait_connected(&client).await;
        assert!(moved.nodelay);
        client.mutex("/zkc-tests/nodelay-moved").lock().await.unwrap().release().await.unwrap();
        client.close().await;
    }
}
