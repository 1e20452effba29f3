//! lock-client's [`ConnectOptions`] onto zookeeper-client: a [`Dial`] opens
//! sessions (the first, and each one after an expiry) with the same connect string,
//! credentials and TLS, and [`acls`] gives the ACL of every node the driver creates.

use lock_client::{ConnectOptions, Error, NodeAcl, Perms};
use std::sync::Arc;
use std::time::Duration;
use zookeeper_client::{Acl, AuthId, Client, Connector, Permission};

/// How to open a session: zookeeper-client's connector with the options applied,
/// and the connect string (chroot included).
#[derive(Clone, Debug)]
pub(crate) struct Dial {
    connector: Connector,
    pub(crate) cluster: String,
    /// Every host over TLS (`secure_connect`).
    secure: bool,
}

impl Dial {
    /// Checks `options` and applies what zookeeper-client allows; the rest is a
    /// typed error.
    pub(crate) fn new(
        cluster: &str,
        options: &ConnectOptions,
        session_timeout: Duration,
    ) -> Result<Dial, Error> {
        let cluster = options.connect_string(cluster)?;
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
        })
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

#[cfg(feature = "tls")]
fn with_tls(connector: Connector, tls: &lock_client::Tls) -> Result<Connector, Error> {
    let bad =
        |what: &str, e: zookeeper_client::Error| Error::BadOption(format!("tls: {what}: {e}"));
    let mut options = zookeeper_client::TlsOptions::new()
        .with_pem_ca(tls.ca_pem())
        .map_err(|e| bad("CA certificates", e))?;
    if let Some((cert, key)) = tls.identity_pem() {
        options = options
            .with_pem_identity(cert, key)
            .map_err(|e| bad("client certificate or key", e))?;
    }
    Ok(connector.with_tls(options))
}

#[cfg(not(feature = "tls"))]
fn with_tls(_: Connector, _: &lock_client::Tls) -> Result<Connector, Error> {
    Err(Error::Unsupported(
        "TLS needs lock-zookeeper-client's `tls` feature (zklock's `tls`)".into(),
    ))
}

#[cfg(feature = "sasl")]
fn with_sasl(connector: Connector, sasl: &lock_client::SaslDigest) -> Result<Connector, Error> {
    let options =
        zookeeper_client::SaslOptions::digest_md5(sasl.user.clone(), sasl.password.clone());
    Ok(connector.with_sasl(options))
}

#[cfg(not(feature = "sasl"))]
fn with_sasl(_: Connector, _: &lock_client::SaslDigest) -> Result<Connector, Error> {
    Err(Error::Unsupported(
        "SASL needs lock-zookeeper-client's `sasl` feature (zklock's `sasl`)".into(),
    ))
}

/// zookeeper-client's error from a failed first connect, typed.
pub(crate) fn connect_error(e: zookeeper_client::Error) -> Error {
    match e {
        zookeeper_client::Error::AuthFailed => {
            Error::AuthFailed("the server refused the session's credentials".into())
        }
        other => Error::Connect(other.to_string()),
    }
}

/// The ACL of the nodes zklock creates, in zookeeper-client's terms.
pub(crate) fn acls(acl: &NodeAcl) -> Arc<[Acl]> {
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

    #[test]
    fn refuses_what_it_cannot_do() {
        let options = ConnectOptions::new().tls(lock_client::Tls::new("not a pem"));
        let refused = Dial::new("127.0.0.1:1", &options, Duration::from_secs(1)).unwrap_err();
        if cfg!(feature = "tls") {
            assert!(
                matches!(refused, Error::BadOption(ref m) if m.contains("CA")),
                "{refused:?}"
            );
        } else {
            assert!(matches!(refused, Error::Unsupported(_)), "{refused:?}");
        }
        let both = ConnectOptions::new().chroot("/a");
        let refused = Dial::new("127.0.0.1:1/b", &both, Duration::from_secs(1)).unwrap_err();
        assert!(matches!(refused, Error::BadOption(_)));
    }
}
