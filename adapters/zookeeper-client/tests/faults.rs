//! Connection loss, partitions and session expiry against a real ZooKeeper server,
//! through fault proxies, under every runtime. A lost create reply, a short cut and
//! a partition past the session timeout, as every binding must ride them out, are
//! in the conformance suite (lock-conformance's `suite/faults.rs`, `suite/rounds.rs`).

mod common;

use common::peers::node_name;
use common::{connect, server, spawn, unique_path, Observer};
use lock_testkit::{Direction, FaultProxy};
use lock_zookeeper_client::{Connect, LockClient, LockEvent, LostReason};
use std::time::{Duration, Instant};

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

    /// A partition longer than the suspension grace but shorter than the session
    /// timeout: the holder reports `Lost(SuspendedTooLong)`; when the network heals
    /// the session turns out alive and the core deletes the stale node at once, so
    /// the next waiter gets the lock without waiting for the session to expire.
    async fn lost_after_grace_then_heal_deletes_stale_node(rt) {
        let session_timeout = Duration::from_secs(4);
        let grace = Duration::from_millis(500);
        let dir = unique_path("grace", &rt);
        let observer = Observer::connect(&server().connect_string()).await;
        let proxy = std::sync::Arc::new(FaultProxy::start(server().addr()).unwrap());
        let a = LockClient::builder(&proxy.connect_string())
            .session_timeout(session_timeout)
            .suspended_grace(grace)
            .runtime(rt.clone())
            .connect()
            .await
            .expect("connecting a lock client");
        let b = connect(&rt, &server().connect_string(), SESSION).await;
        let session = a.session_id();
        let held = a.mutex(dir.clone()).lock().await.unwrap();
        let waiter = {
            let (b, dir) = (b.clone(), dir.clone());
            spawn(&rt, async move { b.mutex(dir).lock().await.expect("lock after the stale node") })
        };
        observer.wait_children(&dir, 2).await;
        let cut_at = Instant::now();
        common::on_proxy(&proxy, FaultProxy::blackhole).await;
        assert_eq!(held.next_event().await, Some(LockEvent::Suspended));
        assert_eq!(held.next_event().await, Some(LockEvent::Lost(LostReason::SuspendedTooLong)));
        common::on_proxy(&proxy, FaultProxy::heal).await;
        let b_guard = waiter.await.unwrap();
        let freed = cut_at.elapsed();
        // Same session: the server never expired it; the adapter deleted the node.
        assert_eq!(a.session_id(), session);
        assert!(freed < session_timeout, "the stale node blocked for {freed:?}");
        a.wait_idle().await.unwrap();
        assert_eq!(observer.children(&dir).await, vec![node_name(b_guard.path())]);
        b_guard.release().await.unwrap();
        a.close().await;
        b.close().await;
    }
}
