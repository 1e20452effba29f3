//! A create lost with its connection before the server saw it, against a real
//! ZooKeeper server through a fault proxy, under every runtime. A lost create reply,
//! a short cut and a partition past the session timeout, as every binding must ride
//! them out, are in the conformance suite (lock-conformance's `suite/faults.rs`,
//! `suite/rounds.rs`); a hold lost past the grace whose stale node goes once the
//! session turns out alive is lock-core's (`core/tests/failures.rs`).

mod common;

use common::peers::node_name;
use common::{connect, server, spawn, unique_path, Observer};
use lock_testkit::{Direction, FaultProxy};
use std::time::Duration;

const SESSION: Duration = Duration::from_secs(10);

rt_tests! {
    /// The connection drops right after the create was sent, before the server saw
    /// it: the core finds no node of its attempt and creates it again. Still one node,
    /// acquired once, none left.
    async fn connection_loss_before_create_creates_once(rt) {
        let dir = unique_path("recreate", &rt);
        let observer = Observer::connect(&server().connect_string()).await;
        // The lock directory exists, so the first create goes straight to the lock node.
        observer.mkdir(&dir).await;
        let proxy = FaultProxy::start(server().addr()).expect("proxy");
        let client = connect(&rt, &proxy.connect_string(), SESSION).await;
        proxy.hold(Direction::Upstream);
        let lock = {
            let (client, dir) = (client.clone(), dir.clone());
            spawn(&rt, async move { client.mutex(dir).lock().await })
        };
        // The create (and listing) are sent: they are held in the proxy.
        proxy.wait_holding(Direction::Upstream);
        proxy.cut();
        let guard = lock.await.unwrap().expect("acquired after the reconnect");
        assert_eq!(observer.children(&dir).await, vec![node_name(guard.path())]);
        assert_eq!(client.stats().await.unwrap().acquired, 1);
        guard.release().await.unwrap();
        assert!(observer.children(&dir).await.is_empty());
        client.close().await;
    }
}
