//! Interop with kazoo (Python), against a real ZooKeeper, with real kazoo clients in
//! their own processes (`tests/peers/kazoo_peer.py`). Every test runs twice: against
//! Debian's kazoo 2.8 (`python3-kazoo` under `/usr/bin/python3`, module `debian`) and
//! against the newest kazoo release from PyPI (a virtualenv that `scripts/test.sh`
//! installs at `<target dir>/kazoo-venv`, module `pypi`), so that a kazoo upgrade
//! cannot silently break interop:
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
//!   at any time, leadership passing between the libraries as leaders resign;
//! * kazoo's `Semaphore` and a zklock semaphore with the kazoo scheme (kazoo's layout:
//!   the lock `<path>-__lock__`, lease nodes under `<path>`, the permit count in
//!   `<path>`'s data): holders of both fill the permits and queue in one line; a
//!   holder's session expiry, kazoo's or zklock's, frees its permit for the next
//!   waiter; under load (2 kazoo processes, 3 zklock sessions) never more than `n`
//!   holders at once; a permit count differing from the stored one is refused both
//!   ways.
//!
//! A missing kazoo fails the test saying what to install. On kazoo < 2.9 (Debian
//! bookworm has 2.8.0) the peer runs `ReadLock` with kazoo 2.9's predecessor rule: 2.8's
//! reader watches the last writer, even one queued after it, and deadlocks with it
//! (kazoo issue #649), whichever library that writer belongs to. Runs under tokio only:
//! what is tested is the protocol on the wire, not the runtime.

mod common;

use common::peers::{
    counter_workload, mixed_election_in_turn, mutex_handoff, rwlock_exclusion, Kind, Library, Peer,
    RW_PHASES,
};
use common::semaphores::{
    semaphore_exclusion, semaphore_holder_expiry, semaphore_workload, zk_permit, Look,
};
use common::{connect, run_tokio, server, unique_path, Observer};
use lock_zookeeper_client::{Error, FailReason, NameScheme};
use std::time::Duration;

const SESSION: Duration = Duration::from_secs(10);

