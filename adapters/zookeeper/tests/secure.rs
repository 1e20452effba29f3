//! Connection options the blocking binding refuses, against a real ZooKeeper 3.8
//! (lock-testkit): TLS and SASL, which the `zookeeper` crate does not have.
//! Creator-only ACLs, credentials sent again after a reconnect, chroot and bad
//! options (an auth scheme the server does not know among them), as every
//! binding passes them, are in the conformance suite
//! (lock-conformance's `suite/options.rs`).

use lock_conformance::shared_server;
use lock_zookeeper::{Connect, ConnectOptions, Error, LockClient, Tls};

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
