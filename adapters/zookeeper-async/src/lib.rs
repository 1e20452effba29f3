#![doc = include_str!("../README.md")]
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod driver;
mod glue;

pub use lock_client::*;

use std::time::Duration;

/// The prefix of the session marker, an ephemeral node at the chroot's root that
/// tells the session id (its owner) and is written in place of `sync`; the
/// client needs the right to create it.
pub const SESSION_MARKER: &str = "/zklock-session-";

/// Settings for a [`LockClient`]; finish with [`connect`](Builder::connect).
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until connect() is called"]
pub struct Builder {
    cluster: String,
    options: ConnectOptions,
}

/// Settings for a connection to `cluster` (`host:port[,host:port...][/chroot]`).
pub fn builder(cluster: &str) -> Builder {
    Builder {
        cluster: cluster.to_owned(),
        options: ConnectOptions::new(),
    }
}

impl Builder {
    /// The session timeout to ask for (default 10 s, at least 1.5 s: see the
    /// crate docs); same as [`ConnectOptions::session_timeout`].
    pub fn session_timeout(mut self, timeout: Duration) -> Self {
        self.options = self.options.session_timeout(timeout);
        self
    }

    /// lock-client's connection options; replaces any set before. Supported: auth,
    /// the ACL of created nodes, chroot, session and connect timeouts (default:
    /// 2 T + 4 s), the sync interval; TLS and SASL are refused (see the crate docs).
    pub fn options(mut self, options: ConnectOptions) -> Self {
        self.options = options;
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
        let Builder { cluster, options } = self;
        let reason = "zookeeper-async (5.0) has a plain TCP stream only; use lock-zookeeper-client";
        if options.tls_option().is_some() {
            return Err(Error::Unsupported {
                option: "TLS",
                reason,
            });
        }
        if options.sasl_option().is_some() {
            return Err(Error::Unsupported {
                option: "SASL",
                reason,
            });
        }
        let timeout = options.requested_session_timeout();
        if timeout < Duration::from_millis(1500) {
            let why = "below 1.5 s, zookeeper-async's read timeout is zero";
            return Err(Error::bad_option("session timeout", why));
        }
        let cluster = options.connect_string(&cluster)?;
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(Error::NoRuntime);
        }
        let (acl, auth) = (
            glue::acl(options.node_acl()).into(),
            options.auth_list().to_vec(),
        );
        let bound = options
            .connect_timeout_option()
            .unwrap_or(timeout * 2 + Duration::from_secs(4));
        let dial = glue::Dial {
            cluster: cluster.clone(),
            timeout,
            bound,
            acl,
            auth,
        };
        let reports = tokio::sync::mpsc::unbounded_channel();
        let failure = match prompt(dial.open(0, reports.0.clone()), &cluster).await {
            Ok(opened) => {
                let seed = random_seed();
                let (locks, link) = pair(options.lock_config(opened.timeout, seed));
                link.apply_options(&options);
                let (config, contact, s) = (
                    (options, seed),
                    std::time::Instant::now(),
                    Default::default(),
                );
                let mut driver = driver::Driver {
                    link,
                    dial,
                    config,
                    reports,
                    contact,
                    s,
                };
                driver.install(opened);
                tokio::spawn(driver.run());
                return Ok(locks);
            }
            Err(Ok(failure)) => failure,
            // The marker's parent, the chroot's root, is missing.
            Err(Err(ZkError::NoNode)) => {
                let chroot = cluster
                    .find('/')
                    .map(|i| cluster[i..].to_owned())
                    .unwrap_or_default();
                ConnectFailure::NoChroot { chroot }
            }
            Err(Err(e @ ZkError::AuthFailed)) => {
                return Err(Error::AuthFailed {
                    source: Some(lock_client::Cause::new(e)),
                })
            }
            Err(Err(e)) if e.is_from_server() => {
                let failure = ConnectFailure::SessionMarker {
                    prefix: SESSION_MARKER.into(),
                };
                return Err(Error::connect_caused_by(failure, e));
            }
            // No session in time, or a host that does not resolve: what the
            // servers did, if they tell.
            Err(Err(_)) => {
                let servers = probe(cluster).await;
                let failure = ConnectFailure::if_unreachable(servers.clone());
                let failure = failure.unwrap_or(ConnectFailure::NoSession {
                    connect_timeout: bound,
                });
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
