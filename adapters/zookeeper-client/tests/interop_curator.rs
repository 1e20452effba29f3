//! Interop with Apache Curator 5.4 (Java), against a real ZooKeeper, with real Curator
//! clients in their own JVMs (`tests/peers/CuratorPeer.java`, compiled at test time):
//!
//! * Curator's `InterProcessMutex` and a zklock mutex with `NameScheme::Curator` exclude
//!   each other and hand over in FIFO order both ways, and under load (2 Curator
//!   processes, 3 zklock sessions, a non-atomic counter) lose no update and never
//!   overlap;
//! * Curator's `InterProcessReadWriteLock` and a zklock rwlock with the Curator scheme:
//!   readers of both libraries hold at once (both ways), a writer of either excludes
//!   readers and writers of the other (both ways), and under load (readers and writers
//!   of both libraries) no update is lost and no writer overlaps anyone;
//! * revocation both ways: Curator's `Revoker.attemptRevoke` reaches a revocable zklock
//!   holder, and zklock's `LockClient::revoke` fires the listener of a Curator mutex
//!   made revocable with `makeRevocable`;
//! * Curator's `LeaderLatch` and zklock leader participants (`LockSpec::leader` with the
//!   Curator scheme; `LockClient::election` has no scheme option) on one path: exactly
//!   one leader at any time, leadership passing between the libraries as leaders resign;
//! * Curator's `InterProcessSemaphoreV2` and a zklock semaphore with the Curator scheme
//!   (Curator's layout: the internal mutex `<path>/locks`, lease nodes under
//!   `<path>/leases`): holders of both fill the permits and queue in one line; a
//!   holder's session expiry, Curator's or zklock's, frees its permit for the next
//!   waiter; under load (2 Curator processes, 3 zklock sessions) never more than `n`
//!   holders at once; `InterProcessSemaphoreMutex` and a zklock semaphore of 1 exclude
//!   each other both ways.
//!
//! Needs a JDK (`javac`, `java`) and Debian's `libcurator-recipes-java` (jars in
//! `/usr/share/java`); `scripts/test.sh` installs them when missing, and a missing
//! piece fails the test saying so. Runs under tokio only: what is tested is the
//! protocol on the wire, not the runtime.

mod common;

use common::peers::{
    counter_workload, delivered, mixed_election_in_turn, mutex_handoff, node_name, received,
    rwlock_exclusion, within, zk_start_lock, Kind, Library, Peer, RW_PHASES,
};
use common::semaphores::{
    semaphore_exclusion, semaphore_holder_expiry, semaphore_workload, zk_permit, zk_try_permit,
};
use common::{connect, run_tokio, server, unique_path, Observer};
use lock_zookeeper_client::{LockStatus, NameScheme};
use std::time::Duration;

const SESSION: Duration = Duration::from_secs(10);

#[test]
fn curator_mutex_and_zklock_mutex_hand_over_in_order() {
    run_tokio(|rt| async move {
        let path = unique_path("curator-mutex", &rt);
        let connect_string = server().connect_string();
        let observer = Observer::connect(&connect_string).await;
        let locks = connect(&rt, &connect_string, SESSION).await;
        let mut peer = Peer::curator(&connect_string, "curator1").await;
        mutex_handoff(&rt, &mut peer, &locks, &observer, &path).await;
        locks.close().await;
    });
}

/// 2 Curator processes and 3 zklock sessions on one mutex: no lost update, no
/// overlapping sections.
#[test]
fn curator_mutex_and_zklock_mutex_lose_no_update() {
    run_tokio(|rt| async move {
        let path = unique_path("curator-mutex-counter", &rt);
        counter_workload(&rt, Library::Curator, &path, &[&[Kind::Mutex]], 2, 3, 10).await;
    });
}

