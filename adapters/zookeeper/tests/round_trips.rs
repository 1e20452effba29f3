//! Round trips on the wire, counted through a fault proxy that delays each direction
//! (`FaultProxy::set_delays`), against a real server. Properties of the binding's
//! request order, not speed tests: every bound is half a round trip above the
//! expected count.
//!
//! * Acquire: **2** round trips, by design (see `driver/ordering.rs`). The
//!   `zookeeper` crate gives no order between calls from different threads, so the
//!   binding issues a read only once every write before it is answered: the
//!   `getChildren` waits for the `create`'s reply, and leaves together with the
//!   `getData` on our own node (which the binding needs anyway: the crate's `create`
//!   returns no Stat, and the fencing token is the node's `czxid`).
//! * Release: 1 round trip (the `delete`).
//! * Handoff: the waiter holds 1 round trip after the holder's release is sent (the
//!   `delete` to the server, the notification back; the waiter read its own node's
//!   token while queueing, so no request follows).
//!
//! With Nagle's algorithm on (the crate never sets TCP_NODELAY, and writes each
//! request on its own), the second of two reads issued together waits for the
//! first one's reply: 3 round trips per acquisition. The binding sets TCP_NODELAY
//! on every connection (lock-nodelay; `tests/nodelay.rs` checks it). As in
//! lock-zookeeper-client's `round_trips.rs`: each scenario runs several times and
//! the fastest trial counts, in units of the fastest single-request round trip
//! through the same proxy; and two delays, 50 ms each way for wide margins, and
//! 10 ms each way, where Nagle's algorithm costs a full round trip through the
//! proxy (whose kernel acknowledges within its delayed-ACK timer, 40 ms at most,
//! whatever the delay).

use lock_conformance::{shared_server, unique_path};
use lock_testkit::FaultProxy;
use lock_zookeeper::{Connect, LockClient};
use std::thread;
use std::time::{Duration, Instant};
use zookeeper::{WatchedEvent, ZooKeeper};

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

fn client(cluster: &str) -> LockClient {
    LockClient::builder(cluster)
        .session_timeout(Duration::from_secs(10))
        .connect()
        .expect("connect")
}

/// `cycles` times: an uncontended acquire and release, then a handoff to a waiter;
/// both clients behind a proxy delaying each direction by `one_way`.
fn measure(one_way: Duration, cycles: usize) -> Measured {
    let proxy = FaultProxy::start(shared_server().addr()).unwrap();
    let cluster = proxy.connect_string();
    // Connect and warm up (the first acquisition creates the lock directory)
    // without delay.
    let holder = client(&cluster);
    let waiter = client(&cluster);
    let plain = ZooKeeper::connect(&cluster, Duration::from_secs(10), |_: WatchedEvent| {})
        .expect("plain client");
    plain.exists("/", false).expect("exists");
    let path = unique_path("round-trips");
    let mutex = holder.mutex(path.clone());
    mutex.lock_blocking().unwrap().release_blocking().unwrap();
    holder.wait_idle_blocking().unwrap();
    proxy.set_delays(one_way, one_way);

    let unit: Vec<Duration> = (0..7)
        .map(|_| {
            let started = Instant::now();
            plain.exists("/", false).expect("exists");
            started.elapsed()
        })
        .collect();
    let round_trip = fastest(&unit);

    let (mut acquire, mut release, mut handoff) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..cycles {
        let started = Instant::now();
        let guard = mutex.lock_blocking().unwrap();
        let took = started.elapsed();
        assert!(took >= 2 * one_way, "acquired without the proxy: {took:?}");
        acquire.push(took);
        let started = Instant::now();
        guard.release_blocking().unwrap();
        release.push(started.elapsed());
        holder.wait_idle_blocking().unwrap();

        // Handoff: the waiter queues behind the holder and watches its node.
        let guard = mutex.lock_blocking().unwrap();
        let before = waiter.stats_blocking().unwrap().watches_set;
        let queued = waiter.mutex(path.clone());
        let granted = thread::spawn(move || {
            let guard = queued.lock_blocking().unwrap();
            (Instant::now(), guard)
        });
        let deadline = Instant::now() + Duration::from_secs(10);
        while waiter.stats_blocking().unwrap().watches_set == before {
            assert!(Instant::now() < deadline, "the waiter never set its watch");
            thread::sleep(Duration::from_millis(2));
        }
        // Let the watch's reply arrive.
        thread::sleep(4 * one_way);
        let released = Instant::now();
        guard.release_blocking().unwrap();
        let (at, waiter_guard) = granted.join().unwrap();
        handoff.push(at.saturating_duration_since(released));
        waiter_guard.release_blocking().unwrap();
        waiter.wait_idle_blocking().unwrap();
        holder.wait_idle_blocking().unwrap();
    }
    proxy.set_delays(Duration::ZERO, Duration::ZERO);
    holder.close_blocking();
    waiter.close_blocking();
    let _ = plain.close();
    let rtts = |samples: Vec<Duration>| fastest(&samples).as_secs_f64() / round_trip.as_secs_f64();
    let measured = Measured {
        round_trip,
        acquire: rtts(acquire),
        release: rtts(release),
        handoff: rtts(handoff),
    };
    eprintln!("through {one_way:?} each way, fastest of {cycles}: {measured:?}");
    measured
}

fn assert_round_trips(m: &Measured) {
    assert!(m.acquire < 2.5, "acquire: {m:?}");
    assert!(m.release < 1.5, "release: {m:?}");
    assert!(m.handoff < 1.5, "handoff: {m:?}");
}

/// 50 ms each way: acquire < 2.5 round trips (2), release < 1.5 (1), handoff < 1.5
/// (1). The holder's periodic `sync` is often on the wire when it releases here
/// (the release comes about 5 round trips after its grant, the sync interval is
/// 500 ms): the release must not wait for it (`driver/ordering.rs`).
#[test]
fn round_trips_through_50ms() {
    let m = measure(Duration::from_millis(50), 5);
    assert!(m.round_trip >= Duration::from_millis(100), "{m:?}");
    assert_round_trips(&m);
}

/// 10 ms each way, where Nagle's algorithm would cost a round trip: the same bounds.
/// Linux only, like lock-nodelay.
#[cfg(target_os = "linux")]
#[test]
fn round_trips_through_10ms_despite_nagle() {
    let m = measure(Duration::from_millis(10), 7);
    assert!(m.round_trip >= Duration::from_millis(20), "{m:?}");
    assert_round_trips(&m);
}
