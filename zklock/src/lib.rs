//! # zklock: distributed locks on Apache ZooKeeper
//!
//! Exclusive locks, read/write locks, semaphores and leader election, with fencing
//! tokens, herd-free waiting, revocation, crash-detecting sections, fenced writes and
//! leases; node names compatible with Apache Curator and kazoo, so mixed-language
//! fleets share one lock path. This crate is the one `cargo add zklock`: it
//! re-exports the user API ([`LockClient`] and everything it hands out) and the
//! bindings the features select.
//!
//! | feature | what it gives |
//! |---|---|
//! | `tokio` (default), `async-std`, `smol` | [`connect`] / [`builder`]: the async binding over `zookeeper-client` on that runtime |
//! | `blocking` | `blocking::connect` / `blocking::builder`: the binding over the blocking `zookeeper` crate, with a driver thread |
//! | `sim` | `sim::Server`: an in-process ZooKeeper whose clients are the same [`LockClient`], for tests and demos |
//! | `tls` | TLS for the async binding ([`ConnectOptions::tls`], zookeeper-client's rustls) |
//! | `sasl` | SASL DIGEST-MD5 for the async binding ([`ConnectOptions::sasl_digest_md5`]) |
//!
//! Every binding gives the same [`LockClient`]: async methods (`lock().await`) and
//! blocking twins (`lock_blocking()`) alike, whichever binding made it.
//!
//! ```no_run
//! # async fn demo() -> Result<(), zklock::Error> {
//! use std::time::Duration;
//!
//! let locks = zklock::connect("127.0.0.1:2181").await?;
//! let guard = locks.mutex("/locks/report").lock_timeout(Duration::from_secs(30)).await?;
//! println!("holding with fencing token {}", guard.token());
//! guard.release().await?;
//! # Ok(()) }
//! ```
//!
//! In tests, with the `sim` feature, the same code runs on an in-process server:
//!
//! ```
//! # #[cfg(feature = "sim")] {
//! let server = zklock::sim::Server::new();
//! let locks = server.client();
//! let guard = locks.mutex("/locks/report").lock_blocking().unwrap();
//! server.expire_session(&locks);
//! assert_eq!(guard.lost_blocking(), zklock::LostReason::SessionExpired);
//! # }
//! ```
//!
//! ## Fencing
//!
//! A lock cannot stop a holder that pauses past its session from writing after the
//! next holder has: give the resource [`LockGuard::token`] and let it refuse older
//! tokens, with every write conditional on the token stored with the data (SQL:
//! `UPDATE ... SET ..., fence = $token WHERE ... AND fence <= $token`; 0 rows means
//! fenced out). [`LockGuard::fenced_write`] does it for ZooKeeper data. The README's
//! "Fencing your resource" has the pattern for the shell (`zklock exec` exports
//! `ZKLOCK_TOKEN`) and other stores, and `examples/fenced_postgres.rs` the whole story
//! on PostgreSQL.
//!
//! ## Secured ensembles
//!
//! [`ConnectOptions`] (one set for every binding, given to a builder's `options`):
//! digest auth, SASL DIGEST-MD5, the ACL of every node zklock creates
//! ([`NodeAcl`]), chroot, session and connect timeouts, TLS ([`Tls`]). Each binding passes through what its client
//! library allows and refuses the rest with [`Error::Unsupported`] at connect:
//!
//! | option | async binding (`zookeeper-client`) | blocking binding (`zookeeper` 0.8) |
//! |---|---|---|
//! | auth (digest or any scheme the server knows) | yes | yes; the binding sends it again after each reconnect (the crate does not) |
//! | ACL of created nodes | yes | yes, session marker included |
//! | chroot, session timeout, connect timeout | yes | yes |
//! | TLS | with feature `tls` (else `Unsupported`) | `Unsupported`: the crate's I/O is plain TCP |
//! | SASL DIGEST-MD5 | with feature `sasl` (else `Unsupported`); a refused login is [`Error::AuthFailed`] | `Unsupported`: the crate has no SASL |
//! | the application's own client | [`Builder::client`] | no: the crate hides the session id the binding must know |
//!
//! ```no_run
//! # async fn demo(ca_pem: String) -> Result<(), zklock::Error> {
//! use zklock::{ConnectOptions, NodeAcl, Tls};
//! let options = ConnectOptions::new()
//!     .digest_auth("billing", "s3cret")
//!     .acl(NodeAcl::CreatorAll)
//!     .tls(Tls::new(ca_pem));
//! let locks = zklock::builder("zk1:2281,zk2:2281/billing").options(options).connect().await?;
//! # drop(locks); Ok(()) }
//! ```
#![forbid(unsafe_code)]
// docs.rs: each item labelled with the features it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]

