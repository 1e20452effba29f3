//! The request `match`: each core [`Op`] as one zookeeper-client call, its reply
//! (and error) mapped back onto the core's vocabulary.
//!
//! zookeeper-client writes a request when its method is *called*, not when the
//! future is polled, so the driver polls each future once right away: requests leave
//! in the order the core polled them.

use futures::future::BoxFuture;
use lock_core::{CreateMode, MultiOp, MultiResult, Op, Reply, Stat, ZkError};
use std::sync::Arc;
use zookeeper_client::{Acl, Acls, Client, OneshotWatcher};

/// A request's outcome, and the watch it left with its path (kept until it fires
/// or the core drops it: dropping a `OneshotWatcher` makes zookeeper-client send
/// `removeWatches`).
pub(crate) type Answer = (Result<Reply, ZkError>, Option<(String, OneshotWatcher)>);

/// Makes the client call for `op` (when first polled) and maps its outcome; nodes
/// are created with `acls` (the options' [`NodeAcl`](lock_client::NodeAcl)).
/// (`Op::RemoveWatch` is the driver's: it owns the watchers.)
pub(crate) fn call(client: Arc<Client>, op: Op, acls: Arc<[Acl]>) -> BoxFuture<'static, Answer> {
    let unwatched =
        |result: Result<Reply, zookeeper_client::Error>| (result.map_err(zk_error), None);
    match op {
        Op::Create { path, data, mode } => Box::pin(async move {
            let options = create_mode(mode).with_acls(Acls::new(&acls));
            let result = client.create(&path, &data, &options).await;
            unwatched(result.map(|(stat, sequence)| Reply::Created {
                // The server's `%010d` of a signed 32-bit counter.
                path: match mode {
                    CreateMode::EphemeralSequential => sequential_path(&path, sequence.into_i64()),
                    _ => path,
                },
                stat: (!stat.is_invalid()).then(|| core_stat(&stat)),
            }))
        }),
        Op::GetChildren { path } => {
            Box::pin(
                async move { unwatched(client.list_children(&path).await.map(Reply::Children)) },
            )
        }
        Op::WatchChildren { path } => Box::pin(async move {
            match client.list_and_watch_children(&path).await {
                Ok((children, watcher)) => (Ok(Reply::Children(children)), Some((path, watcher))),
                Err(e) => (Err(zk_error(e)), None),
            }
        }),
        Op::GetData { path, watch: true } => Box::pin(async move {
            match client.get_and_watch_data(&path).await {
                Ok((data, stat, watcher)) => {
                    let stat = core_stat(&stat);
                    (Ok(Reply::Data { data, stat }), Some((path, watcher)))
                }
                Err(e) => (Err(zk_error(e)), None),
            }
        }),
        Op::GetData { path, watch: false } => Box::pin(async move {
            let result = client.get_data(&path).await;
            unwatched(result.map(|(data, stat)| Reply::Data {
                data,
                stat: core_stat(&stat),
            }))
        }),
        Op::SetData {
            path,
            data,
            version,
        } => Box::pin(async move {
            let result = client.set_data(&path, &data, version).await;
            unwatched(result.map(|stat| Reply::Stat(core_stat(&stat))))
        }),
        Op::Delete { path, version } => {
            // Called here and the client let go at once (this future does not
            // borrow it): a close right behind a release sends `closeSession`
            // behind the `delete`, not a round trip later (zookeeper-client sends
            // it when the last clone is dropped).
            let deleting = client.delete(&path, version);
            Box::pin(async move { unwatched(deleting.await.map(|()| Reply::Deleted)) })
        }
        Op::Multi(ops) => Box::pin(async move { (multi(&client, ops, &acls).await, None) }),
        Op::Sync { path } => {
            Box::pin(async move { unwatched(client.sync(&path).await.map(|()| Reply::Synced)) })
        }
        _ => Box::pin(async { (Err(ZkError::Unimplemented), None) }),
    }
}

/// The path the server gave a sequential node: `prefix` and the sequence number
/// as the server's `%010d` of a signed 32-bit counter (at most 11 characters).
/// Allocated at its size: the core keeps it as long as the node lives, and
/// `format!` would leave it up to twice that.
fn sequential_path(prefix: &str, sequence: i64) -> String {
    use std::fmt::Write;
    let mut path = String::with_capacity(prefix.len() + 11);
    path.push_str(prefix);
    let _ = write!(path, "{sequence:010}");
    path
}

