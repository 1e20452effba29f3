//! The vocabulary shared by the core and every adapter: ZooKeeper requests the core
//! asks for, the replies, watch firings and session changes the adapter feeds back.
//!
//! These types mirror ZooKeeper's wire protocol only as far as locks need. An adapter
//! turns each [`Op`] into one client call and each client result into a [`Reply`] or
//! a [`ZkError`].

use std::fmt;
use std::time::Duration;

/// Identifies one request minted by the core; the adapter echoes it in
/// [`Input::Reply`]. Ids are never reused within a [`Session`](crate::Session).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct RequestId(pub u64);

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// A request the adapter must send to ZooKeeper, in the order the core emits them.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Request {
    /// Echo this in the reply.
    pub id: RequestId,
    /// What to do.
    pub op: Op,
}

/// How a node is created.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[non_exhaustive]
pub enum CreateMode {
    /// A plain persistent node.
    Persistent,
    /// An ephemeral node, deleted when its session ends.
    Ephemeral,
    /// An ephemeral node whose name the server suffixes with `%010d` of the parent's
    /// signed 32-bit sequence counter.
    EphemeralSequential,
    /// A container node: the server reaps it once it has had children and has none.
    Container,
}

/// ZooKeeper's two watch tables (its `WatcherType`): a session has at most one
/// watch of each type per path.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum WatchType {
    /// Left by `getData` (and `exists`): fires on the node's deletion or data change.
    Data,
    /// Left by `getChildren`: fires when a child comes or goes, or the node goes.
    Children,
}

/// A ZooKeeper operation.
#[derive(Clone, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum Op {
    /// `create(path, data, OPEN_ACL_UNSAFE, mode)`. Reply: [`Reply::Created`].
    Create {
        /// Full path (for sequential nodes, the prefix the server suffixes).
        path: String,
        /// Node data.
        data: Vec<u8>,
        /// Creation mode.
        mode: CreateMode,
    },
    /// `getChildren(path, watch = false)`. Reply: [`Reply::Children`].
    GetChildren {
        /// Parent path.
        path: String,
    },
    /// `getChildren(path, watch = true)`: a listing that leaves a one-shot child watch,
    /// firing [`WatchKind::NodeChildrenChanged`] (or `NodeDeleted` for the parent).
    /// Reply: [`Reply::Children`]. Only election observers use it, and only while no
    /// participant exists (a waiter never watches children: that is the herd effect).
    WatchChildren {
        /// Parent path.
        path: String,
    },
    /// `getData(path, watch)`. Reply: [`Reply::Data`]. With `watch`, a data watch
    /// is left on the node: it fires [`WatchKind::NodeDeleted`] or
    /// [`WatchKind::NodeDataChanged`] once.
    GetData {
        /// Node path.
        path: String,
        /// Leave a one-shot data watch.
        watch: bool,
    },
    /// `setData(path, data, version)` (`None` = any version). Reply: [`Reply::Stat`].
    SetData {
        /// Node path.
        path: String,
        /// New data.
        data: Vec<u8>,
        /// Expected version.
        version: Option<i32>,
    },
    /// `delete(path, version)` (`None` = any version). Reply: [`Reply::Deleted`].
    Delete {
        /// Node path.
        path: String,
        /// Expected version.
        version: Option<i32>,
    },
    /// An atomic `multi`. Reply: [`Reply::Multi`]; on failure
    /// [`ZkError::MultiFailed`] naming the first failing op (connection errors as such).
    Multi(Vec<MultiOp>),
    /// `removeWatches(path, type)`: drop the watch of type `watch` this session left
    /// on `path` (with `GetData { watch: true }` or `WatchChildren`), so its firing
    /// is never sent. Reply: [`Reply::WatchRemoved`], whatever happened (no watch
    /// left, client without the call): the core only saves the server (and
    /// itself) a notification with it, and ignores a firing that comes anyway.
    RemoveWatch {
        /// Node path.
        path: String,
        /// Which of the session's watches on `path` to drop.
        watch: WatchType,
    },
    /// `sync(path)`: a round trip through the ensemble's leader. Reply:
    /// [`Reply::Synced`]. The core sends it only to learn that the leader still hears
    /// this session (see [`Config::sync_interval`](crate::Config::sync_interval)), so a
    /// client library without `sync` may send any other request that a follower
    /// must forward to the leader and whose effect no lock depends on (the blocking
    /// binding writes its own session marker), and reply `Synced` when it succeeds.
    Sync {
        /// The path to sync (the core uses `/`).
        path: String,
    },
}

