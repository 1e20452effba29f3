//! Everything that touches the `zookeeper` crate: opening a client, turning the
//! core's [`Op`]s into blocking calls, and the worker threads that make those calls.
//!
//! # What the crate does with calls from several threads
//!
//! Every call of `zookeeper::ZooKeeper` (0.8) serialises its request, pushes it into
//! one channel to the crate's I/O thread (a `mio_extras` channel behind a `Mutex`),
//! then blocks on a private rendezvous channel until that thread hands it the reply.
//! The I/O thread writes requests in channel order and matches replies by FIFO
//! order, so the wire order is the order in which calls got through that mutex.
//! From different threads that order is a race, and the crate offers no way to
//! learn that a blocking call has reached the channel. The binding therefore never
//! relies on it: the driver issues a request only when the semantics cannot
//! depend on the order (see `driver/ordering.rs`).

use lock_client::{Auth, NodeAcl, Perms};
use lock_core::{CreateMode, MultiOp, MultiResult, Op, Reply, Stat, WatchType, ZkError};
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;
use zookeeper::{Acl, MultiError, OpResult, Permission, ZooKeeper};

/// The ACL of the nodes zklock creates (and of the session marker), in the
/// crate's terms.
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

/// Maps a `zookeeper` crate error onto the core's.
pub(crate) fn zk_error(e: zookeeper::ZkError) -> ZkError {
    use zookeeper::ZkError as E;
    match e {
        E::NoNode => ZkError::NoNode,
        E::NodeExists => ZkError::NodeExists,
        E::NotEmpty => ZkError::NotEmpty,
        E::BadVersion => ZkError::BadVersion,
        E::NoChildrenForEphemerals => ZkError::NoChildrenForEphemerals,
        // The outcome is unknown: the request may or may not have been applied. The
        // crate also answers every call with ConnectionLoss once it is closed for good;
        // the driver learns that from the state listener and stops using the client.
        E::ConnectionLoss | E::SessionMoved => ZkError::ConnectionLoss,
        E::OperationTimeout => ZkError::OperationTimeout,
        E::SessionExpired => ZkError::SessionExpired,
        E::BadArguments => ZkError::BadArguments,
        E::NoAuth | E::AuthFailed => ZkError::NoAuth,
        E::Unimplemented => ZkError::Unimplemented,
        other => ZkError::Other(format!("{other:?}")),
    }
}

/// Runs one of the core's operations as a blocking call. Returns `Created` without a
/// stat: the crate's `create` gives only the path (the core fetches the token with
/// the `getData` on its own node it sends anyway).
pub(crate) fn run_op(zk: &ZooKeeper, op: &Op, acl: &[Acl]) -> Result<Reply, ZkError> {
    match op {
        Op::Create { path, data, mode } => {
            let mode = create_mode(*mode).map_err(zk_error)?;
            zk.create(path, data.clone(), acl.to_vec(), mode)
                .map(|path| Reply::Created { path, stat: None })
        }
        Op::GetChildren { path } => zk.get_children(path, false).map(Reply::Children),
        Op::WatchChildren { path } => zk.get_children(path, true).map(Reply::Children),
        Op::GetData { path, watch } => zk.get_data(path, *watch).map(|(data, stat)| Reply::Data {
            data,
            stat: map_stat(&stat),
        }),
        Op::SetData {
            path,
            data,
            version,
        } => zk
            .set_data(path, data.clone(), *version)
            .map(|stat| Reply::Stat(map_stat(&stat))),
        Op::Delete { path, version } => zk.delete(path, *version).map(|()| Reply::Deleted),
        // Saves the server a notification; whatever the outcome (no watch left: the
        // server's NoWatcher), the core expects `WatchRemoved`.
        Op::RemoveWatch { path, watch } => {
            let watch = match watch {
                WatchType::Children => zookeeper::WatcherType::Children,
                _ => zookeeper::WatcherType::Data,
            };
            let _ = zk.remove_watches(path, watch);
            Ok(Reply::WatchRemoved)
        }
        // The fork's (zookeeper-zklock): through the leader, no transaction.
        Op::Sync { path } => zk.sync(path).map(|_| Reply::Synced),
        Op::Multi(ops) => return multi(zk, ops, acl),
        _ => return Err(ZkError::Unimplemented),
    }
    .map_err(zk_error)
}

