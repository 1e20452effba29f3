//! No false alarm after a grant, on a 3-node ensemble with 500 ms ticks: a CMD
//! that got its lock after a long wait is never signalled while its connection
//! is up (what operators met as flapping leaders and killed jobs).

mod common;

use common::*;
use lock_testkit::ZkEnsemble;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// One ensemble for this test binary.
fn ensemble() -> &'static ZkEnsemble {
    static ENSEMBLE: OnceLock<ZkEnsemble> = OnceLock::new();
    ENSEMBLE.get_or_init(|| {
        ZkEnsemble::builder()
            .tick_time(Duration::from_millis(500))
            .start_ensemble(3)
            .expect("starting a 3-node ensemble (lock-testkit)")
    })
}

/// `zklock elect` (T = 10 s): a standby that waited longer than T becomes
/// leader when the leader is stopped, and its CMD runs to its own end (exit 0).
#[test]
fn a_standby_that_waited_longer_than_t_leads_without_a_false_alarm() {
    let zk = ensemble().connect_string();
    let path = unique("handover");
    let dir = scratch("handover");
    let candidate = |id: &str, script: &str| {
        let ready = dir.join(id);
        let child = zklock(&zk)
            .args(words(&format!(
                "elect --session-timeout 10 {path} {id} -- sh -c"
            )))
            .arg(format!("touch {}; {script}", ready.display()))
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        (child, ready)
    };
    let (mut leader, leader_ready) = candidate("alpha", "exec sleep 600");
    wait_for(&leader_ready, Duration::from_secs(60));
    // The standby's CMD outlives the window in which a grant on a stale proof
    // was suspended (0.2-1.3 s after it), then ends on its own.
    let (standby, standby_ready) = candidate("beta", "sleep 3; exit 0");
    // Longer than T: the standby's session has sent nothing of its own but
    // the syncs of a waiter next in line.
    std::thread::sleep(Duration::from_secs(11));
    assert!(!standby_ready.exists(), "two leaders");
    kill(&leader, "-TERM");
    assert_eq!(leader.wait().unwrap().code(), Some(128 + 15));
    wait_for(&standby_ready, LONG);
    let out = standby.wait_with_output().unwrap();
    assert_eq!(code(&out), 0, "the new leader's CMD was stopped: {out:?}");
}

/// `zklock exec` (T = 4 s) under contention on a busy machine (two spinning
/// processes): seven jobs take turns on each of three locks, each holding
/// 0.7 s, so most wait longer than T in a session that holds nothing. Every
/// job's CMD runs to its end (exit 0): none is signalled after its grant.
#[test]
fn contended_exec_jobs_are_never_signalled_on_a_sound_connection() {
    const JOBS_PER_LOCK: usize = 7;
    const ROUNDS: usize = 2;
    let zk = ensemble().connect_string();
    // A busy machine: two processes that spin for as long as the test runs.
    let _busy: Vec<_> = (0..2)
        .map(|_| {
            let spinning = Command::new("sh")
                .args(["-c", "while :; do :; done"])
                .process_group(0)
                .spawn()
                .expect("spawning a busy process (sh)");
            (KillOnDrop(spinning.id()), spinning)
        })
        .collect();
    let long_waits = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for lock in 0..3 {
            let path = unique("contended");
            for job in 0..JOBS_PER_LOCK {
                let (zk, path, long_waits) = (zk.clone(), path.clone(), &long_waits);
                s.spawn(move || {
                    for round in 0..ROUNDS {
                        let started = Instant::now();
                        let out = run(zklock(&zk).args(words(&format!(
                            "exec --session-timeout 4 {path} -- sleep 0.7"
                        ))));
                        assert_eq!(
                            code(&out),
                            0,
                            "lock {lock} job {job} round {round}: {}",
                            stderr(&out)
                        );
                        if started.elapsed() > Duration::from_millis(4_700) {
                            long_waits.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                    }
                });
            }
        }
    });
    // The scenario happened: many jobs waited longer than T for their turn.
    let long_waits = long_waits.into_inner();
    assert!(
        long_waits >= 3 * JOBS_PER_LOCK * ROUNDS / 3,
        "{long_waits} long waits"
    );
}
