//! The methods of [`LockClient`], the user's handle on one ZooKeeper session
//! (the type is in `handle`, below the lock objects it makes), and [`pair`].
//!
//! The handle's methods live by concept: [`start`] (starting a core task),
//! [`locks`] (taking locks), [`elections`], [`one_shot`] (revocation,
//! participants, deadlock scans), [`break_lock`] (breaking a stuck lock); the session's getters, `wait_idle`, `stats`
//! and `close` are here.

use crate::error::Error;
use crate::handle::{Handles, LockClient};
use crate::link::Link;
use crate::shared::Shared;
pub use break_lock::{BreakLock, Broken};
use lock_core::{Config, Stats};
use std::future::poll_fn;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

mod break_lock;
mod elections;
mod locks;
mod one_shot;
mod start;

/// A [`LockClient`] and the [`Link`] its binding drives, sharing one core
/// [`Session`](lock_core::Session) made from `config` (its `session_timeout` is
/// the negotiated one; give every session a different `seed`).
///
/// ```
/// let config = lock_core::Config::new(std::time::Duration::from_secs(10), 7);
/// let (locks, link) = zklock::pair(config);
/// assert_eq!(locks.session_timeout(), std::time::Duration::from_secs(10));
/// assert!(!link.is_closed());
/// drop(link); // the binding is gone: the client is closed
/// assert!(locks.session_id().is_none());
/// ```
pub fn pair(config: Config) -> (LockClient, Link) {
    pair_with_clock(config, Arc::new(crate::SystemClock))
}

/// [`pair`] on the binding's `clock` instead of the operating system's: the
/// handles read the time from it (see [`Clock`](crate::Clock) for the contract),
/// and the binding passes the link instants of the same clock. A seeded
/// simulation gives a virtual clock.
pub fn pair_with_clock(config: Config, clock: Arc<dyn crate::Clock>) -> (LockClient, Link) {
    crate::metrics::describe_metrics();
    let shared = Arc::new(Shared::new(config, clock));
    let client = LockClient {
        inner: Arc::new(Handles {
            shared: shared.clone(),
        }),
        owner: None,
    };
    (client, Link::new(shared))
}

impl LockClient {
    /// A handle on the same session whose lock objects ([`mutex`](Self::mutex),
    /// [`rwlock`](Self::rwlock), [`semaphore`](Self::semaphore)) are taken for
    /// `owner` by default (see [`Mutex::owner`]): the unit deadlock detection and the
    /// self-deadlock check reason about, e.g. one worker or one philosopher. Several
    /// owners may share one session (one handle each); a lock object's own
    /// [`owner`](crate::Mutex::owner) overrides this.
    ///
    /// ```
    /// # async fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
    /// use std::time::Duration;
    /// let worker = locks.with_owner("worker-7");
    /// let a = worker.mutex("/locks/a").detect_deadlocks(Duration::from_secs(1)).lock().await?;
    /// // Taking "/locks/a" again for "worker-7" is refused at once:
    /// assert!(matches!(
    ///     worker.mutex("/locks/a").lock().await,
    ///     Err(zklock::Error::SelfDeadlock { .. })
    /// ));
    /// # drop(a); Ok(()) }
    /// # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
    /// ```
    ///
    /// [`Mutex::owner`]: crate::Mutex::owner
    pub fn with_owner(&self, owner: impl Into<String>) -> LockClient {
        LockClient {
            inner: self.inner.clone(),
            owner: Some(Arc::from(owner.into())),
        }
    }

    /// The default owner given with [`with_owner`](Self::with_owner), if any.
    pub fn owner(&self) -> Option<&str> {
        self.owner.as_deref()
    }

    // Getters.

    /// The current ZooKeeper session id (`None` before the first session, between
    /// an expiry and the next session, and after close).
    ///
    /// ```
    /// # fn demo(locks: zklock::LockClient) {
    /// println!("session {:#x}", locks.session_id().unwrap_or(0));
    /// # }
    /// # demo(zklock::sim::Server::new().client());
    /// ```
    pub fn session_id(&self) -> Option<i64> {
        self.shared().with(|s| s.core.session_id())
    }

    /// Whether the connection is up, as last reported by the binding.
    ///
    /// ```
    /// # fn demo(locks: zklock::LockClient) {
    /// # locks.mutex("/locks/warm-up").try_lock_blocking().unwrap(); // a round trip: connected
    /// assert!(locks.is_connected());
    /// # }
    /// # demo(zklock::sim::Server::new().client());
    /// ```
    pub fn is_connected(&self) -> bool {
        self.shared().with(|s| s.core.is_connected())
    }

    /// What the binding attached with [`Link::set_extension`], if it is a `T`: how a
    /// binding extends the client (e.g. lock-zookeeper's connection diagnostics).
    ///
    /// ```
    /// let config = lock_core::Config::new(std::time::Duration::from_secs(10), 7);
    /// let (locks, link) = zklock::pair(config);
    /// link.set_extension(std::sync::Arc::new(42u32));
    /// assert_eq!(locks.extension::<u32>().as_deref(), Some(&42));
    /// assert!(locks.extension::<String>().is_none());
    /// ```
    pub fn extension<T: std::any::Any + Send + Sync>(&self) -> Option<Arc<T>> {
        self.shared().extension.get()?.clone().downcast().ok()
    }

