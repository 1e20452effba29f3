//! The shared conformance suite (lock-conformance), against lock-zookeeper-client and
//! real ZooKeeper servers: the same tests lock-zookeeper runs
//! (adapters/zookeeper/tests/conformance.rs), through the blocking `Backend` trait.
//!
//! Each test gets its own [`Async`] backend, which owns a small multi-threaded tokio
//! runtime (2 workers) that runs every client's driver and zookeeper-client session
//! task; the suite's threads block on the binding's futures with `block_on`. A
//! multi-threaded runtime is needed because the suite waits on the server (through
//! its admin client) while no thread of its own is inside the runtime, and the
//! driver must go on meanwhile (e.g. to create a started acquisition's node).

use futures::task::noop_waker_ref;
use lock_conformance::{Backend, Expectations, Failure, Kind, Wait};
use lock_core::{LockEvent, LockSpec};
use lock_zookeeper_client::{Connect, Error, LockClient, LockGuard, Runtime};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// lock-zookeeper-client on a tokio runtime of its own.
pub struct Async {
    rt: tokio::runtime::Runtime,
}

impl Async {
    fn new() -> Async {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("tokio runtime");
        Async { rt }
    }
}

type Acquisition = Pin<Box<dyn Future<Output = Result<LockGuard, Error>> + Send>>;

/// A started acquisition: the binding's `acquire` future, polled once by
/// [`Backend::start`] (which sends the request to the driver), then awaited by
/// `finish` or dropped by `cancel` (dropping it cancels the acquisition: the
/// binding's cancel-safety is what `cancel` exercises).
pub enum Pending {
    /// Ended at the first poll (refused at once, e.g. the client is closed).
    Ended(Result<LockGuard, Error>),
    /// Still going on in the driver.
    Going(Acquisition),
}

fn failure(e: Error) -> Failure {
    match e {
        Error::WouldBlock => Failure::WouldBlock,
        Error::Timeout => Failure::Timeout,
        Error::Cancelled => Failure::Cancelled,
        Error::SessionExpired => Failure::SessionExpired,
        Error::NodeDeleted => Failure::NodeDeleted,
        Error::Lost(reason) => Failure::Lost(reason),
        Error::Closed => Failure::Closed,
        e if e.is_invalid_path() => Failure::InvalidPath,
        Error::Usage(u) => Failure::Usage(u.to_string()),
        other => Failure::Other(other.to_string()),
    }
}

fn spec(kind: Kind, path: &str) -> LockSpec {
    match kind {
        Kind::Mutex | Kind::Write => LockSpec::write(path),
        Kind::WatchedMutex => LockSpec::write(path).watch_node(),
        Kind::Read => LockSpec::read(path),
        Kind::Semaphore(n) => LockSpec::semaphore(path, n),
    }
}

impl Backend for Async {
    type Client = LockClient;
    type Guard = LockGuard;
    type Pending = Pending;

    fn name(&self) -> &'static str {
        "lock-zookeeper-client"
    }

    fn connect(
        &self,
        connect_string: &str,
        session_timeout: Duration,
    ) -> Result<LockClient, Failure> {
        self.rt
            .block_on(
                LockClient::builder(connect_string)
                    .session_timeout(session_timeout)
                    .runtime(Runtime::Tokio(self.rt.handle().clone()))
                    .connect(),
            )
            .map_err(failure)
    }

    fn close(&self, client: &LockClient) {
        self.rt.block_on(client.close());
    }

    fn session_id(&self, client: &LockClient) -> Option<i64> {
        client.session_id()
    }

    fn wait_idle(&self, client: &LockClient) -> Result<(), Failure> {
        self.rt.block_on(client.wait_idle()).map_err(failure)
    }

    fn stats(&self, client: &LockClient) -> Result<lock_core::Stats, Failure> {
        self.rt.block_on(client.stats()).map_err(failure)
    }

    fn lock(
        &self,
        client: &LockClient,
        kind: Kind,
        path: &str,
        wait: Wait,
    ) -> Result<LockGuard, Failure> {
        // Through the public lock objects, so that their code is what is tested.
        macro_rules! with {
            ($lock:expr) => {
                self.rt.block_on(async {
                    let lock = $lock;
                    match wait {
                        Wait::Forever => lock.lock().await,
                        Wait::Timeout(d) => lock.lock_timeout(d).await,
                        Wait::Try => lock
                            .try_lock()
                            .await
                            .and_then(|g| g.ok_or(Error::WouldBlock)),
                    }
                })
            };
        }
        match kind {
            Kind::Mutex => with!(client.mutex(path)),
            Kind::WatchedMutex => with!(client.mutex(path).watch_node()),
            Kind::Read => with!(client.rwlock(path).read().clone()),
            Kind::Write => with!(client.rwlock(path).write().clone()),
            Kind::Semaphore(n) => with!(client.semaphore(path, n)),
        }
        .map_err(failure)
    }

    fn start(&self, client: &LockClient, kind: Kind, path: &str) -> Result<Pending, Failure> {
        let client = client.clone();
        let spec = spec(kind, path);
        let mut acquisition: Acquisition =
            Box::pin(async move { client.acquire(spec, None).await });
        // The first poll hands the acquisition to the driver; it goes on there whether
        // or not the future is polled again (its events wait in a channel).
        let _context = self.rt.enter();
        match acquisition
            .as_mut()
            .poll(&mut Context::from_waker(noop_waker_ref()))
        {
            Poll::Ready(result) => Ok(Pending::Ended(result)),
            Poll::Pending => Ok(Pending::Going(acquisition)),
        }
    }

    fn finish(&self, pending: Pending, within: Duration) -> Result<LockGuard, Failure> {
        match pending {
            Pending::Ended(result) => result.map_err(failure),
            Pending::Going(mut acquisition) => {
                // The timer is made inside the runtime (tokio's needs its context).
                let outcome = self
                    .rt
                    .block_on(async { tokio::time::timeout(within, acquisition.as_mut()).await });
                match outcome {
                    Ok(result) => result.map_err(failure),
                    // Dropping the acquisition gives it up.
                    Err(_elapsed) => Err(Failure::StillPending),
                }
            }
        }
    }

    fn cancel(&self, pending: Pending) {
        // Dropping the future cancels the acquisition (the driver deletes its node,
        // even one whose create is still in flight); a guard it had already produced
        // is released in the background.
        drop(pending);
    }

    fn token(&self, guard: &LockGuard) -> i64 {
        guard.token().0
    }

    fn node_path(&self, guard: &LockGuard) -> String {
        guard.path().to_owned()
    }

    fn is_trusted(&self, guard: &LockGuard) -> bool {
        guard.is_trusted()
    }

    fn next_event(&self, guard: &mut LockGuard, within: Duration) -> Option<LockEvent> {
        // `next_event` is cancel-safe: a timeout loses no event.
        self.rt
            .block_on(async { tokio::time::timeout(within, guard.next_event()).await })
            .ok()
            .flatten()
    }

    fn release(&self, guard: LockGuard) -> Result<(), Failure> {
        self.rt.block_on(guard.release()).map_err(failure)
    }

    fn expectations(&self) -> Expectations {
        Expectations {
            // create + getChildren (pipelined; create returns the Stat, so the
            // listing grants), delete: 3 requests.
            requests_per_cycle: 3,
        }
    }
}

lock_conformance::conformance_tests!(Async::new());
