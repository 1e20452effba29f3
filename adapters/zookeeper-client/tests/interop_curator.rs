//! Interop with Apache Curator 5.4 (Java) against a real ZooKeeper, Curator clients in
//! their own JVMs (`tests/peers/CuratorPeer.java`, compiled at test time): the shared
//! interop tests (locks, read/write locks, elections, semaphores; see
//! `common::peers::interop_tests`), revocation both ways, and
//! `InterProcessSemaphoreMutex` against a zklock semaphore of 1.
//!
//! Needs a JDK and Debian's `libcurator-recipes-java`; `scripts/test.sh` installs them,
//! and a missing piece fails the test saying so.

mod common;

use common::peers::{
    delivered, interop_tests, node_name, received, within, zk_start_lock, Library,
};
use common::semaphores::{zk_permit, zk_try_permit};
use lock_zookeeper_client::{LockStatus, NameScheme};

interop_tests!(Library::Curator);

/// Curator's `Revoker.attemptRevoke(client, nodePath)` on a revocable zklock holder's
/// node: the zklock guard sees the request (Curator's `__REVOKE__` in its node), keeps
/// the lock until it decides, and its release lets the waiting Curator client in.
#[test]
fn curator_revoker_asks_a_revocable_zklock_holder() {
    run_tokio(|rt| async move {
        let (path, observer, locks, mut peer) =
            meet(&rt, Library::Curator, "curator-revoker", "curator1").await;

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
        let (path, observer, locks, mut peer) =
            meet(&rt, Library::Curator, "zklock-revokes-curator", "curator1").await;

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

/// Curator's `InterProcessSemaphoreMutex` (a semaphore of one permit in the same
/// layout) and a zklock semaphore of 1: each excludes the other, and a waiter of
/// either gets in when the other lets go.
#[test]
fn curator_semaphore_mutex_and_zklock_semaphore_of_one_exclude() {
    run_tokio(|rt| async move {
        let (path, observer, locks, mut peer) =
            meet(&rt, Library::Curator, "curator-sem-mutex", "curator1").await;

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
