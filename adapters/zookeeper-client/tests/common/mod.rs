//! Shared helpers for the real-ZooKeeper tests: one server per test binary, a macro
//! that runs each test under every runtime, an observer client to inspect lock
//! directories, and small async utilities.
#![allow(dead_code)]

pub mod peers;
mod runtime;
pub mod semaphores;

pub use runtime::{runtime_name, Runtime};

use lock_testkit::FaultProxy;
use lock_zookeeper_client::{Connect, LockClient};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Upper bound on any single test; a hang fails loudly instead of stalling CI.
pub const TEST_TIMEOUT: Duration = Duration::from_secs(90);

/// The server shared by the tests of one binary (each test uses its own lock paths).
pub use lock_conformance::shared_server as server;

/// A lock path unique to this test run and runtime.
pub fn unique_path(test: &str, rt: &Runtime) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "/zkc-tests/{test}-{}-{}",
        runtime_name(rt),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Runs one test body under tokio (multi-threaded, 2 workers: the driver and the
/// zookeeper-client session task must not be starved by the test body).
pub fn run_tokio<F, Fut>(body: F)
where
    F: FnOnce(Runtime) -> Fut,
    Fut: Future<Output = ()>,
{
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let runtime = Runtime::Tokio(rt.handle().clone());
    rt.block_on(with_timeout(body(runtime)));
}

/// Runs one test body under async-std.
pub fn run_async_std<F, Fut>(body: F)
where
    F: FnOnce(Runtime) -> Fut,
    Fut: Future<Output = ()>,
{
    async_std::task::block_on(with_timeout(body(Runtime::AsyncStd)));
}

/// Runs one test body under smol.
pub fn run_smol<F, Fut>(body: F)
where
    F: FnOnce(Runtime) -> Fut,
    Fut: Future<Output = ()>,
{
    smol::block_on(with_timeout(body(Runtime::Smol)));
}

async fn with_timeout(body: impl Future<Output = ()>) {
    if bounded(TEST_TIMEOUT, body).await.is_none() {
        panic!("test did not finish within {TEST_TIMEOUT:?}");
    }
}

/// `future`'s output, or `None` if it takes longer than `limit`.
pub async fn bounded<T>(limit: Duration, future: impl Future<Output = T>) -> Option<T> {
    let future = std::pin::pin!(future);
    let timer = std::pin::pin!(smol::Timer::after(limit));
    match futures::future::select(future, timer).await {
        futures::future::Either::Left((value, _)) => Some(value),
        futures::future::Either::Right(_) => None,
    }
}

/// `rt_tests! { async fn name(rt) { ... } ... }` makes a module `name` with one test
/// per runtime: `name::tokio`, `name::async_std`, `name::smol`.
#[macro_export]
macro_rules! rt_tests {
    ($($(#[$meta:meta])* async fn $name:ident($rt:ident) $body:block)*) => {
        $(
            $(#[$meta])*
            mod $name {
                #[allow(unused_imports)]
                use super::*;

                async fn body($rt: $crate::common::Runtime) $body

                #[test]
                fn tokio() {
                    $crate::common::run_tokio(body)
                }

                #[test]
                fn async_std() {
                    $crate::common::run_async_std(body)
                }

                #[test]
                fn smol() {
                    $crate::common::run_smol(body)
                }
            }
        )*
    };
}

/// Connects a lock client on `rt`.
pub async fn connect(rt: &Runtime, cluster: &str, session_timeout: Duration) -> LockClient {
    LockClient::builder(cluster)
        .session_timeout(session_timeout)
        .runtime(rt.clone())
        .connect()
        .await
        .expect("connecting a lock client")
}

/// An observer: a plain zookeeper-client session (no locks) to inspect and
/// manipulate lock directories like an administrator would.
pub struct Observer {
    pub client: zookeeper_client::Client,
}

impl Observer {
    pub async fn connect(cluster: &str) -> Observer {
        let client = zookeeper_client::Client::connector()
            .with_session_timeout(Duration::from_secs(10))
            .connect(cluster)
            .await
            .expect("connecting the observer");
        Observer { client }
    }

    /// Creates `path` and its missing parents, persistent and open to anyone.
    pub async fn mkdir(&self, path: &str) {
        let persistent = zookeeper_client::CreateMode::Persistent
            .with_acls(zookeeper_client::Acls::anyone_all());
        let made = self.client.mkdir(path, &persistent).await;
        made.unwrap_or_else(|e| panic!("creating {path}: {e}"));
    }

    /// The children of `dir`, sorted; empty if `dir` does not exist.
    pub async fn children(&self, dir: &str) -> Vec<String> {
        match self.client.list_children(dir).await {
            Ok(mut names) => {
                names.sort();
                names
            }
            Err(zookeeper_client::Error::NoNode) => Vec::new(),
            Err(e) => panic!("listing {dir}: {e}"),
        }
    }

    /// Waits (on child watches, not by polling) until `dir` has exactly `n` children,
    /// and returns them.
    pub async fn wait_children(&self, dir: &str, n: usize) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match self.client.list_and_watch_children(dir).await {
                Ok((mut names, watcher)) => {
                    if names.len() == n {
                        names.sort();
                        return names;
                    }
                    watcher.changed().await;
                }
                Err(zookeeper_client::Error::NoNode) if n == 0 => return Vec::new(),
                Err(zookeeper_client::Error::NoNode) => {
                    // Not created yet: wait for it. If it was created since the
                    // listing, list again at once: an exists watch on a node that
                    // exists fires only when it changes or goes, not when children
                    // come.
                    let (stat, watcher) = self
                        .client
                        .check_and_watch_stat(dir)
                        .await
                        .expect("watching the lock directory");
                    if stat.is_none() {
                        watcher.changed().await;
                    }
                }
                Err(e) => panic!("listing {dir}: {e}"),
            }
            assert!(
                Instant::now() < deadline,
                "{dir} never reached {n} children"
            );
        }
    }
}

/// Spawns a task on `rt` and returns a future for its output.
pub fn spawn<T: Send + 'static>(
    rt: &Runtime,
    future: impl Future<Output = T> + Send + 'static,
) -> futures::channel::oneshot::Receiver<T> {
    let (tx, rx) = futures::channel::oneshot::channel();
    let task = async move {
        let _ = tx.send(future.await);
    };
    match rt {
        Runtime::Tokio(handle) => drop(handle.spawn(task)),
        Runtime::AsyncStd => drop(async_std::task::spawn(task)),
        Runtime::Smol => smol::spawn(task).detach(),
    }
    rx
}

/// Sleeps on `rt`'s clock (only where time itself is the subject, never as a
/// stand-in for an event).
pub async fn sleep(d: Duration) {
    smol::Timer::after(d).await;
}

/// Runs a call of `proxy` that waits (`blackhole`, `wait_holding`...) off the
/// async threads.
pub async fn on_proxy<T: Send + 'static>(
    proxy: &Arc<FaultProxy>,
    f: impl FnOnce(&FaultProxy) -> T + Send + 'static,
) -> T {
    let (tx, rx) = futures::channel::oneshot::channel();
    let proxy = proxy.clone();
    std::thread::spawn(move || {
        let _ = tx.send(f(&proxy));
    });
    rx.await.expect("blocking call panicked")
}
