//! The in-process server (`lock_sim::Server`): the real `LockClient` on the model,
//! with its fault knobs. Every wait has a generous bound that turns a hang into a
//! failure; nothing sleeps to synchronise.

use lock_client::BreakLock;
use lock_core::{LockEvent, LostReason};
use lock_sim::Server;
use std::time::{Duration, Instant};

const BOUND: Duration = Duration::from_secs(10);

#[test]
fn a_partition_is_noticed_only_after_two_thirds_of_the_session_timeout() {
    let server = Server::new();
    let client = server.client_with_timeout(Duration::from_millis(900));
    let guard = client.mutex("/locks/c").lock_blocking().unwrap();
    let cut = Instant::now();
    server.partition(&client, Duration::from_secs(5));
    assert_eq!(
        guard.next_event_timeout_blocking(BOUND),
        Some(LockEvent::Suspended)
    );
    assert!(
        cut.elapsed() >= Duration::from_millis(600),
        "noticed too early"
    );
    assert_eq!(guard.lost_blocking(), LostReason::SuspendedTooLong);
}

#[test]
fn heal_ends_a_partition_early_on_the_same_session() {
    let server = Server::new();
    let client = server.client();
    let guard = client.mutex("/locks/heal").lock_blocking().unwrap();
    let session = client.session_id();
    // A partition meant to outlast the session, healed at once: noticed as it ends.
    server.partition(&client, Duration::from_secs(3600));
    server.heal(&client);
    for expected in [LockEvent::Suspended, LockEvent::Resumed] {
        assert_eq!(guard.next_event_timeout_blocking(BOUND), Some(expected));
    }
    assert_eq!(client.session_id(), session, "the same session");
    guard.release_blocking().unwrap();
    client.close_blocking();
}

/// A waiter knows its place in the queue as soon as its node exists, and hears
/// each change: two ahead, then (once the head left, which the third in line
/// does not watch: a refresh looks again) one, then (granted) the watch ends.
#[test]
fn a_waiter_follows_its_place_in_the_queue() {
    let server = Server::new();
    let clients: Vec<_> = (0..3).map(|_| server.client()).collect();
    let first = clients[0].mutex("/locks/q").lock_blocking().unwrap();
    let mut second = clients[1].mutex("/locks/q").start().unwrap();
    // Queued before the third starts (their creates would race otherwise).
    let ahead = second
        .queue_watch()
        .changed_blocking()
        .expect("second waits");
    assert_eq!(ahead.position, 1, "{ahead:?}");
    let third = clients[2].mutex("/locks/q").start().unwrap();
    let mut place = third.queue_watch();
    let refresher = place.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    let follower = std::thread::spawn(move || {
        while let Some(queued) = place.changed_blocking() {
            tx.send(queued).unwrap();
        }
    });
    let queued = rx
        .recv_timeout(BOUND)
        .expect("a place once the node exists");
    assert_eq!(queued.position, 2, "{queued:?}");
    assert_eq!(queued.permits_in_use, None);
    assert!(queued.node.starts_with("/locks/q/"), "{queued:?}");
    assert_eq!(third.queued(), Some(queued.clone()));
    assert_eq!(queued.to_string(), "2 ahead in the queue");
    first.release_blocking().unwrap();
    let second = second
        .wait_timeout_blocking(BOUND)
        .expect("granted")
        .unwrap();
    // The third watches the second's node only: its place is stale until it
    // looks again.
    assert_eq!(third.queued().map(|q| q.position), Some(2));
    refresher.refresh();
    let next = rx.recv_timeout(BOUND).expect("the next place");
    assert_eq!(next.position, 1, "{next:?}");
    assert_eq!(next.node, queued.node);
    second.release_blocking().unwrap();
    let mut third = third;
    let guard = third
        .wait_timeout_blocking(BOUND)
        .expect("granted")
        .unwrap();
    // Granted: the watch ends, and nothing else was reported.
    follower.join().unwrap();
    assert!(rx.try_recv().is_err());
    assert_eq!(third.queued(), None);
    drop(guard);
}

