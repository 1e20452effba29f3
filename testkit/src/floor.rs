//! The floor of zklock's benches (feature `floor`): the bare zookeeper-client
//! doing the lock with zklock's requests, pipelined the same way, so that a
//! bench can set zklock beside the least any client on that crate must do.
//! lock-zookeeper-client's `compare` bench and the fleet's bare sessions use it.
//!
//! The recipe: `create` (ephemeral-sequential, a name of zklock's length) and
//! `getChildren` sent together; if something is lower, `getData` + watch on the
//! predecessor, and the lock is held when that watch fires if the listing
//! showed nothing else lower, else it lists again (zklock's rule); release is
//! one `delete`.

use std::time::Duration;
use zookeeper_client::{Acls, Client, CreateMode};

/// A node name of zklock's length (`zkl-<hex32>-write-`), for the floor.
pub const NAME: &str = "zkl-0123456789abcdef0123456789abcdef-write-";

/// Creates `path` and its missing parents (persistent, open ACL); panics on failure.
pub async fn mkdir(client: &Client, path: &str) {
    let options = CreateMode::Persistent.with_acls(Acls::anyone_all());
    client.mkdir(path, &options).await.expect("mkdir");
}

/// The sequence number of a sequential node's name (its last ten digits).
fn sequence_of(name: &str) -> Option<i64> {
    name.get(name.len().checked_sub(10)?..)?.parse().ok()
}

/// The floor's acquire (see the module docs), in directory `dir`. Returns the
/// path of its node. Panics on a request's failure.
pub async fn bare_lock(client: &Client, dir: &str) -> String {
    let prefix = format!("{dir}/{NAME}");
    let options = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
    // Both requests are written when called: one flight.
    let create = client.create(&prefix, b"", &options);
    let list = client.list_children(dir);
    let (created, listed) = futures::join!(create, list);
    let seq = created.expect("create").1.into_i64();
    let mut children = listed.expect("list");
    loop {
        let lower: Vec<i64> = children
            .iter()
            .filter_map(|n| sequence_of(n).filter(|&s| s < seq))
            .collect();
        let predecessor = children
            .iter()
            .filter_map(|n| sequence_of(n).filter(|&s| s < seq).map(|s| (s, n)))
            .max();
        let Some((_, predecessor)) = predecessor else {
            return format!("{prefix}{seq:010}");
        };
        match client
            .get_and_watch_data(&format!("{dir}/{predecessor}"))
            .await
        {
            Ok((_, _, watcher)) => {
                watcher.changed().await;
                // zklock's rule: held at once if the listing showed nothing
                // else lower, otherwise list again.
                if lower.len() == 1 {
                    return format!("{prefix}{seq:010}");
                }
            }
            Err(zookeeper_client::Error::NoNode) => {}
            Err(e) => panic!("getData: {e}"),
        }
        children = client.list_children(dir).await.expect("list");
    }
}

/// The floor's release: deletes the node [`bare_lock`] returned.
pub async fn bare_release(client: &Client, path: &str) {
    client.delete(path, None).await.expect("delete");
}

/// A bare zookeeper-client session with `TCP_NODELAY` set on its socket (through
/// lock-nodelay, as zklock's bindings do), so that the floor pipelines like the
/// lock. Panics when it cannot connect.
pub async fn bare_client(cluster: &str, session_timeout: Duration) -> Client {
    let client = Client::connector()
        .with_session_timeout(session_timeout)
        .connect(cluster)
        .await
        .expect("connecting the bare client");
    set_nodelay(cluster);
    client
}

/// `TCP_NODELAY` on every connection of this process to `cluster`.
pub fn set_nodelay(cluster: &str) {
    let peers = lock_nodelay::Peers::resolve(cluster).expect("resolving");
    lock_nodelay::apply(&peers).expect("TCP_NODELAY");
}
