//! lock-client's [`ConnectOptions`] onto zookeeper-client: a [`Dial`] opens
//! sessions (the first, and each one after an expiry) with the same connect string,
//! credentials and TLS, and carries the ACL of every node the driver creates.

use crate::runtime::{in_runtime, Runtime};
use futures::future::Either;
use futures::FutureExt;
use lock_client::{ConnectFailure, ConnectOptions, Error, NodeAcl, Perms, Reach};
use std::sync::Arc;
use std::time::{Duration, Instant};
use zookeeper_client::{Acl, AuthId, Client, Connector, Permission};

/// Default requested session timeout (lock-core's, the workspace's one default).
pub use lock_core::DEFAULT_SESSION_TIMEOUT;

/// How to open a session: zookeeper-client's connector with the options applied,
/// the connect string (chroot included), and what the driver needs of the options.
#[derive(Clone, Debug)]
pub(crate) struct Dial {
    connector: Connector,
    pub(crate) cluster: String,
    /// Every host over TLS (`secure_connect`).
    secure: bool,
    /// The session timeout asked for.
    pub(crate) session_timeout: Duration,
    /// How long the first connect keeps trying (`None`: one attempt).
    connect_timeout: Option<Duration>,
    /// The ACL of every node created.
    pub(crate) acls: Arc<[Acl]>,
}

impl Dial {
    /// Checks `options` and applies what zookeeper-client allows; the rest is a
    /// typed error.
    pub(crate) fn new(cluster: &str, options: &ConnectOptions) -> Result<Dial, Error> {
        let cluster = options.connect_string(cluster)?;
        let session_timeout = options.requested_session_timeout();
        let mut connector = Client::connector().with_session_timeout(session_timeout);
        for auth in options.auth_list() {
            connector = connector.with_auth(&auth.scheme, &auth.credentials);
        }
        if let Some(sasl) = options.sasl_option() {
            connector = with_sasl(connector, sasl)?;
        }
        let secure = match options.tls_option() {
            None => false,
            Some(tls) => {
                connector = with_tls(connector, tls)?;
                true
            }
        };
        Ok(Dial {
            connector,
            cluster,
            secure,
            session_timeout,
            connect_timeout: options.connect_timeout_option(),
            acls: acls(options.node_acl()),
        })
    }

    /// Opens the first session ([`Dial::attempts`]), in a chroot that exists.
    /// Gives up at once if a probe of the servers, made when no session came
    /// within [`PROBE_AFTER`], finds that none can give one (zookeeper-client
    /// would retry a refusing server until its timeout); a failure is
    /// [`ConnectFailure::Unreachable`] when no server answers as ZooKeeper.
    pub(crate) async fn first_session(&self, runtime: &Arc<dyn Runtime>) -> Result<Client, Error> {
        let attempts = self.attempts(runtime);
        let unreachable = async {
            runtime.sleep_until(Instant::now() + PROBE_AFTER).await;
            let servers = probe(&self.cluster, self.secure).await;
            match ConnectFailure::if_unreachable(servers) {
                Some(failure) => Err(Error::connect(failure)),
                None => std::future::pending().await,
            }
        };
        futures::pin_mut!(attempts, unreachable);
        let attempted = match futures::future::select(attempts, unreachable).await {
            Either::Left((attempted, _)) => attempted,
            Either::Right((unreachable, _)) => return unreachable,
        };
        match attempted {
            Ok(client) => self.in_chroot(client).await,
            Err(
                e @ Error::Connect {
                    failure: ConnectFailure::Client | ConnectFailure::NoSession { .. },
                    ..
                },
            ) => Err(e.explained_by(probe(&self.cluster, self.secure).await)),
            Err(e) => Err(e),
        }
    }

    /// `client`, if the connect string's chroot exists (a look-up costs a round
    /// trip only when there is a chroot): else every path would be missing.
    async fn in_chroot(&self, client: Client) -> Result<Client, Error> {
        let Some(chroot) = self.cluster.find('/').map(|i| &self.cluster[i..]) else {
            return Ok(client);
        };
        match client.check_stat("/").await {
            Ok(None) if chroot != "/" => Err(Error::connect(ConnectFailure::NoChroot {
                chroot: chroot.to_owned(),
            })),
            // Anything else shows soon enough, on the first request.
            _ => Ok(client),
        }
    }

    /// One attempt (zookeeper-client's, about the session timeout long), or
    /// attempts until the connect timeout when one is given.
    async fn attempts(&self, runtime: &Arc<dyn Runtime>) -> Result<Client, Error> {
        let Some(timeout) = self.connect_timeout else {
            let attempt = in_runtime(runtime, self.clone().connect()).await;
            return attempt.map_err(connect_error);
        };
        let deadline = Instant::now() + timeout;
        let attempts = async {
            loop {
                match in_runtime(runtime, self.clone().connect()).await {
                    // Not refused for good (as credentials and arguments are): again.
                    Err(e)
                        if !matches!(e, zookeeper_client::Error::AuthFailed)
                            && !matches!(e, zookeeper_client::Error::BadArguments(_)) =>
                    {
                        tracing::debug!(error = %e, "first connect failed; retrying");
                        let pause = (timeout / 10).min(Duration::from_millis(500));
                        runtime.sleep_until(Instant::now() + pause).await;
                    }
                    done => return done.map_err(connect_error),
                }
            }
        };
        let expired = runtime.sleep_until(deadline).map(|()| {
            Err(Error::connect(ConnectFailure::NoSession {
                connect_timeout: timeout,
            }))
        });
        futures::pin_mut!(attempts);
        let first = futures::future::select(attempts, expired).await;
        first.factor_first().0
    }

