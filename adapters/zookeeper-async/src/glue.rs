//! The request `match`: each core [`Op`] as one zookeeper-async call, its reply
//! and errors mapped back onto the core's vocabulary; and opening a session.

use lock_client::{Auth, NodeAcl, Perms};
use lock_core::{CreateMode, Op, Reply, Stat, ZkError};
use std::time::Duration;
use zookeeper_async::{Acl, Permission, ZkState, ZooKeeper};

/// The text of the error every `Op::Multi` gets: zookeeper-async (5.0) has no
/// `multi` and no way to send a raw request, and emulating one with separate
/// calls would not be atomic: fenced writes, crash-detecting sections,
/// lock-delay and the break record are refused rather than half applied.
pub const MULTI_UNSUPPORTED: &str = "multi unsupported by zookeeper-async";

/// What the crate reports, tagged with the client (generation) it came from:
/// the driver ignores the reports of clients it has replaced.
#[derive(Debug)]
pub(crate) enum Report {
    State(u64, ZkState),
    Watch(u64, zookeeper_async::WatchedEvent),
}

/// The crate's ACL for the options' [`NodeAcl`].
pub(crate) fn acl(acl: &NodeAcl) -> Vec<Acl> {
    let permission = |perms: Perms| {
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
    };
    acl.entries()
        .iter()
        .map(|e| Acl::new(permission(e.perms), &e.scheme, &e.id))
        .collect()
}

/// Runs one of the core's operations. `marker` is the session's own ephemeral
/// node, which `Op::Sync` writes (see the crate docs: the crate has no `sync`).
pub(crate) async fn call(
    zk: &ZooKeeper,
    op: Op,
    acl: &[Acl],
    marker: &str,
) -> Result<Reply, ZkError> {
    let result = match op {
        // create2: the Stat comes with the reply (the fencing token, no extra read).
        Op::Create { path, data, mode } => zk
            .create2(&path, data, acl.to_vec(), create_mode(mode))
            .await
            .map(|(path, stat)| Reply::Created {
                path,
                stat: Some(core_stat(&stat)),
            }),
        Op::GetChildren { path } => zk.get_children(&path, false).await.map(Reply::Children),
        // Watches go to the client's default watcher (the driver's), which the
        // server keeps once per path: re-listing after a reconnect sets no duplicate.
        Op::WatchChildren { path } => zk.get_children(&path, true).await.map(Reply::Children),
        Op::GetData { path, watch } => {
            zk.get_data(&path, watch)
                .await
                .map(|(data, stat)| Reply::Data {
                    data,
                    stat: core_stat(&stat),
                })
        }
        Op::SetData {
            path,
            data,
            version,
        } => zk
            .set_data(&path, data, version)
            .await
            .map(|stat| Reply::Stat(core_stat(&stat))),
        Op::Delete { path, version } => zk.delete(&path, version).await.map(|()| Reply::Deleted),
        // No removeWatches in the crate: the watch stays until it fires, and the
        // core ignores a firing it no longer waits for.
        Op::RemoveWatch { .. } => Ok(Reply::WatchRemoved),
        // No sync in the crate: a write passes the leader as a sync does (see
        // lock_core::contact), so a setData on our own marker proves the same contact.
        Op::Sync { .. } => zk
            .set_data(marker, Vec::new(), None)
            .await
            .map(|_| Reply::Synced),
        Op::Multi(_) => return Err(ZkError::Other(MULTI_UNSUPPORTED.to_owned())),
        other => {
            return Err(ZkError::Other(format!(
                "operation not supported by this binding: {other:?}"
            )))
        }
    };
    result.map_err(zk_error)
}

fn create_mode(mode: CreateMode) -> zookeeper_async::CreateMode {
    match mode {
        CreateMode::Persistent => zookeeper_async::CreateMode::Persistent,
        CreateMode::EphemeralSequential => zookeeper_async::CreateMode::EphemeralSequential,
        CreateMode::Container => zookeeper_async::CreateMode::Container,
        // Ephemeral, and future modes: the closest safe one (dies with the session).
        _ => zookeeper_async::CreateMode::Ephemeral,
    }
}

fn core_stat(s: &zookeeper_async::Stat) -> Stat {
    Stat {
        czxid: s.czxid,
        mzxid: s.mzxid,
        ctime: s.ctime,
        mtime: s.mtime,
        version: s.version,
        cversion: s.cversion,
        ephemeral_owner: s.ephemeral_owner,
        num_children: s.num_children,
        data_length: s.data_length,
    }
}

/// Maps a zookeeper-async error onto the core's.
pub(crate) fn zk_error(e: zookeeper_async::ZkError) -> ZkError {
    use zookeeper_async::ZkError as E;
    match e {
        E::NoNode => ZkError::NoNode,
        E::NodeExists => ZkError::NodeExists,
        E::NotEmpty => ZkError::NotEmpty,
        E::BadVersion => ZkError::BadVersion,
        E::NoChildrenForEphemerals => ZkError::NoChildrenForEphemerals,
        // Unknown outcome: the crate fails the requests of a dropped connection
        // (and those it could not hand to its I/O task) with ConnectionLoss.
        E::ConnectionLoss | E::SessionMoved => ZkError::ConnectionLoss,
        E::OperationTimeout => ZkError::OperationTimeout,
        E::SessionExpired => ZkError::SessionExpired,
        E::BadArguments => ZkError::BadArguments,
        E::NoAuth | E::AuthFailed => ZkError::NoAuth,
        other => ZkError::Other(format!("{other:?}")),
    }
}