#[test]
fn curator_rwlock_and_zklock_rwlock_readers_share_writers_exclude() {
    run_tokio(|rt| async move {
        let path = unique_path("curator-rw", &rt);
        let connect_string = server().connect_string();
        let observer = Observer::connect(&connect_string).await;
        let locks = connect(&rt, &connect_string, SESSION).await;
        let mut peer = Peer::curator(&connect_string, "curator1").await;
        rwlock_exclusion(&rt, &mut peer, &locks, &observer, &path).await;
        locks.close().await;
    });
}

/// 2 Curator processes and 3 zklock sessions on one read/write lock, writers only,
/// then a reader and a writer each: no lost update, no section overlapping an
/// incompatible one.
#[test]
fn curator_rwlock_and_zklock_rwlock_lose_no_update() {
    run_tokio(|rt| async move {
        let path = unique_path("curator-rw-counter", &rt);
        counter_workload(&rt, Library::Curator, &path, RW_PHASES, 2, 3, 10).await;
    });
}

/// Curator's `Revoker.attemptRevoke(client, nodePath)` on a revocable zklock holder's
/// node: the zklock guard sees the request (Curator's `__REVOKE__` in its node), keeps
/// the lock until it decides, and its release lets the waiting Curator client in.
#[test]
fn curator_revoker_asks_a_revocable_zklock_holder() {
    run_tokio(|rt| async move {
        let path = unique_path("curator-revoker", &rt);
        let connect_string = server().connect_string();
        let observer = Observer::connect(&connect_string).await;
        let locks = connect(&rt, &connect_string, SESSION).await;
        let mut peer = Peer::curator(&connect_string, "curator1").await;

        let guard = locks
            .mutex(&path)
            .with_scheme(NameScheme::Curator)
            .revocable()
            .lock()
            .await
            .expect("zklock lock");
        peer.start_acquire("w", "mutex", &path);
        observer.wait_children(&path, 2).await;
        assert!(!guard.is_revocation_requested());

        peer.send("r", &format!("revoke {}", guard.path()));
        peer.expect("r", "REVOKE_SENT").await;
        let told = within("the zklock holder told", guard.revocation_requested()).await;
        assert_eq!(told, Ok(()));
        let (data, _) = observer.client.get_data(guard.path()).await.unwrap();
        assert_eq!(data, b"__REVOKE__", "what Curator's Revoker writes");
        assert_eq!(guard.status(), LockStatus::Held, "the holder decides");
        assert!(peer.quiet("w"), "Curator got in before zklock let go");

        guard.release().await.expect("release");
        peer.held("w").await;
        peer.release("w").await;
        observer.wait_children(&path, 0).await;
        locks.close().await;
    });
}

/// zklock's `LockClient::revoke(lock path)` on a Curator `InterProcessMutex` made
/// revocable with `makeRevocable(listener)`: it names the Curator holder's node, the
/// listener fires, and when the Curator holder releases the zklock waiter gets in.
#[test]
fn zklock_revoke_fires_a_revocable_curator_mutex_listener() {
    run_tokio(|rt| async move {
        let path = unique_path("zklock-revokes-curator", &rt);
        let connect_string = server().connect_string();
        let observer = Observer::connect(&connect_string).await;
        let locks = connect(&rt, &connect_string, SESSION).await;
        let mut peer = Peer::curator(&connect_string, "curator1").await;

        peer.start_acquire("h", "revocable", &path);
        let theirs = peer.held("h").await;
        let mut waiting = zk_start_lock(&rt, &locks, Kind::Mutex, &path, NameScheme::Curator);
        observer.wait_children(&path, 2).await;

        let asked = locks.revoke(path.clone()).await.expect("revoke");
        assert_eq!(
            asked,
            vec![format!("{path}/{theirs}")],
            "only the holder is asked"
        );
        peer.expect("h", "REVOCATION_REQUESTED").await;
        assert!(
            !delivered(&mut waiting),
            "zklock got in before Curator let go"
        );

        peer.release("h").await;
        let guard = received(waiting, "the zklock waiter").await;
        assert_eq!(
            observer.children(&path).await,
            vec![node_name(guard.path())]
        );
        guard.release().await.expect("release");
        locks.close().await;
    });
}