    /// Opens a session (zookeeper-client gives up after about the session timeout).
    pub(crate) async fn connect(self) -> Result<Client, zookeeper_client::Error> {
        #[cfg(feature = "tls")]
        if self.secure {
            return self.connector.secure_connect(&self.cluster).await;
        }
        debug_assert!(!self.secure, "TLS is refused without the feature");
        self.connector.connect(&self.cluster).await
    }
}

/// How long a first connect waits for a session before probing the servers: a
/// connect that succeeds at once (the usual case) costs them no probe.
const PROBE_AFTER: Duration = Duration::from_millis(50);

/// What each server of `cluster` does ([`lock_nodelay::probe_all`], on a
/// thread of its own: it blocks); none if no thread can be started.
async fn probe(cluster: &str, tls: bool) -> Vec<(String, Reach)> {
    let (tx, rx) = futures::channel::oneshot::channel();
    let cluster = cluster.to_owned();
    let started = std::thread::Builder::new()
        .name("lock-zookeeper-client-probe".into())
        .spawn(move || tx.send(lock_nodelay::probe_all(&cluster, tls)));
    match started {
        Ok(_) => rx.await.unwrap_or_default(),
        Err(_) => Vec::new(),
    }
}

#[cfg(feature = "tls")]
fn with_tls(connector: Connector, tls: &lock_client::Tls) -> Result<Connector, Error> {
    let bad = |reason: &'static str, e: zookeeper_client::Error| {
        Error::bad_option_caused_by("tls", reason, e)
    };
    let mut options = zookeeper_client::TlsOptions::new()
        .with_pem_ca(tls.ca_pem())
        .map_err(|e| bad("the CA certificates cannot be read", e))?;
    if let Some((cert, key)) = tls.identity_pem() {
        options = options
            .with_pem_identity(cert, key)
            .map_err(|e| bad("the client certificate or key cannot be read", e))?;
    }
    Ok(connector.with_tls(options))
}

#[cfg(not(feature = "tls"))]
fn with_tls(_: Connector, _: &lock_client::Tls) -> Result<Connector, Error> {
    Err(Error::Unsupported {
        option: "TLS",
        reason: "it needs lock-zookeeper-client's `tls` feature (zklock's `tls`)",
    })
}

#[cfg(feature = "sasl")]
fn with_sasl(connector: Connector, sasl: &lock_client::SaslDigest) -> Result<Connector, Error> {
    let options =
        zookeeper_client::SaslOptions::digest_md5(sasl.user.clone(), sasl.password.clone());
    Ok(connector.with_sasl(options))
}

#[cfg(not(feature = "sasl"))]
fn with_sasl(_: Connector, _: &lock_client::SaslDigest) -> Result<Connector, Error> {
    Err(Error::Unsupported {
        option: "SASL",
        reason: "it needs lock-zookeeper-client's `sasl` feature (zklock's `sasl`)",
    })
}

/// zookeeper-client's error from a failed first connect, typed.
fn connect_error(e: zookeeper_client::Error) -> Error {
    match e {
        zookeeper_client::Error::AuthFailed => Error::AuthFailed {
            source: Some(lock_client::Cause::new(e)),
        },
        other => Error::connect_caused_by(ConnectFailure::Client, other),
    }
}

/// The ACL of the nodes zklock creates, in zookeeper-client's terms.
fn acls(acl: &NodeAcl) -> Arc<[Acl]> {
    acl.entries()
        .iter()
        .map(|e| Acl::new(permission(e.perms), AuthId::new(&e.scheme, &e.id)))
        .collect()
}

fn permission(perms: Perms) -> Permission {
    [
        (Perms::READ, Permission::READ),
        (Perms::WRITE, Permission::WRITE),
        (Perms::CREATE, Permission::CREATE),
        (Perms::DELETE, Permission::DELETE),
        (Perms::ADMIN, Permission::ADMIN),
    ]
    .into_iter()
    .filter(|(ours, _)| perms.contains(*ours))
    .fold(Permission::NONE, |all, (_, theirs)| all | theirs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_acls() {
        let open = acls(&NodeAcl::Open);
        assert_eq!(&open[..], &zookeeper_client::Acls::anyone_all()[..]);
        let creator = acls(&NodeAcl::CreatorAll);
        assert_eq!(&creator[..], &zookeeper_client::Acls::creator_all()[..]);
        let read = acls(&NodeAcl::CreatorAllWorldRead);
        assert_eq!(read[1].permission(), Permission::READ);
        assert_eq!((read[1].scheme(), read[1].id()), ("world", "anyone"));
    }
}
