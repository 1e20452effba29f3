//! Requests per uncontended acquire + release, counted by the server (`mntr`'s
//! `zk_packets_received`) and by the core, under every runtime. This binary has its
//! own server and runs its tests one at a time, so no other client adds packets.
// The runtime variants run on separate test threads, each with its own executor:
// blocking a thread on the std mutex `TURN` until the previous variant is done is
// the intent, so the guard is held across awaits on purpose.
#![allow(clippy::await_holding_lock)]

mod common;

use common::{connect, server, unique_path};
use std::sync::Mutex;
use std::time::{Duration, Instant};

static TURN: Mutex<()> = Mutex::new(());

fn packets_received() -> u64 {
    server()
        .mntr()
        .expect("mntr")
        .get_u64("zk_packets_received")
        .expect("zk_packets_received in mntr")
}

rt_tests! {
    /// An uncontended acquire + release costs exactly 3 requests, as in Curator:
    ///
    /// * `create` (ephemeral sequential) and `getChildren`, pipelined: the acquisition
    ///   completes when the listing arrives, 1 round trip (the token, the node's
    ///   `czxid`, comes with the create's Stat);
    /// * `delete` on release, 1 round trip.
    ///
    /// A plain holder reads not its own node and leaves no watch on it (that costs a
    /// 4th request and a notification per release; `watch_node()` asks for it). The
    /// server counts the same 3 per cycle, once the one packet each `mntr` itself
    /// counts is subtracted. The binding's check of the server's settings (a `conf`
    /// on a connection of its own, 100 ms after connecting) is waited for before
    /// counting. The only other packets could be pings, which zookeeper-client
    /// sends after 3/20 of the session timeout without sending anything (1.5 s
    /// here), and the core's proof-of-contact `sync`, sent only when nothing passed
    /// the leader for a second: neither during the busy loop, and a measurement
    /// that a stall lets one into is outnumbered by the others.
    async fn requests_per_uncontended_cycle(rt) {
        const CYCLES: u64 = 200;
        let _turn = TURN.lock().unwrap_or_else(|p| p.into_inner());
        let client = connect(&rt, &server().connect_string(), Duration::from_secs(10)).await;
        let mutex = client.mutex(unique_path("requests", &rt));
        // Warm up: the first acquisition also creates the lock directory.
        mutex.lock().await.unwrap().release().await.unwrap();
        client.wait_idle().await.unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while client.server_checks().is_empty() {
            assert!(Instant::now() < deadline, "the server was never checked");
            common::sleep(Duration::from_millis(10)).await;
        }

        // `mntr` is itself counted as a received packet: the overhead is the smallest
        // of a few back-to-back readings (a packet of the session's own, a ping or
        // the core's proof-of-contact `sync`, can only make one larger).
        let mut mntr_overhead = u64::MAX;
        for _ in 0..5 {
            let first = packets_received();
            mntr_overhead = mntr_overhead.min(packets_received() - first);
        }
        // The core proves contact with a `sync` when nothing else passed the leader
        // for a tenth of the session timeout: none while the loop runs, but one may
        // fall into a measurement on a machine that stalls between two. It shows in
        // both counts, so the measurement that sent the fewest requests is the one
        // asserted on; a cycle costing more shows in every measurement.
        let mut measurements = Vec::new();
        for _ in 0..3 {
            let requests_before = client.stats().await.unwrap().requests;
            let packets_before = packets_received();
            let started = Instant::now();
            for _ in 0..CYCLES {
                let guard = mutex.lock().await.unwrap();
                guard.release().await.unwrap();
            }
            client.wait_idle().await.unwrap();
            let elapsed = started.elapsed();
            let packets = packets_received() - packets_before - mntr_overhead;
            let requests = client.stats().await.unwrap().requests - requests_before;
            eprintln!(
                "{}: {CYCLES} cycles in {elapsed:?}: {requests} requests sent, {packets} packets received by the server",
                common::runtime_name(&rt)
            );
            measurements.push((requests, packets, elapsed));
        }
        let (requests, packets, elapsed) = measurements
            .into_iter()
            .min_by_key(|&(requests, _, _)| requests)
            .expect("measured");
        assert_eq!(requests, 3 * CYCLES, "requests the core sent");
        // Pings: only after 1.5 s without sending, so none unless the loop stalls.
        let pings = elapsed.as_millis() as u64 / 1500;
        assert!(
            (3 * CYCLES..=3 * CYCLES + pings).contains(&packets),
            "{packets} packets for {CYCLES} cycles"
        );
        client.close().await;
    }
}
