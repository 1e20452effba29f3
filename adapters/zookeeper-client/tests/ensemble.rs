//! A 3-node ensemble losing its leader while sessions contend for a lock, under
//! every runtime. The three runtime variants share one ensemble and take turns (each
//! kills the leader and restarts it afterwards).
// The runtime variants run on separate test threads, each with its own executor:
// blocking a thread on the std mutex `TURN` until the previous variant is done is
// the intent, so the guard is held across awaits on purpose.
#![allow(clippy::await_holding_lock)]

mod common;

use common::{connect, spawn, yield_now, Observer};
use lock_testkit::ZkEnsemble;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// Long enough that no session expires while a new leader is elected (normally
/// well under a second; the testkit caps election retries at 1 s).
const SESSION: Duration = Duration::from_secs(30);

fn shared_ensemble() -> &'static ZkEnsemble {
    static ENSEMBLE: OnceLock<ZkEnsemble> = OnceLock::new();
    ENSEMBLE.get_or_init(|| {
        ZkEnsemble::builder()
            .start_ensemble(3)
            .expect("starting a 3-node ensemble")
    })
}

/// One test at a time on the shared ensemble.
static TURN: Mutex<()> = Mutex::new(());

rt_tests! {
    /// 4 sessions x 25 acquisitions of one lock on a 3-node ensemble; the leader is
    /// killed after the first 20. No update is lost, no two holders overlap, fencing
    /// tokens keep increasing, and every acquisition completes.
    async fn leader_loss_keeps_mutual_exclusion(rt) {
        const SESSIONS: usize = 4;
        const ROUNDS: u64 = 25;
        const KILL_AFTER: u64 = 20;
        let _turn = TURN.lock().unwrap_or_else(|p| p.into_inner());
        // Starting (first test) and readiness checks block: keep them off the runtime.
        let ensemble = common::blocking(|| {
            let ensemble = shared_ensemble();
            ensemble.wait_ready(Duration::from_secs(60)).expect("ensemble ready");
            ensemble
        })
        .await;
        let cluster = ensemble.connect_string();
        let dir = common::unique_path("ensemble", &rt);
        let counter = Arc::new(AtomicU64::new(0));
        let inside = Arc::new(AtomicBool::new(false));
        let tokens = Arc::new(Mutex::new(Vec::new()));
        let (kill_tx, kill_rx) = futures::channel::oneshot::channel::<()>();
        let kill_tx = Arc::new(Mutex::new(Some(kill_tx)));
        let mut tasks = Vec::new();
        for _ in 0..SESSIONS {
            let client = connect(&rt, &cluster, SESSION).await;
            let (dir, counter, inside, tokens, kill_tx) =
                (dir.clone(), counter.clone(), inside.clone(), tokens.clone(), kill_tx.clone());
            tasks.push(spawn(&rt, async move {
                let mutex = client.mutex(dir);
                for _ in 0..ROUNDS {
                    let guard = mutex.lock().await.expect("lock");
                    assert!(!inside.swap(true, Ordering::SeqCst), "two holders at once");
                    tokens.lock().unwrap().push(guard.token());
                    let v = counter.load(Ordering::SeqCst);
                    yield_now().await;
                    counter.store(v + 1, Ordering::SeqCst);
                    inside.store(false, Ordering::SeqCst);
                    if v + 1 == KILL_AFTER {
                        if let Some(tx) = kill_tx.lock().unwrap().take() {
                            let _ = tx.send(());
                        }
                    }
                    guard.release().await.expect("release");
                }
                let stats = client.stats().await.expect("stats");
                client.close().await;
                stats
            }));
        }
        kill_rx.await.expect("the workers reached the kill point");
        let leader = common::blocking(move || {
            let leader = ensemble.wait_for_leader(Duration::from_secs(30)).expect("a leader");
            ensemble.kill(leader).expect("killing the leader");
            let t = std::time::Instant::now();
            let new_leader = ensemble.wait_for_leader(Duration::from_secs(60)).expect("a new leader");
            eprintln!("new leader {new_leader} after {:?}", t.elapsed());
            leader
        })
        .await;
        let killed_at = std::time::Instant::now();
        let at_kill = counter.load(Ordering::SeqCst);
        let mut stats = Vec::new();
        for task in tasks {
            stats.push(task.await.expect("session task"));
        }
        // For the record (visible with --nocapture): how the loss was ridden out.
        eprintln!(
            "leader {leader} killed at {at_kill} acquisitions; the other {} took {:?}; \
             retries {:?}, stale replies {:?}",
            SESSIONS as u64 * ROUNDS - at_kill,
            killed_at.elapsed(),
            stats.iter().map(|s| s.retries).collect::<Vec<_>>(),
            stats.iter().map(|s| s.stale_replies).collect::<Vec<_>>(),
        );
        assert_eq!(counter.load(Ordering::SeqCst), SESSIONS as u64 * ROUNDS);
        let tokens = tokens.lock().unwrap().clone();
        assert!(tokens.windows(2).all(|w| w[0] < w[1]), "tokens not increasing: {tokens:?}");
        let observer = Observer::connect(&cluster).await;
        assert!(observer.children(&dir).await.is_empty(), "nodes left behind");
        common::blocking(move || {
            ensemble.restart(leader).expect("restarting the old leader");
            ensemble.wait_ready(Duration::from_secs(60)).expect("ensemble ready again");
        })
        .await;
    }
}
