//! lock-client's metrics on a real ZooKeeper server (tokio): a scripted sequence
//! (acquire, contend and hand off, suspend and resume through a fault proxy, lose to an
//! administrator's delete) recorded with the opt-in path prefix label. Its own test
//! binary: the recorder is process-wide.

mod common;

use crate::common::Runtime;
use common::{server, Observer};
use lock_testkit::{FaultProxy, RecordedMetrics};
use lock_zookeeper_client::{Connect, ConnectOptions, LockClient, LockEvent, LostReason};
use std::time::Duration;

const SESSION: Duration = Duration::from_secs(10);
const BOUND: Duration = Duration::from_secs(20);

async fn connect(rt: &Runtime, cluster: &str) -> LockClient {
    let options = ConnectOptions::new()
        .session_timeout(SESSION)
        .metrics_path_prefix(2);
    LockClient::builder(cluster)
        .options(options)
        .runtime(rt.clone())
        .connect()
        .await
        .expect("connecting a lock client")
}

#[test]
fn a_scripted_sequence_is_counted_on_zookeeper() {
    let metrics = RecordedMetrics::install();
    common::run_tokio(|rt| async move {
        let labels = [("recipe", "write"), ("prefix", "/zkc-metrics/locks")];
        let with = |extra: (&'static str, &'static str)| [labels[0], labels[1], extra];
        let path = "/zkc-metrics/locks/a";
        let observer = Observer::connect(&server().connect_string()).await;
        let proxy = FaultProxy::start(server().addr()).unwrap();
        let holder = connect(&rt, &proxy.connect_string()).await;
        let other = connect(&rt, &server().connect_string()).await;

        // Acquire, then contend: busy at once, then a wait granted at the release.
        // (The wait and hold histograms and the handoff are lock-sim's
        // tests/client_metrics.rs::a_scripted_sequence_is_counted; here, the labels
        // with the path prefix.)
        let guard = holder.mutex(path).lock().await.unwrap();
        assert_eq!(metrics.gauge("zklock_locks_held", &labels), 1.0);
        assert!(other.mutex(path).try_lock().await.unwrap().is_none());
        let waiter = other.mutex(path).start().unwrap();
        metrics.wait_for("one waiter", BOUND, |m| {
            m.gauge("zklock_locks_waiting", &labels) == 1.0
        });
        guard.release().await.unwrap();
        waiter.await.unwrap().release().await.unwrap();
        let acquired = with(("outcome", "acquired"));
        assert_eq!(metrics.counter("zklock_acquisitions_total", &acquired), 2);
        let busy = with(("outcome", "would_block"));
        assert_eq!(metrics.counter("zklock_acquisitions_total", &busy), 1);
        let released = with(("end", "released"));
        assert_eq!(metrics.histogram("zklock_hold_seconds", &released).len(), 2);

        // A cut connection: suspended, then resumed on the same session.
        // Watching its node, so that the delete below shows at once.
        let guard = holder.mutex(path).watch_node().lock().await.unwrap();
        proxy.cut();
        assert_eq!(guard.next_event().await, Some(LockEvent::Suspended));
        assert_eq!(guard.next_event().await, Some(LockEvent::Resumed));
        assert_eq!(metrics.counter("zklock_suspensions_total", &labels), 1);
        assert_eq!(metrics.counter("zklock_resumptions_total", &labels), 1);

        // An administrator deletes the node: lost.
        observer.client.delete(guard.path(), None).await.unwrap();
        assert_eq!(guard.lost().await, LostReason::NodeDeleted);
        let lost = with(("reason", "node_deleted"));
        assert_eq!(metrics.counter("zklock_lost_total", &lost), 1);
        drop(guard);

        // Requests by operation (not labelled by path), and nothing left.
        assert!(metrics.counter("zklock_requests_total", &[("op", "create")]) >= 4);
        holder.close().await;
        other.close().await;
        assert_eq!(metrics.gauge("zklock_locks_held", &labels), 0.0);
        assert_eq!(metrics.gauge("zklock_locks_waiting", &labels), 0.0);
    });
}
