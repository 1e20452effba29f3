//! Connecting: [`Builder`], and the [`Connect`] and [`Diagnose`] extensions of
//! lock-client's [`LockClient`] for this binding.

use crate::driver::{Counters, Diagnostics, Driver, Settings};
use crate::wire;
use lock_client::{ConnectFailure, ConnectOptions, Error, LockClient, Reach};
use std::sync::{mpsc, Arc};
use std::time::Duration;

/// Default requested session timeout (lock-core's, the workspace's one default).
pub use lock_core::DEFAULT_SESSION_TIMEOUT;

/// How long `connect` waits for a session before probing the servers: a
/// connect that succeeds at once (the usual case) costs them no probe.
const PROBE_AFTER: Duration = Duration::from_millis(50);

/// Default prefix of the session marker node (see [`Builder::session_marker`]).
pub const DEFAULT_SESSION_MARKER: &str = "/zklock-session-";

/// Settings for a [`LockClient`]; finish with [`connect`](Builder::connect).
///
/// ```no_run
/// # fn demo() -> Result<(), zklock::Error> {
/// use std::time::Duration;
/// use zklock::blocking::Connect;
/// let locks = zklock::blocking::builder("127.0.0.1:2181")
///     .session_timeout(Duration::from_secs(6))
///     .suspended_grace(Duration::from_secs(3))
///     .connect()?;
/// # drop(locks); Ok(()) }
/// ```
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until connect() is called"]
pub struct Builder {
    cluster: String,
    options: ConnectOptions,
    marker: String,
}

impl Builder {
    /// The session timeout to ask the server for (default 10 s).
    ///
    /// The server fits it into its `minSessionTimeout..=maxSessionTimeout` (by
    /// default 2 to 20 ticks, 4 s to 40 s with the usual 2 s tick), and the binding
    /// times everything (suspension grace, expiry margin, proof of contact, its
    /// liveness checks) by the timeout the server granted, from before
    /// [`connect`](Self::connect) returns: [`LockClient::session_timeout`] reports
    /// it. A new session after an expiry is timed by its own grant. Timeouts
    /// below 500 ms leave too little time to notice a silent network before the
    /// server expires the session.
    ///
    /// An idle session is kept alive by the binding's probes, sent when the
    /// connection has gone T/3 without a reply (the Java client pings as often):
    /// the server sees silences of about T/3 plus a round trip, and expires the
    /// session only if one stall (of this process, or of the server) eats the
    /// remaining 2/3 T. Choose a timeout that leaves room for the longest stall to
    /// expect.
    ///
    /// Same as [`ConnectOptions::session_timeout`].
    pub fn session_timeout(mut self, timeout: Duration) -> Self {
        self.options = self.options.session_timeout(timeout);
        self
    }

    /// The connection options (lock-client's, the same for every binding);
    /// replaces any set before, including [`session_timeout`](Self::session_timeout)
    /// and [`connect_timeout`](Self::connect_timeout).
    ///
    /// This binding supports digest (and other scheme) auth, sent again after
    /// every reconnect before any lock request (the crate does not resend it), the
    /// ACL of created nodes (the session marker too), chroot and both timeouts.
    /// It refuses TLS and SASL with [`Error::Unsupported`]: the `zookeeper` crate
    /// (0.8) has neither (its I/O is a plain `mio` TCP stream, its only auth is
    /// `addauth`).
    pub fn options(mut self, options: ConnectOptions) -> Self {
        self.options = options;
        self
    }

    /// How long a held lock may stay suspended (connection down) before it is
    /// reported lost: [`ConnectOptions::suspended_grace`].
    pub fn suspended_grace(mut self, grace: Duration) -> Self {
        self.options = self.options.suspended_grace(grace);
        self
    }

    /// Where the session marker lives (default [`DEFAULT_SESSION_MARKER`], a node at
    /// the root of the connect string's chroot; the server appends a sequence
    /// number).
    ///
    /// The `zookeeper` crate hides the session id, and silently opens a new session
    /// when the old one expired. The binding learns the id from the owner of this
    /// ephemeral node (one per session), and checks after every reconnect that it
    /// still exists. The client needs the right to create it.
    pub fn session_marker(mut self, prefix: impl Into<String>) -> Self {
        self.marker = prefix.into();
        self
    }