/// A multi as one request (the fork's `ZooKeeper::multi`): all or nothing, a
/// failure naming its first failing op.
fn multi(zk: &ZooKeeper, ops: &[MultiOp], acl: &[Acl]) -> Result<Reply, ZkError> {
    let ops = ops
        .iter()
        .map(|op| {
            Ok(match op {
                MultiOp::Create { path, data, mode } => zookeeper::Op::Create {
                    path: path.clone(),
                    data: data.clone(),
                    acl: acl.to_vec(),
                    mode: create_mode(*mode).map_err(zk_error)?,
                },
                MultiOp::Delete { path, version } => zookeeper::Op::Delete {
                    path: path.clone(),
                    version: *version,
                },
                MultiOp::SetData {
                    path,
                    data,
                    version,
                } => zookeeper::Op::SetData {
                    path: path.clone(),
                    data: data.clone(),
                    version: *version,
                },
                MultiOp::Check { path, version } => zookeeper::Op::Check {
                    path: path.clone(),
                    version: *version,
                },
                _ => return Err(ZkError::Unimplemented),
            })
        })
        .collect::<Result<Vec<_>, ZkError>>()?;
    match zk.multi(ops) {
        Ok(results) => Ok(Reply::Multi(
            results
                .into_iter()
                .map(|result| match result {
                    OpResult::Create(path) => MultiResult::Created { path },
                    OpResult::Delete => MultiResult::Deleted,
                    OpResult::SetData(stat) => MultiResult::SetData {
                        stat: map_stat(&stat),
                    },
                    OpResult::Check => MultiResult::Checked,
                })
                .collect(),
        )),
        Err(MultiError::Op { index, error }) => Err(ZkError::MultiFailed {
            index: u32::try_from(index).unwrap_or(u32::MAX),
            error: Box::new(zk_error(error)),
        }),
        Err(MultiError::Request(error)) => Err(zk_error(error)),
    }
}

/// Whether an operation changes the tree (and so must not be reordered with
/// anything sent before it).
pub(crate) fn is_write(op: &Op) -> bool {
    !matches!(
        op,
        Op::GetChildren { .. } | Op::WatchChildren { .. } | Op::GetData { .. } | Op::Sync { .. }
    )
}

fn create_mode(mode: CreateMode) -> Result<zookeeper::CreateMode, zookeeper::ZkError> {
    Ok(match mode {
        CreateMode::Persistent => zookeeper::CreateMode::Persistent,
        CreateMode::Ephemeral => zookeeper::CreateMode::Ephemeral,
        CreateMode::EphemeralSequential => zookeeper::CreateMode::EphemeralSequential,
        // Sent as `create` with the container flag: ZooKeeper 3.5+ accepts that.
        CreateMode::Container => zookeeper::CreateMode::Container,
        _ => return Err(zookeeper::ZkError::Unimplemented),
    })
}

pub(crate) fn map_stat(s: &zookeeper::Stat) -> Stat {
    Stat {
        czxid: s.czxid,
        mzxid: s.mzxid,
        version: s.version,
        cversion: s.cversion,
        ephemeral_owner: s.ephemeral_owner,
        num_children: s.num_children,
        data_length: s.data_length,
        ctime: s.ctime,
        mtime: s.mtime,
    }
}

