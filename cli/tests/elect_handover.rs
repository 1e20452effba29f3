//! `zklock elect` on a 3-node ensemble (500 ms ticks, T = 10 s): a standby that
//! waited longer than T becomes leader when the leader is stopped, and its CMD
//! runs to its own end (exit 0): no `Suspended` right after the handover on a
//! connection that is fine (what operators met as flapping leaders).

mod common;

use common::*;
use lock_testkit::ZkEnsemble;
use std::process::Stdio;
use std::time::{Duration, Instant};

#[test]
fn a_standby_that_waited_longer_than_t_leads_without_a_false_alarm() {
    let ensemble = ZkEnsemble::builder()
        .tick_time(Duration::from_millis(500))
        .start_ensemble(3)
        .expect("starting a 3-node ensemble (lock-testkit)");
    let zk = ensemble.connect_string();
    let path = unique("handover");
    let dir = scratch("handover");
    let candidate = |id: &str, script: &str| {
        let ready = dir.join(id);
        let child = zklock(&zk)
            .args([
                "elect",
                "--session-timeout",
                "10",
                &path,
                id,
                "--",
                "sh",
                "-c",
            ])
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
    let (mut standby, standby_ready) = candidate("beta", "sleep 3; exit 0");
    // Longer than T: the standby's session has sent nothing of its own but
    // the syncs of a waiter next in line.
    std::thread::sleep(Duration::from_secs(11));
    assert!(!standby_ready.exists(), "two leaders");
    let stopped = Instant::now();
    kill(&leader, "-TERM");
    assert_eq!(leader.wait().unwrap().code(), Some(128 + 15));
    wait_for(&standby_ready, Duration::from_secs(30));
    eprintln!(
        "handover: standby's CMD started {:?} after the leader's SIGTERM",
        stopped.elapsed()
    );
    let status = standby.wait().unwrap();
    let mut stderr = String::new();
    use std::io::Read;
    standby
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(
        status.code(),
        Some(0),
        "the new leader's CMD was stopped: {stderr}"
    );
}
