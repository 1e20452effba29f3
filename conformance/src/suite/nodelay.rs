//! TCP_NODELAY on the binding's live connection: neither ZooKeeper client crate
//! the bindings use sets it, so Nagle's algorithm would hold the second of two
//! pipelined requests for a round trip; each binding turns it off (through
//! lock-nodelay) after connecting and after every reconnect, also to another
//! server, and on no socket but its own. Linux only, like lock-nodelay.

use super::*;
use crate::ZkAdmin;
use lock_nodelay::{connections, Connection, Peers};
use lock_testkit::FaultProxy;

/// The process's connections to `proxy`.
fn through(proxy: &FaultProxy) -> Vec<Connection> {
    connections(&Peers::new([proxy.addr()])).expect("listing connections")
}

/// Waits until the only connection to `proxy` is a new one (not `old`) with
/// TCP_NODELAY, and returns it.
fn wait_for_nodelay(proxy: &FaultProxy, old: Option<&Connection>) -> Connection {
    wait_until(
        "a new connection with TCP_NODELAY",
        SHORT,
        || match through(proxy).as_slice() {
            [conn] if conn.nodelay && old.map(|c| c.local) != Some(conn.local) => Some(*conn),
            _ => None,
        },
    )
}

/// A client of the binding at `cluster`, once its check of the server's settings
/// (a `conf` exchange on a connection of its own, right after connecting) is
/// done: until then the process has two connections to the server.
fn checked_client(b: &Suite, cluster: &str) -> LockClient {
    let client = b.client_at(cluster, BYSTANDER_SESSION_TIMEOUT);
    wait_until("the server's check", SHORT, || {
        (!client.server_checks().is_empty()).then_some(())
    });
    client
}

fn wait_connected(client: &LockClient) {
    wait_until("reconnected", SHORT, || client.is_connected().then_some(()));
}

fn lock_once(b: &Suite, client: &LockClient, path: &str) {
    let guard = lock(b, client, Kind::Mutex, path);
    b.release(guard).expect("release");
}

/// The binding's connection has TCP_NODELAY when `connect` returns, and again
/// after the proxy cuts it, on the new socket; a session of the `zookeeper` crate
/// in the same process keeps Nagle's algorithm (the binding touches no socket of
/// another client; and that crate, lock-zookeeper's, still does not set the
/// option itself).
pub fn set_after_connect_and_after_reconnect(b: &Suite) {
    let plain_proxy = proxy_to_shared(b);
    let _plain = ZkAdmin::connect(&plain_proxy.connect_string());
    let plain = through(&plain_proxy);
    assert_eq!(plain.len(), 1, "{plain:?}");
    assert!(
        !plain[0].nodelay,
        "the zookeeper crate now sets TCP_NODELAY itself: lock-zookeeper needs lock-nodelay no more"
    );

    let proxy = proxy_to_shared(b);
    let client = checked_client(b, &proxy.connect_string());
    let first = through(&proxy);
    assert_eq!(first.len(), 1, "{}: {first:?}", b.name());
    assert!(first[0].nodelay, "{}: after connect: {first:?}", b.name());

    let accepted = proxy.accepted_connections();
    proxy.cut();
    let second = wait_for_nodelay(&proxy, Some(&first[0]));
    assert!(proxy.accepted_connections() > accepted);
    wait_connected(&client);
    assert_ne!(second.local, first[0].local);
    lock_once(b, &client, &unique_path("nodelay"));
    assert!(
        !through(&plain_proxy)[0].nodelay,
        "{}: set on another client's socket",
        b.name()
    );
    b.close(&client);
}

/// With two servers in the connect string, losing the one in use for good (its
/// port refuses connections) moves the session to the other, on a socket with
/// TCP_NODELAY too.
pub fn set_after_moving_to_another_server(b: &Suite) {
    // Two proxies in front of one server stand for two ensemble members.
    let (x, y) = (proxy_to_shared(b), proxy_to_shared(b));
    let client = checked_client(b, &format!("{},{}", x.connect_string(), y.connect_string()));
    let (in_use, other) = match (through(&x).len(), through(&y).len()) {
        (1, 0) => (x, y),
        (0, 1) => (y, x),
        counts => panic!("{}: one connection, through x or y: {counts:?}", b.name()),
    };
    assert!(through(&in_use)[0].nodelay, "{}: after connect", b.name());
    drop(in_use);
    wait_for_nodelay(&other, None);
    wait_connected(&client);
    lock_once(b, &client, &unique_path("nodelay-moved"));
    b.close(&client);
}
