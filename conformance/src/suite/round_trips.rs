//! Round trips on the wire, counted through a proxy that delays each direction
//! (`FaultProxy::set_delays`). Properties of the binding's request order, not
//! speed tests: every bound is half a round trip above the expected count.
//!
//! * Acquire: [`Env::round_trips_per_acquire`](crate::Env::round_trips_per_acquire):
//!   1 when `create` and `getChildren` leave together; 2 on a client that gives
//!   no order between calls from different threads (the `zookeeper` crate), where
//!   the binding sends a read only once every write before it is answered.
//! * Release: 1 (the `delete` leaves at once, whatever else is on the wire).
//! * Handoff: the waiter holds 1 round trip after the holder's release is sent
//!   (the `delete` to the server, the notification back; no request follows).
//!
//! Each scenario runs several times and the fastest trial counts (load only adds
//! time; a request that waits for a reply costs a round trip in every trial), in
//! units of the fastest single request through the same proxy. Two delays,
//! because the proxy acknowledges on loopback within the delayed-ACK timer (40 ms
//! at most on Linux), whatever the delay it adds: Nagle's algorithm costs a
//! whole round trip only below that timer, at 10 ms each way, not at 50 ms.
//! Nagle's costs show only in some trials; `set_after_*` checks the option
//! itself, every time.

use super::*;
use crate::{Admin, ZkAdmin};

/// The fastest of several trials, in round trips.
#[derive(Debug)]
struct Measured {
    /// The unit: a single request's round trip through the proxy (the fastest
    /// of 7).
    round_trip: Duration,
    /// From `lock()` to the guard; the lock is free.
    acquire: f64,
    /// From `release()` to its return, called as soon as the lock was held
    /// (while the holder's own reads, and often its periodic `sync`, are still
    /// out: the release waits for none of them).
    release: f64,
    /// From the holder's `release()` to the waiter's guard.
    handoff: f64,
}

/// `cycles` times: an uncontended acquire and release, then a handoff to a
/// waiter; both clients behind a proxy delaying each direction by `one_way`.
fn measure(b: &Suite, one_way: Duration, cycles: usize) -> Measured {
    let proxy = proxy_to_shared(b);
    let cluster = proxy.connect_string();
    let client = || b.client_at(&cluster, BYSTANDER_SESSION_TIMEOUT);
    // Connected and warmed up (the first acquisition creates the lock
    // directory) without delay.
    let (holder, waiter) = (client(), client());
    let plain = ZkAdmin::connect(&cluster);
    let path = unique_path("round-trips");
    let g = lock(b, &holder, Kind::Mutex, &path);
    b.release(g).expect("release");
    b.wait_idle(&holder).expect("idle");
    proxy.set_delays(one_way, one_way);

    let fastest = |samples: &[Duration]| samples.iter().copied().min().expect("samples");
    let unit: Vec<Duration> = (0..7)
        .map(|_| {
            let started = Instant::now();
            plain.children("/");
            started.elapsed()
        })
        .collect();
    let round_trip = fastest(&unit);

    let (mut acquire, mut release, mut handoff) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..cycles {
        let started = Instant::now();
        let guard = b
            .lock(&holder, Kind::Mutex, &path, Wait::Forever)
            .expect("lock");
        let took = started.elapsed();
        assert!(took >= 2 * one_way, "acquired without the proxy: {took:?}");
        acquire.push(took);
        let started = Instant::now();
        b.release(guard).expect("release");
        release.push(started.elapsed());
        b.wait_idle(&holder).expect("idle");

        // Handoff: the waiter queues behind the holder and watches its node.
        let guard = b
            .lock(&holder, Kind::Mutex, &path, Wait::Forever)
            .expect("lock");
        let before = b.stats(&waiter).expect("stats").watches_set;
        let (released, (granted, next)) = thread::scope(|s| {
            let queued = s.spawn(|| {
                let next = b.lock(&waiter, Kind::Mutex, &path, Wait::Forever);
                (Instant::now(), next.expect("the waiter's lock"))
            });
            wait_until("the waiter's watch", SHORT, || {
                (b.stats(&waiter).expect("stats").watches_set > before).then_some(())
            });
            // Let the watch's reply arrive (and the holder's own reads').
            thread::sleep(4 * one_way);
            let released = Instant::now();
            b.release(guard).expect("release");
            (released, queued.join().expect("waiter thread"))
        });
        handoff.push(granted.saturating_duration_since(released));
        b.release(next).expect("release");
        b.wait_idle(&waiter).expect("idle");
        b.wait_idle(&holder).expect("idle");
    }
    proxy.set_delays(Duration::ZERO, Duration::ZERO);
    b.close(&holder);
    b.close(&waiter);
    let rtts = |samples: Vec<Duration>| fastest(&samples).as_secs_f64() / round_trip.as_secs_f64();
    let measured = Measured {
        round_trip,
        acquire: rtts(acquire),
        release: rtts(release),
        handoff: rtts(handoff),
    };
    eprintln!(
        "{}: through {one_way:?} each way, fastest of {cycles}: {measured:?}",
        b.name()
    );
    measured
}

fn assert_round_trips(b: &Suite, m: &Measured) {
    let acquire = b.env().round_trips_per_acquire() as f64 + 0.5;
    assert!(m.acquire < acquire, "{}: acquire: {m:?}", b.name());
    assert!(m.release < 1.5, "{}: release: {m:?}", b.name());
    assert!(m.handoff < 1.5, "{}: handoff: {m:?}", b.name());
}

/// 50 ms each way: acquire within half a round trip of the binding's count,
/// release and handoff < 1.5 round trips (1).
pub fn round_trips_through_50ms(b: &Suite) {
    let m = measure(b, Duration::from_millis(50), 5);
    assert!(m.round_trip >= Duration::from_millis(100), "{m:?}");
    assert_round_trips(b, &m);
}

/// 10 ms each way, where Nagle's algorithm would cost a round trip: the same
/// bounds (generated on Linux only, like lock-nodelay).
pub fn round_trips_through_10ms_despite_nagle(b: &Suite) {
    let m = measure(b, Duration::from_millis(10), 7);
    assert!(m.round_trip >= Duration::from_millis(20), "{m:?}");
    assert_round_trips(b, &m);
}
