//! # lock-zookeeper: zklock's distributed locks over the blocking `zookeeper` crate
//!
//! Mutexes, read/write locks and semaphores on Apache ZooKeeper for programs without
//! an async runtime, with fencing tokens and honest failure reporting (suspended /
//! resumed / lost). The protocols live in [`lock_core`] and the user API in
//! [`lock_client`] (re-exported here; its `*_blocking` methods are the ones to call
//! from threads); this crate is the glue between lock-client's
//! [`Link`] and the [`zookeeper`](https://docs.rs/zookeeper/0.8)
//! crate (0.8), and absorbs that crate's hazards (below).
//!
//! ```no_run
//! # fn demo() -> Result<(), zklock::Error> {
//! use zklock::blocking::Connect;
//! use zklock::{LockClient, LockStatus};
//! use std::time::Duration;
//!
//! let locks = LockClient::connect("127.0.0.1:2181")?;
//!
//! // Exclusive lock, with a fencing token for the resource it protects.
//! let guard = locks.mutex("/locks/report").lock_timeout_blocking(Duration::from_secs(30))?;
//! assert_eq!(guard.status(), LockStatus::Held);
//! println!("token {}", guard.token());
//! guard.release_blocking()?;
//!
//! // Read/write lock and semaphore.
//! let table = locks.rwlock("/locks/table");
//! let reader = table.read().lock_blocking()?;
//! let slots = locks.semaphore("/locks/gpu", 3);
//! let permit = slots.try_lock_blocking()?; // None if all 3 permits are taken
//! # drop((reader, permit));
//! locks.close_blocking();
//! # Ok(()) }
//! ```
//!
//! ## Model
//!
//! A [`LockClient`] owns one ZooKeeper session and one background thread, the
//! *driver* (driver/), which owns the `zookeeper` client and the
//! [`Link`] of the lock-client state holding every lock of that
//! session. It follows the link's calling rules: it takes the core's requests in
//! the order polled, issues them (under the ordering rule below) on a small pool of
//! worker threads that make the blocking calls, and feeds back replies, watch
//! firings, session changes and time. Handles call the core directly and wake the
//! driver. Everything is `Send + Sync` and cheap to clone; [`LockGuard`]s are
//! `Send + Sync` too, so one thread can work while another waits for trouble
//! ([`LockGuard::suspended_blocking`], [`LockGuard::lost_blocking`]).
//!
//! * **Blocking, cancellable.** `lock_blocking()`, `try_lock_blocking()`,
//!   `lock_timeout_blocking()`, `lock_until_blocking()` block the caller; `start()`
//!   returns a [`PendingLock`] that can be waited for, with or without a timeout,
//!   or cancelled (also from another thread, through a [`Canceller`]). Giving up
//!   leaves no node behind.
//! * **Secured ensembles** ([`Builder::options`], lock-client's [`ConnectOptions`]):
//!   digest (or any scheme's) auth, sent again after every reconnect before any lock
//!   request (the crate does not resend it; `tests/secure.rs` cuts the connection
//!   under a creator-only ACL); the ACL of every node created, the session marker
//!   included; chroot; session and connect timeouts. TLS and SASL are refused with
//!   [`Error::Unsupported`]: the crate has neither. A `LockClient` on an
//!   application's own `zookeeper` client is not offered: the binding must own the
//!   client to learn the session id (the marker) and replace it after an expiry.
//! * **Diagnostics** of the connection ([`Diagnose::diagnostics`]): clients opened,
//!   sessions, reconnections, silences detected.
//! * Everything else (revocation, leases, elections and observers, failures) is
//!   lock-client's; see its docs.
//!
//! ## The `zookeeper` crate's hazards, and what the binding does about them
//!
//! | hazard | absorbed by |
//! |---|---|
//! | Its state listener runs on its I/O thread under a lock: calling ZooKeeper from it deadlocks. | The listener (and the watcher) only send a message to the driver thread, which makes every call from a worker. |
//! | After a reconnect it re-registers no watch. | The core re-lists and re-watches on every `Connected`; the driver feeds `Connected` after each reconnect. |
//! | After an expiry it silently opens a new session, and it hides the session id. | The driver learns the id from the owner of an ephemeral marker node ([`Builder::session_marker`]) and checks the marker after every reconnect: a new session is fed to the core as such, so held locks become `Lost(SessionExpired)`, never silently held. Nodes that a request of the old session created in the new one are deleted. |
//! | It never notices a silent network (no read timeout). | The driver watches the connection itself, as the Java client does: a connection without a reply for T/3 is probed, a request unanswered for T/3 makes it suspect. Silence is reported within 2/3 T of the last reply, so a held lock reads `Suspended` for at least 0.23 T (0.46 s with T = 2 s) before the core reports it `Lost`, a margin before the server could expire the session (`tests/hazards.rs`). A connection silent past `T + T/3` is abandoned for a new client. |
//! | A notification can be the last thing a dead connection delivers (the server fires our watches as it expires our session). | Notifications never count as proof that a connection lives, and are not fed to the core while it believes the connection down (it re-lists and re-verifies on `Connected`): the lock is lost for the right reason. |
//! | A reconnect gives up for good (`Closed`) when the server's last answer is older than `floor(T) + 1` s; every call then fails at once. | A closed client ends the session for the core (held locks `Lost(SessionExpired)`, waiters [`Error::SessionExpired`]) and is replaced by a new one, which deletes the old session's nodes at once (`SessionEvent::Abandoned`: the server may still hold that session, and they would stand in every waiter's way until it expires); meanwhile calls give typed errors ([`Error::Timeout`], ...), never hang. |
//! | The published crate (0.8.0) counts that age from its last *ping*, and pings only after 2/3 T of idleness: a busy client gave up, on any connection loss, a session the server still held (held locks lost, waiters out of the queue). | Fixed in the crate: the binding depends on `zookeeper-zklock` (`adapters/zookeeper-fork`), the crate 0.8.0 with this fix and two additions, under a name of its own so that every program depending on the binding gets it; it counts from the server's last answer. A busy client reconnects into its session: held locks are `Resumed`, waiters keep their places (`tests/hazards.rs`; `tests/failover.rs`: a follower of a 3-node ensemble dies under load). |
//! | Its first connection attempt has no timeout (only reconnects have one): a server that accepts the connection and never answers leaves it `Connecting` forever, without a word. | A client neither connected nor reporting a state change for `T + 4 s` is replaced; [`Builder::connect_timeout`] bounds `connect`. |
//! | Its `Drop` (and `close`) block until the server answers: forever on a dead connection. | Clients are closed and dropped on a thread of their own. |
//! | Calls from different threads are not ordered. | Requests are issued so that no reply can depend on the order: a write when nothing before it is unanswered, a read when no write before it is. |
//! | `create` returns no Stat. | The fencing token comes from a `getData` on our own node (no watch), sent when the create's reply arrives: one request more than with a Stat (4 a cycle against 3), and the grant waits for its reply (create, then getData: one read round trip more, about 130 µs of 450 µs on loopback). |
//! | It never sets `TCP_NODELAY` and writes each request on its own: Nagle's algorithm holds a request written while another is unanswered (the own-node `getData` behind the `getChildren` issued with it: 3 round trips per acquisition instead of 2). | The binding turns Nagle's algorithm off on every new connection, before the core hears of it, through [`lock_nodelay`] (Linux; elsewhere the delays remain). An uncontended acquisition is 2 round trips (the `create`, then both reads), a release 1, a handoff 1 after the holder's release is sent; the conformance suite counts them through a delaying proxy and checks the option on the live socket after connects, reconnects and a move to another server. |
//! | 0.8.0 has no `multi`. | Added in the crate (the fork's `ZooKeeper::multi`): fenced writes, crash-detecting sections, lock-delay and the break's record run here as on every binding, each one request (the conformance suite runs them on this binding). |
//! | 0.8.0 hides the negotiated session timeout (a server fits the one asked for into its `minSessionTimeout..=maxSessionTimeout`). | Fixed in the crate (the fork's `ZooKeeper::session_timeout`): once a session is established, and before the core hears of it (before [`Builder::connect`] returns), the driver times everything by the timeout the server granted: its liveness checks, and the core's grace, expiry margin and proof of contact ([`Link::reconfigure`](lock_client::Link::reconfigure)); a new session after an expiry gets its own. [`LockClient::session_timeout`] reports it. A server granting less than asked for no longer leaves a lock trusted too long (`tests/hazards.rs`, `granted_timeout_times_the_locks`). After every (re)connect the binding also reads the server's settings (`conf`, on a thread of its own) and warns ([`ConnectionEvent::ServerHazard`], [`Hazard`]) when `syncLimit × tickTime` is too long for the session. |
//! | Its constructor panics if the first socket cannot be created. | Caught: [`Error::Connect`]. |
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod client;
mod driver;
mod wire;

pub use client::{
    builder, connect, Builder, Connect, Diagnose, DEFAULT_SESSION_MARKER, DEFAULT_SESSION_TIMEOUT,
};
pub use driver::Diagnostics;

// The user API, whole: the same names as the `zklock` facade and the async binding
// (zklock's `tests/exports.rs` checks it).
pub use lock_client::*;
