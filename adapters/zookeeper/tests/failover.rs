//! A follower's death under mixed load must not stall every contender, nor cost the
//! blocking clients their sessions.
//!
//! Blocking clients (this crate) and async clients (`lock-zookeeper-client`, on
//! tokio) contend for one lock on a 3-node ensemble, each taking it, bumping a
//! counter without atomicity (a lost update would show a double holder) and letting
//! go. The blocking clients are connected to the two followers only; after more than
//! `floor(T) + 1` seconds of that load (the `zookeeper` crate pings only when idle,
//! so a busy client has not pinged all that time: the published crate then gave its
//! session up on any connection loss, which the fork, zookeeper-zklock, fixes), the follower
//! serving most of them is killed. They reconnect to the other follower within
//! their sessions: none opens a new client or session, and the longest stretch
//! without an acquisition stays well under T.

use lock_conformance::{unique_path, SHORT};
use lock_testkit::ZkEnsemble;
use lock_zookeeper::Diagnose;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// The session timeout of every contender.
const T: Duration = Duration::from_secs(20);
const BLOCKING: usize = 3;
const ASYNC: usize = 2;

/// What the contenders share.
#[derive(Default)]
struct Ledger {
    /// Someone believes they hold the lock.
    inside: AtomicBool,
    /// Bumped non-atomically inside the lock.
    counter: AtomicU64,
    /// Completed acquisitions.
    acquisitions: AtomicU64,
    /// When each acquisition began.
    grants: Mutex<Vec<Instant>>,
    stop: AtomicBool,
}

impl Ledger {
    /// The work done while holding: a read-modify-write that a second holder would
    /// break.
    fn hold(&self) {
        assert!(!self.inside.swap(true, Ordering::SeqCst), "two holders");
        self.grants.lock().unwrap().push(Instant::now());
        let v = self.counter.load(Ordering::SeqCst);
        thread::sleep(Duration::from_millis(2));
        self.counter.store(v + 1, Ordering::SeqCst);
        self.inside.store(false, Ordering::SeqCst);
        self.acquisitions.fetch_add(1, Ordering::SeqCst);
    }
}

fn blocking_contender(ledger: Arc<Ledger>, locks: lock_zookeeper::LockClient, path: String) {
    while !ledger.stop.load(Ordering::SeqCst) {
        // Errors (the session given up on, a timeout while it is replaced) are part
        // of the fault: try again.
        if let Ok(guard) = locks.mutex(&path).lock_timeout_blocking(SHORT) {
            if guard.is_trusted() {
                ledger.hold();
            }
            let _ = guard.release_blocking();
        }
    }
}

fn async_contender(ledger: Arc<Ledger>, connect: String, path: String) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let locks = lock_zookeeper_client::builder(&connect)
            .session_timeout(T)
            .connect()
            .await
            .expect("async client connects");
        while !ledger.stop.load(Ordering::SeqCst) {
            if let Ok(guard) = locks.mutex(path.clone()).lock_timeout(SHORT).await {
                if guard.is_trusted() {
                    ledger.hold();
                }
                let _ = guard.release().await;
            }
        }
        locks.close().await;
    });
}

#[test]
fn follower_death_does_not_stall_the_queue_nor_cost_sessions() {
    let ensemble = ZkEnsemble::start(3).expect("a 3-node ensemble");
    let leader = ensemble.wait_for_leader(SHORT).expect("a leader");
    let followers: Vec<usize> = (0..3).filter(|&i| i != leader).collect();
    let member = |i: usize| ensemble.member(i).expect("member").connect_string();
    let blocking_connect = followers
        .iter()
        .map(|&i| member(i))
        .collect::<Vec<_>>()
        .join(",");
    let path = unique_path("failover");
    let ledger = Arc::new(Ledger::default());

    let clients: Vec<lock_zookeeper::LockClient> = (0..BLOCKING)
        .map(|_| {
            lock_zookeeper::builder(&blocking_connect)
                .session_timeout(T)
                .connect()
                .expect("blocking client connects")
        })
        .collect();
    let mut blocking = Vec::new();
    for locks in &clients {
        let (ledger, locks, path) = (ledger.clone(), locks.clone(), path.clone());
        blocking.push(thread::spawn(move || {
            blocking_contender(ledger, locks, path)
        }));
    }
    let mut asynchronous = Vec::new();
    for _ in 0..ASYNC {
        let (ledger, connect, path) = (ledger.clone(), ensemble.connect_string(), path.clone());
        asynchronous.push(thread::spawn(move || {
            async_contender(ledger, connect, path)
        }));
    }

    // Longer than floor(T) + 1 s of load: the busy blocking clients no longer ping.
    thread::sleep(T + Duration::from_secs(3));
    // The follower serving the most blocking sessions (at least two of three).
    let served = |i: usize| -> Vec<usize> {
        let cons = ensemble
            .member(i)
            .expect("member")
            .four_letter_word("cons")
            .expect("cons");
        (0..BLOCKING)
            .filter(|&c| {
                let sid = clients[c].session_id().expect("a session");
                cons.contains(&format!("sid={sid:#x}"))
            })
            .collect()
    };
    let (follower, on_it) = followers
        .iter()
        .map(|&i| (i, served(i)))
        .max_by_key(|(_, on)| on.len())
        .expect("followers");
    assert!(!on_it.is_empty(), "no blocking session on either follower");
    let before = ledger.acquisitions.load(Ordering::SeqCst);
    let killed_at = Instant::now();
    ensemble.members()[follower].kill();
    thread::sleep(T * 3 / 4);
    ledger.stop.store(true, Ordering::SeqCst);
    for h in blocking {
        h.join().expect("blocking contender");
    }
    for h in asynchronous {
        h.join().expect("async contender");
    }
    let diagnostics: Vec<_> = clients.iter().map(|c| c.diagnostics()).collect();
    for locks in clients {
        locks.close_blocking();
    }

    let total = ledger.acquisitions.load(Ordering::SeqCst);
    assert_eq!(
        ledger.counter.load(Ordering::SeqCst),
        total,
        "lost update: two holders"
    );
    assert!(before > 0, "no acquisition before the kill");
    let mut grants = ledger.grants.lock().unwrap().clone();
    grants.sort();
    // The longest stretch without a grant from the kill on (the kill itself counts
    // as its start).
    let after: Vec<Instant> = grants.into_iter().filter(|g| *g >= killed_at).collect();
    let mut longest = Duration::ZERO;
    let mut last = killed_at;
    for g in &after {
        longest = longest.max(g.duration_since(last));
        last = *g;
    }
    eprintln!(
        "{total} acquisitions ({before} before the kill, {} after); longest stretch \
         without one after the kill: {longest:?}; blocking clients {on_it:?} were on the \
         killed follower; their diagnostics: {diagnostics:?}",
        after.len()
    );
    for (c, d) in diagnostics.iter().enumerate() {
        assert_eq!(
            (d.clients_opened, d.sessions),
            (1, 1),
            "blocking client {c} lost its session: {d:?}"
        );
        if on_it.contains(&c) {
            assert!(d.reconnects >= 1, "client {c} never reconnected: {d:?}");
        }
    }
    assert!(!after.is_empty(), "no acquisition after the kill");
    assert!(
        longest < T / 3,
        "the queue stalled for {longest:?} after the follower died (T = {T:?})"
    );
}
