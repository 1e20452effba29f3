//! # lock-conformance: one suite for every zklock binding
//!
//! Dev-only (`publish = false`). The behaviour a zklock binding promises, written
//! once against a small blocking trait, [`Backend`], and run by each binding against
//! real ZooKeeper servers (from `lock-testkit`): mutual exclusion, FIFO order,
//! read/write semantics, semaphores, timeouts and cancellation that leave no node,
//! connection loss during a create, suspension and resumption on a short cut,
//! suspension before expiry on a long partition, an administrator deleting the
//! holder's node, losing an ensemble's leader under contention, typed errors, and
//! the number of requests an uncontended lock costs.
//!
//! A binding implements [`Backend`] in its `tests/` (an async binding by blocking on
//! its futures) and calls each test, one `#[test]` each, most simply with
//! [`conformance_tests!`]:
//!
//! ```text
//! // adapters/<binding>/tests/conformance.rs
//! struct MyBackend;
//! impl lock_conformance::Backend for MyBackend { /* ... */ }
//! lock_conformance::conformance_tests!(MyBackend);
//! ```
//!
//! # Environment
//!
//! Tests that need no special server share one standalone server per test binary
//! ([`shared_server`]), each on its own lock paths. Tests that count the server's
//! packets or need an ensemble start their own. Faults are injected with
//! `lock_testkit::FaultProxy` (cut, blackhole) and this crate's [`HoldProxy`]
//! (hold the replies of one connection, to lose exactly the reply to a create the
//! server applied). Directories are inspected with an independent client
//! ([`Admin`], over the `zookeeper` crate). No test sleeps to synchronise: each
//! waits for an event (a lock event, a watch firing, a condition on the server) with
//! a generous upper bound that turns a hang into a failure.
//!
//! # Where bindings legitimately differ
//!
//! [`Expectations`] carries what may differ, with the reason documented on each
//! field; everything else is the same contract for every binding.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod admin;
pub mod connection;
mod env;
mod hold_proxy;
pub mod suite;

pub use admin::Admin;
pub use env::{
    fresh_server, shared_server, unique_path, wait_until, watchers_of, LONG, SESSION_TIMEOUT, SHORT,
};
pub use hold_proxy::{Direction, HoldProxy};
pub use lock_core::{LockEvent, LostReason};

use std::fmt;
use std::time::Duration;

/// Which lock to take.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    /// An exclusive lock (the binding's mutex).
    Mutex,
    /// An exclusive lock that watches its node while held (`watch_node()`), so an
    /// administrator deleting it is heard of at once.
    WatchedMutex,
    /// The shared half of a read/write lock.
    Read,
    /// The exclusive half of a read/write lock (compatible with `Mutex` on the same
    /// path: both are write nodes).
    Write,
    /// A semaphore with this many permits.
    Semaphore(u32),
}

/// How long [`Backend::lock`] may wait for the lock.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Wait {
    /// Until held (the binding's `lock()`).
    Forever,
    /// Not at all (the binding's `try_lock()`): busy is [`Failure::WouldBlock`].
    Try,
    /// At most this long (the binding's `lock_timeout()`): then [`Failure::Timeout`].
    Timeout(Duration),
}

/// A binding's error, classified. Implementations map their error type onto this.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Failure {
    /// `try_lock` found the lock busy.
    WouldBlock,
    /// The deadline passed.
    Timeout,
    /// The acquisition was cancelled.
    Cancelled,
    /// The session expired while waiting.
    SessionExpired,
    /// Our waiting node was deleted by someone else.
    NodeDeleted,
    /// The lock was lost before it could be released.
    Lost(LostReason),
    /// The client is closed.
    Closed,
    /// The lock path is invalid (refused before anything was sent).
    InvalidPath,
    /// Other bad input (e.g. a semaphore of 0 permits).
    Usage(String),
    /// [`Backend::finish`] gave up waiting: the acquisition had not ended.
    StillPending,
    /// Anything else (connect errors, ZooKeeper errors), with its description.
    Other(String),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

impl std::error::Error for Failure {}

/// What may legitimately differ between bindings.
#[derive(Clone, Debug)]
pub struct Expectations {
    /// Requests the server receives for one uncontended acquire + release on an
    /// existing lock directory (`zk_packets_received` in `mntr`).
    ///
    /// The core sends `create` and `getChildren` back to back and grants on the
    /// listing, then `delete` to release: 3 requests, 1 round trip each way, when the
    /// client returns the node's Stat (the token) with `create` (`zookeeper-client`).
    /// One whose client does not (the `zookeeper` crate) reads its node with a
    /// `getData` for it: 4 requests, 2 round trips to acquire. A binding that sends
    /// a request of its own per acquisition would count it here.
    pub requests_per_cycle: u64,
}

