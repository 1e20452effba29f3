//! # lock-zookeeper-client: zklock's distributed locks over the async `zookeeper-client`
//!
//! Mutexes, read/write locks and semaphores on Apache ZooKeeper, with fencing tokens,
//! honest failure reporting (suspended / resumed / lost) and one round trip per
//! uncontended acquisition. The protocols live in [`lock_core`]; this crate binds them
//! to the [`zookeeper_client`] crate (0.11) and to an async runtime. The API is
//! [`lock_client`]'s, re-exported here: this crate is the glue between its
//! [`Link`] and zookeeper-client (the request `match`, the loop,
//! the session-state mapping, connect options, runtimes and `TCP_NODELAY`), and the
//! worked example of lock-client's guide to writing a binding.
//!
//! ```no_run
//! # async fn demo() -> Result<(), zklock::Error> {
//! use zklock::{Connect, LockClient, LockStatus};
//! use std::time::Duration;
//!
//! let locks = LockClient::connect("127.0.0.1:2181").await?;
//!
//! // Exclusive lock, with a fencing token for the resource it protects.
//! let guard = locks.mutex("/locks/report").lock_timeout(Duration::from_secs(30)).await?;
//! assert_eq!(guard.status(), LockStatus::Held);
//! println!("token {}", guard.token());
//! guard.release().await?;
//!
//! // Read/write lock and semaphore.
//! let table = locks.rwlock("/locks/table");
//! let reader = table.read().lock().await?;
//! let slots = locks.semaphore("/locks/gpu", 3);
//! let permit = slots.try_lock().await?; // None if all 3 permits are taken
//! # drop((reader, permit));
//! locks.close().await;
//! # Ok(()) }
//! ```
//!
//! ## Revocation, elections, crash detection, fenced writes, leases
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use zklock::{Connect, LockClient, LostReason, Writes};
//! use std::time::Duration;
//! let locks = LockClient::connect("127.0.0.1:2181").await?;
//!
//! // Revocation: a revocable holder is asked to let go and decides.
//! let guard = locks.mutex("/locks/job").revocable().lock().await?;
//! // ... elsewhere: locks.revoke("/locks/job").await? names the nodes it asked.
//! # if false {
//! guard.revocation_requested().await.ok();
//! # }
//! guard.release().await?;
//!
//! // Leader election, and observers that follow the leader without taking part.
//! let mut election = locks.election("/services/scheduler/leader", "node-1");
//! let leadership = election.leadership().await?;
//! let observer = locks.observe_election("/services/scheduler/leader").await?;
//! assert_eq!(observer.leader().map(|l| l.token), Some(leadership.token()));
//! leadership.resign().await?;
//!
//! // Crash-detecting critical sections (the Ready-file idea).
//! let guard = locks.mutex("/locks/ledger").detect_crashes().lock().await?;
//! if guard.previous_holder_crashed() { /* repair */ }
//! guard.open_section().await?;
//! // Fenced writes: applied only while the lock is held, atomically.
//! guard.fenced_write(Writes::new().set_data("/ledger/head", b"42")).await?;
//! guard.release().await?; // closes the section in the same multi as the delete
//!
//! // Leases: the lock is taken away after a maximum hold time.
//! let guard = locks.mutex("/locks/job").max_hold(Duration::from_secs(30)).lock().await?;
//! assert_eq!(guard.lost().await, LostReason::LeaseExpired);
//! # Ok(()) }
//! ```
//!
//! * **Revocation** ([`Mutex::revocable`], [`LockClient::revoke`],
//!   [`LockGuard::revocation_requested`]): `revoke` writes Curator's `__REVOKE__` into
//!   the holders' nodes (of a lock path) or into one node (a node path); revocable
//!   holders get [`LockEvent::RevocationRequested`], revocable waiters give up with
//!   [`Error::Revoked`]. Curator's revocable locks interoperate.
//! * **Leader election** ([`LockClient::election`], [`Election`], [`Leadership`],
//!   [`LockClient::observe_election`], [`ElectionObserver`]): participants queue like
//!   a mutex, each watching only its predecessor; observers watch only the leader.
//!   Leadership is suspended when the connection drops (before the session can
//!   expire and another participant be elected), and lost after the grace.
//! * **Crash-detecting sections** ([`Mutex::detect_crashes`],
//!   [`LockGuard::open_section`], [`LockGuard::previous_holder_crashed`]): a marker
//!   node says a holder is inside a section; a clean release removes it in the same
//!   `multi` as the lock node, anything else (death, close, loss, a dropped guard)
//!   leaves it for the next holder to see. No extra round trip when uncontended.
//! * **Fenced writes** ([`LockGuard::fenced_write`], [`Writes`]): one `multi` with a
//!   `check` on the lock node: once the lock is lost, nothing is written
//!   ([`FencedError::NotHeld`]).
//! * **Leases** ([`Mutex::max_hold`]): [`LostReason::LeaseExpired`] after the maximum
//!   hold time; the node is deleted and the next waiter gets in.
//!
//! ## Model
//!
//! A [`LockClient`] owns one ZooKeeper session and one background task, the
//! *driver* (driver.rs), which owns zookeeper-client's `Client` and the
//! [`Link`] of the lock-client state holding every lock of that
//! session. Handles call the core directly and wake the driver; everything is
//! `Send + Sync` (guards are `Send`) and cheap to clone. Every async method has a
//! `*_blocking` twin ([`lock_client::blocking`]) for threads outside the runtime.
//!
//! * **Pipelining.** zookeeper-client writes a request when its method is called, so
//!   the driver calls them in the order the core emits them: an uncontended lock is
//!   `create` + `getChildren` in one round trip, a release one `delete`: 3 requests a
//!   cycle. On the wire that needs `TCP_NODELAY`, which zookeeper-client (0.11.2)
//!   never sets: with Nagle's algorithm on, a request written while an earlier one is
//!   unanswered waits for that reply (2 round trips per free lock). The binding
//!   turns it off on every new
//!   connection, including reconnects to other servers, through [`lock_nodelay`]
//!   (Linux; elsewhere Nagle's delays remain). [`LockClient::connect`] returns once
//!   it is off.
//! * **Server settings.** After every (re)connect the binding asks the server for
//!   its settings (the `conf` four-letter word, on a thread of its own, 100 ms
//!   later: out of the way of the session's first requests) and warns
//!   (a `tracing` warning and [`ConnectionEvent::ServerHazard`]) when
//!   `syncLimit × tickTime` is too long for the session timeout: see [`Hazard`]
//!   for the rule and [`LockClient::server_checks`] for what was found.
//! * **Cancel-safety.** Dropping a `lock()` future cancels the acquisition; the core
//!   deletes the node, even one whose `create` was still in flight. Dropping a guard
//!   releases the lock in the background ([`LockClient::wait_idle`] waits for it).
//! * **Failures.** When the connection drops, held locks report
//!   [`LockEvent::Suspended`] (ownership no longer guaranteed) before the server can
//!   expire the session, then [`LockEvent::Resumed`] once the node is verified after a
//!   reconnect, or [`LockEvent::Lost`] after the suspension grace or on expiry. See
//!   [`LockGuard::status`], [`LockGuard::next_event`], [`LockGuard::lost`].
//! * **Expiry.** After a session expiry the handle opens a new session by itself; see
//!   [`LockClient`].
//!
//! ## Secured ensembles
//!
//! [`Builder::options`] takes lock-client's [`ConnectOptions`]: digest (or any
//! scheme's) auth, resent by zookeeper-client on every reconnect; SASL DIGEST-MD5
//! (feature `sasl`); the ACL of every node the binding creates ([`NodeAcl`]); chroot;
//! session and connect timeouts; TLS with a CA and an optional client certificate
//! (feature `tls`, rustls). Without a feature its option is refused with
//! [`Error::Unsupported`]; credentials the server refuses at connect are
//! [`Error::AuthFailed`]. [`Builder::client`] runs the locks on a zookeeper-client
//! `Client` the application already has.
//!
//! ## Runtimes
//!
//! The driver runs on a [`Runtime`]: spawning and timers, all zookeeper-client needs
//! of one too (its sockets and timers are async-io's; its session task is spawned
//! on the same runtime). Features `tokio` (default), `async-std`, `smol` ship
//! `TokioRuntime`, `AsyncStdRuntime` and `SmolRuntime` (and enable the
//! matching runtime feature of zookeeper-client); an application on another
//! executor implements [`Runtime`] itself. The runtime is picked by
//! [`default_runtime`] or given to [`Builder::runtime`].
//!
//! ## Detecting a silent network in time
//!
//! The core needs `Disconnected` within 2/3 of the session timeout of the last
//! contact, so that holders suspend before the server can expire the session and let
//! another client in. zookeeper-client does this itself: it pings after 3/20 of the
//! negotiated session timeout without sending and drops a connection from which
//! nothing was received for 2/5 of it (checked every 1/20), so a blackholed network is
//! reported at most 0.45 × the session timeout after the last byte received. The
//! adapter relies on that (it never sets zookeeper-client's connection timeout, which
//! would change those fractions) and its tests measure it through a blackholing proxy.
#![deny(missing_docs)]
#![forbid(unsafe_code)]
// docs.rs: each item labelled with the features it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod client;
mod dial;
mod driver;
mod glue;
mod runtime;

pub use client::{builder, connect, Builder, Connect, DEFAULT_SESSION_TIMEOUT};
pub use driver::session_client;
#[cfg(feature = "async-std")]
pub use runtime::AsyncStdRuntime;
#[cfg(feature = "smol")]
pub use runtime::SmolRuntime;
#[cfg(feature = "tokio")]
pub use runtime::TokioRuntime;
pub use runtime::{default_runtime, BoxedFuture, Runtime};
/// The zookeeper-client crate this binding is built on, for
/// [`Builder::client`] (a `Client` of the same version).
pub use zookeeper_client;

// The user API, whole: the same names as the `zklock` facade and the blocking binding
// (zklock's `tests/exports.rs` checks it).
pub use lock_client::*;

#[cfg(test)]
mod tests {
    use super::*;

    fn send<T: Send>(_: &T) {}

    /// Connecting can be spawned on multi-threaded runtimes (compile-time check).
    #[allow(dead_code)]
    fn connect_is_send() {
        send(&LockClient::connect("127.0.0.1:2181"));
        send(&connect("127.0.0.1:2181"));
    }
}
