//! The zklock side of an interop test: taking locks in the peers' layouts, and waiting helpers.
use crate::common::Observer;
use crate::common::Runtime;
use futures::channel::oneshot;
use lock_core::names::parse_name;
use lock_core::{NameScheme, NodeKind};
use lock_zookeeper_client::{LockClient, LockGuard};

use std::time::{Duration, Instant};

use super::process::{Kind, LOCK_TIMEOUT};

/// Last path segment.
pub fn node_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Asserts that `name` is a node of `scheme` asking for `kind`.
pub fn assert_node(name: &str, scheme: NameScheme, kind: NodeKind, who: &str) {
    let parsed =
        parse_name(name).unwrap_or_else(|| panic!("{who}: node {name} parses in no scheme"));
    assert_eq!(
        (parsed.scheme, parsed.kind),
        (scheme, kind),
        "{who}: node {name}"
    );
}

/// Runs `$body` with `$lock` bound to zklock's lock object of `kind` on `path`, named
/// with `scheme`.
macro_rules! with_lock {
    ($locks:expr, $kind:expr, $path:expr, $scheme:expr, |$lock:ident| $body:expr) => {
        match $kind {
            Kind::Mutex => {
                let $lock = $locks.mutex($path).with_scheme($scheme);
                $body
            }
            Kind::Read => {
                let rwlock = $locks.rwlock($path).with_scheme($scheme);
                let $lock = rwlock.read();
                $body
            }
            Kind::Write => {
                let rwlock = $locks.rwlock($path).with_scheme($scheme);
                let $lock = rwlock.write();
                $body
            }
        }
    };
}

/// Takes a zklock lock, waiting.
pub async fn zk_lock(locks: &LockClient, kind: Kind, path: &str, scheme: NameScheme) -> LockGuard {
    let deadline = Instant::now() + LOCK_TIMEOUT;
    with_lock!(locks, kind, path, scheme, |lock| lock
        .lock_until(deadline)
        .await)
    .unwrap_or_else(|e| panic!("zklock {kind:?} lock on {path}: {e}"))
}

/// Starts waiting for a zklock lock in a task; the receiver gets the guard.
pub fn zk_start_lock(
    rt: &Runtime,
    locks: &LockClient,
    kind: Kind,
    path: &str,
    scheme: NameScheme,
) -> oneshot::Receiver<LockGuard> {
    let (locks, path) = (locks.clone(), path.to_owned());
    crate::common::spawn(
        rt,
        async move { zk_lock(&locks, kind, &path, scheme).await },
    )
}

/// One look with zklock (`try_lock`). When busy, waits until the attempt's node is
/// gone again (the core deletes it after answering), i.e. until `dir` is back to
/// `before` children, so that the next step counts nodes right.
pub async fn zk_try(
    locks: &LockClient,
    kind: Kind,
    path: &str,
    scheme: NameScheme,
    observer: &Observer,
    before: usize,
) -> Option<LockGuard> {
    let got = with_lock!(locks, kind, path, scheme, |lock| lock.try_lock().await)
        .unwrap_or_else(|e| panic!("zklock {kind:?} try_lock on {path}: {e}"));
    if got.is_none() {
        observer.wait_children(path, before).await;
    }
    got
}

/// Asserts that a zklock look of each of `kinds` finds the lock busy while `why`
/// (`before`: see [`zk_try`]).
pub async fn zk_refused(
    (locks, path, scheme, observer): (&LockClient, &str, NameScheme, &Observer),
    kinds: &[Kind],
    before: usize,
    why: &str,
) {
    for &kind in kinds {
        if let Some(got) = zk_try(locks, kind, path, scheme, observer, before).await {
            panic!("a zklock {kind:?} ({}) got in while {why}", got.path());
        }
    }
}

/// Receives what a spawned task sends, within the lock timeout.
pub async fn received<T>(rx: oneshot::Receiver<T>, what: &str) -> T {
    match crate::common::bounded(LOCK_TIMEOUT + Duration::from_secs(5), rx).await {
        Some(Ok(value)) => value,
        Some(Err(_)) => panic!("{what}: the task failed"),
        None => panic!("{what}: nothing within {LOCK_TIMEOUT:?}"),
    }
}

/// Awaits `future`, failing the test with `what` if it takes longer than the lock
/// timeout.
pub async fn within<T>(what: &str, future: impl std::future::Future<Output = T>) -> T {
    let value = crate::common::bounded(LOCK_TIMEOUT, future).await;
    value.unwrap_or_else(|| panic!("{what}: nothing within {LOCK_TIMEOUT:?}"))
}

/// Whether a spawned task has delivered yet, without waiting.
pub fn delivered<T>(rx: &mut oneshot::Receiver<T>) -> bool {
    !matches!(rx.try_recv(), Ok(None))
}