    /// The session timeout negotiated with the server: the one the server granted
    /// the current session (every binding times its locks by it), or, before the
    /// first session, the one asked for.
    ///
    /// ```
    /// # fn demo(locks: zklock::LockClient) {
    /// println!("{:?}", locks.session_timeout());
    /// # }
    /// # demo(zklock::sim::Server::new().client());
    /// ```
    pub fn session_timeout(&self) -> Duration {
        self.shared().session_timeout()
    }

    /// The core's settings now, with the [`session_timeout`](Self::session_timeout)
    /// the server granted: ask them for the windows derived from it (the
    /// [`margin`](lock_core::Config::margin) before the server could expire the
    /// session, the [`ping_interval`](lock_core::Config::ping_interval), ...)
    /// instead of dividing the timeout yourself.
    ///
    /// ```
    /// use std::time::Duration;
    /// let (locks, _link) = zklock::pair(lock_core::Config::new(Duration::from_secs(10), 7));
    /// assert_eq!(locks.config().session_timeout, locks.session_timeout());
    /// assert_eq!(locks.config().margin(), Duration::from_secs(1));
    /// ```
    pub fn config(&self) -> lock_core::Config {
        self.shared().with(|s| s.core.config().clone())
    }

    /// The client's clock now (the binding's, see [`Clock`](crate::Clock)): what
    /// `lock_timeout` and the like count a timeout from, and the time line of every
    /// `deadline` a method takes.
    ///
    /// ```
    /// let (locks, _link) = zklock::pair(lock_core::Config::new(std::time::Duration::from_secs(10), 7));
    /// assert!(locks.now() <= std::time::Instant::now());
    /// ```
    pub fn now(&self) -> Instant {
        self.shared().with(|s| s.time.instant_now())
    }

    // Waiting for the session, and closing it.

    /// Waits until nothing is in progress on this session: no lock held or awaited
    /// and every node it created deleted (releases by dropped guards and cancelled
    /// acquisitions happen in the background; this waits for them).
    ///
    /// ```
    /// # async fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
    /// drop(locks.mutex("/locks/job").lock().await?); // released in the background
    /// locks.wait_idle().await?;                      // ... and now it is gone
    /// # Ok(()) }
    /// # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
    /// ```
    ///
    /// # Errors
    /// [`Error::Closed`] if the client is (or gets) closed.
    pub async fn wait_idle(&self) -> Result<(), Error> {
        poll_fn(|cx| {
            self.shared().with(|s| {
                if s.closing.is_closed() {
                    Poll::Ready(Err(Error::Closed))
                } else if s.core.is_idle() {
                    Poll::Ready(Ok(()))
                } else {
                    s.wakeups.register_idle(cx.waker());
                    Poll::Pending
                }
            })
        })
        .await
    }

    crate::blocking::twins!(fn wait_idle_blocking(&self) -> Result<(), Error> = wait_idle;);

    /// The core's counters (requests sent, stale replies, acquisitions, ...).
    ///
    /// ```
    /// # async fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
    /// println!("{} requests so far", locks.stats().await?.requests);
    /// # Ok(()) }
    /// # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
    /// ```
    ///
    /// # Errors
    /// [`Error::Closed`] once the client is closed.
    pub async fn stats(&self) -> Result<Stats, Error> {
        self.stats_blocking()
    }

    /// Blocking twin of [`stats`](Self::stats) (it never waits).
    pub fn stats_blocking(&self) -> Result<Stats, Error> {
        self.shared().with(|s| {
            if s.closing.is_closed() {
                Err(Error::Closed)
            } else {
                Ok(s.core.stats())
            }
        })
    }

    /// Closes the session: held locks report
    /// [`LostReason::Closed`](lock_core::LostReason::Closed), waiting acquisitions
    /// fail with [`Error::Closed`], the server deletes every node of the session, and
    /// every later call on any clone returns [`Error::Closed`]. Returns once the
    /// binding has closed its session (lock-zookeeper-client: once the server
    /// confirmed, or after about a session timeout). Idempotent. A held lock is
    /// no longer trusted from the first poll of `close` on
    /// ([`LockGuard::status`](crate::LockGuard::status) says `Suspended` until the
    /// `Lost` comes): the session may end, and the lock go to another, before
    /// the binding reports it.
    ///
    /// A release already asked for goes first: joined with `close`, as in
    /// `futures::join!(guard.release(), locks.close())`, lock-zookeeper-client
    /// sends `closeSession` right behind the release's request and hands the
    /// release the server's reply (one round trip for both).
    ///
    /// ```
    /// # async fn demo(locks: zklock::LockClient) {
    /// locks.close().await;
    /// assert!(locks.mutex("/locks/job").lock().await.is_err());
    /// # }
    /// # futures::executor::block_on(demo(zklock::sim::Server::new().client()));
    /// ```
    pub async fn close(&self) {
        poll_fn(|cx| {
            self.shared().with(|s| {
                s.mark_link();
                s.closing.poll_close(cx.waker())
            })
        })
        .await
    }

    crate::blocking::twins!(fn close_blocking(&self) = close;);
}
