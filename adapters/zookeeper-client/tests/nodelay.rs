//! zookeeper-client (0.11.2) leaves Nagle's algorithm on: why the binding sets
//! TCP_NODELAY (through lock-nodelay) on its connections. That it does, after
//! connecting and after every reconnect, also to another server, is in the
//! conformance suite (lock-conformance's `suite/nodelay.rs`).
// lock-nodelay works on Linux only.
#![cfg(target_os = "linux")]

mod common;

use common::server;
use lock_nodelay::{connections, Peers};
use lock_testkit::FaultProxy;
use std::time::Duration;

/// When a release of zookeeper-client sets TCP_NODELAY, this fails: then
/// lock-nodelay can go. (The crate's sockets do not depend on the runtime: one
/// runtime is enough.)
#[test]
fn zookeeper_client_alone_leaves_nagle_on() {
    common::run_tokio(|_| async {
        let proxy = FaultProxy::start(server().addr()).unwrap();
        let plain = zookeeper_client::Client::connector()
            .with_session_timeout(Duration::from_secs(10))
            .connect(&proxy.connect_string())
            .await
            .unwrap();
        let conns = connections(&Peers::new([proxy.addr()])).expect("listing connections");
        assert_eq!(conns.len(), 1, "{conns:?}");
        assert!(
            !conns[0].nodelay,
            "zookeeper-client now sets TCP_NODELAY itself: lock-nodelay is no longer needed"
        );
        drop(plain);
    });
}