/// Defines a test module with the body run against Debian's kazoo (`debian`) and the
/// newest kazoo from PyPI (`pypi`).
macro_rules! with_both_kazoos {
    ($(#[$doc:meta])* $name:ident, |$lib:ident| $body:block) => {
        $(#[$doc])*
        mod $name {
            use super::*;

            fn run($lib: Library) $body

            #[test]
            fn debian() {
                run(Library::Kazoo)
            }

            #[test]
            fn pypi() {
                run(Library::KazooPypi)
            }
        }
    };
}

with_both_kazoos!(kazoo_lock_and_zklock_mutex_hand_over_in_order, |lib| {
    run_tokio(|rt| async move {
        let path = unique_path("kazoo-mutex", &rt);
        let connect_string = server().connect_string();
        let observer = Observer::connect(&connect_string).await;
        let locks = connect(&rt, &connect_string, SESSION).await;
        let mut peer = Peer::start_library(lib, &connect_string, "kazoo1").await;
        mutex_handoff(&rt, &mut peer, &locks, &observer, &path).await;
        locks.close().await;
    });
});

with_both_kazoos!(
    /// 2 kazoo processes and 3 zklock sessions on one mutex: no lost update, no
    /// overlapping sections.
    kazoo_lock_and_zklock_mutex_lose_no_update,
    |lib| {
        run_tokio(|rt| async move {
            let path = unique_path("kazoo-mutex-counter", &rt);
            counter_workload(&rt, lib, &path, &[&[Kind::Mutex]], 2, 3, 10).await;
        });
    }
);

with_both_kazoos!(
    kazoo_rwlock_and_zklock_rwlock_readers_share_writers_exclude,
    |lib| {
        run_tokio(|rt| async move {
            let path = unique_path("kazoo-rw", &rt);
            let connect_string = server().connect_string();
            let observer = Observer::connect(&connect_string).await;
            let locks = connect(&rt, &connect_string, SESSION).await;
            let mut peer = Peer::start_library(lib, &connect_string, "kazoo1").await;
            rwlock_exclusion(&rt, &mut peer, &locks, &observer, &path).await;
            locks.close().await;
        });
    }
);

with_both_kazoos!(
    /// 2 kazoo processes and 3 zklock sessions on one read/write lock, writers only,
    /// then a reader and a writer each: no lost update, no section overlapping an
    /// incompatible one.
    kazoo_rwlock_and_zklock_rwlock_lose_no_update,
    |lib| {
        run_tokio(|rt| async move {
            let path = unique_path("kazoo-rw-counter", &rt);
            counter_workload(&rt, lib, &path, RW_PHASES, 2, 3, 10).await;
        });
    }
);

with_both_kazoos!(
    /// kazoo `Election`s (two processes) and zklock leader participants (two
    /// sessions, kazoo scheme) on one path, joined alternately: one leader at a time,
    /// in join order, leadership passing zklock -> kazoo -> zklock -> kazoo as each
    /// resigns.
    kazoo_election_and_zklock_election_one_leader_in_turn,
    |lib| {
        run_tokio(|rt| async move {
            let path = unique_path("kazoo-election", &rt);
            mixed_election_in_turn(&rt, lib, &path).await;
        });
    }
);

with_both_kazoos!(
    /// kazoo `Semaphore`s and zklock semaphores (kazoo scheme) fill two permits
    /// together and queue in one line (see `semaphore_exclusion`).
    kazoo_semaphore_and_zklock_semaphore_share_permits,
    |lib| {
        run_tokio(|rt| async move {
            let path = unique_path("kazoo-sem", &rt);
            let connect_string = server().connect_string();
            let observer = Observer::connect(&connect_string).await;
            let locks = connect(&rt, &connect_string, SESSION).await;
            let mut peer = Peer::start_library(lib, &connect_string, "kazoo1").await;
            let version = peer_version(&mut peer).await;
            eprintln!("{} peer: kazoo {version}", lib.name());
            semaphore_exclusion(&rt, &mut peer, &locks, &observer, &path).await;
            locks.close().await;
        });
    }
);

with_both_kazoos!(
    /// A kazoo holder's session expires, then a zklock holder's: each permit goes to
    /// the next waiter, the zklock holder knowing it lost before the kazoo waiter
    /// behind it holds.
    kazoo_semaphore_and_zklock_semaphore_survive_holder_expiry,
    |lib| {
        run_tokio(|rt| async move {
            let path = unique_path("kazoo-sem-expiry", &rt);
            semaphore_holder_expiry(&rt, lib, &path).await;
        });
    }
);

with_both_kazoos!(
    /// 2 kazoo processes and 3 zklock sessions on a semaphore of 2: never 3 holders.
    kazoo_semaphore_and_zklock_semaphore_never_exceed_permits,
    |lib| {
        run_tokio(|rt| async move {
            let path = unique_path("kazoo-sem-counter", &rt);
            let most = semaphore_workload(&rt, lib, &path, 2, 2, 3, 8).await;
            assert_eq!(most, 2, "the permits were never all used at once");
        });
    }
);

with_both_kazoos!(
    /// kazoo keeps the permit count in the path's data: a zklock semaphore with
    /// another count is refused with `PermitsMismatch`, and so is a kazoo `Semaphore`
    /// on a path whose count zklock wrote.
    kazoo_semaphore_and_zklock_semaphore_refuse_other_counts,
    |lib| {
        run_tokio(|rt| async move {
            let path = unique_path("kazoo-sem-count", &rt);
            let connect_string = server().connect_string();
            let locks = connect(&rt, &connect_string, SESSION).await;
            let mut peer = Peer::start_library(lib, &connect_string, "kazoo1").await;

            assert!(matches!(peer.try_lease("a", &path, 2).await, Look::Leased(_)));
            match locks
                .semaphore(path.clone(), 3)
                .with_scheme(NameScheme::Kazoo)
                .try_lock()
                .await
            {
                Err(Error::Failed(FailReason::PermitsMismatch { ours: 3, theirs: 2 })) => {}
                other => panic!("zklock's 3 permits beside kazoo's 2: {other:?}"),
            }
            peer.return_lease("a").await;

            let ours = format!("{path}-zklock");
            let guard = zk_permit(&locks, lib, &ours, 3).await;
            match peer.try_lease("a", &ours, 2).await {
                Look::Mismatch(_) => {}
                other => panic!("kazoo's 2 permits beside zklock's 3: {other:?}"),
            }
            guard.release().await.expect("release");
            locks.close().await;
        });
    }
);

/// The kazoo version the peer runs.
async fn peer_version(peer: &mut Peer) -> String {
    peer.send("v", "version");
    peer.expect("v", "VERSION").await.remove(0)
}