    /// How long [`connect`](Self::connect) tries to establish the first session
    /// (default: twice the session timeout plus 8 s, so that a first client that has
    /// given no session after the session timeout plus 4 s, and is replaced then, is
    /// followed by a whole fresh attempt before `connect` gives up). The `zookeeper` crate
    /// closes a client for good when it gets no session within about the session
    /// timeout plus a second (its own connection timeout is a fixed 2 s); `connect`
    /// then tries again with a fresh one until this timeout.
    ///
    /// Same as [`ConnectOptions::connect_timeout`].
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.options = self.options.connect_timeout(timeout);
        self
    }

    /// Connects: returns once a session is established (and its id known).
    ///
    /// # Errors
    /// [`Error::BadOption`] for invalid options, [`Error::Unsupported`] for TLS and SASL,
    /// [`Error::AuthFailed`] if the server refused the credentials,
    /// [`Error::Connect`] for a malformed connect string, no session within the
    /// [connect timeout](Self::connect_timeout), or a session marker that cannot be
    /// created.
    pub fn connect(self) -> Result<LockClient, Error> {
        if self.options.tls_option().is_some() {
            return Err(Error::Unsupported {
                option: "TLS",
                reason: "the zookeeper crate (0.8) has no TLS; use lock-zookeeper-client",
            });
        }
        if self.options.sasl_option().is_some() {
            return Err(Error::Unsupported {
                option: "SASL",
                reason: "the zookeeper crate (0.8) has no SASL; use lock-zookeeper-client",
            });
        }
        let cluster = self.options.connect_string(&self.cluster)?;
        let (hosts, chroot) = parse_cluster(&cluster)?;
        let session_timeout = self.options.requested_session_timeout();
        lock_core::validate_lock_path(&format!("{}x", self.marker)).map_err(|e| {
            Error::bad_option_caused_by("session marker prefix", "not a valid path prefix", e)
        })?;
        let seed = lock_client::random_seed();
        // Timed by the timeout asked for until the server grants one: the driver
        // then reconfigures the core, before `connect` returns (driver/liveness.rs,
        // `adopt_session_timeout`).
        let config = self.options.lock_config(session_timeout, seed);
        let settings = Settings {
            hosts,
            chroot,
            requested_timeout: session_timeout,
            options: self.options.clone(),
            marker_prefix: self.marker,
            seed,
            connect_timeout: self
                .options
                .connect_timeout_option()
                .unwrap_or((session_timeout + Duration::from_secs(4)) * 2),
            auth: self.options.auth_list().into(),
            acl: wire::acl(self.options.node_acl()).into(),
        };
        let (locks, link) = lock_client::pair(config);
        link.apply_options(&self.options);
        let counters = Arc::new(Counters::default());
        link.set_extension(counters.clone());
        let (ready_tx, ready_rx) = mpsc::channel();
        let hosts = cluster.clone();
        let driver = Driver::new(settings, link, counters, ready_tx.clone());
        std::thread::Builder::new()
            .name("lock-zookeeper-driver".into())
            .spawn(move || driver.run())
            .map_err(|e| Error::connect_caused_by(ConnectFailure::DriverStart, e))?;
        let ready = match ready_rx.recv_timeout(PROBE_AFTER) {
            Err(mpsc::RecvTimeoutError::Timeout) => {
                // Not connected at once: probe the servers beside the driver's
                // attempts, to give up now if none can ever give a session (the
                // crate would retry a refusing server until the connect timeout).
                let _ = std::thread::Builder::new()
                    .name("lock-zookeeper-probe".into())
                    .spawn(move || {
                        let servers = lock_nodelay::probe_all(&hosts, false);
                        if let Some(failure) = ConnectFailure::if_unreachable(servers) {
                            let _ = ready_tx.send(Err(Error::connect(failure)));
                        }
                    });
                ready_rx.recv().ok()
            }
            ready => ready.ok(),
        };
        // On a failure, dropping `locks` stops the driver.
        match ready {
            Some(Ok(())) => Ok(locks),
            // The client gave up: why, if the servers tell.
            Some(Err(
                e @ Error::Connect {
                    failure: ConnectFailure::NoSession { .. },
                    ..
                },
            )) => Err(e.explained_by(lock_nodelay::probe_all(&cluster, false))),
            Some(Err(e)) => Err(e),
            None => Err(Error::connect(ConnectFailure::DriverStopped)),
        }
    }
}

/// Settings for a connection to `cluster` (a ZooKeeper connect string:
/// `host:port[,host:port...][/chroot]`).
///
/// ```
/// let builder = zklock::blocking::builder("127.0.0.1:2181");
/// # drop(builder);
/// ```
pub fn builder(cluster: &str) -> Builder {
    Builder {
        cluster: cluster.to_owned(),
        options: ConnectOptions::new(),
        marker: DEFAULT_SESSION_MARKER.to_owned(),
    }
}

/// Connects to `cluster` with default settings (see [`Builder`]).
///
/// # Errors
/// As for [`Builder::connect`].
pub fn connect(cluster: &str) -> Result<LockClient, Error> {
    builder(cluster).connect()
}

/// `LockClient::connect` and `LockClient::builder` for this binding (bring the
/// trait into scope: `use zklock::blocking::Connect;`).
///
/// ```no_run
/// # fn demo() -> Result<(), zklock::Error> {
/// use zklock::blocking::Connect;
/// use zklock::LockClient;
/// let locks = LockClient::connect("127.0.0.1:2181")?;
/// let guard = locks.mutex("/locks/job").lock_blocking()?;
/// guard.release_blocking()?;
/// locks.close_blocking();
/// # Ok(()) }
/// ```
pub trait Connect {
    /// Connects to `cluster` with default settings, like [`connect`].
    ///
    /// # Errors
    /// As for [`Builder::connect`].
    fn connect(cluster: &str) -> Result<LockClient, Error>;
    /// Settings for a connection to `cluster`, like [`builder`].
    fn builder(cluster: &str) -> Builder;
}

