//! # lock-zookeeper-async: zklock's distributed locks over the `zookeeper-async` crate
//!
//! Mutexes, read/write locks, semaphores, revocation, leases and elections on
//! Apache ZooKeeper, on tokio, over [`zookeeper_async`] (5.0, an async port of the
//! `zookeeper` crate). The protocols live in [`lock_core`] and the user API in
//! [`lock_client`] (re-exported here); this crate is only the glue between
//! lock-client's [`Link`] and zookeeper-async, written against their published
//! API as any binding author outside zklock would write it.
//!
//! ```no_run
//! # async fn demo() -> Result<(), lock_zookeeper_async::Error> {
//! let locks = lock_zookeeper_async::builder("127.0.0.1:2181")
//!     .session_timeout(std::time::Duration::from_secs(6))
//!     .connect()
//!     .await?;
//! let guard = locks.mutex("/locks/report").lock().await?;
//! println!("token {}", guard.token());
//! guard.release().await?;
//! locks.close().await;
//! # Ok(()) }
//! ```
//!
//! ## Why zookeeper-async, not tokio-zookeeper
//!
//! The two other ZooKeeper clients on crates.io, as published:
//!
//! | | zookeeper-async 5.0 | tokio-zookeeper 0.4 |
//! |---|---|---|
//! | session events | a state listener (connecting, connected, expired, closed) | none: reconnects silently, never says the connection dropped |
//! | servers, chroot | a connect string, several servers, chroot | one `SocketAddr`, no chroot |
//! | create with Stat | `create2` (the fencing token with the reply) | path only |
//! | getData / getChildren with a watch | yes | yes |
//! | auth | `addauth` (not resent after a reconnect: the binding resends it) | none |
//! | `multi` | **no** | yes |
//! | `sync` | **no** | no |
//! | after an expiry | reports it, then opens a new session silently | a new session silently, with a timeout of 0 |
//! | TLS, SASL | no | no |
//!
//! A lock binding lives on session events: without them a held lock cannot be
//! suspended before the server could expire the session, which tokio-zookeeper
//! makes impossible (and it gives up for good when one reconnect fails).
//! zookeeper-async reports them, so it is the one a lock can be trusted on; what it
//! lacks is refused or worked around, below.
//!
//! ## What the binding refuses, and why
//!
//! * **`multi`**: zookeeper-async has none and no way to send a raw request, and a
//!   `multi` split into separate calls is not atomic. Every request the core would
//!   send as one fails with `ZkError::Other(`[`MULTI_UNSUPPORTED`]`)` and nothing
//!   is written: fenced writes ([`LockGuard::fenced_write`] gives
//!   [`FencedError`]), opening a crash-detecting section
//!   ([`LockGuard::open_section`]), lock-delay ([`Mutex::lock_delay`]) and the
//!   break record of [`LockClient::break_lock`]. The plain lock API never needs
//!   one (a crash-detecting lock without an open section releases with a plain
//!   `delete`).
//! * **TLS and SASL** ([`ConnectOptions::tls`], [`ConnectOptions::sasl_digest_md5`]):
//!   [`Error::Unsupported`] at connect; the crate's I/O is a plain TCP stream.
//! * **Session timeouts below 1.5 s**: [`Error::BadOption`]; the crate's read
//!   timeout is twice its ping interval in *whole seconds*, zero below that, and
//!   it would reconnect in a loop.
//!
//! ## The crate's gaps, and what the binding does about them
//!
//! | gap | absorbed by |
//! |---|---|
//! | No `sync` (the core proves the leader still hears the session with one). | `Op::Sync` is sent as a `setData` on the session's own marker node: a write passes the leader as a sync does (see `lock_core::contact`), so it proves the same contact, at the cost of a transaction per sync interval ([`ConnectOptions::sync_interval`]; `None` turns it off). |
//! | It hides the session id. | The owner (`ephemeralOwner`) of an ephemeral marker node created first in every session ([`Builder::session_marker`]). |
//! | It hides the negotiated session timeout. | Worked out from the servers' `minSessionTimeout`/`maxSessionTimeout` (their `conf`), before the core hears of the session; the one asked for when `conf` is refused (a warning). |
//! | It notices a silent network after twice its ping interval rounded down to whole seconds (a whole session timeout and more), and never says when it last heard the server. | The driver watches the connection itself: an idle connection is probed after T/4, a request unanswered for T/3 reports `Disconnected` (at most 7/12 T after the last answer), with the time since the newest answered request was sent. |
//! | After an expiry it opens a new session silently. | Its `NotConnected` report ends the session for the core (held locks lost, waiters fail) and the client is closed and replaced by a new one. |
//! | It does not send credentials again after a reconnect. | The driver sends them before the core hears of the connection. |
//! | A dropped client keeps its session alive (its I/O task pings on). | Clients are always closed. |
//! | No `removeWatches`. | The watch stays at the server until it fires; the core ignores a firing it no longer waits for. |
//! | Its first connect retries a refusing server forever, in a busy loop. | A pause between attempts, and [`Builder::connect_timeout`]. |
//!
//! [`LockGuard::fenced_write`]: lock_client::LockGuard::fenced_write
//! [`LockGuard::open_section`]: lock_client::LockGuard::open_section
//! [`Mutex::lock_delay`]: lock_client::Mutex::lock_delay
//! [`LockClient::break_lock`]: lock_client::LockClient::break_lock
//! [`FencedError`]: lock_client::FencedError
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod driver;
mod glue;

