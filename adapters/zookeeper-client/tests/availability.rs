//! Availability on real ZooKeeper (lock-conformance's `availability`): a held
//! lock through a standalone server's pause and restart and an ensemble
//! member's restart, and an idle session's cost, for lock-zookeeper-client on
//! tokio (the suite's threads use the blocking twins).

use lock_conformance::availability::{self, Member};
use lock_zookeeper_client::{LockClient, TokioRuntime};
use std::time::Duration;

/// Connects on a runtime of its own (2 workers), kept alive with the client's
/// test: leaked, as each test makes one.
fn connect(cluster: &str, timeout: Duration) -> Result<LockClient, lock_zookeeper_client::Error> {
    let rt = Box::leak(Box::new(
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("tokio runtime"),
    ));
    let runtime = TokioRuntime(rt.handle().clone());
    rt.block_on(
        lock_zookeeper_client::builder(cluster)
            .session_timeout(timeout)
            .runtime(runtime)
            .connect(),
    )
}

#[test]
fn standalone_pause_of_0_8_t_keeps_the_lock() {
    availability::standalone_pause_of_0_8_t_keeps_the_lock(&connect);
}

#[test]
fn standalone_restart_keeps_the_lock() {
    availability::standalone_restart_keeps_the_lock(&connect);
}

#[test]
fn leader_restart_keeps_the_lock() {
    availability::ensemble_member_restart_keeps_the_lock(&connect, Member::Leader);
}

#[test]
fn follower_restart_keeps_the_lock() {
    availability::ensemble_member_restart_keeps_the_lock(&connect, Member::Follower);
}

#[test]
fn idle_session_sends_no_sync() {
    availability::idle_session_sends_no_sync(&connect);
}