/// The blocking binding's `LockClient::connect` / `LockClient::builder`
/// (`zklock::blocking::Connect`, over the `zookeeper` crate); the async
/// binding's twin is `zklock::Connect`.
impl Connect for LockClient {
    fn connect(cluster: &str) -> Result<LockClient, Error> {
        connect(cluster)
    }

    fn builder(cluster: &str) -> Builder {
        builder(cluster)
    }
}

/// What a client of this binding went through (bring the trait into scope: `use
/// zklock::blocking::Diagnose;`).
pub trait Diagnose {
    /// `zookeeper` clients opened, sessions, reconnections, silent connections
    /// detected (all zero for a client of another binding).
    ///
    /// ```no_run
    /// # fn demo(locks: zklock::LockClient) {
    /// use zklock::blocking::Diagnose;
    /// let d = locks.diagnostics();
    /// println!("{} sessions over {} clients", d.sessions, d.clients_opened);
    /// # }
    /// ```
    fn diagnostics(&self) -> Diagnostics;
}

impl Diagnose for LockClient {
    fn diagnostics(&self) -> Diagnostics {
        self.extension::<Counters>()
            .map(|c| c.diagnostics())
            .unwrap_or_default()
    }
}

/// Splits `host:port,host:port/chroot`, leaving out the hosts that do not
/// resolve; none resolving is [`ConnectFailure::Unreachable`].
fn parse_cluster(cluster: &str) -> Result<(Vec<String>, String), Error> {
    let (hosts, chroot) = match cluster.find('/') {
        Some(i) => (&cluster[..i], &cluster[i..]),
        None => (cluster, ""),
    };
    let chroot = if chroot == "/" { "" } else { chroot };
    if !chroot.is_empty() {
        lock_core::validate_lock_path(chroot).map_err(|e| {
            let failure = ConnectFailure::BadChroot {
                connect_string: cluster.to_owned(),
            };
            Error::connect_caused_by(failure, e)
        })?;
    }
    let hosts: Vec<String> = hosts
        .split(',')
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .map(str::to_owned)
        .collect();
    if hosts.is_empty() {
        return Err(Error::connect(ConnectFailure::NoHost {
            connect_string: cluster.to_owned(),
        }));
    }
    // The crate refuses the whole string with a bare `BadArguments` if one host
    // does not resolve: the Java client skips such hosts, and so does this.
    let mut unresolved = Vec::new();
    let hosts: Vec<String> = hosts
        .into_iter()
        .filter(|host| {
            use std::net::ToSocketAddrs;
            let why = match host.to_socket_addrs().map(|mut a| a.next().is_some()) {
                Ok(true) => return true,
                Ok(false) => "no address".to_owned(),
                Err(e) => e.to_string(),
            };
            unresolved.push((host.clone(), Reach::Unresolved(why)));
            false
        })
        .collect();
    if hosts.is_empty() {
        return Err(Error::connect(ConnectFailure::Unreachable {
            servers: unresolved,
        }));
    }
    Ok((hosts, chroot.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_connect_strings() {
        let (hosts, chroot) = parse_cluster("127.0.0.1:1,127.0.0.1:2/app").unwrap();
        assert_eq!(hosts, vec!["127.0.0.1:1", "127.0.0.1:2"]);
        assert_eq!(chroot, "/app");
        let (hosts, chroot) = parse_cluster("localhost:2181/").unwrap();
        assert_eq!(hosts.len(), 1);
        assert_eq!(chroot, "");
        let failure = |cluster| match parse_cluster(cluster) {
            Err(Error::Connect { failure, .. }) => failure,
            other => panic!("expected a connect failure, got {other:?}"),
        };
        assert!(matches!(failure(""), ConnectFailure::NoHost { .. }));
        assert!(matches!(
            failure("nohost"),
            ConnectFailure::Unreachable { servers } if matches!(servers[..], [(_, Reach::Unresolved(_))])
        ));
        let (hosts, _) = parse_cluster("no-such-host.invalid:1,127.0.0.1:2").unwrap();
        assert_eq!(hosts, vec!["127.0.0.1:2"]);
        assert!(matches!(
            failure("127.0.0.1:1/a/"),
            ConnectFailure::BadChroot { .. }
        ));
    }

    #[test]
    fn closed_client_refuses_everything() {
        // A client whose driver is gone, without a server.
        let (locks, link) = lock_client::pair(lock_core::Config::new(Duration::from_secs(1), 1));
        drop(link);
        assert_eq!(
            locks.mutex("/a").lock_blocking().unwrap_err(),
            Error::Closed
        );
        assert_eq!(
            locks.mutex("/a").try_lock_blocking().unwrap_err(),
            Error::Closed
        );
        assert_eq!(locks.wait_idle_blocking().unwrap_err(), Error::Closed);
        assert_eq!(locks.stats_blocking().unwrap_err(), Error::Closed);
        locks.close_blocking();
        assert_eq!(locks.session_id(), None);
        assert_eq!(locks.diagnostics(), Diagnostics::default());
    }
}
