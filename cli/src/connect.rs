//! Connecting to ZooKeeper with the command line's options.

use crate::ConnArgs;
use lock_zookeeper_client::{ConnectOptions, Error, LockClient, NodeAcl};
use std::time::Duration;

/// Connects to the servers `zk` (`--zk`, or one server of it) with the options
/// of `conn`; nodes created in the session get `acl`. The library gives up at
/// once when no server can give a session, and its error names each server and
/// what it did.
pub(crate) async fn connect_to(
    conn: &ConnArgs,
    zk: &str,
    connect_timeout: Option<Duration>,
    acl: NodeAcl,
) -> Result<LockClient, Error> {
    let mut options = ConnectOptions::new().acl(acl);
    if let Some(timeout) = connect_timeout {
        options = options.connect_timeout(timeout);
    }
    if let Some(timeout) = conn.session_timeout {
        options = options.session_timeout(timeout);
    }
    if let Some((user, password)) = &conn.auth {
        options = options.digest_auth(user, password);
    }
    if let Some(tls) = conn.tls()? {
        options = options.tls(tls);
    }
    lock_zookeeper_client::builder(zk)
        .options(options)
        .connect()
        .await
}
