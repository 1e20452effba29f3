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

/// `top`'s listing (on the lock client's session) failed: `what` failed,
/// `source` says why if the client did; reported as the source of an
/// [`Error::Connect`](lock_zookeeper_client::Error::Connect) (exit code and
/// sentence).
pub(crate) fn listing_failed(
    what: String,
    source: Option<zookeeper_client::Error>,
) -> lock_zookeeper_client::Error {
    let client = lock_zookeeper_client::ConnectFailure::Client;
    lock_zookeeper_client::Error::connect_caused_by(client, Failure { what, source })
}

#[derive(Debug)]
struct Failure {
    what: String,
    source: Option<zookeeper_client::Error>,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.what)
    }
}

impl std::error::Error for Failure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_ref().map(|e| e as _)
    }
}
