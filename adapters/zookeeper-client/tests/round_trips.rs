//! Round trips on the wire, counted through a fault proxy that delays each direction
//! (`FaultProxy::set_delays`), against a real server: an uncontended acquire and a
//! release take 1 round trip each, and a handoff reaches the waiter 1 round trip
//! after the holder's release is sent (the `delete` to the server, the notification
//! back, no listing). These are properties of pipelining, not speed tests: every
//! bound is 1.5 round trips, where the next possible outcome is 2. Each scenario
//! runs several times and the fastest trial counts (load only adds time; a request
//! that waits for a reply costs a round trip in every trial), in units of the
//! fastest single-request round trip through the same proxy.
//!
//! Two delays, because the proxy is not a network. It acknowledges on loopback:
//! its kernel ACKs what it reads at once, or within the delayed-ACK timer (40 ms
//! at most here), whatever the delay the proxy then adds. So Nagle's algorithm,
//! which holds a small write while earlier data is unacknowledged, costs a whole
//! round trip (as on a real network, where the ACK travels like the reply) only
//! when the round trip is shorter than that timer:
//!
//! * 50 ms each way: round trips dwarf everything else, so the bounds have wide
//!   margins; but the proxy's ACKs come at once (its replies take longer than the
//!   delayed-ACK timer, so its kernel leaves delayed-ACK mode), and Nagle's
//!   algorithm costs at most 0.4 round trips here;
//! * 10 ms each way: Nagle's algorithm costs a full round trip. Without TCP_NODELAY
//!   on zookeeper-client's socket (the state before lock-nodelay), acquire and
//!   release took 2.1 to 2.2 round trips in most trials under smol and async-std
//!   (the `delete` waits behind the holder's own-node `getData`); in the others,
//!   and in most under tokio, zookeeper-client's session task happened to take
//!   both requests from its channel before writing, and they left together anyway.
//!   So this test catches a missing TCP_NODELAY only some of the time;
//!   `tests/nodelay.rs` checks the option itself, every time.

mod common;

use crate::common::Runtime;
use common::{connect, server, spawn, unique_path, Observer};
use lock_testkit::FaultProxy;
use lock_zookeeper_client::LockClient;
use std::time::{Duration, Instant};

/// The fastest of several trials, in round trips: load on the machine only ever
/// adds time, while a request that waits for a reply cannot take less than one
/// more round trip in any trial.
#[derive(Debug)]
struct Measured {
    /// The unit: a single request's round trip through the proxy (the fastest of
    /// 7).
    round_trip: Duration,
    /// From `lock()` to the guard; the lock is free.
    acquire: f64,
    /// From `release()` to its return, called as soon as the lock was held.
    release: f64,
    /// From the holder's `release()` to the waiter's guard.
    handoff: f64,
}

fn fastest(samples: &[Duration]) -> Duration {
    samples.iter().copied().min().expect("samples")
}

/// `cycles` times: an uncontended acquire and release, then a handoff to a waiter;
/// both clients behind a proxy delaying each direction by `one_way`.
async fn measure(rt: &Runtime, one_way: Duration, cycles: usize) -> Measured {
    let proxy = FaultProxy::start(server().addr()).unwrap();
    let cluster = proxy.connect_string();
    // Connect and warm up (the first acquisition creates the lock directory)
    // without delay.
    let holder = connect(rt, &cluster, Duration::from_secs(10)).await;
    let waiter = connect(rt, &cluster, Duration::from_secs(10)).await;
    let observer = Observer::connect(&cluster).await;
    let path = unique_path("round-trips", rt);
    let mutex = holder.mutex(path.clone());
    mutex.lock().await.unwrap().release().await.unwrap();
    holder.wait_idle().await.unwrap();
    proxy.set_delays(one_way, one_way);

    let mut unit = Vec::new();
    for _ in 0..7 {
        let started = Instant::now();
        observer.client.check_stat("/").await.unwrap();
        unit.push(started.elapsed());
    }
    let round_trip = fastest(&unit);

    let (mut acquire, mut release, mut handoff) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..cycles {
        // Uncontended; the release is sent as soon as the lock is held, while the
        // holder's `getData` on its own node (sent when the create's reply
        // arrived) may still be out.
        let started = Instant::now();
        let guard = mutex.lock().await.unwrap();
        let took = started.elapsed();
        assert!(took >= 2 * one_way, "acquired without the proxy: {took:?}");
        acquire.push(took);
        let started = Instant::now();
        guard.release().await.unwrap();
        release.push(started.elapsed());
        holder.wait_idle().await.unwrap();

        // Handoff: the waiter queues behind the holder and watches its node.
        let guard = mutex.lock().await.unwrap();
        let before = waiter.stats().await.unwrap().watches_set;
        let queued = waiter.mutex(path.clone());
        let granted = spawn(rt, async move {
            let guard = queued.lock().await.unwrap();
            (Instant::now(), guard)
        });
        wait_for_watch(&waiter, before).await;
        // Let the watch's reply arrive (and the holder's own `getData`'s).
        common::sleep(4 * one_way).await;
        let released = Instant::now();
        guard.release().await.unwrap();
        let (at, waiter_guard) = granted.await.unwrap();
        handoff.push(at.saturating_duration_since(released));
        waiter_guard.release().await.unwrap();
        waiter.wait_idle().await.unwrap();
        holder.wait_idle().await.unwrap();
    }
    proxy.set_delays(Duration::ZERO, Duration::ZERO);
    holder.close().await;
    waiter.close().await;
    let rtts = |samples: Vec<Duration>| fastest(&samples).as_secs_f64() / round_trip.as_secs_f64();
    let measured = Measured {
        round_trip,
        acquire: rtts(acquire),
        release: rtts(release),
        handoff: rtts(handoff),
    };
    eprintln!(
        "{} through {one_way:?} each way, fastest of {cycles}: {measured:?}",
        common::runtime_name(rt)
    );
    measured
}

/// Waits until the waiter's core has asked for a watch on its predecessor.
async fn wait_for_watch(waiter: &LockClient, before: u64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while waiter.stats().await.unwrap().watches_set == before {
        assert!(Instant::now() < deadline, "the waiter never set its watch");
        common::sleep(Duration::from_millis(2)).await;
    }
}

fn assert_one_round_trip_each(m: &Measured) {
    assert!(m.acquire < 1.5, "acquire: {m:?}");
    assert!(m.release < 1.5, "release: {m:?}");
    assert!(m.handoff < 1.5, "handoff: {m:?}");
}

rt_tests! {
    /// 50 ms each way: acquire, release and handoff < 1.5 round trips each (1:
    /// `create` and `getChildren` leave together; the `delete` leaves at once; the
    /// notification is the grant, no listing).
    async fn one_round_trip_through_50ms(rt) {
        let m = measure(&rt, Duration::from_millis(50), 5).await;
        assert!(m.round_trip >= Duration::from_millis(100), "{m:?}");
        assert_one_round_trip_each(&m);
    }

    /// 10 ms each way, where Nagle's algorithm would cost a round trip: still < 1.5
    /// round trips each (2.1 to 2.2 for acquire and release in most trials without
    /// TCP_NODELAY, under smol and async-std). Linux only, like lock-nodelay.
    #[cfg(target_os = "linux")]
    async fn one_round_trip_through_10ms_despite_nagle(rt) {
        let m = measure(&rt, Duration::from_millis(10), 7).await;
        assert!(m.round_trip >= Duration::from_millis(20), "{m:?}");
        assert_one_round_trip_each(&m);
    }
}