/// A semaphore waiter's place says how many permits are in use ahead of it.
#[test]
fn a_semaphore_waiter_sees_the_permits_in_use() {
    let server = Server::new();
    let clients: Vec<_> = (0..3).map(|_| server.client()).collect();
    let a = clients[0].semaphore("/locks/s", 2).lock_blocking().unwrap();
    let b = clients[1].semaphore("/locks/s", 2).lock_blocking().unwrap();
    let waiter = clients[2].semaphore("/locks/s", 2).start().unwrap();
    let queued = waiter.queue_watch().changed_blocking().expect("waiting");
    assert_eq!((queued.position, queued.permits_in_use), (1, Some(2)));
    assert_eq!(queued.to_string(), "next in the queue, 2 permit(s) in use");
    a.release_blocking().unwrap();
    let mut waiter = waiter;
    let guard = waiter
        .wait_timeout_blocking(BOUND)
        .expect("granted")
        .unwrap();
    drop((guard, b));
}

/// A waiter behind a lock-delay holder that ends uncleanly (its session expires,
/// or an operator breaks the lock, which leaves the marker) says why it waits: its
/// place names the lock-delay and when it ends (the end about the delay after the
/// end it saw), and the grant comes no sooner. A zero delay is no delay: no marker
/// is made.
#[test]
fn a_waiter_sees_the_lock_delay_it_waits_out() {
    const DELAY: Duration = Duration::from_millis(800);
    for broken in [false, true] {
        let server = Server::new();
        let (a, b) = (server.client(), server.client());
        let held = a
            .mutex("/locks/delayed")
            .lock_delay(DELAY)
            .lock_blocking()
            .unwrap();
        assert!(server
            .children("/locks/delayed")
            .unwrap()
            .contains(&"zkl-delay".to_owned()));
        assert_eq!(
            b.participants_blocking("/locks/delayed").unwrap().foreign,
            0,
            "the marker is not a foreign node"
        );
        let mut pending = b.mutex("/locks/delayed").lock_delay(DELAY).start().unwrap();
        let mut place = pending.queue_watch();
        assert_eq!(place.changed_blocking().map(|q| q.position), Some(1));
        let ended = Instant::now();
        if broken {
            let operator = server.client();
            operator
                .break_lock_blocking("/locks/delayed", BreakLock::holder().force())
                .unwrap();
            assert!(
                server
                    .children("/locks/delayed")
                    .unwrap()
                    .contains(&"zkl-delay".to_owned()),
                "the break deleted the lock-delay marker"
            );
        } else {
            server.expire_session(&a);
        }
        let queued = place.changed_blocking().expect("a place naming the delay");
        let ends = queued
            .lock_delay_ends()
            .expect("waiting out the lock-delay");
        assert_eq!(queued.position, 0, "{queued:?}");
        assert!(
            ends >= ended + DELAY && ends <= Instant::now() + DELAY,
            "broken {broken}: the delay counts from when the waiter saw the end: \
             ends {:?} after it",
            ends - ended
        );
        assert!(
            queued
                .to_string()
                .starts_with("lock-delay after an unclean end"),
            "{queued}"
        );
        assert_eq!(pending.queued(), Some(queued.clone()));
        let guard = pending
            .wait_timeout_blocking(BOUND)
            .expect("granted")
            .unwrap();
        assert!(Instant::now() >= ends, "granted before the delay ended");
        assert!(guard.token() > held.token());
        drop(held);
        guard.release_blocking().unwrap();
        // (A break leaves its record.)
        let left = if broken { vec!["zkl-broken"] } else { vec![] };
        assert_eq!(
            server.children("/locks/delayed").unwrap_or_default(),
            left,
            "a clean release takes the marker with it"
        );
    }
    let server = Server::new();
    let zero = server
        .client()
        .mutex("/locks/zero")
        .lock_delay(Duration::ZERO)
        .lock_blocking()
        .unwrap();
    assert_eq!(
        server.children("/locks/zero").unwrap().len(),
        1,
        "no marker"
    );
    drop(zero);
}
