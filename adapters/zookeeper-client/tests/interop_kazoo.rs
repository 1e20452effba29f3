//! Interop with kazoo (Python) against a real ZooKeeper, kazoo clients in their own
//! processes (`tests/peers/kazoo_peer.py`): the shared interop tests (locks, read/write
//! locks, elections, semaphores; see `common::peers::interop_tests`) and the permit
//! count kazoo stores, each run against Debian's kazoo 2.8 (`debian`) and the newest
//! PyPI release (`pypi`, the virtualenv `scripts/test.sh` installs at
//! `<target dir>/kazoo-venv`), so that a kazoo upgrade cannot silently break interop.
//!
//! On kazoo < 2.9 the peer runs `ReadLock` with 2.9's predecessor rule: 2.8's reader
//! watches the last writer, even one queued after it, and deadlocks with it (kazoo
//! issue #649).

mod common;

use common::peers::{interop_tests, Library};
use common::semaphores::{zk_permit, Look};
use lock_zookeeper_client::{Error, FailReason, NameScheme};

/// Debian's kazoo 2.8 (`python3-kazoo`).
mod debian {
    use super::*;
    interop_tests!(Library::Kazoo);

    #[test]
    fn semaphore_and_zklock_semaphore_refuse_other_counts() {
        super::refuse_other_counts(Library::Kazoo);
    }
}

/// The newest kazoo from PyPI.
mod pypi {
    use super::*;
    interop_tests!(Library::KazooPypi);

    #[test]
    fn semaphore_and_zklock_semaphore_refuse_other_counts() {
        super::refuse_other_counts(Library::KazooPypi);
    }
}

/// kazoo keeps the permit count in the path's data: a zklock semaphore with another
/// count is refused with `PermitsMismatch`, and so is a kazoo `Semaphore` on a path
/// whose count zklock wrote.
fn refuse_other_counts(lib: Library) {
    common::run_tokio(|rt| async move {
        let (path, _, locks, mut peer) =
            common::peers::meet(&rt, lib, "kazoo-sem-count", "kazoo1").await;
        peer.send("v", "version");
        let version = peer.expect("v", "VERSION").await.remove(0);
        eprintln!("{} peer: kazoo {version}", lib.name());

        assert!(matches!(
            peer.try_lease("a", &path, 2).await,
            Look::Leased(_)
        ));
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
