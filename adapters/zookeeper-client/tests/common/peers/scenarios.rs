//! Deterministic scenarios, shared by the Curator, kazoo and Go tests.
use crate::common::{connect, server, unique_path, Observer, Runtime};
use lock_core::NodeKind;
use lock_zookeeper_client::{LockClient, LockGuard, LockStatus};
use std::time::Duration;

use super::process::{Kind, Library, Peer};
use super::zklock_side::{
    assert_node, delivered, node_name, received, zk_lock, zk_refused, zk_start_lock, zk_try,
};

/// A fresh lock path named after `test`, an observer, a zklock client and one peer of
/// `library` named `peer`, all on the shared server.
pub async fn meet(
    rt: &Runtime,
    library: Library,
    test: &str,
    peer: &str,
) -> (String, Observer, LockClient, Peer) {
    let connect_string = server().connect_string();
    (
        unique_path(test, rt),
        Observer::connect(&connect_string).await,
        connect(rt, &connect_string, Duration::from_secs(10)).await,
        Peer::start_library(library, &connect_string, peer).await,
    )
}

/// Defines, in the calling module, the interop tests every lock library with locks,
/// read/write locks, elections and semaphores passes against `$library`: the
/// scenarios of this module and of the counter, election and semaphore workloads.
#[allow(unused_macros)] // only the interop test binaries use it
macro_rules! interop_tests {
    // A test running `$scenario` with a peer and a zklock client that `meet` on a
    // fresh path.
    (@met $(#[$doc:meta])* $name:ident, $library:expr, $test:literal, $scenario:ident) => {
        $(#[$doc])*
        #[test]
        fn $name() {
            run_tokio(|rt| async move {
                let (path, observer, locks, mut peer) = meet(&rt, $library, $test, "peer1").await;
                $scenario(&rt, &mut peer, &locks, &observer, &path).await;
                locks.close().await;
            });
        }
    };
    // A counter workload test: 2 peer processes and 3 zklock sessions, 10 sections each.
    (@counter $(#[$doc:meta])* $name:ident, $library:expr, $test:literal, $phases:expr) => {
        $(#[$doc])*
        #[test]
        fn $name() {
            run_tokio(|rt| async move {
                let path = unique_path($test, &rt);
                let schemes = [$library.scheme(); 3];
                counter_workload(&rt, $library, &path, $phases, 2, &schemes, 10).await;
            });
        }
    };
    ($library:expr) => {
        use crate::common::peers::{
            counter_workload, meet, mixed_election_in_turn, mutex_handoff, rwlock_exclusion, Kind,
            RW_PHASES,
        };
        use crate::common::semaphores::{
            semaphore_exclusion, semaphore_holder_expiry, semaphore_workload,
        };
        use crate::common::{run_tokio, unique_path};

        interop_tests!(@met
            /// Either library's mutex holder excludes the other's, which queues and gets
            /// in when it lets go.
            mutex_and_zklock_mutex_hand_over_in_order, $library, "interop-mutex", mutex_handoff
        );

        interop_tests!(@counter
            /// 2 peer processes and 3 zklock sessions on one mutex: no lost update, no
            /// overlapping sections.
            mutex_and_zklock_mutex_lose_no_update, $library, "interop-mutex-counter",
            &[&[Kind::Mutex]]
        );

        interop_tests!(@met
            /// See [`rwlock_exclusion`].
            rwlock_and_zklock_rwlock_readers_share_writers_exclude, $library, "interop-rw",
            rwlock_exclusion
        );

        interop_tests!(@counter
            /// 2 peer processes and 3 zklock sessions on one read/write lock, writers
            /// only, then a reader and a writer each: no lost update, no section
            /// overlapping an incompatible one.
            rwlock_and_zklock_rwlock_lose_no_update, $library, "interop-rw-counter", RW_PHASES
        );

        /// The peer's elections (two processes) and zklock leader participants (two
        /// sessions, the peer's scheme) on one path, joined alternately: one leader at
        /// a time, in join order, leadership alternating as each resigns.
        #[test]
        fn election_and_zklock_election_one_leader_in_turn() {
            run_tokio(|rt| async move {
                let path = unique_path("interop-election", &rt);
                mixed_election_in_turn(&rt, $library, &path).await;
            });
        }

        interop_tests!(@met
            /// The peer's semaphores and zklock's (the peer's scheme) fill two permits
            /// together and queue in one line (see `semaphore_exclusion`).
            semaphore_and_zklock_semaphore_share_permits, $library, "interop-sem",
            semaphore_exclusion
        );

        /// A peer holder's session expires, then a zklock holder's: each permit goes
        /// to the next waiter, the zklock holder knowing it lost before the peer's
        /// waiter behind it holds.
        #[test]
        fn semaphore_and_zklock_semaphore_survive_holder_expiry() {
            run_tokio(|rt| async move {
                let path = unique_path("interop-sem-expiry", &rt);
                semaphore_holder_expiry(&rt, $library, &path).await;
            });
        }

        /// 2 peer processes and 3 zklock sessions on a semaphore of 2: never 3 holders.
        #[test]
        fn semaphore_and_zklock_semaphore_never_exceed_permits() {
            run_tokio(|rt| async move {
                let path = unique_path("interop-sem-counter", &rt);
                let most = semaphore_workload(&rt, $library, &path, 2, 2, 3, 8).await;
                assert_eq!(most, 2, "the permits were never all used at once");
            });
        }
    };
}
#[allow(unused_imports)]
pub(crate) use interop_tests;

/// Exclusive locks of the peer and of zklock (with the peer's scheme) exclude each
/// other and hand over in FIFO order, in both directions.
pub async fn mutex_handoff(
    rt: &Runtime,
    peer: &mut Peer,
    locks: &LockClient,
    observer: &Observer,
    path: &str,
) {
    let lib = peer.library;
    let scheme = lib.scheme();

    // The peer holds; zklock cannot take it, queues, and gets it when the peer lets go.
    let theirs = peer.acquire("h", Kind::Mutex, path).await;
    assert_node(&theirs, scheme, NodeKind::Write, lib.name());
    let zk = (locks, path, scheme, observer);
    let why = format!("{} held it ({theirs})", lib.name());
    zk_refused(zk, &[Kind::Mutex], 1, &why).await;
    let mut waiting = zk_start_lock(rt, locks, Kind::Mutex, path, scheme);
    observer.wait_children(path, 2).await;
    assert!(
        !delivered(&mut waiting),
        "zklock got the mutex while {} held it",
        lib.name()
    );
    peer.release("h").await;
    let ours = received(waiting, "zklock waiting behind the peer").await;
    assert_node(node_name(ours.path()), scheme, NodeKind::Write, "zklock");

    // zklock holds; the peer cannot take it, queues, and gets it when zklock lets go.
    let why = format!("zklock held it ({})", ours.path());
    peer.refused(&[Kind::Mutex], path, &why).await;
    peer.start_acquire("h", "mutex", path);
    observer.wait_children(path, 2).await;
    assert!(
        peer.quiet("h"),
        "{} got the mutex while zklock held it",
        lib.name()
    );
    ours.release().await.expect("zklock release");
    peer.held("h").await;
    peer.release("h").await;
    observer.wait_children(path, 0).await;
}

/// Read/write locks of the peer and of zklock (with the peer's scheme): readers of
/// both hold at once (both directions); a writer of either excludes readers and
/// writers of the other (both directions); waiters of either are served in order.
pub async fn rwlock_exclusion(
    rt: &Runtime,
    peer: &mut Peer,
    locks: &LockClient,
    observer: &Observer,
    path: &str,
) {
    let lib = peer.library;
    let name = lib.name();
    let scheme = lib.scheme();
    let held = |g: &LockGuard| g.status() == LockStatus::Held;
    let zk = (locks, path, scheme, observer);

    // --- Readers share, both ways. -------------------------------------------------
    let zr = zk_lock(locks, Kind::Read, path, scheme).await;
    let theirs = peer
        .try_acquire("r", Kind::Read, path)
        .await
        .unwrap_or_else(|| panic!("a {name} reader was refused while only a zklock reader held"));
    assert_node(&theirs, scheme, NodeKind::Read, name);
    assert!(
        held(&zr),
        "the zklock reader still holds while the {name} reader holds"
    );
    assert_eq!(observer.children(path).await.len(), 2);
    peer.release("r").await;
    zr.release().await.expect("release");

    peer.acquire("r", Kind::Read, path).await;
    let zr = zk_try(locks, Kind::Read, path, scheme, observer, 1)
        .await
        .unwrap_or_else(|| panic!("a zklock reader was refused while only a {name} reader held"));
    assert!(peer.quiet("r"));
    assert_eq!(observer.children(path).await.len(), 2, "both readers hold");
    zr.release().await.expect("release");
    peer.release("r").await;
    observer.wait_children(path, 0).await;

    // --- A zklock writer excludes the peer's readers and writers; they queue. --------
    let zw = zk_lock(locks, Kind::Write, path, scheme).await;
    let ours = node_name(zw.path()).to_owned();
    let why = format!("a zklock writer ({ours}) held");
    peer.refused(&[Kind::Read, Kind::Write], path, &why).await;
    peer.start_acquire("a", "read", path);
    observer.wait_children(path, 2).await;
    peer.start_acquire("b", "write", path);
    observer.wait_children(path, 3).await;
    assert!(
        peer.quiet("a") && peer.quiet("b"),
        "{name} waiters got in while a zklock writer ({ours}) held"
    );
    zw.release().await.expect("release");
    // The peer's reader (first in line) gets in; its writer waits behind it.
    peer.held("a").await;
    let why = format!("a {name} reader held, a {name} writer waiting");
    zk_refused(zk, &[Kind::Write, Kind::Read], 2, &why).await;
    peer.release("a").await;
    let theirs = peer.held("b").await;
    assert_node(&theirs, scheme, NodeKind::Write, name);
    let why = format!("a {name} writer held");
    zk_refused(zk, &[Kind::Read, Kind::Write], 1, &why).await;

    // --- The peer's writer excludes zklock readers and writers; they queue. ----------
    let mut zr = zk_start_lock(rt, locks, Kind::Read, path, scheme);
    observer.wait_children(path, 2).await;
    let mut zw = zk_start_lock(rt, locks, Kind::Write, path, scheme);
    observer.wait_children(path, 3).await;
    assert!(
        !delivered(&mut zr) && !delivered(&mut zw),
        "zklock waiters got in while a {name} writer held"
    );
    peer.release("b").await;
    let zr = received(zr, "the zklock reader queued behind the peer's writer").await;
    let why = "a zklock reader held, a zklock writer waiting";
    peer.refused(&[Kind::Write, Kind::Read], path, why).await;
    assert!(
        !delivered(&mut zw),
        "the zklock writer got in while the zklock reader held"
    );
    zr.release().await.expect("release");
    let zw = received(zw, "the zklock writer queued behind the reader").await;
    let ours = node_name(zw.path()).to_owned();
    let why = format!("a zklock writer ({ours}) held");
    peer.refused(&[Kind::Read, Kind::Write], path, &why).await;
    zw.release().await.expect("release");
    observer.wait_children(path, 0).await;
}
