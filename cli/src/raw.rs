//! A plain zookeeper-client session with `zklock`'s connection options (TLS,
//! digest auth), for what the lock client does not do: looking a chroot up;
//! and how `top`'s listing (on the lock client's own session) fails.

use crate::ConnArgs;
use lock_zookeeper_client::zookeeper_client::{self, Client};
use std::time::Duration;

/// Connects to `hosts` (a connect string, with or without a chroot); `None`
/// when that fails.
pub(crate) async fn connect(conn: &ConnArgs, hosts: &str, timeout: Duration) -> Option<Client> {
    let mut connector = Client::connector().with_session_timeout(timeout);
    let client = match conn.tls().ok()? {
        Some(tls) => {
            let mut options = zookeeper_client::TlsOptions::new()
                .with_pem_ca(tls.ca_pem())
                .ok()?;
            if let Some((cert, key)) = tls.identity_pem() {
                options = options.with_pem_identity(cert, key).ok()?;
            }
            connector = connector.with_tls(options);
            connector.secure_connect(hosts).await.ok()?
        }
        None => connector.connect(hosts).await.ok()?,
    };
    if let Some((user, password)) = &conn.auth {
        client
            .auth("digest", format!("{user}:{password}").as_bytes())
            .await
            .ok()?;
    }
    Some(client)
}

/// What failed on `top`'s listing (on the lock client's session), as the source of
/// the [`Error::Connect`](lock_zookeeper_client::Error::Connect) that reports it.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The persistent watch on the root could not be set.
    Watch {
        /// The root watched.
        root: String,
        /// The client's error.
        source: zookeeper_client::Error,
    },
    /// The root could not be listed.
    List {
        /// The root listed.
        root: String,
        /// The client's error.
        source: zookeeper_client::Error,
    },
    /// The session ended (`how`: expired, refused, closed).
    Ended {
        /// The root it listed.
        root: String,
        /// How it ended, as the end of a sentence.
        how: &'static str,
    },
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Watch { root, .. } => write!(f, "watching {root} failed"),
            Failure::List { root, .. } => write!(f, "listing {root} failed"),
            Failure::Ended { root, how } => write!(f, "the listing session of {root} {how}"),
        }
    }
}

impl std::error::Error for Failure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Failure::Watch { source, .. } | Failure::List { source, .. } => Some(source),
            Failure::Ended { .. } => None,
        }
    }
}

/// `failure` as the lock client's connect error (exit code and sentence).
pub(crate) fn connect_error(failure: Failure) -> lock_zookeeper_client::Error {
    let client = lock_zookeeper_client::ConnectFailure::Client;
    lock_zookeeper_client::Error::connect_caused_by(client, failure)
}