// The README's Rust blocks compile as doc tests of this crate (the README is the
// crate's page on the registry): a user's first program is the one tested.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;

pub use lock_client::*;

#[cfg(feature = "async-std")]
pub use lock_zookeeper_client::AsyncStdRuntime;
#[cfg(feature = "smol")]
pub use lock_zookeeper_client::SmolRuntime;
#[cfg(feature = "tokio")]
pub use lock_zookeeper_client::TokioRuntime;
#[cfg(any(feature = "tokio", feature = "async-std", feature = "smol"))]
pub use lock_zookeeper_client::{
    builder, connect, default_runtime, session_client, zookeeper_client, BoxedFuture, Builder,
    Connect, Runtime, DEFAULT_SESSION_TIMEOUT,
};

/// The blocking binding: a [`LockClient`] over the `zookeeper` crate.
#[cfg(feature = "blocking")]
pub mod blocking {
    pub use lock_client::blocking::*;
    /// `LockClient::connect` / `LockClient::builder` for the blocking binding (bring
    /// it into scope: `use zklock::blocking::Connect;`). The async binding's twin is
    /// [`crate::Connect`]: import one of the two, as both name their methods alike.
    pub use lock_zookeeper::Connect;
    pub use lock_zookeeper::{
        Builder, Diagnose, Diagnostics, DEFAULT_SESSION_MARKER, DEFAULT_SESSION_TIMEOUT,
    };

    use crate::{Error, LockClient};

    /// Connects to `cluster` (`"host:port,host:port[/chroot]"`) with the default
    /// options; returns once a session is established.
    pub fn connect(cluster: &str) -> Result<LockClient, Error> {
        <LockClient as lock_zookeeper::Connect>::connect(cluster)
    }

    /// A builder for the connection's options.
    pub fn builder(cluster: &str) -> Builder {
        <LockClient as lock_zookeeper::Connect>::builder(cluster)
    }
}

/// An in-memory ZooKeeper, for your tests and demos (feature `sim`).
///
/// [`sim::Server`] is an in-process server whose clients are the same
/// [`LockClient`] a real binding gives: take locks, elect leaders, write fenced,
/// and inject the faults a real deployment meets (`disconnect`, `partition`,
/// `heal`, `expire_session`, `admin_delete`). Switching to a real ZooKeeper is
/// one line: `Server::new().client()` becomes [`connect`]`("host:2181").await?`
/// (or `blocking::connect` with the `blocking` feature).
///
/// ```
/// let server = zklock::sim::Server::new();
/// let locks = server.client();
/// let guard = locks.mutex("/locks/report").lock_blocking().unwrap();
/// assert!(guard.is_trusted());
/// ```
///
/// The rest of this module is the seeded simulator the zklock crates are tested
/// with ([`sim::Sim`], [`sim::Workload`]: virtual time, seeded faults, invariants
/// checked after every step), for those who want to test their own protocol
/// logic the same way.
#[cfg(feature = "sim")]
pub mod sim {
    pub use lock_sim::*;
}
