//! lock-client's metrics (the `metrics` facade), recorded for a scripted sequence
//! on the in-process server: acquire, contend (busy, wait, time out, a handoff),
//! suspend and resume, lose on expiry, break a deadlock. Its own test binary: the recorder is
//! process-wide.

use lock_client::{Error, LockEvent, LostReason};
use lock_sim::Server;
use lock_testkit::RecordedMetrics;
use std::sync::{Arc, Barrier};
use std::time::Duration;

const BOUND: Duration = Duration::from_secs(20);
const WRITE: (&str, &str) = ("recipe", "write");

fn acquisitions(metrics: &RecordedMetrics, outcome: &str) -> u64 {
    metrics.counter("zklock_acquisitions_total", &[WRITE, ("outcome", outcome)])
}

#[test]
fn a_scripted_sequence_is_counted() {
    let metrics = RecordedMetrics::install();
    let server = Server::new();
    let a = server.client();
    let b = server.client();

    // Acquire, then contend: busy at once, a timeout, a wait that is granted.
    let held = a.mutex("/m/a").lock_timeout_blocking(BOUND).unwrap();
    assert_eq!(metrics.gauge("zklock_locks_held", &[WRITE]), 1.0);
    assert!(b.mutex("/m/a").try_lock_blocking().unwrap().is_none());
    let timed_out = b
        .mutex("/m/a")
        .lock_timeout_blocking(Duration::from_millis(50));
    assert!(matches!(timed_out, Err(Error::Timeout)), "{timed_out:?}");
    let watches = b.stats_blocking().unwrap().watches_set;
    let mut waiting = b.mutex("/m/a").start().unwrap();
    metrics.wait_for("one waiter", BOUND, |m| {
        m.gauge("zklock_locks_waiting", &[WRITE]) == 1.0
    });
    // Watching the holder's node (its deletion is the handoff): the watch was
    // sent, and a later request of the same session answered after it.
    metrics.wait_for("the waiter's watch", BOUND, |_| {
        b.stats_blocking().unwrap().watches_set > watches
    });
    b.participants_blocking("/m/a").unwrap();
    held.release_blocking().unwrap();
    let second = waiting.wait_timeout_blocking(BOUND).unwrap().unwrap();
    second.release_blocking().unwrap();
    assert_eq!(acquisitions(&metrics, "acquired"), 2);
    assert_eq!(acquisitions(&metrics, "would_block"), 1);
    assert_eq!(acquisitions(&metrics, "timeout"), 1);
    let waits = metrics.histogram(
        "zklock_acquire_wait_seconds",
        &[WRITE, ("outcome", "timeout")],
    );
    assert!(waits.len() == 1 && waits[0] >= 0.05, "{waits:?}");
    let holds = metrics.histogram("zklock_hold_seconds", &[WRITE, ("end", "released")]);
    assert_eq!(holds.len(), 2, "{holds:?}");
    // One handoff: the wait granted when the holder's node went (the first
    // acquisition, the busy try and the timeout had none), within that wait.
    let handoffs = metrics.histogram("zklock_handoff_seconds", &[WRITE]);
    let granted = metrics.histogram(
        "zklock_acquire_wait_seconds",
        &[WRITE, ("outcome", "acquired")],
    );
    assert_eq!(handoffs.len(), 1, "{handoffs:?}");
    assert!(
        handoffs[0] <= granted.iter().copied().fold(0.0, f64::max),
        "{handoffs:?} {granted:?}"
    );

    // Suspended by a short disconnect, resumed on the same session.
    let held = a.mutex("/m/s").lock_timeout_blocking(BOUND).unwrap();
    server.disconnect(&a, Duration::from_millis(100));
    assert_eq!(held.suspended_blocking(), LockEvent::Suspended);
    assert_eq!(
        held.next_event_timeout_blocking(BOUND),
        Some(LockEvent::Resumed)
    );
    assert_eq!(metrics.counter("zklock_suspensions_total", &[WRITE]), 1);
    assert_eq!(metrics.counter("zklock_resumptions_total", &[WRITE]), 1);

    // Lost when the session expires.
    server.expire_session(&a);
    assert_eq!(held.lost_blocking(), LostReason::SessionExpired);
    drop(held);
    let lost = [WRITE, ("reason", "session_expired")];
    metrics.wait_for("the loss", BOUND, |m| {
        m.counter("zklock_lost_total", &lost) == 1
    });
    assert_eq!(
        metrics
            .histogram("zklock_hold_seconds", &[WRITE, ("end", "lost")])
            .len(),
        1
    );

    // A two-party deadlock: one victim.
    let barrier = Arc::new(Barrier::new(2));
    let parties: Vec<_> = (0..2)
        .map(|i| {
            let client = server.client().with_owner(format!("owner-{i}"));
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let first = client
                    .mutex(format!("/m/d{i}"))
                    .lock_timeout_blocking(BOUND)
                    .unwrap();
                barrier.wait();
                let second = client
                    .mutex(format!("/m/d{}", 1 - i))
                    .detect_deadlocks(Duration::from_millis(50))
                    .lock_timeout_blocking(BOUND);
                let victim = matches!(second, Err(Error::Deadlock { .. }));
                drop(second);
                first.release_blocking().unwrap();
                client.close_blocking();
                victim
            })
        })
        .collect();
    let victims = parties
        .into_iter()
        .map(|p| p.join().unwrap())
        .filter(|victim| *victim)
        .count();
    assert_eq!(victims, 1);
    assert_eq!(
        metrics.counter("zklock_deadlocks_broken_total", &[WRITE]),
        1
    );
    assert_eq!(acquisitions(&metrics, "deadlock"), 1);

    // Requests by operation, and nothing held or waiting at the end.
    assert!(metrics.counter("zklock_requests_total", &[("op", "create")]) >= 7);
    assert!(metrics.counter("zklock_requests_total", &[("op", "get_children")]) >= 7);
    a.close_blocking();
    b.close_blocking();
    assert_eq!(metrics.gauge("zklock_locks_held", &[WRITE]), 0.0);
    assert_eq!(metrics.gauge("zklock_locks_waiting", &[WRITE]), 0.0);
}
