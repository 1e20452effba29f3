//! A follower's death under mixed load must not stall every contender.
//!
//! Blocking clients (this crate) and async clients (`lock-zookeeper-client`, on
//! tokio) contend for one lock on a 3-node ensemble, each taking it, bumping a
//! counter without atomicity (a lost update would show a double holder) and letting
//! go. The blocking clients are connected to one follower (the `zookeeper` crate
//! tries the hosts of its connect string in order); after more than `floor(T) + 1`
//! seconds of that load, so that the crate's busy-client hazard is live (it drops
//! its session on any connection loss, while the server keeps it for up to T), the
//! follower is killed. Before lock-core learnt `SessionEvent::Abandoned`, the
//! abandoned session's nodes blocked the queue until the server expired the session,
//! a T-long outage for every library on the path. Now the new session deletes them
//! at once: the longest stretch without an acquisition stays well under T.

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

fn blocking_contender(ledger: Arc<Ledger>, connect: String, path: String) -> u64 {
    let locks = lock_zookeeper::builder(&connect)
        .session_timeout(T)
        .connect()
        .expect("blocking client connects");
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
    let sessions = locks.diagnostics().sessions;
    locks.close_blocking();
    sessions
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
fn follower_death_does_not_stall_the_queue() {
    let ensemble = ZkEnsemble::start(3).expect("a 3-node ensemble");
    let leader = ensemble.wait_for_leader(SHORT).expect("a leader");
    let follower = (0..3).find(|&i| i != leader).expect("a follower");
    let member = |i: usize| ensemble.member(i).expect("member").connect_string();
    // The blocking crate connects to the first host it is given, then the next.
    let order: Vec<usize> = std::iter::once(follower)
        .chain((0..3).filter(|&i| i != follower))
        .collect();
    let blocking_connect = order
        .iter()
        .map(|&i| member(i))
        .collect::<Vec<_>>()
        .join(",");
    let path = unique_path("failover");
    let ledger = Arc::new(Ledger::default());

    let mut blocking = Vec::new();
    for _ in 0..BLOCKING {
        let (ledger, connect, path) = (ledger.clone(), blocking_connect.clone(), path.clone());
        blocking.push(thread::spawn(move || {
            blocking_contender(ledger, connect, path)
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
    let before = ledger.acquisitions.load(Ordering::SeqCst);
    let killed_at = Instant::now();
    ensemble.kill(follower).expect("killing the follower");
    thread::sleep(T * 3 / 4);
    ledger.stop.store(true, Ordering::SeqCst);
    let sessions: Vec<u64> = blocking
        .into_iter()
        .map(|h| h.join().expect("blocking contender"))
        .collect();
    for h in asynchronous {
        h.join().expect("async contender");
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
         without one after the kill: {longest:?}; blocking clients' sessions: {sessions:?}",
        after.len()
    );
    assert!(!after.is_empty(), "no acquisition after the kill");
    assert!(
        longest < T / 3,
        "the queue stalled for {longest:?} after the follower died (T = {T:?})"
    );
}
