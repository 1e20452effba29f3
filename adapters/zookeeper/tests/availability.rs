//! Availability on real ZooKeeper (lock-conformance's `availability`): a held
//! lock through a standalone server's pause and restart and an ensemble
//! member's restart, and an idle session's cost, for lock-zookeeper.

use lock_conformance::availability::{self, Member};
use lock_zookeeper::LockClient;
use std::time::Duration;

fn connect(cluster: &str, timeout: Duration) -> Result<LockClient, lock_zookeeper::Error> {
    lock_zookeeper::builder(cluster)
        .session_timeout(timeout)
        .connect()
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