/// Curator `LeaderLatch`es (two JVMs) and zklock leader participants (two sessions,
/// Curator scheme) on one path, joined alternately: one leader at a time, in join
/// order, leadership passing zklock -> Curator -> zklock -> Curator as each resigns.
#[test]
fn curator_leader_latch_and_zklock_election_one_leader_in_turn() {
    run_tokio(|rt| async move {
        let path = unique_path("curator-latch", &rt);
        mixed_election_in_turn(&rt, Library::Curator, &path).await;
    });
}

/// Curator `InterProcessSemaphoreV2`s and zklock semaphores (Curator scheme) fill two
/// permits together and queue in one line (see `semaphore_exclusion`).
#[test]
fn curator_semaphore_and_zklock_semaphore_share_permits() {
    run_tokio(|rt| async move {
        let path = unique_path("curator-sem", &rt);
        let connect_string = server().connect_string();
        let observer = Observer::connect(&connect_string).await;
        let locks = connect(&rt, &connect_string, SESSION).await;
        let mut peer = Peer::curator(&connect_string, "curator1").await;
        semaphore_exclusion(&rt, &mut peer, &locks, &observer, &path).await;
        locks.close().await;
    });
}

/// A Curator holder's session expires, then a zklock holder's: each permit goes to
/// the next waiter, the zklock holder knowing it lost before the Curator waiter
/// behind it holds.
#[test]
fn curator_semaphore_and_zklock_semaphore_survive_holder_expiry() {
    run_tokio(|rt| async move {
        let path = unique_path("curator-sem-expiry", &rt);
        semaphore_holder_expiry(&rt, Library::Curator, &path).await;
    });
}

/// 2 Curator processes and 3 zklock sessions on a semaphore of 2: never 3 holders.
#[test]
fn curator_semaphore_and_zklock_semaphore_never_exceed_permits() {
    run_tokio(|rt| async move {
        let path = unique_path("curator-sem-counter", &rt);
        let most = semaphore_workload(&rt, Library::Curator, &path, 2, 2, 3, 8).await;
        assert_eq!(most, 2, "the permits were never all used at once");
    });
}

/// Curator's `InterProcessSemaphoreMutex` (a semaphore of one permit in the same
/// layout) and a zklock semaphore of 1: each excludes the other, and a waiter of
/// either gets in when the other lets go.
#[test]
fn curator_semaphore_mutex_and_zklock_semaphore_of_one_exclude() {
    run_tokio(|rt| async move {
        let path = unique_path("curator-sem-mutex", &rt);
        let connect_string = server().connect_string();
        let observer = Observer::connect(&connect_string).await;
        let locks = connect(&rt, &connect_string, SESSION).await;
        let mut peer = Peer::curator(&connect_string, "curator1").await;

        peer.send("m", &format!("smutex {path}"));
        peer.expect("m", "LEASED").await;
        assert!(
            zk_try_permit(&locks, Library::Curator, &path, 1)
                .await
                .is_none(),
            "zklock took the permit of a held InterProcessSemaphoreMutex"
        );
        let waiting = {
            let (locks, path) = (locks.clone(), path.clone());
            common::spawn(&rt, async move {
                zk_permit(&locks, Library::Curator, &path, 1).await
            })
        };
        observer.wait_children(&format!("{path}/locks"), 1).await;
        peer.send("m", "srelease");
        peer.expect("m", "RELEASED").await;
        let ours = received(waiting, "zklock behind InterProcessSemaphoreMutex").await;

        peer.send("m", &format!("smutex {path}"));
        observer.wait_children(&format!("{path}/locks"), 1).await;
        assert!(
            peer.quiet("m"),
            "InterProcessSemaphoreMutex acquired beside a zklock holder"
        );
        ours.release().await.expect("release");
        peer.expect("m", "LEASED").await;
        peer.send("m", "srelease");
        peer.expect("m", "RELEASED").await;
        observer.wait_children(&format!("{path}/leases"), 0).await;
        locks.close().await;
    });
}
