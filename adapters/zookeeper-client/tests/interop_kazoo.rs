//! Interop with kazoo 2.8 (Python), against a real ZooKeeper, with real kazoo clients
//! in their own processes (`tests/peers/kazoo_peer.py`):
//!
//! * kazoo's `Lock` and a zklock mutex with `NameScheme::Kazoo` exclude each other and
//!   hand over in FIFO order both ways, and under load (2 kazoo processes, 3 zklock
//!   sessions, a non-atomic counter) lose no update and never overlap;
//! * kazoo's `ReadLock` / `WriteLock` and a zklock rwlock with the kazoo scheme:
//!   readers of both libraries hold at once (both ways), a writer of either excludes
//!   readers and writers of the other (both ways), and under load no update is lost and
//!   no writer overlaps anyone;
//! * kazoo's `Election` and zklock leader participants (`LockSpec::leader` with the kazoo
//!   scheme; `LockClient::election` has no scheme option) on one path: exactly one leader
//!   at any time, leadership passing between the libraries as leaders resign.
//!
//! Needs Debian's `python3-kazoo` for `/usr/bin/python3`; `scripts/test.sh` installs it
//! when missing, and a missing kazoo fails the test saying so. On kazoo < 2.9 (Debian
//! bookworm has 2.8.0) the peer runs `ReadLock` with kazoo 2.9's predecessor rule: 2.8's
//! reader watches the last writer, even one queued after it, and deadlocks with it
//! (kazoo issue #649), whichever library that writer belongs to. Runs under tokio only:
//! what is tested is the protocol on the wire, not the runtime.

mod common;

use common::peers::{
    counter_workload, mutex_handoff, received, rwlock_exclusion, Kind, Library, MixedElection,
    Peer, RW_PHASES,
};
use common::{connect, run_tokio, server, unique_path, Observer};
use lock_zookeeper_client::NameScheme;
use std::time::Duration;

const SESSION: Duration = Duration::from_secs(10);

#[test]
fn kazoo_lock_and_zklock_mutex_hand_over_in_order() {
    run_tokio(|rt| async move {
        let path = unique_path("kazoo-mutex", &rt);
        let connect_string = server().connect_string();
        let observer = Observer::connect(&connect_string).await;
        let locks = connect(&rt, &connect_string, SESSION).await;
        let mut peer = Peer::kazoo(&connect_string, "kazoo1").await;
        mutex_handoff(&rt, &mut peer, &locks, &observer, &path).await;
        locks.close().await;
    });
}

/// 2 kazoo processes and 3 zklock sessions on one mutex: no lost update, no
/// overlapping sections.
#[test]
fn kazoo_lock_and_zklock_mutex_lose_no_update() {
    run_tokio(|rt| async move {
        let path = unique_path("kazoo-mutex-counter", &rt);
        counter_workload(&rt, Library::Kazoo, &path, &[&[Kind::Mutex]], 2, 3, 10).await;
    });
}

#[test]
fn kazoo_rwlock_and_zklock_rwlock_readers_share_writers_exclude() {
    run_tokio(|rt| async move {
        let path = unique_path("kazoo-rw", &rt);
        let connect_string = server().connect_string();
        let observer = Observer::connect(&connect_string).await;
        let locks = connect(&rt, &connect_string, SESSION).await;
        let mut peer = Peer::kazoo(&connect_string, "kazoo1").await;
        rwlock_exclusion(&rt, &mut peer, &locks, &observer, &path).await;
        locks.close().await;
    });
}

/// 2 kazoo processes and 3 zklock sessions on one read/write lock, writers only, then
/// a reader and a writer each: no lost update, no section overlapping an incompatible
/// one.
#[test]
fn kazoo_rwlock_and_zklock_rwlock_lose_no_update() {
    run_tokio(|rt| async move {
        let path = unique_path("kazoo-rw-counter", &rt);
        counter_workload(&rt, Library::Kazoo, &path, RW_PHASES, 2, 3, 10).await;
    });
}

/// kazoo `Election`s (two processes) and zklock leader participants (two sessions,
/// kazoo scheme) on one path, joined alternately: one leader at a time, in join order,
/// leadership passing zklock -> kazoo -> zklock -> kazoo as each resigns.
#[test]
fn kazoo_election_and_zklock_election_one_leader_in_turn() {
    run_tokio(|rt| async move {
        let path = unique_path("kazoo-election", &rt);
        let connect_string = server().connect_string();
        let starting = [1, 2].map(|i| {
            let connect_string = connect_string.clone();
            common::spawn(&rt, async move {
                Peer::kazoo(&connect_string, &format!("kazoo{i}")).await
            })
        });
        let z1 = connect(&rt, &connect_string, SESSION).await;
        let z2 = connect(&rt, &connect_string, SESSION).await;
        let mut peers = Vec::new();
        for rx in starting {
            peers.push(received(rx, "starting a kazoo peer").await);
        }

        let mut election = MixedElection::new(&rt, &path, NameScheme::Kazoo).await;
        let mut all = vec![election.join_zklock(&rt, &z1, "zklock-1", 1).await];
        election.elected(0, &mut all, &mut peers).await;
        all.push(election.join_peer(&mut peers, 0, "e", "kazoo-1", 2).await);
        all.push(election.join_zklock(&rt, &z2, "zklock-2", 3).await);
        all.push(election.join_peer(&mut peers, 1, "e", "kazoo-2", 4).await);
        election.check(0, &mut all, &mut peers).await;
        for who in 0..all.len() {
            if who > 0 {
                election.elected(who, &mut all, &mut peers).await;
            }
            election.resign(who, &mut all, &mut peers).await;
        }
        election.finish().await;
        z1.close().await;
        z2.close().await;
    });
}
