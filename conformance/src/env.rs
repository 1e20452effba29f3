//! What the suite runs against: an [`Env`] gives servers ([`Deployment`]), clients
//! of the binding under test on them (with a handle on each client's network),
//! an administrator's view, and optional [`Capability`]s.

use lock_client::{ConnectOptions, Error, LockClient};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The session timeout of most tests: short, so that expiry tests are quick, and
/// well above the testkit servers' `minSessionTimeout` (200 ms).
pub const SESSION_TIMEOUT: Duration = Duration::from_secs(2);

/// Upper bound for something expected promptly (a lock handed over, an event).
pub const SHORT: Duration = Duration::from_secs(15);

/// Upper bound for something that involves expiries or elections.
pub const LONG: Duration = Duration::from_secs(60);

/// Which of lock-client's two API styles the suite's client side calls.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum Style {
    /// The `*_blocking` twins; a started acquisition is a `PendingLock`, given up
    /// with `cancel()`.
    Blocking,
    /// The async methods, awaited on the test's thread (lock-client's futures need
    /// only a waker; the binding's own loop runs wherever the binding runs it); a
    /// started acquisition is the `acquire` future, given up by dropping it.
    Async,
}

/// A test's needs beyond the base contract; an [`Env`] lists those it has. The
/// tests that need each are listed once, in
/// [`conformance_tests!`](crate::conformance_tests)'s source; one run where the
/// capability is lacking checks nothing and says so (`not applicable: ...`).
/// The bindings that lack one say why in their `tests/conformance.rs`
/// ([`ZkEnv::without`](crate::ZkEnv::without)).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[non_exhaustive]
pub enum Capability {
    /// The client crate's `multi`: fenced writes, crash-detecting sections,
    /// lock-delay and the record of a forced break, each one transaction.
    Multi,
    /// [`Faults::hold_replies`]: lose exactly the replies the server sent after
    /// a point (`lock_testkit::FaultProxy::hold`).
    HoldReplies,
    /// [`Deployment::watchers_of`]: which sessions watch a path (`wchp`).
    Watchers,
    /// [`Deployment::requests_received`]: the server's request count (`mntr`).
    RequestCount,
    /// [`Env::ensemble`]: a replicated ensemble that can lose its leader; and
    /// [`Env::client_at`] on ZooKeeper servers a test starts, pauses and
    /// restarts itself (`suite/availability.rs`).
    Ensemble,
    /// Room for a load test: an ensemble ([`Env::ensemble`]) and 140 sessions
    /// contending on it for a minute or two while two busy processes load the
    /// machine.
    Load,
    /// [`Deployment::connect_string`] and [`Env::client_at`]: a server another
    /// process reaches, so that a test can run its binary again as a child
    /// that holds a lock there and be signalled.
    Processes,
    /// [`Env::client_at`] and [`Deployment::connect_string`]: connects to any
    /// address over a real network (refused, unresolvable, not ZooKeeper, no
    /// chroot; round trips through a delaying proxy).
    ConnectFailures,
    /// With [`Capability::ConnectFailures`], on Linux: the binding sets
    /// TCP_NODELAY on its own sockets after connecting and after every
    /// reconnect, so that Nagle's algorithm does not hold the second of two
    /// pipelined requests for a round trip.
    Nodelay,
    /// With [`Capability::Ensemble`]: a held lock survives a loss of contact of
    /// `0.8 T`, inside the tolerance `lock_core::contact` promises (`0.85 T` less
    /// a round trip on a standalone server, about `0.83 T` on an ensemble member
    /// whose `tickTime` is known).
    FullTolerance,
    /// [`Env::client_with_options`]: a client of the binding connected with
    /// lock-client's `ConnectOptions` (digest auth, the ACL of created nodes,
    /// chroot). A [`ZkEnv`](crate::ZkEnv) made
    /// [`with_options`](crate::ZkEnv::with_options) has it.
    ConnectOptions,
    /// With [`Capability::Ensemble`]: the binding reads the settings (`conf`) of
    /// each server it connects to and reports them (`LockClient::server_checks`)
    /// with the hazards they bring (`ConnectionEvent::ServerHazard`).
    ServerChecks,
}

/// Where the suite runs: a binding on real ZooKeeper (`ZkEnv`), or lock-sim's
/// in-process server (`SimEnv`).
pub trait Env: Send + Sync {
    /// For messages: the binding (and runtime) under test.
    fn name(&self) -> String;
    /// Which API style the suite calls.
    fn style(&self) -> Style;
    /// What this environment offers beyond the base contract.
    fn capabilities(&self) -> Vec<Capability>;
    /// Requests the server receives for one uncontended acquire + release on an
    /// existing lock directory. The core sends `create` and `getChildren` back to
    /// back and grants on the listing, then `delete` to release: 3, when the
    /// client returns the node's Stat (the token) with `create`. One whose client
    /// does not (the `zookeeper` crate) reads it with a `getData`: 4.
    fn requests_per_cycle(&self) -> u64;
    /// Round trips an uncontended acquisition takes on the wire: 1 when the
    /// client sends `create` and `getChildren` back to back (the default). 2 when
    /// it cannot order requests sent from different threads (the `zookeeper`
    /// crate), so that the listing waits for the `create`'s reply
    /// ([`Capability::ConnectFailures`]: the round-trip tests).
    fn round_trips_per_acquire(&self) -> u64 {
        1
    }
    /// The server most tests share (each on its own lock paths).
    fn shared(&self) -> &dyn Deployment;
    /// A server of its own (for tests that count its requests).
    fn fresh(&self) -> Box<dyn Deployment>;
    /// A 3-node ensemble of this `tickTime` ([`Capability::Ensemble`]).
    fn ensemble(&self, tick_time: Duration) -> Option<Box<dyn Ensemble>>;
    /// A client of the binding on the server at `connect_string` (from
    /// [`Deployment::connect_string`], perhaps in another process, or of a
    /// server the test started; [`Capability::Processes`],
    /// [`Capability::ConnectFailures`], [`Capability::Ensemble`]; `None` without
    /// them).
    fn client_at(
        &self,
        connect_string: &str,
        session_timeout: Duration,
    ) -> Option<Result<LockClient, Error>>;
    /// A client of the binding on the server at `connect_string` connected with
    /// `options` ([`Capability::ConnectOptions`]; `None` without it).
    fn client_with_options(
        &self,
        _connect_string: &str,
        _options: ConnectOptions,
    ) -> Option<Result<LockClient, Error>> {
        None
    }
}

