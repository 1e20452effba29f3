//! `close` right behind a release (as `zklock exec` ends): the release completes
//! as released, and `closeSession` leaves behind the `delete` instead of a round
//! trip after its reply. Counted in round trips through a fault proxy that delays
//! each direction, the fastest of several trials, as tests/round_trips.rs counts
//! (a property of pipelining, not a speed test: the bound is 1.5 round trips where
//! waiting for the `delete`'s reply costs 2).

mod common;

use common::{connect, server, unique_path, Observer};
use lock_testkit::FaultProxy;
use std::time::{Duration, Instant};

rt_tests! {
    /// 50 ms each way: `release()` joined with `close()` returns `Ok` (the reply
    /// fed before `Closed`), the node is gone, and both are done within 1.5
    /// round trips.
    async fn close_right_behind_a_release_costs_one_round_trip(rt) {
        let one_way = Duration::from_millis(50);
        let proxy = FaultProxy::start(server().addr()).unwrap();
        let cluster = proxy.connect_string();
        let observer = Observer::connect(&cluster).await;
        let path = unique_path("close-behind-release", &rt);
        let mut fastest = Duration::MAX;
        let mut round_trip = Duration::MAX;
        for _ in 0..4 {
            // Connected and holding without delay; then every byte waits.
            let locks = connect(&rt, &cluster, Duration::from_secs(10)).await;
            let guard = locks.mutex(path.clone()).lock().await.unwrap();
            let node = guard.path().to_owned();
            // The holder's own-node `getData` answered (a request still out
            // would only leave beside the `delete`: the count is the same).
            common::sleep(Duration::from_millis(50)).await;
            proxy.set_delays(one_way, one_way);
            let started = Instant::now();
            observer.client.check_stat("/").await.unwrap();
            round_trip = round_trip.min(started.elapsed());
            let started = Instant::now();
            let (released, ()) = futures::join!(guard.release(), locks.close());
            fastest = fastest.min(started.elapsed());
            proxy.set_delays(Duration::ZERO, Duration::ZERO);
            released.expect("the release in flight when close was called completes");
            assert!(
                observer.client.check_stat(&node).await.unwrap().is_none(),
                "{node} outlived its session"
            );
        }
        let round_trips = fastest.as_secs_f64() / round_trip.as_secs_f64();
        eprintln!("release + close: {round_trips:.2} round trips (fastest of 4; one {round_trip:?})");
        assert!(round_trips < 1.5, "closeSession waited for the delete's reply: {round_trips:.2} round trips");
    }

    /// `session_client` is the lock client's own session (its id, its nodes'
    /// owner) while it is open, and nothing once it is closed.
    async fn session_client_is_the_lock_clients_session_until_close(rt) {
        let locks = connect(&rt, &server().connect_string(), Duration::from_secs(10)).await;
        let path = unique_path("session-client", &rt);
        let guard = locks.mutex(path.clone()).lock().await.unwrap();
        let raw = lock_zookeeper_client::session_client(&locks).expect("an open session's client");
        assert_eq!(Some(raw.session_id().0), locks.session_id());
        let (_, stat) = raw.get_data(guard.path()).await.unwrap();
        assert_eq!(stat.ephemeral_owner, raw.session_id().0, "the lock's node is this session's");
        drop(raw);
        guard.release().await.unwrap();
        locks.close().await;
        assert!(lock_zookeeper_client::session_client(&locks).is_none());
    }
}