pub use glue::MULTI_UNSUPPORTED;
pub use lock_client::*;

use std::time::Duration;

/// Default prefix of the session marker node (see [`Builder::session_marker`]).
pub const DEFAULT_SESSION_MARKER: &str = "/zklock-session-";

/// The shortest session timeout the binding accepts (see the crate docs).
pub const MIN_SESSION_TIMEOUT: Duration = Duration::from_millis(1500);

/// Settings for a [`LockClient`]; finish with [`connect`](Builder::connect).
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until connect() is called"]
pub struct Builder {
    cluster: String,
    options: ConnectOptions,
    marker: String,
}

/// Settings for a connection to `cluster` (a ZooKeeper connect string:
/// `host:port[,host:port...][/chroot]`).
pub fn builder(cluster: &str) -> Builder {
    Builder {
        cluster: cluster.to_owned(),
        options: ConnectOptions::new(),
        marker: DEFAULT_SESSION_MARKER.to_owned(),
    }
}

impl Builder {
    /// The session timeout to ask the servers for (default 10 s, at least
    /// [`MIN_SESSION_TIMEOUT`]); same as [`ConnectOptions::session_timeout`].
    pub fn session_timeout(mut self, timeout: Duration) -> Self {
        self.options = self.options.session_timeout(timeout);
        self
    }

