#![doc = include_str!("../README.md")]
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

/// Settings for a connection to `cluster` (`host:port[,host:port...][/chroot]`).
pub fn builder(cluster: &str) -> Builder {
    let (options, marker) = (ConnectOptions::new(), DEFAULT_SESSION_MARKER.to_owned());
    let cluster = cluster.to_owned();
    Builder { cluster, options, marker }
}

impl Builder {
    /// The session timeout to ask for (default 10 s, at least
    /// [`MIN_SESSION_TIMEOUT`]); same as [`ConnectOptions::session_timeout`].
    pub fn session_timeout(mut self, timeout: Duration) -> Self {
        self.options = self.options.session_timeout(timeout);
        self
    }

    /// lock-client's connection options; replaces any set before. Supported: auth
    /// (resent after every reconnect), the ACL of created nodes (the marker's too),
    /// chroot, session and connect timeouts (default: twice the session timeout
    /// plus 4 s), the sync interval. TLS and SASL are refused (see the crate docs).
    pub fn options(mut self, options: ConnectOptions) -> Self {
        self.options = options;
        self
    }

    /// Where the session marker lives (default [`DEFAULT_SESSION_MARKER`]; the
    /// server appends a sequence number). The binding learns the session id from
    /// the owner of this ephemeral node and writes it in place of `sync`.
    pub fn session_marker(mut self, prefix: impl Into<String>) -> Self {
        self.marker = prefix.into();
        self
    }

    /// Connects: returns once a session is established. Call it inside a tokio
    /// runtime, which then runs the binding's driver task.
    ///
    /// # Errors
    /// [`Error::NoRuntime`] outside a tokio runtime, [`Error::Unsupported`] for TLS
    /// and SASL, [`Error::BadOption`] for invalid options, [`Error::Connect`] for
    /// servers that cannot give a session (named, with what each did), no session
    /// within the connect timeout, a missing chroot, or a marker not created.
    pub async fn connect(self) -> Result<LockClient, Error> {
        let reason = "zookeeper-async (5.0) has a plain TCP stream only; use lock-zookeeper-client";
        if self.options.tls_option().is_some() {
            return Err(Error::Unsupported { option: "TLS", reason });
        }
        if self.options.sasl_option().is_some() {
            return Err(Error::Unsupported { option: "SASL", reason });
        }
        let timeout = self.options.requested_session_timeout();
        if timeout < MIN_SESSION_TIMEOUT {
            let why = "below 1.5 s, zookeeper-async's read timeout is zero";
            return Err(Error::bad_option("session timeout", why));
        }
        let cluster = self.options.connect_string(&self.cluster)?;
        lock_core::validate_lock_path(&format!("{}x", self.marker))
            .map_err(|e| Error::bad_option_caused_by("session marker prefix", "not a path", e))?;
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(Error::NoRuntime);
        }
        let (acl, auth) =
            (glue::acl(self.options.node_acl()).into(), self.options.auth_list().to_vec());
        let bound =
            (self.options.connect_timeout_option()).unwrap_or(timeout * 2 + Duration::from_secs(4));
        let marker_prefix = self.marker.clone();
        let dial =
            glue::Dial { cluster: cluster.clone(), timeout, bound, marker_prefix, acl, auth };
        let reports = tokio::sync::mpsc::unbounded_channel();
        let chroot = cluster.find('/').map(|i| cluster[i..].to_owned()).filter(|c| c != "/");
        let failure = match prompt(dial.open(0, reports.0.clone()), &cluster).await {
            Ok(opened) => {
                let config = (self.options, random_seed());
                let (locks, link) = pair(config.0.lock_config(opened.timeout, config.1));
                link.apply_options(&config.0);
                tokio::spawn(driver::Driver::new(link, dial, config, opened, reports).run());
                return Ok(locks);
            }
            Err(Ok(failure)) => failure,
            // The marker's parent is missing: the chroot, if there is one.
            Err(Err(ZkError::NoNode)) if chroot.is_some() => {
                ConnectFailure::NoChroot { chroot: chroot.unwrap_or_default() }
            }
            Err(Err(e)) if e.is_from_server() => {
                let failure = ConnectFailure::SessionMarker { prefix: self.marker };
                return Err(Error::connect_caused_by(failure, e));
            }
            // No session in time, or the crate refused the connect string (a
            // host that does not resolve): what the servers did, if they tell.
            Err(Err(_)) => {
                let servers = probe(cluster).await;
                let failure = ConnectFailure::if_unreachable(servers.clone());
                let failure =
                    failure.unwrap_or(ConnectFailure::NoSession { connect_timeout: bound });
                return Err(Error::connect(failure).explained_by(servers));
            }
        };
        Err(Error::connect(failure))
    }
}

/// What each server of `cluster` does when connected to (lock-nodelay's probe).
async fn probe(cluster: String) -> Vec<(String, Reach)> {
    let probe = tokio::task::spawn_blocking(move || lock_nodelay::probe_all(&cluster, false));
    probe.await.unwrap_or_default()
}

/// Awaits `opening` and, when it takes more than a moment, probes the servers
/// beside it: the crate retries refusing servers until the connect timeout, and
/// this gives up at once when none can ever give a session.
async fn prompt<T>(
    opening: impl std::future::Future<Output = Result<T, ZkError>>,
    cluster: &str,
) -> Result<T, Result<ConnectFailure, ZkError>> {
    let cluster = cluster.to_owned();
    let unreachable = async move {
        // A connect that succeeds at once (the usual case) costs the servers no probe.
        tokio::time::sleep(Duration::from_millis(50)).await;
        match ConnectFailure::if_unreachable(probe(cluster).await) {
            Some(failure) => failure,
            None => futures::future::pending().await,
        }
    };
    tokio::select! {
        opened = opening => opened.map_err(Err),
        failure = unreachable => Err(Ok(failure)),
    }
}
