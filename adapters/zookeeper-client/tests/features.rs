//! Crash-detecting sections and fenced writes against a real ZooKeeper server, under
//! every runtime, where they need this binding's proxies (a reply held back). What
//! every binding must do (fenced writes, crashes in sections, lock-delay, the break's
//! record, revocation, leases, elections) is in the conformance suite
//! (lock-conformance's `suite/guarded.rs`, `suite/revocation.rs`, `suite/elections.rs`).

mod common;

use common::{connect, server, spawn, unique_path, Observer};
use lock_testkit::{Direction, FaultProxy};
use lock_zookeeper_client::{FencedError, LockEvent, LostReason, Writes};
use std::sync::Arc;
use std::time::Duration;
use zookeeper_client::{Acls, CreateMode};

const SESSION: Duration = Duration::from_secs(10);
const MARKER: &str = "zkl-section";

rt_tests! {
    /// A section call whose request dies with the connection goes on after the
    /// reconnect: `open_section` returns once the marker is written, the guard having
    /// been suspended and resumed meanwhile; a clean release then removes it.
    async fn section_call_survives_a_connection_loss(rt) {
        let dir = unique_path("section-cut", &rt);
        let zk = Observer::connect(&server().connect_string()).await;
        let proxy = Arc::new(FaultProxy::start(server().addr()).expect("proxy"));
        let a = connect(&rt, &proxy.connect_string(), SESSION).await;
        let guard = a.mutex(dir.clone()).detect_crashes().lock().await.unwrap();
        proxy.hold(Direction::Upstream);
        let result = {
            let mut open = std::pin::pin!(guard.open_section());
            // The first poll hands the call to the driver; `stats` is answered after
            // it (one command queue), so by then the request went to the client.
            assert!(futures::poll!(open.as_mut()).is_pending());
            a.stats().await.unwrap();
            common::on_proxy(&proxy, |p| p.wait_holding(Direction::Upstream)).await;
            proxy.cut();
            open.await
        };
        assert_eq!(result, Ok(()));
        assert_eq!(guard.next_event().await, Some(LockEvent::Suspended));
        assert_eq!(guard.next_event().await, Some(LockEvent::Resumed));
        assert!(zk.children(&dir).await.contains(&MARKER.to_owned()));
        guard.release().await.unwrap();
        assert!(zk.children(&dir).await.is_empty());
        a.close().await;
    }

    /// The server itself refuses a fenced write sent after an administrator deleted
    /// the lock node but before the holder heard of it (the notification and the
    /// reply are held back in a proxy until the write has reached the server): the
    /// write fails with `NotHeld`, nothing is written, and the lock is lost.
    async fn fenced_write_refused_by_the_server_after_deletion(rt) {
        let dir = unique_path("fenced-server", &rt);
        let data = format!("{dir}-data");
        let zk = Observer::connect(&server().connect_string()).await;
        let proxy = Arc::new(FaultProxy::start(server().addr()).expect("proxy"));
        let a = connect(&rt, &proxy.connect_string(), SESSION).await;
        let guard = a.mutex(dir.clone()).lock().await.unwrap();
        // After the lock: it made the parent, whichever test of the binary runs first.
        zk.client
            .create(&data, b"v0", &CreateMode::Persistent.with_acls(Acls::anyone_all()))
            .await
            .unwrap();

        proxy.hold(Direction::Downstream);
        zk.client.delete(guard.path(), None).await.unwrap();
        let sent = proxy.forwarded(Direction::Upstream);
        let write = {
            let data = data.clone();
            spawn(&rt, async move {
                let result = guard.fenced_write(Writes::new().set_data(&data, b"late")).await;
                (guard, result)
            })
        };
        // The multi (check + setData, well over 100 bytes; a ping is 12) is through.
        common::on_proxy(&proxy, move |p| p.wait_forwarded(Direction::Upstream, sent + 100)).await;
        proxy.release(Direction::Downstream);
        let (guard, result) = write.await.unwrap();
        assert_eq!(result, Err(FencedError::NotHeld));
        assert_eq!(guard.lost().await, LostReason::NodeDeleted);
        let (value, stat) = zk.client.get_data(&data).await.unwrap();
        assert_eq!((value.as_slice(), stat.version), (&b"v0"[..], 0), "written without the lock");
        a.close().await;
    }
}
