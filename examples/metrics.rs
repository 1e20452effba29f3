//! zklock's metrics in Prometheus' text format: a recorder from
//! `metrics-exporter-prometheus` is installed, a short scripted run takes locks on
//! the embedded ZooKeeper (lock-sim's in-process server: nothing to install), and
//! the scrape output is printed.
//!
//! The run: `worker-a` takes `/locks/orders/1`; `worker-b` tries it (busy), then
//! waits for it and gets it when `worker-a` releases; `worker-a`'s connection drops
//! for a moment while it holds `/locks/orders/2` (suspended, resumed), then its
//! session expires (lost).
//!
//! ```sh
//! cargo run --example metrics
//! ```
//!
//! A service would serve the same text over HTTP: `PrometheusBuilder::new()
//! .with_http_listener(..).install()` with the crate's default features. The path
//! prefix label is opt-in: `ConnectOptions::new().metrics_path_prefix(2)` on a real
//! binding labels these locks `prefix="/locks/orders"`.

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
use std::time::Duration;
use zklock::sim::Server;
use zklock::{LockEvent, LostReason};

fn main() {
    let scrape = PrometheusBuilder::new()
        // Without buckets the exporter renders histograms as summaries.
        .set_buckets_for_metric(Matcher::Prefix("zklock_".into()), zklock::HISTOGRAM_BUCKETS)
        .expect("bucket bounds")
        .install_recorder()
        .expect("installing the Prometheus recorder");
    // The `# HELP` lines (clients created from now on would describe them too).
    zklock::describe_metrics();
    let server = Server::new();
    let a = server.client().with_owner("worker-a");
    let b = server.client().with_owner("worker-b");

    let held = a.mutex("/locks/orders/1").lock_blocking().unwrap();
    assert!(b
        .mutex("/locks/orders/1")
        .try_lock_blocking()
        .unwrap()
        .is_none());
    let waiting = b.mutex("/locks/orders/1").start().unwrap();
    std::thread::sleep(Duration::from_millis(20));
    held.release_blocking().unwrap();
    waiting.wait_blocking().unwrap().release_blocking().unwrap();

    let held = a.mutex("/locks/orders/2").lock_blocking().unwrap();
    server.disconnect(&a, Duration::from_millis(50));
    assert_eq!(held.suspended_blocking(), LockEvent::Suspended);
    assert_eq!(held.next_event_blocking(), Some(LockEvent::Resumed));
    server.expire_session(&a);
    assert_eq!(held.lost_blocking(), LostReason::SessionExpired);
    drop(held);
    a.close_blocking();
    b.close_blocking();

    let text = scrape.render();
    for wanted in [
        "zklock_acquisitions_total{recipe=\"write\",outcome=\"acquired\"} 3",
        "zklock_acquisitions_total{recipe=\"write\",outcome=\"would_block\"} 1",
        "zklock_lost_total{recipe=\"write\",reason=\"session_expired\"} 1",
        "zklock_suspensions_total{recipe=\"write\"} 1",
        "zklock_locks_held{recipe=\"write\"} 0",
        "# HELP zklock_handoff_seconds for an acquisition that waited behind another participant",
        "# TYPE zklock_handoff_seconds histogram",
        "zklock_acquire_wait_seconds_bucket{recipe=\"write\",outcome=\"acquired\",le=\"0.0005\"}",
        "zklock_hold_seconds_bucket{recipe=\"write\",end=\"released\",le=\"+Inf\"} 2",
    ] {
        assert!(text.contains(wanted), "missing {wanted:?} in:\n{text}");
    }
    print!("{text}");
}