/// The session marker: an ephemeral node whose `ephemeralOwner` tells the session id,
/// which the crate does not expose. Finds the existing marker (same session) or
/// creates a new one (a new session). Returns `(session id, marker path)`.
///
/// Runs on a worker, first after every (re)connect: it sends the credentials
/// first (the server keeps them per connection and the crate does not send them
/// again after a reconnect). The calls are sequential on purpose (each needs the
/// previous one's answer, and nothing may pass the credentials).
pub(crate) fn probe_session(
    zk: &ZooKeeper,
    marker: Option<&str>,
    prefix: &str,
    auth: &[Auth],
    acl: &[Acl],
) -> Result<(i64, String), ZkError> {
    for auth in auth {
        zk.add_auth(&auth.scheme, auth.credentials.clone())
            .map_err(|e| match e {
                zookeeper::ZkError::AuthFailed => ZkError::AuthFailed,
                other => zk_error(other),
            })?;
    }
    if let Some(marker) = marker {
        match zk.exists(marker, false) {
            Ok(Some(stat)) => return Ok((stat.ephemeral_owner, marker.to_owned())),
            Ok(None) => {} // gone with the old session: this is a new one
            Err(e) => return Err(zk_error(e)),
        }
    }
    let path = zk
        .create(
            prefix,
            Vec::new(),
            acl.to_vec(),
            zookeeper::CreateMode::EphemeralSequential,
        )
        .map_err(zk_error)?;
    match zk.exists(&path, false).map_err(zk_error)? {
        Some(stat) => Ok((stat.ephemeral_owner, path)),
        // Deleted between the two calls (only an administrator could): try again later.
        None => Err(ZkError::NoNode),
    }
}

/// Opens a `zookeeper` client. The crate's constructor returns at once and connects
/// in the background; it panics if the first socket cannot even be created, which is
/// turned into an error here.
pub(crate) fn open(
    connect: &str,
    session_timeout: Duration,
    watcher: impl Fn(zookeeper::WatchedEvent) + Send + 'static,
) -> Result<ZooKeeper, OpenError> {
    let connect = connect.to_owned();
    // The watcher is only moved into the crate; nothing is observed after a panic.
    let open = std::panic::AssertUnwindSafe(move || {
        ZooKeeper::connect(&connect, session_timeout, watcher)
    });
    std::panic::catch_unwind(open)
        .map_err(|_| OpenError::Panicked)?
        .map_err(OpenError::Refused)
}

/// Why [`open`] gave no client.
#[derive(Debug)]
pub(crate) enum OpenError {
    /// The crate panicked while opening its socket.
    Panicked,
    /// The crate returned an error.
    Refused(zookeeper::ZkError),
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::Panicked => {
                f.write_str("the zookeeper crate panicked while opening its socket")
            }
            OpenError::Refused(_) => f.write_str("the zookeeper crate could not open a client"),
        }
    }
}

impl std::error::Error for OpenError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            OpenError::Panicked => None,
            OpenError::Refused(e) => Some(e),
        }
    }
}

/// A blocking call; what it returns is run once the worker is available again.
type Job = Box<dyn FnOnce() -> Box<dyn FnOnce() + Send> + Send>;

/// Threads that make the blocking calls. One call occupies one thread for a round
/// trip (or, on a dead connection, until the crate gives up on it), so the pool grows
/// when every worker is busy, and shrinks back to [`WARM`] after a while idle.
///
/// A worker counts itself available *before* it delivers a reply: the driver reacts
/// to the reply by issuing the next requests at once, and would otherwise start a
/// thread for a job the returning worker is about to take.
pub(crate) struct Pool {
    shared: Arc<PoolShared>,
}

struct PoolShared {
    state: Mutex<PoolState>,
    wake: Condvar,
}

struct PoolState {
    queue: VecDeque<Job>,
    /// Workers waiting for a job, or about to look for one.
    available: usize,
    workers: usize,
    stopped: bool,
}

/// Workers kept however idle: enough for the back-to-back reads of an acquisition.
const WARM: usize = 3;
const IDLE_EXIT: Duration = Duration::from_secs(20);

impl Pool {
    pub(crate) fn new() -> Pool {
        let pool = Pool {
            shared: Arc::new(PoolShared {
                state: Mutex::new(PoolState {
                    queue: VecDeque::new(),
                    available: 0,
                    workers: 0,
                    stopped: false,
                }),
                wake: Condvar::new(),
            }),
        };
        for _ in 0..WARM {
            pool.spawn();
        }
        pool
    }