/// A zklock binding, seen through a small blocking interface. Every method may
/// block; async bindings implement it by blocking on their futures.
///
/// Guards must be released when dropped (in the background), like the bindings'
/// own guards.
pub trait Backend: Send + Sync + 'static {
    /// A handle on one ZooKeeper session (the binding's client), cheap to clone.
    type Client: Clone + Send + Sync + 'static;
    /// A held lock.
    type Guard: Send + 'static;
    /// An acquisition in progress.
    type Pending: Send + 'static;

    /// The binding's name, for messages.
    fn name(&self) -> &'static str;

    /// Connects (returns once a session is established) with this session timeout.
    fn connect(
        &self,
        connect_string: &str,
        session_timeout: Duration,
    ) -> Result<Self::Client, Failure>;

    /// Closes the client (its session ends; its locks are lost with `Closed`).
    fn close(&self, client: &Self::Client);

    /// The session id the client's locks run on, if any.
    fn session_id(&self, client: &Self::Client) -> Option<i64>;

    /// Waits until the client has nothing in progress (releases and cleanups of
    /// dropped guards and cancelled acquisitions done).
    fn wait_idle(&self, client: &Self::Client) -> Result<(), Failure>;

    /// The core's counters for this client.
    fn stats(&self, client: &Self::Client) -> Result<lock_core::Stats, Failure>;

    /// Acquires `kind` on `path`, waiting as `wait` says.
    fn lock(
        &self,
        client: &Self::Client,
        kind: Kind,
        path: &str,
        wait: Wait,
    ) -> Result<Self::Guard, Failure>;

    /// Starts acquiring `kind` on `path` without waiting.
    fn start(
        &self,
        client: &Self::Client,
        kind: Kind,
        path: &str,
    ) -> Result<Self::Pending, Failure>;

    /// Waits at most `within` for a started acquisition; [`Failure::StillPending`]
    /// (and the acquisition is given up) if it has not ended by then.
    fn finish(&self, pending: Self::Pending, within: Duration) -> Result<Self::Guard, Failure>;

    /// Gives up a started acquisition (its node is removed in the background).
    fn cancel(&self, pending: Self::Pending);

    /// The guard's fencing token.
    fn token(&self, guard: &Self::Guard) -> i64;

    /// The full path of the guard's lock node.
    fn node_path(&self, guard: &Self::Guard) -> String;

    /// Whether the lock is held and trusted right now.
    fn is_trusted(&self, guard: &Self::Guard) -> bool;

    /// The next event of a held lock (`Suspended`, `Resumed`, `Lost`, ...), waiting at
    /// most `within`; `None` if nothing happened by then.
    fn next_event(&self, guard: &mut Self::Guard, within: Duration) -> Option<LockEvent>;

    /// Releases the lock and waits for the server to confirm.
    fn release(&self, guard: Self::Guard) -> Result<(), Failure>;

    /// What this binding legitimately does differently.
    fn expectations(&self) -> Expectations;
}

/// Expands to one `#[test]` per conformance test, each running it against
/// `$backend` (an expression of a type implementing [`Backend`]).
///
/// ```text
/// lock_conformance::conformance_tests!(MyBackend::default());
/// ```
#[macro_export]
macro_rules! conformance_tests {
    ($backend:expr) => {
        $crate::conformance_tests!(@tests $backend;
            mutual_exclusion,
            fifo_order,
            readers_share_writers_exclude,
            writer_not_starved_by_later_readers,
            semaphore_never_exceeds_permits,
            timeout_leaves_no_node,
            cancel_leaves_no_node,
            connection_loss_during_create_adopts_node,
            short_cut_suspends_then_resumes,
            short_cut_resumes_every_recipe,
            waiter_rewatches_after_reconnect,
            blackhole_suspends_before_expiry_then_lost,
            blackhole_loses_before_another_session_holds,
            admin_delete_gives_lost,
            admin_delete_of_a_plain_lock_is_not_watched,
            ensemble_leader_loss_keeps_exclusion,
            invalid_paths_give_typed_errors,
            closed_client_gives_typed_errors,
            requests_per_uncontended_cycle,
        );
    };
    (@tests $backend:expr; $($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                $crate::suite::$name(&$backend);
            }
        )*
    };
}