impl Op {
    /// A `getData` of `path` that leaves no watch.
    pub(crate) fn read(path: impl Into<String>) -> Op {
        let path = path.into();
        Op::GetData { path, watch: false }
    }

    /// Whether a follower must hand this request to the leader before answering:
    /// writes and `sync`. A reply to one of these shows that the server we talk to
    /// was connected to the leader after it was sent; a reply to a read shows
    /// nothing of the kind (a follower cut off from the leader keeps answering
    /// reads for up to `syncLimit x tickTime`).
    pub fn passes_leader(&self) -> bool {
        match self {
            Op::Create { .. }
            | Op::SetData { .. }
            | Op::Delete { .. }
            | Op::Multi(_)
            | Op::Sync { .. } => true,
            Op::GetChildren { .. }
            | Op::WatchChildren { .. }
            | Op::GetData { .. }
            | Op::RemoveWatch { .. } => false,
        }
    }

    /// The path the operation acts on (the first op's path for a multi).
    pub fn path(&self) -> &str {
        match self {
            Op::Create { path, .. }
            | Op::GetChildren { path }
            | Op::WatchChildren { path }
            | Op::GetData { path, .. }
            | Op::SetData { path, .. }
            | Op::Delete { path, .. }
            | Op::RemoveWatch { path, .. }
            | Op::Sync { path } => path,
            Op::Multi(ops) => ops.first().map(MultiOp::path).unwrap_or(""),
        }
    }
}

/// Room kept in every request for what [`Op::encoded_len`] leaves out: a create's
/// ACL list (`world:anyone` takes 27 bytes; digest and SASL ACLs take more).
pub const ACL_ALLOWANCE: usize = 512;

fn string_len(s: &str) -> usize {
    4 + s.len()
}

impl Op {
    /// The size of this request as ZooKeeper's wire format encodes it (request
    /// header and body, without the 4-byte length prefix), not counting a
    /// create's ACL list. The server drops the connection of a client that sends a
    /// request larger than its `jute.maxbuffer`.
    pub fn encoded_len(&self) -> usize {
        const HEADER: usize = 8; // xid, type
        HEADER
            + match self {
                Op::Create { path, data, .. } => string_len(path) + 4 + data.len() + 4 + 4,
                Op::GetChildren { path } | Op::WatchChildren { path } => string_len(path) + 1,
                Op::GetData { path, .. } => string_len(path) + 1,
                Op::SetData { path, data, .. } => string_len(path) + 4 + data.len() + 4,
                Op::Delete { path, .. } => string_len(path) + 4,
                Op::RemoveWatch { path, .. } => string_len(path) + 4,
                Op::Sync { path } => string_len(path),
                Op::Multi(ops) => {
                    const MULTI_HEADER: usize = 9; // type, done, err
                    ops.iter()
                        .map(|op| MULTI_HEADER + op.encoded_len())
                        .sum::<usize>()
                        + MULTI_HEADER
                }
            }
    }
}

/// One operation inside a [`Op::Multi`].
#[derive(Clone, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum MultiOp {
    /// Create a node.
    Create {
        /// Path (prefix for sequential nodes).
        path: String,
        /// Data.
        data: Vec<u8>,
        /// Mode.
        mode: CreateMode,
    },
    /// Delete a node.
    Delete {
        /// Path.
        path: String,
        /// Expected version, `None` = any.
        version: Option<i32>,
    },
    /// Set a node's data.
    SetData {
        /// Path.
        path: String,
        /// Data.
        data: Vec<u8>,
        /// Expected version, `None` = any.
        version: Option<i32>,
    },
    /// Check a node exists (with a version, if given).
    Check {
        /// Path.
        path: String,
        /// Expected version, `None` = any.
        version: Option<i32>,
    },
}

impl MultiOp {
    /// A check that `path` exists, at any version.
    pub(crate) fn check(path: impl Into<String>) -> MultiOp {
        MultiOp::Check {
            path: path.into(),
            version: None,
        }
    }

    /// Writes `data` to the persistent node at `path`: its `setData` (whatever
    /// the version) when it `exists`, else its create. Inside a `multi` the
    /// guess is checked: a wrong one fails the whole `multi` at this op
    /// (`NodeExists`, `NoNode`), and nothing is applied.
    pub(crate) fn put_persistent(path: String, data: Vec<u8>, exists: bool) -> MultiOp {
        if exists {
            MultiOp::SetData {
                path,
                data,
                version: None,
            }
        } else {
            MultiOp::Create {
                path,
                data,
                mode: CreateMode::Persistent,
            }
        }
    }

