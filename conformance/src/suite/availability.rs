//! [`crate::availability`] on every environment with real ZooKeeper servers to
//! pause, kill and restart ([`Capability::Ensemble`](crate::Capability::Ensemble)):
//! its tests start their own servers and reach them with [`Env::client_at`].

use super::*;
use crate::availability::{self, Member};

/// How the availability tests connect: the environment's binding, at any address.
fn connect_at(b: &Suite) -> impl Fn(&str, Duration) -> Result<LockClient, Error> + '_ {
    move |to, timeout| {
        b.env()
            .client_at(to, timeout)
            .unwrap_or_else(|| panic!("{}: no Env::client_at", b.name()))
    }
}

/// See [`availability::standalone_pause_of_0_8_t_keeps_the_lock`].
pub fn standalone_pause_of_0_8_t_keeps_the_lock(b: &Suite) {
    availability::standalone_pause_of_0_8_t_keeps_the_lock(&connect_at(b));
}

/// See [`availability::standalone_restart_keeps_the_lock`].
pub fn standalone_restart_keeps_the_lock(b: &Suite) {
    availability::standalone_restart_keeps_the_lock(&connect_at(b));
}

/// [`availability::ensemble_member_restart_keeps_the_lock`], the leader.
pub fn leader_restart_keeps_the_lock(b: &Suite) {
    availability::ensemble_member_restart_keeps_the_lock(&connect_at(b), Member::Leader);
}

/// [`availability::ensemble_member_restart_keeps_the_lock`], a follower.
pub fn follower_restart_keeps_the_lock(b: &Suite) {
    availability::ensemble_member_restart_keeps_the_lock(&connect_at(b), Member::Follower);
}

/// See [`availability::idle_session_sends_no_sync`].
pub fn idle_session_sends_no_sync(b: &Suite) {
    availability::idle_session_sends_no_sync(&connect_at(b));
}