    /// Runs `call` on a worker now (an available one, or a new one if every worker
    /// is busy), then `deliver` with its result.
    pub(crate) fn run<T: Send + 'static>(
        &self,
        call: impl FnOnce() -> T + Send + 'static,
        deliver: impl FnOnce(T) + Send + 'static,
    ) {
        let job: Job = Box::new(move || {
            let result = call();
            Box::new(move || deliver(result))
        });
        let mut state = lock(&self.shared.state);
        state.queue.push_back(job);
        if state.available >= state.queue.len() {
            self.shared.wake.notify_one();
            return;
        }
        drop(state);
        self.spawn();
    }

    fn spawn(&self) {
        let shared = self.shared.clone();
        lock(&shared.state).workers += 1;
        let spawned = std::thread::Builder::new()
            .name("lock-zookeeper-worker".into())
            .spawn({
                let shared = shared.clone();
                move || worker(&shared)
            });
        if spawned.is_err() {
            // No thread to be had: a busy worker gets to the job when it is done.
            lock(&shared.state).workers -= 1;
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        lock(&self.shared.state).stopped = true;
        self.shared.wake.notify_all();
    }
}

fn worker(shared: &PoolShared) {
    let mut state = lock(&shared.state);
    loop {
        if let Some(job) = state.queue.pop_front() {
            drop(state);
            let deliver = job();
            state = lock(&shared.state);
            state.available += 1;
            drop(state);
            deliver();
            state = lock(&shared.state);
            state.available -= 1;
            continue;
        }
        if state.stopped {
            state.workers -= 1;
            return;
        }
        state.available += 1;
        let (next, timeout) = shared
            .wake
            .wait_timeout(state, IDLE_EXIT)
            .unwrap_or_else(|p| p.into_inner());
        state = next;
        state.available -= 1;
        if timeout.timed_out() && state.queue.is_empty() && state.workers > WARM {
            state.workers -= 1;
            return;
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_acls() {
        assert_eq!(&acl(&NodeAcl::Open), Acl::open_unsafe());
        assert_eq!(&acl(&NodeAcl::CreatorAll), Acl::creator_all());
        let read = acl(&NodeAcl::CreatorAllWorldRead);
        assert_eq!(read[1], Acl::read_unsafe()[0]);
        let custom = acl(&NodeAcl::Custom(vec![lock_client::AclEntry::new(
            Perms::READ | Perms::CREATE,
            "ip",
            "10.0.0.1",
        )]));
        assert_eq!(
            custom,
            vec![Acl::new(
                Permission::READ | Permission::CREATE,
                "ip",
                "10.0.0.1"
            )]
        );
    }

    #[test]
    fn maps_errors() {
        assert_eq!(zk_error(zookeeper::ZkError::NoNode), ZkError::NoNode);
        assert_eq!(
            zk_error(zookeeper::ZkError::SessionMoved),
            ZkError::ConnectionLoss
        );
        assert!(zk_error(zookeeper::ZkError::OperationTimeout).is_connection_loss());
        assert_eq!(zk_error(zookeeper::ZkError::AuthFailed), ZkError::NoAuth);
        assert_eq!(
            zk_error(zookeeper::ZkError::Unimplemented),
            ZkError::Unimplemented
        );
    }

    #[test]
    fn reads_and_writes() {
        assert!(!is_write(&Op::GetChildren { path: "/a".into() }));
        assert!(!is_write(&Op::GetData {
            path: "/a".into(),
            watch: true
        }));
        assert!(is_write(&Op::Delete {
            path: "/a".into(),
            version: None
        }));
        assert!(is_write(&Op::Multi(Vec::new())));
    }

    #[test]
    fn pool_runs_jobs_concurrently() {
        let pool = Pool::new();
        let (tx, rx) = std::sync::mpsc::channel();
        let gate = Arc::new(std::sync::Barrier::new(4));
        for i in 0..4 {
            let tx = tx.clone();
            let gate = gate.clone();
            // Four jobs that each wait for the others: only concurrent workers finish.
            pool.run(
                move || {
                    gate.wait();
                    i
                },
                move |i| tx.send(i).unwrap(),
            );
        }
        let mut got: Vec<i32> = (0..4).map(|_| rx.recv().unwrap()).collect();
        got.sort();
        assert_eq!(got, vec![0, 1, 2, 3]);
    }
}