    /// The size of this operation's body in ZooKeeper's wire format (see
    /// [`Op::encoded_len`]).
    pub fn encoded_len(&self) -> usize {
        match self {
            MultiOp::Create { path, data, .. } => string_len(path) + 4 + data.len() + 4 + 4,
            MultiOp::Delete { path, .. } | MultiOp::Check { path, .. } => string_len(path) + 4,
            MultiOp::SetData { path, data, .. } => string_len(path) + 4 + data.len() + 4,
        }
    }

    /// The path the operation acts on.
    pub fn path(&self) -> &str {
        match self {
            MultiOp::Create { path, .. }
            | MultiOp::Delete { path, .. }
            | MultiOp::SetData { path, .. }
            | MultiOp::Check { path, .. } => path,
        }
    }
}

/// The result of one op inside a successful multi.
#[derive(Clone, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum MultiResult {
    /// A node was created at this path.
    Created {
        /// The created path (with the sequence suffix).
        path: String,
    },
    /// A node was deleted.
    Deleted,
    /// Data was set; the node's new stat.
    SetData {
        /// New stat.
        stat: Stat,
    },
    /// A check passed.
    Checked,
}

/// A node's metadata, as far as locks use it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct Stat {
    /// zxid of the transaction that created the node: the fencing token.
    pub czxid: i64,
    /// zxid of the last data change.
    pub mzxid: i64,
    /// Data version.
    pub version: i32,
    /// Child version: number of child changes.
    pub cversion: i32,
    /// Session id owning an ephemeral node, 0 otherwise.
    pub ephemeral_owner: i64,
    /// Number of children.
    pub num_children: i32,
    /// Data length in bytes.
    pub data_length: i32,
    /// Creation time, ms since the epoch (0 when the client library gives none).
    pub ctime: i64,
    /// Time of the last data change, ms since the epoch (0 when the client
    /// library gives none).
    pub mtime: i64,
}

/// A successful reply.
#[derive(Clone, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum Reply {
    /// The node was created. `path` is the actual path (with the sequence suffix).
    /// `stat` is `None` when the client library does not return it (the blocking
    /// `zookeeper` crate); the core then fetches it.
    Created {
        /// Actual path.
        path: String,
        /// The new node's stat, when known.
        stat: Option<Stat>,
    },
    /// Child names (not paths), in any order.
    Children(Vec<String>),
    /// A node's data and stat.
    Data {
        /// Data.
        data: Vec<u8>,
        /// Stat.
        stat: Stat,
    },
    /// The node's stat after `setData`.
    Stat(Stat),
    /// The node was deleted.
    Deleted,
    /// Every op of a multi succeeded, with one result per op.
    Multi(Vec<MultiResult>),
    /// The reply to [`Op::RemoveWatch`] (sent whatever the outcome).
    WatchRemoved,
    /// The reply to [`Op::Sync`].
    Synced,
}

// A failed multi is `Err(ZkError::MultiFailed { index, error })`, the first failing op.

/// A ZooKeeper error code, as far as locks distinguish them.
#[derive(Clone, PartialEq, Eq, Hash, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ZkError {
    /// The node (or for create, its parent) does not exist.
    #[error("no node")]
    NoNode,
    /// The node already exists.
    #[error("node exists")]
    NodeExists,
    /// The node has children.
    #[error("node not empty")]
    NotEmpty,
    /// Version mismatch.
    #[error("bad version")]
    BadVersion,
    /// Ephemeral nodes may not have children.
    #[error("no children for ephemerals")]
    NoChildrenForEphemerals,
    /// The connection was lost; the outcome of the request is unknown.
    #[error("connection loss")]
    ConnectionLoss,
    /// The request timed out; the outcome is unknown.
    #[error("operation timeout")]
    OperationTimeout,
    /// The session expired.
    #[error("session expired")]
    SessionExpired,
    /// The client is closed.
    #[error("client closed")]
    Closed,
    /// Invalid arguments (e.g. a bad path).
    #[error("bad arguments")]
    BadArguments,
    /// Not authorised.
    #[error("not authorised")]
    NoAuth,
    /// An op inside a `multi` failed; nothing was applied.
    #[error("multi op {index} failed: {error}")]
    MultiFailed {
        /// Index of the failing op.
        index: u32,
        /// Its error.
        error: Box<ZkError>,
    },
    /// The operation is not implemented (ZooKeeper's `UNIMPLEMENTED`), or the
    /// binding's client cannot send it (no `multi`, say): final, never retried.
    /// What needs it (fenced writes, sections, lock-delay) fails at once.
    #[error("operation not implemented by the client or server")]
    Unimplemented,
    /// The server refused the session's credentials (ZooKeeper's `AUTHFAILED`,
    /// answering `addAuth`): final. Bindings whose client reports it on a
    /// request map it to [`NoAuth`](ZkError::NoAuth).
    #[error("authentication failed")]
    AuthFailed,
    /// Anything else, with the client's description.
    #[error("zookeeper error: {0}")]
    Other(String),
}