/// A multi as one request (the ops are written into one buffer, sent on commit,
/// which happens on the first poll, like every other call).
async fn multi(client: &Client, ops: Vec<MultiOp>, acls: &[Acl]) -> Result<Reply, ZkError> {
    use zookeeper_client::{MultiWriteError, MultiWriteResult};
    let mut writer = client.new_multi_writer();
    for op in &ops {
        let added = match op {
            MultiOp::Create { path, data, mode } => {
                let options = create_mode(*mode).with_acls(Acls::new(acls));
                writer.add_create(path, data, &options)
            }
            MultiOp::Delete { path, version } => writer.add_delete(path, *version),
            MultiOp::SetData {
                path,
                data,
                version,
            } => writer.add_set_data(path, data, *version),
            MultiOp::Check { path, version } => {
                writer.add_check_version(path, version.unwrap_or(-1))
            }
            _ => return Err(ZkError::Unimplemented),
        };
        added.map_err(zk_error)?;
    }
    match writer.commit().await {
        Ok(results) => Ok(Reply::Multi(
            results
                .into_iter()
                .map(|r| match r {
                    MultiWriteResult::Create { path, .. } => MultiResult::Created { path },
                    MultiWriteResult::Delete => MultiResult::Deleted,
                    MultiWriteResult::SetData { stat } => MultiResult::SetData {
                        stat: core_stat(&stat),
                    },
                    _ => MultiResult::Checked,
                })
                .collect(),
        )),
        Err(MultiWriteError::OperationFailed { index, source }) => Err(ZkError::MultiFailed {
            index: u32::try_from(index).unwrap_or(u32::MAX),
            error: Box::new(zk_error(source)),
        }),
        Err(MultiWriteError::RequestFailed { source }) => Err(zk_error(source)),
    }
}

fn create_mode(mode: CreateMode) -> zookeeper_client::CreateMode {
    match mode {
        CreateMode::Persistent => zookeeper_client::CreateMode::Persistent,
        CreateMode::Ephemeral => zookeeper_client::CreateMode::Ephemeral,
        CreateMode::EphemeralSequential => zookeeper_client::CreateMode::EphemeralSequential,
        CreateMode::Container => zookeeper_client::CreateMode::Container,
        // Future modes: the closest safe one (a node that dies with the session).
        _ => zookeeper_client::CreateMode::Ephemeral,
    }
}

fn core_stat(stat: &zookeeper_client::Stat) -> Stat {
    Stat {
        czxid: stat.czxid,
        mzxid: stat.mzxid,
        ctime: stat.ctime,
        mtime: stat.mtime,
        version: stat.version,
        cversion: stat.cversion,
        ephemeral_owner: stat.ephemeral_owner,
        num_children: stat.num_children,
        data_length: stat.data_length,
    }
}

/// Maps a `zookeeper-client` error onto the core's vocabulary.
pub(crate) fn zk_error(e: zookeeper_client::Error) -> ZkError {
    use zookeeper_client::Error as E;
    match e {
        E::NoNode => ZkError::NoNode,
        E::NodeExists => ZkError::NodeExists,
        E::NotEmpty => ZkError::NotEmpty,
        E::BadVersion => ZkError::BadVersion,
        E::NoChildrenForEphemerals => ZkError::NoChildrenForEphemerals,
        // The request may or may not have been applied. Besides `ConnectionLoss`,
        // zookeeper-client fails the requests of a broken connection with the error
        // that broke it: an I/O error or "no response from connection in ..." (both
        // `Custom`), a protocol confusion (`UnexpectedError`, `UnmarshalError`). A
        // throttled request was not applied; retrying is right too.
        E::ConnectionLoss
        | E::SessionMoved
        | E::Custom(_)
        | E::UnexpectedError(_)
        | E::UnmarshalError { .. }
        | E::NoHosts
        | E::Throttled => ZkError::ConnectionLoss,
        E::Timeout => ZkError::OperationTimeout,
        E::SessionExpired => ZkError::SessionExpired,
        E::ClientClosed => ZkError::Closed,
        E::BadArguments(_) => ZkError::BadArguments,
        E::NoAuth | E::AuthFailed => ZkError::NoAuth,
        E::Unimplemented => ZkError::Unimplemented,
        other => ZkError::Other(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_formatting_matches_the_server() {
        // The server formats with Java's %010d of an int.
        let path = sequential_path("/l/n-", i64::from(i32::MIN));
        assert_eq!(path, "/l/n--2147483648");
        assert_eq!(path.capacity(), path.len());
        assert_eq!(sequential_path("/l/n-", 7), "/l/n-0000000007");
    }

    #[test]
    fn stat_conversion_keeps_the_token_and_owner() {
        let stat = zookeeper_client::Stat {
            czxid: 7,
            mzxid: 8,
            pzxid: 9,
            ctime: 0,
            mtime: 0,
            version: 1,
            cversion: 2,
            aversion: 0,
            ephemeral_owner: 99,
            data_length: 3,
            num_children: 0,
        };
        let s = core_stat(&stat);
        assert_eq!((s.czxid, s.ephemeral_owner, s.version), (7, 99, 1));
    }

    #[test]
    fn maps_errors() {
        assert_eq!(
            zk_error(zookeeper_client::Error::ConnectionLoss),
            ZkError::ConnectionLoss
        );
        assert_eq!(
            zk_error(zookeeper_client::Error::SessionMoved),
            ZkError::ConnectionLoss
        );
        assert!(zk_error(zookeeper_client::Error::Timeout).is_connection_loss());
        // A broken connection fails its requests with whatever broke it (`Custom`
        // errors cannot be built outside zookeeper-client; the others can).
        let confused = zookeeper_client::Error::UnexpectedError("bad xid".into());
        assert!(zk_error(confused).is_connection_loss());
        assert!(zk_error(zookeeper_client::Error::Throttled).is_connection_loss());
        assert_eq!(zk_error(zookeeper_client::Error::NoNode), ZkError::NoNode);
        assert_eq!(
            zk_error(zookeeper_client::Error::BadArguments(&"x")),
            ZkError::BadArguments
        );
    }
}