/// One server (or the way to reach it) with clients of the binding under test.
pub trait Deployment: Send + Sync {
    /// A client with its own session (returns once the session is established).
    fn client(&self, session_timeout: Duration) -> Result<LockClient, Error>;
    /// A client whose network can be cut, blackholed and healed.
    fn client_with_faults(
        &self,
        session_timeout: Duration,
    ) -> Result<(LockClient, Box<dyn Faults>), Error>;
    /// An administrator's view of the tree.
    fn admin(&self) -> Box<dyn Admin>;
    /// The sessions watching `path` ([`Capability::Watchers`]).
    fn watchers_of(&self, path: &str) -> Option<Vec<i64>>;
    /// Requests received so far from all clients ([`Capability::RequestCount`]).
    fn requests_received(&self) -> Option<u64>;
    /// Where a client in another process reaches this server
    /// ([`Capability::Processes`], [`Capability::ConnectFailures`]; `None`
    /// without them).
    fn connect_string(&self) -> Option<String>;
}

/// The network between one client and its server.
pub trait Faults: Send + Sync {
    /// Resets the connection (the client notices at once and reconnects).
    fn cut(&self);
    /// Silently drops everything, both ways, until [`heal`](Self::heal).
    fn blackhole(&self);
    /// Ends a blackhole.
    fn heal(&self);
    /// From now on the server still applies the client's requests, but nothing
    /// it sends reaches the client, until a [`cut`](Self::cut) loses it all
    /// ([`Capability::HoldReplies`]).
    fn hold_replies(&self);
}

/// An administrator's view of the tree, whatever the binding under test.
pub trait Admin: Send + Sync {
    /// The children of `path` (none if it does not exist), sorted.
    fn children(&self, path: &str) -> Vec<String>;
    /// Deletes `path` (any version); `false` if it did not exist.
    fn delete(&self, path: &str) -> bool;
    /// The `czxid` of `path` (a lock node's fencing token), if it exists.
    fn czxid(&self, path: &str) -> Option<i64>;
    /// The data of `path` and its version, if it exists (what a fenced write
    /// wrote, and whether it wrote).
    fn data(&self, path: &str) -> Option<(Vec<u8>, i32)>;
    /// Waits until the children of `path` satisfy `condition`, for at most
    /// `within` (polling, as [`wait_until`]); returns them. Panics on timeout.
    fn wait_children(
        &self,
        path: &str,
        within: Duration,
        condition: &dyn Fn(&[String]) -> bool,
    ) -> Vec<String> {
        wait_until(&format!("the children of {path}"), within, || {
            let children = self.children(path);
            condition(&children).then_some(children)
        })
    }
    /// Waits until `path` is gone, for at most `within`. Panics on timeout.
    fn wait_deleted(&self, path: &str, within: Duration) {
        wait_until(&format!("{path} to go"), within, || {
            self.czxid(path).is_none().then_some(())
        });
    }
}

/// A replicated ensemble whose leader can be lost.
pub trait Ensemble: Send + Sync {
    /// A client of the binding under test, on the whole ensemble.
    fn client(&self, session_timeout: Duration) -> Result<LockClient, Error>;
    /// Kills the current leader and waits until a new one is elected.
    fn lose_leader(&self);
}

/// A lock path no other test uses.
///
/// ```
/// let a = lock_conformance::unique_path("t");
/// let b = lock_conformance::unique_path("t");
/// assert_ne!(a, b);
/// assert!(a.starts_with("/conformance/t-"));
/// ```
pub fn unique_path(test: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    static RUN: OnceLock<u64> = OnceLock::new();
    let run = RUN.get_or_init(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_micros() as u64 % 1_000_000_000)
            .unwrap_or_default()
            ^ u64::from(std::process::id())
    });
    format!(
        "/conformance/{test}-{run}-{}",
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Polls `condition` until it holds (`Some`), for at most `within`; panics with
/// `what` otherwise. For conditions that only a poll can observe (a server's
/// counters, the in-process server's tree); everything else waits for events.
///
/// ```
/// let mut n = 0;
/// let got = lock_conformance::wait_until("n reaches 3", std::time::Duration::from_secs(1), || {
///     n += 1;
///     (n == 3).then_some(n)
/// });
/// assert_eq!(got, 3);
/// ```
pub fn wait_until<T>(what: &str, within: Duration, mut condition: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + within;
    loop {
        if let Some(value) = condition() {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {within:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}