impl ZkError {
    /// The error a reply of the wrong kind (e.g. data for a listing: a binding
    /// that mixed up its replies) stops a task with.
    pub(crate) fn unexpected_reply() -> ZkError {
        ZkError::Other("unexpected reply".into())
    }

    /// Whether the outcome of the request is unknown (it may or may not have been applied).
    pub fn is_connection_loss(&self) -> bool {
        matches!(self, ZkError::ConnectionLoss | ZkError::OperationTimeout)
    }

    /// Whether the server itself answered with this error, so it heard the request
    /// (and from the session): what an adapter's last-contact time may count,
    /// beside successful replies ([`SessionEvent::Disconnected`]).
    pub fn is_from_server(&self) -> bool {
        match self {
            ZkError::NoNode
            | ZkError::NodeExists
            | ZkError::NotEmpty
            | ZkError::BadVersion
            | ZkError::NoChildrenForEphemerals
            | ZkError::NoAuth
            | ZkError::AuthFailed => true,
            ZkError::MultiFailed { error, .. } => error.is_from_server(),
            _ => false,
        }
    }
}

/// What a watch reported.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[non_exhaustive]
pub enum WatchKind {
    /// The node was created.
    NodeCreated,
    /// The node was deleted.
    NodeDeleted,
    /// The node's data changed.
    NodeDataChanged,
    /// The node's children changed.
    NodeChildrenChanged,
}

/// A change of the ZooKeeper session, as the adapter's client reports it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[non_exhaustive]
pub enum SessionEvent {
    /// Connected (first time or again). A `session_id` different from the previous
    /// one means the old session is gone for us: every lock of the old session is
    /// lost, and, since the server may still hold that session (a client that moved
    /// on without being told it expired), the old session's nodes are deleted from
    /// the new one, as after [`SessionEvent::Abandoned`].
    Connected {
        /// The session id now in use.
        session_id: i64,
    },
    /// The connection is lost. Adapters must report this no later than 2/3 of the
    /// session timeout after the last contact with the server, so that holders hear
    /// of it before the server can expire the session.
    ///
    /// `since_contact` says how long before this event the server last heard from
    /// the session, as far as the adapter can tell: the time since it *sent* the
    /// newest request that was answered (a ping counts; a watch notification does
    /// not, since the server sends those without hearing from us), or any longer
    /// time when it cannot tell (an overestimate is safe, an underestimate is not).
    /// The server cannot expire the session before a session timeout has passed
    /// since then, so the core reports held locks `Lost` a safety margin before that
    /// ([`Config::lost_window`](crate::Config::lost_window)).
    Disconnected {
        /// Time since the last contact the server is known to have received.
        since_contact: Duration,
    },
    /// The server expired the session: its ephemeral nodes are gone.
    Expired,
    /// The client gave the session up without the server having ended it (the
    /// blocking binding replaces a client that its `zookeeper` crate closed for
    /// good, or that stayed silent past the session timeout). Every lock ends as
    /// after an expiry, but the server may keep the
    /// session, and our nodes in the queues, for up to a session timeout: the core
    /// deletes them from the next session as soon as there is one. They are found
    /// by path and by the attempt id in their names, so no node of another session
    /// is ever touched.
    Abandoned,
    /// The client was closed for good; no further requests can be sent.
    Closed,
}

/// Everything the adapter feeds into [`Session::handle_input`](crate::Session::handle_input).
#[derive(Clone, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum Input {
    /// The outcome of a request the core emitted.
    Reply {
        /// The request's id.
        request: RequestId,
        /// Its outcome.
        result: Result<Reply, ZkError>,
    },
    /// A one-shot watch fired.
    Watch {
        /// The watched node's path.
        path: String,
        /// What happened.
        kind: WatchKind,
    },
    /// The session changed state.
    Session(SessionEvent),
}
