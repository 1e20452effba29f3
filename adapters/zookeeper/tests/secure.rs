//! Connection options the blocking binding refuses, against a real ZooKeeper 3.8
//! (lock-testkit): TLS and SASL, which the `zookeeper` crate does not have, and
//! an auth scheme the server has no provider for.
//! Creator-only ACLs, credentials sent again after a reconnect, chroot and bad
//! options, as every binding passes them, are in the conformance suite
//! (lock-conformance's `suite/options.rs`).

use lock_conformance::shared_server;
use lock_zookeeper::{Auth, Connect, ConnectOptions, Error, LockClient, Tls};
use std::time::Duration;

fn connect(cluster: &str, options: ConnectOptions) -> Result<LockClient, Error> {
    LockClient::builder(cluster).options(options).connect()
}

#[test]
fn tls_and_sasl_are_unsupported() {
    let cluster = shared_server().connect_string();
    let tls = connect(&cluster, ConnectOptions::new().tls(Tls::new("CA")));
    assert!(
        matches!(tls, Err(Error::Unsupported { option: "TLS", .. })),
        "{tls:?}"
    );
    let sasl = connect(
        &cluster,
        ConnectOptions::new().sasl_digest_md5("carol", "pw"),
    );
    assert!(
        matches!(sasl, Err(Error::Unsupported { option: "SASL", .. })),
        "{sasl:?}"
    );
}

/// A scheme the server has no provider for: refused, not a hang.
#[test]
fn an_unknown_auth_scheme_is_auth_failed() {
    let unknown = connect(
        &shared_server().connect_string(),
        ConnectOptions::new()
            .auth(Auth::new("kerberos-ish", b"x".to_vec()))
            .connect_timeout(Duration::from_secs(5)),
    );
    match unknown {
        Err(e @ Error::AuthFailed { .. }) => assert!(e.is_auth()),
        other => panic!("expected AuthFailed, got {other:?}"),
    }
}