/// A session, open: the client, the session id (from the owner of the marker:
/// the crate hides it) and the marker's path.
pub(crate) struct Opened {
    pub(crate) zk: ZooKeeper,
    pub(crate) session_id: i64,
    pub(crate) marker: String,
    /// The session timeout the server grants (see [`granted`]).
    pub(crate) timeout: Duration,
}

/// How to open sessions: the first one, and new ones after an expiry.
#[derive(Clone)]
pub(crate) struct Dial {
    pub(crate) cluster: String,
    pub(crate) timeout: Duration,
    pub(crate) marker_prefix: String,
    pub(crate) acl: Vec<Acl>,
    pub(crate) auth: Vec<Auth>,
}

/// A pause between TCP connection attempts: the crate retries a refusing server
/// at once, in a busy loop, without one.
const RETRY: Duration = Duration::from_millis(100);

impl Dial {
    /// Opens a client and its session: connect, listen to its states, send the
    /// credentials, create the marker. The caller bounds it in time: the crate
    /// retries refused connections forever.
    pub(crate) async fn open(
        &self,
        generation: u64,
        reports: tokio::sync::mpsc::UnboundedSender<Report>,
    ) -> Result<Opened, ZkError> {
        let watches = reports.clone();
        let watcher = move |e| drop(watches.send(Report::Watch(generation, e)));
        let zk = ZooKeeper::connect_with_retry_time(&self.cluster, self.timeout, watcher, RETRY)
            .await
            .map_err(zk_error)?;
        zk.add_listener(move |s| drop(reports.send(Report::State(generation, s))));
        match self.session(&zk).await {
            Ok((session_id, marker)) => {
                let timeout = granted(&self.cluster, self.timeout).await;
                Ok(Opened {
                    zk,
                    session_id,
                    marker,
                    timeout,
                })
            }
            Err(e) => {
                // Not dropped silently: a dropped client keeps its session alive.
                close(&zk).await;
                Err(e)
            }
        }
    }

    /// Sends the credentials and creates the marker: its `ephemeralOwner` is the
    /// session id. Every reply here proves the session is established (the
    /// crate queues requests behind its connect request).
    pub(crate) async fn session(&self, zk: &ZooKeeper) -> Result<(i64, String), ZkError> {
        self.authenticate(zk).await?;
        let mode = zookeeper_async::CreateMode::EphemeralSequential;
        let (marker, stat) = zk
            .create2(&self.marker_prefix, Vec::new(), self.acl.clone(), mode)
            .await
            .map_err(zk_error)?;
        Ok((stat.ephemeral_owner, marker))
    }

    /// Sends every credential (again after a reconnect: the crate does not).
    pub(crate) async fn authenticate(&self, zk: &ZooKeeper) -> Result<(), ZkError> {
        for auth in &self.auth {
            let credentials = auth.credentials.clone();
            zk.add_auth(&auth.scheme, credentials)
                .await
                .map_err(zk_error)?;
        }
        Ok(())
    }
}

/// Closes a client, bounded: its I/O task runs (and pings) until it sends
/// `closeSession`, even when every handle is dropped.
pub(crate) async fn close(zk: &ZooKeeper) {
    let _ = tokio::time::timeout(Duration::from_secs(2), zk.close()).await;
}

/// The session timeout the servers grant for `requested`: the crate hides the
/// one negotiated, so it is worked out from the servers' bounds
/// (`minSessionTimeout..=maxSessionTimeout`, from their `conf`; all members of
/// an ensemble are assumed to share them). `requested` when no server tells.
pub(crate) async fn granted(cluster: &str, requested: Duration) -> Duration {
    let hosts = cluster.split('/').next().unwrap_or_default().to_owned();
    let ask = move || {
        use std::net::ToSocketAddrs;
        let addrs = hosts
            .split(',')
            .filter_map(|h| h.trim().to_socket_addrs().ok()?.next());
        for addr in addrs {
            let answer = lock_nodelay::four_letter_word(addr, "conf", Duration::from_secs(1));
            if let Some(conf) = answer
                .ok()
                .and_then(|a| lock_client::ServerConf::parse(&a).ok())
            {
                return requested
                    .max(conf.min_session_timeout)
                    .min(conf.max_session_timeout);
            }
        }
        tracing::warn!(
            "no server told its session timeout bounds (conf): timing locks by the one asked for"
        );
        requested
    };
    tokio::task::spawn_blocking(ask).await.unwrap_or(requested)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_errors_and_acls() {
        assert_eq!(zk_error(zookeeper_async::ZkError::NoNode), ZkError::NoNode);
        assert!(zk_error(zookeeper_async::ZkError::SessionMoved).is_connection_loss());
        assert_eq!(
            zk_error(zookeeper_async::ZkError::AuthFailed),
            ZkError::NoAuth
        );
        assert!(matches!(
            zk_error(zookeeper_async::ZkError::Unimplemented),
            ZkError::Other(_)
        ));
        assert_eq!(&acl(&NodeAcl::Open), Acl::open_unsafe());
        assert_eq!(&acl(&NodeAcl::CreatorAll), Acl::creator_all());
    }
}
