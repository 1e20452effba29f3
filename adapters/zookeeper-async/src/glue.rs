//! The request `match` (each core [`Op`] as one zookeeper-async call, mapped
//! back onto the core's vocabulary) and opening a session.

use lock_client::{Auth, NodeAcl, Perms, ServerConf};
use lock_core::{CreateMode, Op, Reply, Stat, ZkError};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc::UnboundedSender;
use zookeeper_async::{
    Acl, CreateMode as Mode, Permission, WatchedEvent, ZkResult, ZkState, ZooKeeper,
};

/// What a client reports, tagged with its generation (of the clients opened).
pub(crate) enum Report {
    State(u64, ZkState),
    Watch(u64, WatchedEvent),
}

/// The crate's ACL for the options' [`NodeAcl`].
pub(crate) fn acl(acl: &NodeAcl) -> Vec<Acl> {
    let perms = [
        (Perms::READ, Permission::READ),
        (Perms::WRITE, Permission::WRITE),
        (Perms::CREATE, Permission::CREATE),
        (Perms::DELETE, Permission::DELETE),
        (Perms::ADMIN, Permission::ADMIN),
    ];
    let map = |p: Perms| {
        perms
            .iter()
            .filter(|(o, _)| p.contains(*o))
            .fold(Permission::NONE, |a, (_, t)| a | *t)
    };
    acl.entries()
        .iter()
        .map(|e| Acl::new(map(e.perms), &e.scheme, &e.id))
        .collect()
}

/// Runs one of the core's operations; `marker` is the session's own node.
pub(crate) async fn call(
    zk: &ZooKeeper,
    op: Op,
    acl: &[Acl],
    marker: &str,
) -> Result<Reply, ZkError> {
    let data = |(data, stat)| Reply::Data {
        data,
        stat: core_stat(&stat),
    };
    match op {
        // create2: the Stat (the fencing token) comes with the reply.
        Op::Create { path, data, mode } => zk
            .create2(&path, data, acl.to_vec(), create_mode(mode))
            .await
            .map(|(path, stat)| Reply::Created {
                path,
                stat: Some(core_stat(&stat)),
            }),
        Op::GetChildren { path } => zk.get_children(&path, false).await.map(Reply::Children),
        // Watches go to the default watcher: the server keeps one per path and
        // session, so re-listing after a reconnect sets no duplicate.
        Op::WatchChildren { path } => zk.get_children(&path, true).await.map(Reply::Children),
        Op::GetData { path, watch } => zk.get_data(&path, watch).await.map(data),
        Op::SetData {
            path,
            data,
            version,
        } => zk
            .set_data(&path, data, version)
            .await
            .map(|s| Reply::Stat(core_stat(&s))),
        Op::Delete { path, version } => zk.delete(&path, version).await.map(|()| Reply::Deleted),
        // No removeWatches: the watch stays until it fires, and the core ignores
        // a firing it no longer waits for.
        Op::RemoveWatch { .. } => Ok(Reply::WatchRemoved),
        // No sync: a write passes the leader as a sync does (lock_core::contact),
        // so a setData on our own marker proves the same contact.
        Op::Sync { .. } => zk
            .set_data(marker, Vec::new(), None)
            .await
            .map(|_| Reply::Synced),
        // zookeeper-async (5.0) has no `multi` and no way to send a raw
        // request, and separate calls are not atomic: refused whole.
        Op::Multi(_) => return Err(ZkError::Unimplemented),
        _ => return Err(ZkError::Unimplemented),
    }
    .map_err(zk_error)
}

fn create_mode(mode: CreateMode) -> Mode {
    match mode {
        CreateMode::Persistent => Mode::Persistent,
        CreateMode::EphemeralSequential => Mode::EphemeralSequential,
        CreateMode::Container => Mode::Container,
        // Ephemeral, and future modes: the closest safe one (dies with the session).
        _ => Mode::Ephemeral,
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
        // Unknown outcome (the crate fails the requests of a dropped connection).
        E::ConnectionLoss | E::SessionMoved => ZkError::ConnectionLoss,
        E::OperationTimeout => ZkError::OperationTimeout,
        E::SessionExpired => ZkError::SessionExpired,
        E::BadArguments => ZkError::BadArguments,
        E::NoAuth | E::AuthFailed => ZkError::NoAuth,
        E::Unimplemented => ZkError::Unimplemented,
        other => ZkError::Other(format!("{other:?}")),
    }
}