    /// How long [`connect`](Self::connect) tries to open the first session
    /// (default: twice the session timeout plus 4 s); same as
    /// [`ConnectOptions::connect_timeout`].
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.options = self.options.connect_timeout(timeout);
        self
    }

    /// The connection options (lock-client's, the same for every binding);
    /// replaces any set before. Supported: auth (sent again after every
    /// reconnect), the ACL of created nodes (the marker's too), chroot, both
    /// timeouts, the sync interval. TLS and SASL are refused (see the crate docs).
    pub fn options(mut self, options: ConnectOptions) -> Self {
        self.options = options;
        self
    }

    /// Where the session marker lives (default [`DEFAULT_SESSION_MARKER`], at the
    /// root of the chroot; the server appends a sequence number). The binding
    /// learns the session id from the owner of this ephemeral node, and writes it
    /// in place of `sync`. The client needs the right to create it.
    pub fn session_marker(mut self, prefix: impl Into<String>) -> Self {
        self.marker = prefix.into();
        self
    }

    /// Connects: returns once a session is established. Call it inside a tokio
    /// runtime, which then runs the binding's driver task (zookeeper-async runs
    /// on tokio only).
    ///
    /// # Errors
    /// [`Error::NoRuntime`] outside a tokio runtime, [`Error::Unsupported`] for TLS
    /// and SASL, [`Error::BadOption`] for invalid options, [`Error::Connect`] when
    /// no session could be had within the connect timeout (with what each server
    /// did), for a missing chroot, or a marker that cannot be created.
    pub async fn connect(self) -> Result<LockClient, Error> {
        let reason = "zookeeper-async (5.0) has a plain TCP stream only; use lock-zookeeper-client";
        if self.options.tls_option().is_some() {
            return Err(Error::Unsupported {
                option: "TLS",
                reason,
            });
        }
        if self.options.sasl_option().is_some() {
            return Err(Error::Unsupported {
                option: "SASL",
                reason,
            });
        }
        let timeout = self.options.requested_session_timeout();
        if timeout < MIN_SESSION_TIMEOUT {
            let why = "below 1.5 s zookeeper-async's read timeout is zero (see the binding's docs)";
            return Err(Error::bad_option("session timeout", why));
        }
        let cluster = self.options.connect_string(&self.cluster)?;
        lock_core::validate_lock_path(&format!("{}x", self.marker)).map_err(|e| {
            Error::bad_option_caused_by("session marker prefix", "not a valid path prefix", e)
        })?;
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(Error::NoRuntime);
        }
        let dial = glue::Dial {
            cluster: cluster.clone(),
            timeout,
            marker_prefix: self.marker.clone(),
            acl: glue::acl(self.options.node_acl()),
            auth: self.options.auth_list().to_vec(),
        };
        let connect_timeout =
            (self.options.connect_timeout_option()).unwrap_or(timeout * 2 + Duration::from_secs(4));
        let reports = tokio::sync::mpsc::unbounded_channel();
        let opening = tokio::time::timeout(connect_timeout, dial.open(0, reports.0.clone()));
        let opened = match prompt(opening, &cluster).await {
            Ok(Ok(opened)) => opened,
            Err(failure) => return Err(Error::connect(failure)),
            // The marker's parent is missing: the chroot, when there is one.
            Ok(Err(Some(lock_core::ZkError::NoNode))) if chroot(&cluster).is_some() => {
                let chroot = chroot(&cluster).unwrap_or_default().to_owned();
                return Err(Error::connect(ConnectFailure::NoChroot { chroot }));
            }
            Ok(Err(Some(e))) => {
                let failure = ConnectFailure::SessionMarker {
                    prefix: self.marker,
                };
                return Err(Error::connect_caused_by(failure, e));
            }
            // No session in time, or the crate refused the connect string (a host
            // that does not resolve): what the servers did, if they tell.
            Ok(Err(None)) => {
                let failure = ConnectFailure::NoSession { connect_timeout };
                let servers = probe(cluster).await;
                let failure = ConnectFailure::if_unreachable(servers.clone()).unwrap_or(failure);
                return Err(Error::connect(failure).explained_by(servers));
            }
        };
        let seed = random_seed();
        let (locks, link) = pair(self.options.lock_config(opened.timeout, seed));
        link.apply_options(&self.options);
        let driver = driver::Driver::new(
            link,
            dial,
            self.options,
            seed,
            opened.timeout,
            opened,
            reports,
        );
        tokio::spawn(driver.run());
        Ok(locks)
    }
}

/// The chroot of a connect string, if any.
fn chroot(cluster: &str) -> Option<&str> {
    cluster
        .find('/')
        .map(|i| &cluster[i..])
        .filter(|c| *c != "/")
}

/// What each server of `cluster` does when connected to (lock-nodelay's probe).
async fn probe(cluster: String) -> Vec<(String, Reach)> {
    let probe = tokio::task::spawn_blocking(move || lock_nodelay::probe_all(&cluster, false));
    probe.await.unwrap_or_default()
}

/// Awaits `opening`, and beside it, when it takes more than a moment, probes the
/// servers: zookeeper-async retries refusing servers until the connect timeout,
/// and this gives up at once when none can ever give a session (refused, not
/// ZooKeeper, unresolved). The server's error, if the attempt ended with one.
async fn prompt<T>(
    opening: impl std::future::Future<
        Output = Result<Result<T, lock_core::ZkError>, tokio::time::error::Elapsed>,
    >,
    cluster: &str,
) -> Result<Result<T, Option<lock_core::ZkError>>, ConnectFailure> {
    let cluster = cluster.to_owned();
    let unreachable = async move {
        // A connect that succeeds at once (the usual case) costs the servers no probe.
        tokio::time::sleep(Duration::from_millis(50)).await;
        match ConnectFailure::if_unreachable(probe(cluster).await) {
            Some(failure) => failure,
            None => futures::future::pending().await,
        }
    };
    // An answer of the server's is about the marker; anything else (the crate
    // refusing the connect string, a connection that never gave a session) is
    // for the servers' probe to explain.
    let crate_error = |e: lock_core::ZkError| e.is_from_server().then_some(e);
    tokio::select! {
        opened = opening => Ok(opened.map_err(|_| None).and_then(|r| r.map_err(crate_error))),
        failure = unreachable => Err(failure),
    }
}
