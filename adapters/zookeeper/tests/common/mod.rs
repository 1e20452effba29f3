//! lock-zookeeper seen through the conformance suite's `Backend`.
#![allow(dead_code)]

use lock_conformance::{Backend, Expectations, Failure, Kind, Wait};
use lock_core::LockEvent;
use lock_zookeeper::{Connect, Error, LockClient, LockGuard, LockStatus, PendingLock};
use std::time::{Duration, Instant};

/// The blocking binding.
#[derive(Clone, Copy, Debug, Default)]
pub struct Blocking;

pub fn failure(e: Error) -> Failure {
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

fn spec(kind: Kind, path: &str) -> lock_core::LockSpec {
    match kind {
        Kind::Mutex | Kind::Write => lock_core::LockSpec::write(path),
        Kind::WatchedMutex => lock_core::LockSpec::write(path).watch_node(),
        Kind::Read => lock_core::LockSpec::read(path),
        Kind::Semaphore(n) => lock_core::LockSpec::semaphore(path, n),
    }
}

impl Backend for Blocking {
    type Client = LockClient;
    type Guard = LockGuard;
    type Pending = PendingLock;

    fn name(&self) -> &'static str {
        "lock-zookeeper"
    }

    fn connect(
        &self,
        connect_string: &str,
        session_timeout: Duration,
    ) -> Result<LockClient, Failure> {
        LockClient::builder(connect_string)
            .session_timeout(session_timeout)
            .connect()
            .map_err(failure)
    }

    fn close(&self, client: &LockClient) {
        client.close_blocking();
    }

    fn session_id(&self, client: &LockClient) -> Option<i64> {
        client.session_id()
    }

    fn wait_idle(&self, client: &LockClient) -> Result<(), Failure> {
        client.wait_idle_blocking().map_err(failure)
    }

    fn stats(&self, client: &LockClient) -> Result<lock_core::Stats, Failure> {
        client.stats_blocking().map_err(failure)
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
                match wait {
                    Wait::Forever => $lock.lock_blocking(),
                    Wait::Timeout(d) => $lock.lock_timeout_blocking(d),
                    Wait::Try => $lock
                        .try_lock_blocking()
                        .and_then(|g| g.ok_or(Error::WouldBlock)),
                }
            };
        }
        match kind {
            Kind::Mutex => with!(client.mutex(path)),
            Kind::WatchedMutex => with!(client.mutex(path).watch_node()),
            Kind::Read => with!(client.rwlock(path).read()),
            Kind::Write => with!(client.rwlock(path).write()),
            Kind::Semaphore(n) => with!(client.semaphore(path, n)),
        }
        .map_err(failure)
    }

    fn start(&self, client: &LockClient, kind: Kind, path: &str) -> Result<PendingLock, Failure> {
        client.start(spec(kind, path), None).map_err(failure)
    }

    fn finish(&self, mut pending: PendingLock, within: Duration) -> Result<LockGuard, Failure> {
        match pending.wait_timeout_blocking(within) {
            Some(result) => result.map_err(failure),
            None => Err(Failure::StillPending),
        }
    }

    fn cancel(&self, pending: PendingLock) {
        pending.cancel();
    }

    fn token(&self, guard: &LockGuard) -> i64 {
        guard.token().0
    }

    fn node_path(&self, guard: &LockGuard) -> String {
        guard.path().to_owned()
    }

    fn is_trusted(&self, guard: &LockGuard) -> bool {
        guard.status() == LockStatus::Held
    }

    fn next_event(&self, guard: &mut LockGuard, within: Duration) -> Option<LockEvent> {
        let deadline = Instant::now() + within;
        guard.next_event_timeout_blocking(deadline.saturating_duration_since(Instant::now()))
    }

    fn release(&self, guard: LockGuard) -> Result<(), Failure> {
        guard.release_blocking().map_err(failure)
    }

    fn expectations(&self) -> Expectations {
        Expectations {
            // create, getChildren, getData on our node without a watch (the fencing
            // token: the crate's create returns no Stat), delete: 4 requests.
            requests_per_cycle: 4,
        }
    }
}