/// A session: its client, id (from our marker's owner), marker, granted timeout.
#[derive(Clone)]
pub(crate) struct Opened {
    pub(crate) zk: Arc<ZooKeeper>,
    pub(crate) session_id: i64,
    pub(crate) marker: Arc<str>,
    pub(crate) timeout: Duration,
}

/// How to open sessions (the first, and after an expiry), each step within `bound`.
#[derive(Clone)]
pub(crate) struct Dial {
    pub(crate) cluster: String,
    pub(crate) timeout: Duration,
    pub(crate) bound: Duration,
    pub(crate) acl: Arc<[Acl]>,
    pub(crate) auth: Vec<Auth>,
}

impl Dial {
    /// Connects, listens, sends the credentials and creates the marker (its reply
    /// proves the session: the crate queues requests behind its connect).
    pub(crate) async fn open(
        &self,
        gen: u64,
        to: UnboundedSender<Report>,
    ) -> Result<Opened, ZkError> {
        let watches = to.clone();
        let watcher = move |e| drop(watches.send(Report::Watch(gen, e)));
        // A pause between attempts: without one the crate retries in a busy loop.
        let retry = Duration::from_millis(100);
        let zk = ZooKeeper::connect_with_retry_time(&self.cluster, self.timeout, watcher, retry);
        let zk = Arc::new(within(self.bound, zk).await?);
        zk.add_listener(move |s| drop(to.send(Report::State(gen, s))));
        let marker = async {
            self.authenticate(&zk).await?;
            let (acl, mode) = (self.acl.to_vec(), Mode::EphemeralSequential);
            zk.create2(crate::SESSION_MARKER, Vec::new(), acl, mode)
                .await
                .map_err(zk_error)
        };
        let marker = tokio::time::timeout(self.bound, marker).await;
        match marker.unwrap_or(Err(ZkError::OperationTimeout)) {
            Ok((marker, stat)) => {
                let (session_id, marker) = (stat.ephemeral_owner, marker.into());
                let timeout = granted(&self.cluster, self.timeout).await;
                Ok(Opened {
                    zk,
                    session_id,
                    marker,
                    timeout,
                })
            }
            Err(e) => {
                close(Some(zk)).await;
                Err(e)
            }
        }
    }

    /// Sends every credential (after a reconnect too: the crate does not); a
    /// refusal is [`ZkError::AuthFailed`].
    pub(crate) async fn authenticate(&self, zk: &ZooKeeper) -> Result<(), ZkError> {
        for auth in &self.auth {
            zk.add_auth(&auth.scheme, auth.credentials.clone())
                .await
                .map_err(|e| match e {
                    zookeeper_async::ZkError::AuthFailed => ZkError::AuthFailed,
                    e => zk_error(e),
                })?;
        }
        Ok(())
    }
}

/// `call` within `bound` (the crate retries refused connections forever).
async fn within<T>(bound: Duration, call: impl Future<Output = ZkResult<T>>) -> Result<T, ZkError> {
    tokio::time::timeout(bound, call)
        .await
        .map_err(|_| ZkError::OperationTimeout)?
        .map_err(zk_error)
}

/// Closes a client, bounded: a dropped one pings on and keeps its session.
pub(crate) async fn close(zk: Option<Arc<ZooKeeper>>) {
    let Some(zk) = zk else { return };
    let _ = tokio::time::timeout(Duration::from_secs(2), zk.close()).await;
}

/// The session timeout the servers grant for `requested`: the crate hides it,
/// so it comes from their bounds (`conf`'s min/maxSessionTimeout, assumed the
/// same on every member); `requested` (with a warning) when none tells.
async fn granted(cluster: &str, requested: Duration) -> Duration {
    let hosts = cluster.split('/').next().unwrap_or_default().to_owned();
    let ask = move || {
        use std::net::ToSocketAddrs;
        for addr in hosts
            .split(',')
            .filter_map(|h| h.trim().to_socket_addrs().ok()?.next())
        {
            let answer = lock_nodelay::four_letter_word(addr, "conf", Duration::from_secs(1));
            if let Some(conf) = answer.ok().and_then(|a| ServerConf::parse(&a).ok()) {
                return requested
                    .max(conf.min_session_timeout)
                    .min(conf.max_session_timeout);
            }
        }
        tracing::warn!("no server told its session timeout bounds (conf): using the one asked for");
        requested
    };
    tokio::task::spawn_blocking(ask).await.unwrap_or(requested)
}
