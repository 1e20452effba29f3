//! The `session` fuzz target's input and checks: arbitrary user calls, replies, watch
//! firings, session changes and time steps fed into one [`lock_core::Session`].
//!
//! Shared verbatim by the cargo-fuzz target (`fuzz/fuzz_targets/session.rs`) and the
//! corpus replay test of the workspace (`core/tests/fuzz_corpus_replay.rs`), so it
//! depends only on `lock_core` and `arbitrary`.
//!
//! The harness plays the server with a small in-memory ZooKeeper (a "world": nodes,
//! sequence counters, one-shot data watches, sessions). Most steps keep that world
//! *honest* (FIFO replies computed from it, truthful watch firings, expiry only while
//! the client is disconnected); others lie (crafted replies to any request, spurious
//! deletions, an admin deleting our node). Checks:
//!
//! * always: no panic; every acquisition (and observer, and revocation) ends in
//!   exactly one terminal event and nothing follows it; event order follows the lock's life; no request outside the
//!   lock directories (containers: the directories and their ancestors), no deletion
//!   of a node that is not ours; requests only while connected; no trusted hold
//!   while not connected; `Acquired` carries the current session; `state()` agrees
//!   with the events; usage errors are the documented ones; stale and unknown
//!   replies are counted; `handle_timeout` leaves nothing due; after cancelling
//!   everything and serving honestly the session is idle; after `Closed`, every
//!   acquisition has ended.
//! * while the world is honest: a trusted holder's node exists, is owned by the
//!   current session, carries the token, and fewer than `permits` blocking
//!   participants are lower; at quiescence a waiter is really blocked and no node of
//!   an ended acquisition is left behind.
#![allow(dead_code)]

use arbitrary::{Arbitrary, Unstructured};
use lock_core::names::{format_sequence, node_prefix, parse_name, relative_sequence};
use lock_core::{
    AttemptId, Config, CreateMode, FailReason, FencedError, Grant, Input as CoreInput, Leader,
    LockEvent, LockId, LockSpec, LockState, LostReason, MultiOp, MultiResult, NameScheme, NodeKind,
    Op, Output, Reply, Request, RequestId, Session, SessionEvent, Stat, Timestamp, UsageError,
    WatchKind, ZkError, MAX_DATA_LEN,
};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write as _;
use std::time::Duration;

/// Lock directories the fuzzer picks from: `/a` is an ancestor of `/a/b` (so one lock
/// directory holds another's container as a foreign child).
pub const DIRS: [&str; 4] = ["/a", "/a/b", "/locks/job", "/x"];

/// Session id of the peers' nodes in the world (never one of ours).
const PEER_SESSION: i64 = 0x7eed;

/// The crash-detection marker's name inside a lock directory.
const SECTION_MARKER: &str = "zkl-section";

/// Where fenced writes write (outside every lock directory).
const DATA_DIR: &str = "/data";

/// How long `settle` lets virtual time run for retries and polls.
const SETTLE_HORIZON: Duration = Duration::from_secs(5);

// ---------------------------------------------------------------------------------
// Input
// ---------------------------------------------------------------------------------

/// One fuzz case.
#[derive(Arbitrary, Debug, Clone)]
pub struct SessionCase {
    /// Seed of the session's attempt ids.
    pub seed: u64,
    /// Session timeout, 1..=30 s.
    pub session_timeout_s: u8,
    /// Suspension grace, if not the session timeout (ms).
    pub grace_ms: Option<u16>,
    /// Retry interval, 0..=1000 ms.
    pub retry_ms: u16,
    /// Parent retries before giving up (0..=8).
    pub max_parent_retries: u8,
    /// Where every directory's sequence counter starts (wrap tests).
    pub seq_start: SeqStart,
    /// Whether create replies carry the new node's stat (the blocking `zookeeper`
    /// crate gives none).
    pub stat_on_create: bool,
    /// Feed `Connected` before the first step.
    pub start_connected: bool,
    /// Whether the server lists children in name order or reversed.
    pub reverse_listings: bool,
    /// How the run ends: expire first, or close directly.
    pub end_with_expiry: bool,
    /// The steps.
    pub steps: Vec<Step>,
}

/// Where a directory's sequence counter starts.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum SeqStart {
    /// At 0, as a fresh server does.
    Zero,
    /// Just below `i32::MAX`: wraps to `-2147483648` (11 characters) soon.
    NearMax,
    /// Just below -999999999: crosses from 11- to 10-character numbers.
    NearWidthChange,
    /// Anywhere.
    Raw(i32),
}

impl SeqStart {
    fn value(self) -> i32 {
        match self {
            SeqStart::Zero => 0,
            SeqStart::NearMax => i32::MAX - 2,
            SeqStart::NearWidthChange => -1_000_000_002,
            SeqStart::Raw(v) => v,
        }
    }
}

/// One step of a case. The order matters to the fuzzer: bytes run out as zeros
/// (the first variant, an honest `Settle`) and mutate to `0xff` (the last, `Disconnect`).
#[derive(Arbitrary, Debug, Clone)]
pub enum Step {
    /// The server answers everything outstanding and delivers every notification,
    /// repeatedly, without time passing (honest): reaches deep states quickly.
    Settle,
    /// `Session::acquire`.
    Acquire(AcquireStep),
    /// The server answers the next `1 + n % 8` outstanding requests, in order, from
    /// the world (honest).
    Serve(u8),
    /// `Session::release` of a known (or raw) lock id.
    Release(LockPick),
    /// `Session::cancel` of a known (or raw) lock id.
    Cancel(LockPick),
    /// Deliver a queued watch notification (late delivery is legitimate).
    Deliver(u8),
    /// Another client creates a participant node.
    PeerJoin {
        /// Directory.
        dir: u8,
        /// Its scheme.
        scheme: SchemePick,
        /// Its kind.
        kind: KindPick,
        /// Its attempt id (small: peers are few).
        attempt: u8,
    },
    /// A peer node goes away (release or its session died): watches fire.
    PeerLeave(u8),
    /// The connection comes back (same session if it lives, unless `new_session`).
    Reconnect {
        /// Open a new session (the old one is expired on the server).
        new_session: bool,
    },
    /// `Session::observe` of an election directory.
    Observe(DirPick),
    /// `Session::revoke` of a lock directory or a participant node.
    RevokeCall(RevokeTarget),
    /// `Session::open_section`.
    OpenSection(LockPick),
    /// `Session::close_section`.
    CloseSection(LockPick),
    /// `Session::fenced_write` of writes under `/data`.
    FencedWrite {
        /// Which lock.
        lock: LockPick,
        /// The writes.
        ops: Vec<FencedOpPick>,
    },
    /// The server answers the front request with an error; a connection-loss error
    /// may or may not have been applied (honest unless the error lies about state).
    Fail {
        /// The error.
        err: ErrPick,
        /// For ConnectionLoss / OperationTimeout: whether the op was applied anyway.
        applied: bool,
    },
    /// Answer any outstanding request (not necessarily the front one) with a crafted
    /// reply (dishonest).
    Craft {
        /// Index into the outstanding requests.
        pick: u8,
        /// The reply.
        reply: Crafted,
    },
    /// A reply for an id never issued (must be ignored and counted).
    Unknown {
        /// Raw id.
        id: u64,
        /// The reply.
        reply: Crafted,
    },
    /// A second reply for an id already answered or forgotten (ignored and counted).
    Stale {
        /// Index into past requests.
        pick: u16,
        /// The reply.
        reply: Crafted,
    },
    /// A non-participant child appears (a foreign name).
    Foreign {
        /// Directory.
        dir: u8,
        /// Which name.
        name: u8,
    },
    /// An administrator deletes one of our nodes (dishonest for the safety check:
    /// the core cannot know before the notification).
    AdminDeleteOwn(u8),
    /// Someone asks the holder of one of our nodes to let go (`__REVOKE__` / `unlock`).
    Revoke {
        /// Which of our nodes.
        pick: u8,
        /// Curator's marker or the recipe's.
        curator: bool,
    },
    /// The container manager reaps empty containers.
    Reap,
    /// A watch firing the server did not send.
    Spurious {
        /// Which path.
        path: PathPick,
        /// Which kind.
        kind: WatchKindPick,
    },
    /// The server expires our session (honest only while disconnected).
    ServerExpire,
    /// Report `SessionEvent::Expired` (the server expires it at the same moment).
    Expired,
    /// Report `SessionEvent::Closed`.
    Close,
    /// Time passes (ms); due timers fire.
    Advance(u16),
    /// Time jumps to the next timer.
    AdvanceToTimeout,
    /// `Session::inspect` of a lock directory (or an arbitrary path).
    Inspect(DirPick),
    /// `Session::deadlocks` under a root: one of [`SCAN_ROOTS`] (or an arbitrary path).
    Scan(DirPick),
    /// A peer node's data becomes an owner header (`OWNERS[owner % 3]`) publishing
    /// waits at the world's participant nodes `waits` (ours included), so chases and
    /// scans have owners to follow, cycles through our own owners among them.
    PeerOwner {
        /// Which peer node.
        pick: u8,
        /// Which owner.
        owner: u8,
        /// Published waits: indices into the world's participant nodes.
        waits: Vec<u8>,
    },
    /// The connection drops: the first `applied` outstanding requests were applied,
    /// the rest not; with `report_errors` the in-flight requests fail with
    /// ConnectionLoss before `Disconnected` is reported.
    Disconnect {
        /// How many of the outstanding requests the server applied.
        applied: u8,
        /// Whether to fail the in-flight requests first.
        report_errors: bool,
        /// How long before the report the server last heard from us (ms).
        since_contact_ms: u16,
    },
}

/// `acquire` arguments.
#[derive(Arbitrary, Debug, Clone)]
pub struct AcquireStep {
    /// Directory (or an arbitrary, probably invalid, path).
    pub dir: DirPick,
    /// Recipe.
    pub recipe: RecipePick,
    /// Naming scheme.
    pub scheme: SchemePick,
    /// Deadline relative to now (ms).
    pub deadline_ms: Option<u16>,
    /// `try_only`.
    pub try_only: bool,
    /// Participant data.
    pub data: DataPick,
    /// `revocable()`.
    pub revocable: bool,
    /// `detect_crashes()`.
    pub detect_crashes: bool,
    /// `max_hold()` (ms).
    pub max_hold_ms: Option<u16>,
    /// `owner(OWNERS[n % 3])`: few names, so one owner holds one lock and waits on
    /// another.
    pub owner: Option<u8>,
    /// `detect_deadlocks(after)`: short (true) or long (false), see [`detect_after`].
    pub detect: Option<bool>,
}

/// What `revoke` targets.
#[derive(Arbitrary, Debug, Clone)]
pub enum RevokeTarget {
    /// A lock directory.
    Dir(u8),
    /// A participant node of the world.
    Node(u8),
    /// Anything.
    Raw(String),
}

/// One write of a fenced multi, on `/data/<n % 4>`.
#[derive(Arbitrary, Debug, Clone)]
pub enum FencedOpPick {
    /// Create a persistent node.
    Create(u8),
    /// Set its data.
    SetData(u8, Option<i32>),
    /// Delete it.
    Delete(u8),
    /// Check it.
    Check(u8),
}

impl FencedOpPick {
    fn op(&self) -> MultiOp {
        let p = |n: &u8| format!("{DATA_DIR}/{}", n % 4);
        match self {
            FencedOpPick::Create(n) => MultiOp::Create {
                path: p(n),
                data: vec![*n],
                mode: CreateMode::Persistent,
            },
            FencedOpPick::SetData(n, version) => MultiOp::SetData {
                path: p(n),
                data: vec![*n, 1],
                version: *version,
            },
            FencedOpPick::Delete(n) => MultiOp::Delete {
                path: p(n),
                version: None,
            },
            FencedOpPick::Check(n) => MultiOp::Check {
                path: p(n),
                version: None,
            },
        }
    }
}

/// A lock directory.
#[derive(Arbitrary, Debug, Clone)]
pub enum DirPick {
    /// One of [`DIRS`].
    Known(u8),
    /// Anything.
    Raw(String),
}

/// A recipe.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum RecipePick {
    /// Exclusive.
    Write,
    /// Shared.
    Read,
    /// Semaphore with `n % 4` permits (0 is refused).
    Semaphore(u8),
    /// Leader participant.
    Leader,
}

/// A naming scheme.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum SchemePick {
    /// Native.
    Native,
    /// Curator.
    Curator,
    /// kazoo.
    Kazoo,
}

impl SchemePick {
    fn scheme(self) -> NameScheme {
        match self {
            SchemePick::Native => NameScheme::Native,
            SchemePick::Curator => NameScheme::Curator,
            SchemePick::Kazoo => NameScheme::Kazoo,
        }
    }
}

/// A participant kind.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum KindPick {
    /// Write.
    Write,
    /// Read.
    Read,
    /// Semaphore.
    Semaphore,
    /// Leader.
    Leader,
}

impl KindPick {
    fn kind(self) -> NodeKind {
        match self {
            KindPick::Write => NodeKind::Write,
            KindPick::Read => NodeKind::Read,
            KindPick::Semaphore => NodeKind::Semaphore,
            KindPick::Leader => NodeKind::Leader,
        }
    }
}

/// Participant data.
#[derive(Arbitrary, Debug, Clone)]
pub enum DataPick {
    /// Empty.
    Empty,
    /// Some bytes.
    Bytes(Vec<u8>),
    /// Curator's revocation marker.
    Revoke,
    /// One byte over the limit.
    TooLarge,
}

impl DataPick {
    fn bytes(&self) -> Vec<u8> {
        match self {
            DataPick::Empty => Vec::new(),
            DataPick::Bytes(b) => b.clone(),
            DataPick::Revoke => b"__REVOKE__".to_vec(),
            DataPick::TooLarge => vec![0; MAX_DATA_LEN + 1],
        }
    }
}

/// A lock id for release / cancel.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum LockPick {
    /// One returned by `acquire`.
    Known(u8),
    /// Any id.
    Raw(u64),
}

/// A ZooKeeper error.
#[derive(Arbitrary, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrPick {
    /// NoNode.
    NoNode,
    /// NodeExists.
    NodeExists,
    /// NotEmpty.
    NotEmpty,
    /// BadVersion.
    BadVersion,
    /// NoChildrenForEphemerals.
    NoChildrenForEphemerals,
    /// ConnectionLoss.
    ConnectionLoss,
    /// OperationTimeout.
    OperationTimeout,
    /// SessionExpired.
    SessionExpired,
    /// Closed.
    Closed,
    /// BadArguments.
    BadArguments,
    /// NoAuth.
    NoAuth,
    /// Other.
    Other,
    /// MultiFailed at op `index % 3` with a state error.
    MultiFailed {
        /// Failing op.
        index: u8,
        /// NoNode, NodeExists, BadVersion or NotEmpty.
        inner: u8,
    },
}

impl ErrPick {
    fn error(self) -> ZkError {
        match self {
            ErrPick::NoNode => ZkError::NoNode,
            ErrPick::NodeExists => ZkError::NodeExists,
            ErrPick::NotEmpty => ZkError::NotEmpty,
            ErrPick::BadVersion => ZkError::BadVersion,
            ErrPick::NoChildrenForEphemerals => ZkError::NoChildrenForEphemerals,
            ErrPick::ConnectionLoss => ZkError::ConnectionLoss,
            ErrPick::OperationTimeout => ZkError::OperationTimeout,
            ErrPick::SessionExpired => ZkError::SessionExpired,
            ErrPick::Closed => ZkError::Closed,
            ErrPick::BadArguments => ZkError::BadArguments,
            ErrPick::NoAuth => ZkError::NoAuth,
            ErrPick::Other => ZkError::Other("fuzzed".into()),
            ErrPick::MultiFailed { index, inner } => ZkError::MultiFailed {
                index: u32::from(index % 3),
                error: Box::new(match inner % 4 {
                    0 => ZkError::NoNode,
                    1 => ZkError::NodeExists,
                    2 => ZkError::BadVersion,
                    _ => ZkError::NotEmpty,
                }),
            },
        }
    }
}

/// A crafted reply, shaped from the request it answers.
#[derive(Arbitrary, Debug, Clone)]
pub struct Crafted {
    /// Success, error or a reply of the wrong type.
    pub shape: Shape,
    /// Sequence number for a created node.
    pub seq: i32,
    /// Whether `Created` carries a stat.
    pub with_stat: bool,
    /// czxid for stats.
    pub czxid: i64,
    /// ephemeralOwner for stats.
    pub owner: OwnerPick,
    /// Children for a listing.
    pub children: Vec<ChildPick>,
    /// Data for getData.
    pub data: DataPick,
}

/// The shape of a crafted reply.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum Shape {
    /// The success reply the request asks for.
    Plausible,
    /// An error.
    Error(ErrPick),
    /// A success reply of another type.
    WrongType(u8),
}

/// `ephemeralOwner` of a crafted stat.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum OwnerPick {
    /// The current session.
    Current,
    /// No owner (persistent).
    Zero,
    /// Anything.
    Raw(i64),
}

/// A child in a crafted listing.
#[derive(Arbitrary, Debug, Clone)]
pub enum ChildPick {
    /// A name with the prefix of one of our creates in this directory.
    Ours {
        /// Which create.
        pick: u8,
        /// Its sequence number.
        seq: i32,
    },
    /// A child the world has there.
    World(u8),
    /// A peer participant.
    Peer {
        /// Scheme.
        scheme: SchemePick,
        /// Kind.
        kind: KindPick,
        /// Attempt.
        attempt: u8,
        /// Sequence.
        seq: i32,
    },
    /// A known foreign (non-participant) name.
    Foreign(u8),
    /// Anything.
    Raw(String),
}

/// A path for a spurious watch firing.
#[derive(Arbitrary, Debug, Clone)]
pub enum PathPick {
    /// The path of one of our nodes.
    Ours(u8),
    /// A node of the world.
    World(u8),
    /// A lock directory.
    Dir(u8),
    /// Anything.
    Raw(String),
}

/// A watch kind.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum WatchKindPick {
    /// NodeCreated.
    Created,
    /// NodeDeleted.
    Deleted,
    /// NodeDataChanged.
    DataChanged,
    /// NodeChildrenChanged.
    ChildrenChanged,
}

impl WatchKindPick {
    fn kind(self) -> WatchKind {
        match self {
            WatchKindPick::Created => WatchKind::NodeCreated,
            WatchKindPick::Deleted => WatchKind::NodeDeleted,
            WatchKindPick::DataChanged => WatchKind::NodeDataChanged,
            WatchKindPick::ChildrenChanged => WatchKind::NodeChildrenChanged,
        }
    }
}

const FOREIGN_NAMES: [&str; 7] = [
    // A crash marker left by a holder of another client that died in its section.
    SECTION_MARKER,
    "readme",
    "lock-0000000001",
    "zkl-xyz-write-0000000001",
    "_c_short-lock-0000000001",
    "leases",
    "00000000000000000000000000000000__lock__00000000001",
];

// ---------------------------------------------------------------------------------
// The world: a small, honest ZooKeeper
// ---------------------------------------------------------------------------------

#[derive(Clone, Debug)]
struct Node {
    data: Vec<u8>,
    czxid: i64,
    mzxid: i64,
    version: i32,
    owner: i64,
    container: bool,
    had_children: bool,
}

#[derive(Clone, Debug, Default)]
struct World {
    nodes: BTreeMap<String, Node>,
    /// Next sequence number per directory (ZooKeeper's parent cversion).
    counters: BTreeMap<String, i32>,
    seq_start: i32,
    zxid: i64,
    /// One-shot data watches of our current session.
    watches: BTreeSet<String>,
    /// One-shot child watches of our current session.
    child_watches: BTreeSet<String>,
    /// Fired, not yet delivered.
    queue: VecDeque<(String, WatchKind)>,
    /// Our live session on the server, if any.
    session: Option<i64>,
    /// Every node path ever created.
    ever: BTreeSet<String>,
}

fn parent_of(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) => "/",
        Some(i) => &path[..i],
        None => "",
    }
}

fn name_of(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or("")
}

impl World {
    fn children(&self, dir: &str) -> Vec<String> {
        let prefix = if dir == "/" {
            "/".to_owned()
        } else {
            format!("{dir}/")
        };
        self.nodes
            .range(prefix.clone()..)
            .take_while(|(p, _)| p.starts_with(&prefix))
            .filter(|(p, _)| !p[prefix.len()..].contains('/'))
            .map(|(p, _)| p[prefix.len()..].to_owned())
            .collect()
    }

    fn exists(&self, path: &str) -> bool {
        path == "/" || self.nodes.contains_key(path)
    }

    fn stat(&self, path: &str) -> Stat {
        let n = &self.nodes[path];
        Stat {
            czxid: n.czxid,
            mzxid: n.mzxid,
            version: n.version,
            cversion: 0,
            ephemeral_owner: if n.container { i64::MIN } else { n.owner },
            num_children: self.children(path).len() as i32,
            data_length: n.data.len() as i32,
            ctime: 0,
        }
    }

    fn bump(&mut self, dir: &str) -> i32 {
        let start = self.seq_start;
        let c = self.counters.entry(dir.to_owned()).or_insert(start);
        let seq = *c;
        *c = c.wrapping_add(1);
        seq
    }

    fn fire(&mut self, path: &str, kind: WatchKind) {
        if self.watches.remove(path) {
            self.queue.push_back((path.to_owned(), kind));
        }
    }

    fn fire_children(&mut self, path: &str, kind: WatchKind) {
        if self.child_watches.remove(path) {
            self.queue.push_back((path.to_owned(), kind));
        }
    }

    fn create(
        &mut self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
        owner: i64,
    ) -> Result<(String, Stat), ZkError> {
        let parent = parent_of(path).to_owned();
        if parent.is_empty() || !self.exists(&parent) {
            return Err(ZkError::NoNode);
        }
        if let Some(p) = self.nodes.get(&parent) {
            if p.owner != 0 && !p.container {
                return Err(ZkError::NoChildrenForEphemerals);
            }
        }
        let sequential = matches!(mode, CreateMode::EphemeralSequential);
        let ephemeral = matches!(
            mode,
            CreateMode::Ephemeral | CreateMode::EphemeralSequential
        );
        if ephemeral && owner == 0 {
            return Err(ZkError::BadArguments);
        }
        let full = if sequential {
            // The counter moves even when the create fails below (as the server's
            // cversion does not, but it cannot fail below for a fresh suffix).
            let seq = self.bump(&parent);
            format!("{path}{}", format_sequence(seq))
        } else {
            path.to_owned()
        };
        if self.exists(&full) {
            return Err(ZkError::NodeExists);
        }
        if !sequential {
            self.bump(&parent);
        }
        self.zxid += 1;
        self.ever.insert(full.clone());
        self.nodes.insert(
            full.clone(),
            Node {
                data: data.to_vec(),
                czxid: self.zxid,
                mzxid: self.zxid,
                version: 0,
                owner: if ephemeral { owner } else { 0 },
                container: matches!(mode, CreateMode::Container),
                had_children: false,
            },
        );
        if let Some(p) = self.nodes.get_mut(&parent) {
            p.had_children = true;
        }
        self.fire_children(&parent, WatchKind::NodeChildrenChanged);
        let stat = self.stat(&full);
        Ok((full, stat))
    }

    fn delete(&mut self, path: &str, version: Option<i32>) -> Result<(), ZkError> {
        let Some(n) = self.nodes.get(path) else {
            return Err(ZkError::NoNode);
        };
        if version.is_some_and(|v| v != n.version) {
            return Err(ZkError::BadVersion);
        }
        if !self.children(path).is_empty() {
            return Err(ZkError::NotEmpty);
        }
        self.nodes.remove(path);
        self.zxid += 1;
        let parent = parent_of(path).to_owned();
        self.bump(&parent);
        self.fire(path, WatchKind::NodeDeleted);
        self.fire_children(path, WatchKind::NodeDeleted);
        self.fire_children(&parent, WatchKind::NodeChildrenChanged);
        Ok(())
    }

    fn set_data(&mut self, path: &str, data: &[u8], version: Option<i32>) -> Result<Stat, ZkError> {
        let Some(n) = self.nodes.get_mut(path) else {
            return Err(ZkError::NoNode);
        };
        if version.is_some_and(|v| v != n.version) {
            return Err(ZkError::BadVersion);
        }
        self.zxid += 1;
        n.data = data.to_vec();
        n.version = n.version.wrapping_add(1);
        n.mzxid = self.zxid;
        self.fire(path, WatchKind::NodeDataChanged);
        Ok(self.stat(path))
    }

    /// Applies `op` for `session`, as the server would.
    fn apply(&mut self, session: i64, op: &Op, stat_on_create: bool) -> Result<Reply, ZkError> {
        match op {
            Op::Create { path, data, mode } => {
                let (path, stat) = self.create(path, data, *mode, session)?;
                Ok(Reply::Created {
                    path,
                    stat: stat_on_create.then_some(stat),
                })
            }
            Op::GetChildren { path } => {
                if !self.exists(path) {
                    return Err(ZkError::NoNode);
                }
                Ok(Reply::Children(self.children(path)))
            }
            Op::WatchChildren { path } => {
                if !self.exists(path) {
                    return Err(ZkError::NoNode);
                }
                self.child_watches.insert(path.clone());
                Ok(Reply::Children(self.children(path)))
            }
            Op::GetData { path, watch } => {
                if !self.nodes.contains_key(path) {
                    return Err(ZkError::NoNode);
                }
                if *watch {
                    self.watches.insert(path.clone());
                }
                Ok(Reply::Data {
                    data: self.nodes[path].data.clone(),
                    stat: self.stat(path),
                })
            }
            Op::SetData {
                path,
                data,
                version,
            } => self.set_data(path, data, *version).map(Reply::Stat),
            Op::Delete { path, version } => self.delete(path, *version).map(|()| Reply::Deleted),
            Op::RemoveWatch { path, watch } => {
                match watch {
                    lock_core::WatchType::Children => self.child_watches.remove(path),
                    _ => self.watches.remove(path),
                };
                Ok(Reply::WatchRemoved)
            }
            Op::Multi(ops) => {
                let saved = self.clone();
                let mut results = Vec::new();
                for (index, op) in ops.iter().enumerate() {
                    let r = match op {
                        MultiOp::Create { path, data, mode } => self
                            .create(path, data, *mode, session)
                            .map(|(path, _)| MultiResult::Created { path }),
                        MultiOp::Delete { path, version } => {
                            self.delete(path, *version).map(|()| MultiResult::Deleted)
                        }
                        MultiOp::SetData {
                            path,
                            data,
                            version,
                        } => self
                            .set_data(path, data, *version)
                            .map(|stat| MultiResult::SetData { stat }),
                        MultiOp::Check { path, version } => match self.nodes.get(path) {
                            None => Err(ZkError::NoNode),
                            Some(n) if version.is_some_and(|v| v != n.version) => {
                                Err(ZkError::BadVersion)
                            }
                            Some(_) => Ok(MultiResult::Checked),
                        },
                        _ => Err(ZkError::BadArguments),
                    };
                    match r {
                        Ok(r) => results.push(r),
                        Err(e) => {
                            *self = saved;
                            return Err(ZkError::MultiFailed {
                                index: index as u32,
                                error: Box::new(e),
                            });
                        }
                    }
                }
                Ok(Reply::Multi(results))
            }
            _ => Err(ZkError::BadArguments),
        }
    }

    /// The session ends on the server: its ephemeral nodes go, its watches die.
    fn end_session(&mut self, session: i64) {
        if self.session == Some(session) {
            self.session = None;
            self.watches.clear();
            self.child_watches.clear();
        }
        let doomed: Vec<String> = self
            .nodes
            .iter()
            .filter(|(_, n)| n.owner == session && !n.container)
            .map(|(p, _)| p.clone())
            .collect();
        for p in doomed {
            let _ = self.delete(&p, None);
        }
    }

    fn reap(&mut self) {
        loop {
            let doomed: Vec<String> = self
                .nodes
                .iter()
                .filter(|(p, n)| n.container && n.had_children && self.children(p).is_empty())
                .map(|(p, _)| p.clone())
                .collect();
            if doomed.is_empty() {
                return;
            }
            for p in doomed {
                let _ = self.delete(&p, None);
                // A re-created container restarts its counter at 0.
                self.counters.insert(p, 0);
            }
        }
    }

    fn ours(&self, session: i64) -> Vec<String> {
        self.nodes
            .iter()
            .filter(|(_, n)| n.owner == session && !n.container)
            .map(|(p, _)| p.clone())
            .collect()
    }
}

// ---------------------------------------------------------------------------------
// The harness
// ---------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Conn {
    NoSession,
    Connected(i64),
    Disconnected(i64),
    Closed,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum M {
    Waiting,
    Held,
    Suspended,
    Releasing,
    Ended,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Rec {
    Write,
    Read,
    Semaphore(u32),
    Leader,
}

impl Rec {
    /// Reference: does a lower participant of `kind` count against us?
    fn blocked_by(self, kind: NodeKind) -> bool {
        match self {
            Rec::Read => kind != NodeKind::Read,
            _ => true,
        }
    }
    fn permits(self) -> usize {
        match self {
            Rec::Semaphore(n) => n as usize,
            _ => 1,
        }
    }
    /// Reference: is a participant with these lower blockers kept from holding? A
    /// semaphore also never holds beside a lower exclusive (write or leader) node.
    fn is_blocked(self, lower: &[NodeKind]) -> bool {
        let writer = lower
            .iter()
            .any(|k| matches!(k, NodeKind::Write | NodeKind::Leader));
        lower.len() >= self.permits() || (matches!(self, Rec::Semaphore(_)) && writer)
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum TaskKind {
    Lock,
    Observer,
    Revoke,
    Inspect,
    Scan,
}

struct MLock {
    id: LockId,
    kind: TaskKind,
    dir: String,
    recipe: Rec,
    try_only: bool,
    revocable: bool,
    detect_crashes: bool,
    max_hold: Option<Duration>,
    deadline: Option<Timestamp>,
    state: M,
    grant: Option<Grant>,
    granted_at: Timestamp,
    cancelled: bool,
    terminal: Option<LockEvent>,
    /// Fenced writes without an outcome yet: (write id, its request if sent).
    writes: Vec<(u64, Option<RequestId>)>,
    /// Observers: what was last reported.
    reported: Option<Option<Leader>>,
    /// `LockSpec::owner`.
    owner: Option<String>,
    /// `LockSpec::detect_deadlocks` given.
    detect: bool,
    /// The highest request id issued before the task started (inspections: only
    /// listings answered after it count).
    started_after: u64,
}

struct Harness {
    s: Session,
    case_stat_on_create: bool,
    reverse_listings: bool,
    now: Timestamp,
    conn: Conn,
    next_session: i64,
    world: World,
    honest: bool,
    locks: Vec<MLock>,
    by_id: BTreeMap<LockId, usize>,
    /// Requests the server has not answered, in send order.
    outstanding: VecDeque<Request>,
    /// Requests answered or dropped.
    past: Vec<Request>,
    max_issued: u64,
    /// Directories of our acquisitions.
    dirs: BTreeSet<String>,
    /// Directories observed or revoked (read, and revocation markers written).
    read_dirs: BTreeSet<String>,
    /// Nodes a revocation targets.
    revoke_nodes: BTreeSet<String>,
    /// Attempt ids seen in our creates, per directory, with the create prefix.
    attempts: BTreeMap<String, Vec<(AttemptId, String)>>,
    /// The user writes of every fenced write asked for.
    fenced: Vec<Vec<MultiOp>>,
    /// Multi requests the world applied.
    applied_multis: BTreeSet<RequestId>,
    last_write: u64,
    acquired_events: u64,
    stale_expected: u64,
    step: usize,
    trace: Option<String>,
    /// Inspected directories and scan roots (read without watches).
    inspected: BTreeSet<String>,
    scan_roots: BTreeSet<String>,
    /// Directories of the waits published in owner headers (where chases read).
    published_dirs: BTreeSet<String>,
    /// Honest answers to plain listings: (request, directory, children in name order).
    listings: Vec<(RequestId, String, Vec<String>)>,
    /// Honest answers to unwatched getData: (request, path, whether the node existed).
    reads: Vec<(RequestId, String, bool)>,
    outcome: Outcome,
}

macro_rules! check {
    ($h:expr, $cond:expr, $($arg:tt)+) => {
        if !$cond {
            $h.fail(format!($($arg)+));
        }
    };
}

// After `check!`: the module uses it.
#[path = "session_detect.rs"]
mod detect;
use detect::{detect_after, OWNERS};

impl Harness {
    fn new(case: &SessionCase) -> Harness {
        let mut config = Config::new(
            Duration::from_secs(1 + u64::from(case.session_timeout_s % 30)),
            case.seed,
        );
        config.suspended_grace = case.grace_ms.map(|ms| Duration::from_millis(u64::from(ms)));
        config.retry_interval = Duration::from_millis(10 + u64::from(case.retry_ms % 991));
        config.max_parent_retries = u32::from(case.max_parent_retries % 9);
        let trace = std::env::var_os("ZKLOCK_FUZZ_TRACE").map(|_| String::new());
        let mut world = World {
            seq_start: case.seq_start.value(),
            ..World::default()
        };
        let _ = world.create(DATA_DIR, b"", CreateMode::Persistent, 0);
        Harness {
            s: Session::new(config),
            case_stat_on_create: case.stat_on_create,
            reverse_listings: case.reverse_listings,
            now: Timestamp::ZERO,
            conn: Conn::NoSession,
            next_session: 0x100,
            world,
            honest: true,
            locks: Vec::new(),
            by_id: BTreeMap::new(),
            outstanding: VecDeque::new(),
            past: Vec::new(),
            max_issued: 0,
            dirs: BTreeSet::new(),
            read_dirs: BTreeSet::new(),
            revoke_nodes: BTreeSet::new(),
            attempts: BTreeMap::new(),
            fenced: Vec::new(),
            applied_multis: BTreeSet::new(),
            last_write: 0,
            acquired_events: 0,
            stale_expected: 0,
            step: 0,
            trace,
            inspected: BTreeSet::new(),
            scan_roots: BTreeSet::new(),
            published_dirs: BTreeSet::new(),
            listings: Vec::new(),
            reads: Vec::new(),
            outcome: Outcome::default(),
        }
    }

    fn fail(&self, msg: String) -> ! {
        if let Some(t) = &self.trace {
            eprintln!("{t}");
        }
        panic!(
            "contract violated at step {} (honest world: {}): {msg}",
            self.step, self.honest
        );
    }

    fn log(&mut self, f: impl FnOnce() -> String) {
        if let Some(t) = &mut self.trace {
            let _ = writeln!(t, "[{} {:?}] {}", self.step, self.now, f());
        }
    }

    fn session_id(&self) -> Option<i64> {
        match self.conn {
            Conn::Connected(s) | Conn::Disconnected(s) => Some(s),
            _ => None,
        }
    }

    fn lying(&mut self, why: &str) {
        if self.honest {
            self.log(|| format!("world no longer honest: {why}"));
        }
        self.honest = false;
    }

    fn add_task(&mut self, id: LockId, kind: TaskKind, dir: String) -> usize {
        check!(
            self,
            !self.by_id.contains_key(&id),
            "id {id} returned twice"
        );
        let i = self.locks.len();
        self.by_id.insert(id, i);
        self.locks.push(MLock {
            id,
            kind,
            dir,
            recipe: Rec::Write,
            try_only: false,
            revocable: false,
            detect_crashes: false,
            max_hold: None,
            deadline: None,
            state: M::Waiting,
            grant: None,
            granted_at: self.now,
            cancelled: false,
            terminal: None,
            writes: Vec::new(),
            reported: None,
            owner: None,
            detect: false,
            started_after: self.max_issued,
        });
        i
    }

    // ----- draining and per-output checks -----

    fn drain(&mut self) -> Vec<(LockId, LockEvent)> {
        let mut events = Vec::new();
        while let Some(out) = self.s.poll_output() {
            match out {
                Output::Request(r) => self.on_request(r),
                Output::Event { lock, event } => {
                    self.on_event(lock, &event);
                    events.push((lock, event));
                }
                Output::Progress { lock, progress } => {
                    self.log(|| format!("{lock} progress {progress:?}"))
                }
                other => self.fail(format!("unknown output {other:?}")),
            }
        }
        events
    }

    fn on_request(&mut self, r: Request) {
        self.log(|| format!("-> {:?} {:?}", r.id, r.op));
        check!(
            self,
            matches!(self.conn, Conn::Connected(_)),
            "request {r:?} emitted while {:?}",
            self.conn
        );
        check!(
            self,
            r.id.0 > self.max_issued,
            "request id {:?} reused or not increasing (max {})",
            r.id,
            self.max_issued
        );
        self.max_issued = r.id.0;
        self.check_scope(&r.op);
        self.outstanding.push_back(r);
    }

    fn in_a_dir(&self, path: &str) -> bool {
        self.dirs.contains(parent_of(path))
    }

    fn readable(&self, path: &str) -> bool {
        self.dirs.contains(path) || self.read_dirs.contains(path)
    }

    fn is_our_node(&self, path: &str) -> bool {
        let Some(p) = parse_name(name_of(path)) else {
            return false;
        };
        self.attempts
            .get(parent_of(path))
            .is_some_and(|v| v.iter().any(|(a, _)| *a == p.attempt))
    }

    fn is_marker(&self, path: &str) -> bool {
        name_of(path) == SECTION_MARKER && self.in_a_dir(path)
    }

    fn check_create(&mut self, path: &str, mode: CreateMode) {
        match mode {
            CreateMode::Container => {
                let ok = self
                    .dirs
                    .iter()
                    .any(|d| d == path || d.starts_with(&format!("{path}/")));
                check!(
                    self,
                    ok && path != "/",
                    "container {path} is neither a lock directory nor an ancestor of one"
                );
            }
            CreateMode::EphemeralSequential => {
                check!(
                    self,
                    self.in_a_dir(path),
                    "create {path} outside the lock directories"
                );
                let probe = format!("{}{}", name_of(path), format_sequence(0));
                let Some(p) = parse_name(&probe) else {
                    self.fail(format!("create prefix {path} names no known scheme"));
                };
                let dir = parent_of(path).to_owned();
                let v = self.attempts.entry(dir).or_default();
                if !v.iter().any(|(a, _)| *a == p.attempt) {
                    v.push((p.attempt, path.to_owned()));
                }
            }
            other => self.fail(format!("create {path} with mode {other:?}")),
        }
    }

    fn check_scope(&mut self, op: &Op) {
        match op {
            Op::Create { path, mode, .. } => self.check_create(path, *mode),
            Op::GetChildren { path } => check!(
                self,
                self.readable(path) || self.plain_readable(path),
                "listing of {path}, not a lock directory, inspected, scanned or chased"
            ),
            Op::WatchChildren { path } => check!(
                self,
                self.readable(path),
                "watched listing of {path}, not a lock directory"
            ),
            Op::GetData { path, watch } => {
                let participant = parse_name(name_of(path)).is_some()
                    && (self.in_a_dir(path)
                        || self.read_dirs.contains(parent_of(path))
                        || (!watch && self.plain_readable(parent_of(path))));
                check!(
                    self,
                    participant || self.is_marker(path),
                    "getData of {path}, not a participant of a lock directory"
                )
            }
            Op::Delete { path, .. } => check!(
                self,
                self.in_a_dir(path) && self.is_our_node(path),
                "delete of {path}, not a node of ours"
            ),
            Op::SetData {
                path,
                data,
                version,
            } => {
                let revocation = data == b"__REVOKE__"
                    && parse_name(name_of(path)).is_some()
                    && (self.revoke_nodes.contains(path)
                        || self.read_dirs.contains(parent_of(path)));
                // Deadlock detection publishing where an owner waits: a versioned
                // write of zklock's owner header on a node of ours.
                let publication = data.starts_with(b"\0zkl\x01")
                    && version.is_some()
                    && self.in_a_dir(path)
                    && self.is_our_node(path);
                if publication {
                    self.note_published(data);
                }
                check!(
                    self,
                    revocation || publication,
                    "setData of {path} ({data:?}) is no revocation we asked for"
                )
            }
            Op::Multi(ops) => {
                // A fenced write: a check on our node, then exactly the user's writes.
                let fenced = match ops.split_first() {
                    Some((
                        MultiOp::Check {
                            path,
                            version: None,
                        },
                        rest,
                    )) => {
                        self.is_our_node(path) && self.fenced.iter().any(|f| f.as_slice() == rest)
                    }
                    _ => false,
                };
                if fenced {
                    return;
                }
                for m in ops {
                    let ok = match m {
                        MultiOp::Check { path, .. } => {
                            self.in_a_dir(path) && self.is_our_node(path)
                        }
                        MultiOp::Delete { path, .. } => {
                            self.is_marker(path) || (self.in_a_dir(path) && self.is_our_node(path))
                        }
                        MultiOp::Create { path, mode, .. } => {
                            self.is_marker(path) && *mode == CreateMode::Persistent
                        }
                        MultiOp::SetData { path, .. } => self.is_marker(path),
                        _ => false,
                    };
                    check!(self, ok, "multi op {m:?} out of scope in {ops:?}");
                }
            }
            Op::RemoveWatch { path, watch } => check!(
                self,
                match watch {
                    lock_core::WatchType::Children => self.readable(path),
                    _ => self.in_a_dir(path) && self.is_our_node(path),
                },
                "removeWatches on {path}, not a node of ours"
            ),
            other => self.fail(format!("unknown op {other:?}")),
        }
    }

    fn world_leader(&self, dir: &str) -> Option<(String, i32)> {
        let parts: Vec<(i32, String)> = self
            .world
            .children(dir)
            .into_iter()
            .filter_map(|n| {
                parse_name(&n)
                    .filter(|p| p.kind != NodeKind::Read)
                    .map(|p| (p.seq, n))
            })
            .collect();
        let reference = parts.first()?.0;
        parts
            .into_iter()
            .min_by_key(|(s, _)| relative_sequence(*s, reference))
            .map(|(s, n)| (format!("{dir}/{n}"), s))
    }

    fn on_event(&mut self, lock: LockId, event: &LockEvent) {
        self.log(|| format!("<- {lock} {event:?}"));
        let Some(&i) = self.by_id.get(&lock) else {
            self.fail(format!("event {event:?} for unknown {lock}"));
        };
        let l = &self.locks[i];
        let (state, kind, dir) = (l.state, l.kind, l.dir.clone());
        if state == M::Ended {
            self.fail(format!(
                "{event:?} for {lock} after its terminal event {:?}",
                self.locks[i].terminal
            ));
        }
        let allowed = match (kind, event) {
            (TaskKind::Observer, LockEvent::LeaderChanged { .. }) => true,
            (TaskKind::Revoke, LockEvent::RevocationSent { .. }) => true,
            (TaskKind::Observer | TaskKind::Revoke, LockEvent::Failed(r)) => matches!(
                r,
                FailReason::Cancelled | FailReason::Closed | FailReason::Zk(_)
            ),
            (TaskKind::Inspect, LockEvent::Participants(_)) => true,
            (TaskKind::Scan, LockEvent::Deadlocks { .. }) => true,
            (TaskKind::Inspect | TaskKind::Scan, LockEvent::Failed(r)) => matches!(
                r,
                FailReason::Cancelled
                    | FailReason::Closed
                    | FailReason::Zk(_)
                    | FailReason::SessionExpired
            ),
            (
                TaskKind::Lock,
                LockEvent::LeaderChanged { .. } | LockEvent::RevocationSent { .. },
            ) => false,
            (TaskKind::Lock, _) => true,
            _ => false,
        };
        check!(self, allowed, "{event:?} for a {kind:?} task {lock}");
        let next = match kind {
            TaskKind::Lock => self.on_lock_event(i, event),
            TaskKind::Observer => {
                if let LockEvent::LeaderChanged { leader, .. } = event {
                    let prev = self.locks[i].reported.clone();
                    check!(
                        self,
                        prev.as_ref() != Some(leader),
                        "{lock} reported the same leader twice: {leader:?}"
                    );
                    if self.honest {
                        let truth = self.world_leader(&dir);
                        match (leader, &truth) {
                            (None, None) => {}
                            (Some(l), Some((path, _))) if *path == l.path => {
                                let n = &self.world.nodes[path];
                                check!(
                                    self,
                                    detect::user_data(&n.data) == l.id && n.czxid == l.token.0,
                                    "{lock} leader {l:?} but the node has data {:?} czxid {}",
                                    n.data,
                                    n.czxid
                                );
                            }
                            _ => self.fail(format!(
                                "{lock} reports leader {leader:?}, the world's is {truth:?}"
                            )),
                        }
                    }
                    self.locks[i].reported = Some(leader.clone());
                }
                if event.is_terminal() {
                    M::Ended
                } else {
                    state
                }
            }
            TaskKind::Inspect | TaskKind::Scan => {
                self.on_read_task_event(i, event);
                if event.is_terminal() {
                    M::Ended
                } else {
                    state
                }
            }
            TaskKind::Revoke => {
                if let LockEvent::RevocationSent { nodes } = event {
                    let target = self.locks[i].dir.clone();
                    for n in nodes {
                        check!(
                            self,
                            *n == target || parent_of(n) == target,
                            "{lock} revoked {n}, outside its target {target}"
                        );
                    }
                }
                if event.is_terminal() {
                    M::Ended
                } else {
                    state
                }
            }
        };
        if event.is_terminal() {
            self.locks[i].terminal = Some(event.clone());
            let pending = self.locks[i].writes.clone();
            check!(
                self,
                pending.is_empty(),
                "{lock} ended with fenced writes without outcome: {pending:?}"
            );
        }
        self.locks[i].state = next;
    }

    fn on_lock_event(&mut self, i: usize, event: &LockEvent) -> M {
        let l = &self.locks[i];
        let (lock, state, dir) = (l.id, l.state, l.dir.clone());
        let (try_only, deadline, cancelled, revocable) =
            (l.try_only, l.deadline, l.cancelled, l.revocable);
        match event {
            LockEvent::Acquired(g) => {
                check!(
                    self,
                    state == M::Waiting,
                    "Acquired for {lock} in {state:?}"
                );
                check!(
                    self,
                    matches!(self.conn, Conn::Connected(_)),
                    "Acquired for {lock} while {:?}",
                    self.conn
                );
                check!(
                    self,
                    Some(g.session_id) == self.session_id(),
                    "grant {g:?} names a session other than {:?}",
                    self.session_id()
                );
                check!(self, parent_of(&g.path) == dir, "grant {g:?} outside {dir}");
                match parse_name(name_of(&g.path)) {
                    Some(p) => check!(
                        self,
                        p.seq == g.sequence,
                        "grant {g:?}: sequence differs from the name"
                    ),
                    None => self.fail(format!("grant {g:?} is not a participant name")),
                }
                if self.locks[i].detect_crashes {
                    if self.honest {
                        let marker = self.world.exists(&format!("{dir}/{SECTION_MARKER}"));
                        check!(
                            self,
                            g.previous_holder_crashed == marker,
                            "grant {g:?} but the crash marker {}",
                            if marker { "exists" } else { "does not exist" }
                        );
                    }
                } else {
                    check!(
                        self,
                        !g.previous_holder_crashed,
                        "crash reported without crash detection"
                    );
                }
                self.acquired_events += 1;
                self.locks[i].grant = Some(g.clone());
                self.locks[i].granted_at = self.now;
                M::Held
            }
            LockEvent::Suspended => {
                check!(self, state == M::Held, "Suspended for {lock} in {state:?}");
                M::Suspended
            }
            LockEvent::Resumed => {
                check!(
                    self,
                    state == M::Suspended,
                    "Resumed for {lock} in {state:?}"
                );
                check!(
                    self,
                    matches!(self.conn, Conn::Connected(_)),
                    "Resumed while {:?}",
                    self.conn
                );
                M::Held
            }
            LockEvent::RevocationRequested => {
                check!(
                    self,
                    revocable,
                    "RevocationRequested for non-revocable {lock}"
                );
                check!(
                    self,
                    matches!(state, M::Held | M::Suspended),
                    "RevocationRequested for {lock} in {state:?}"
                );
                state
            }
            LockEvent::SectionOpened | LockEvent::SectionClosed => {
                check!(
                    self,
                    matches!(state, M::Held | M::Suspended) && self.locks[i].detect_crashes,
                    "{event:?} for {lock} in {state:?}"
                );
                if self.honest {
                    let marker = self.world.exists(&format!("{dir}/{SECTION_MARKER}"));
                    check!(
                        self,
                        marker == (*event == LockEvent::SectionOpened),
                        "{event:?} for {lock} but the marker {}",
                        if marker { "exists" } else { "does not exist" }
                    );
                }
                state
            }
            LockEvent::SectionFailed(_) => {
                check!(
                    self,
                    matches!(state, M::Held | M::Suspended) && self.locks[i].detect_crashes,
                    "{event:?} for {lock} in {state:?}"
                );
                state
            }
            LockEvent::FencedWrite { write, result } => {
                check!(
                    self,
                    matches!(state, M::Held | M::Suspended | M::Releasing),
                    "{event:?} for {lock} in {state:?}"
                );
                let Some(pos) = self.locks[i].writes.iter().position(|(w, _)| w == write) else {
                    self.fail(format!(
                        "{event:?} for a write {lock} has no outcome pending for"
                    ));
                };
                let (_, request) = self.locks[i].writes.remove(pos);
                if self.honest {
                    let applied = request.is_some_and(|r| self.applied_multis.contains(&r));
                    match result {
                        Ok(_) => {
                            check!(self, applied, "write {write} reported applied but was not")
                        }
                        Err(FencedError::NotHeld | FencedError::Write { .. }) => {
                            check!(
                                self,
                                !applied,
                                "write {write} reported failed but was applied"
                            )
                        }
                        Err(_) => {}
                    }
                }
                state
            }
            LockEvent::Lost(reason) => {
                // A release finds out that someone else deleted the node.
                let releasing = state == M::Releasing && *reason == LostReason::NodeDeleted;
                check!(
                    self,
                    matches!(state, M::Held | M::Suspended) || releasing,
                    "{event:?} for {lock} in {state:?}"
                );
                if *reason == LostReason::LeaseExpired {
                    let l = &self.locks[i];
                    check!(
                        self,
                        l.max_hold.is_some_and(|m| l.granted_at + m <= self.now),
                        "LeaseExpired at {:?}, granted at {:?} with max hold {:?}",
                        self.now,
                        l.granted_at,
                        l.max_hold
                    );
                }
                M::Ended
            }
            LockEvent::Released => {
                check!(
                    self,
                    state == M::Releasing,
                    "Released for {lock} in {state:?}"
                );
                M::Ended
            }
            LockEvent::Failed(reason) => {
                match reason {
                    FailReason::Zk(_) => check!(
                        self,
                        matches!(state, M::Waiting | M::Releasing),
                        "{event:?} for {lock} in {state:?}"
                    ),
                    _ => check!(
                        self,
                        state == M::Waiting,
                        "{event:?} for {lock} in {state:?}"
                    ),
                }
                match reason {
                    FailReason::Cancelled => check!(self, cancelled, "Cancelled without cancel"),
                    FailReason::WouldBlock => check!(self, try_only, "WouldBlock without try_only"),
                    FailReason::Revoked => check!(self, revocable, "Revoked without revocable"),
                    FailReason::Timeout => check!(
                        self,
                        deadline.is_some_and(|d| d <= self.now),
                        "Timeout at {:?} with deadline {deadline:?}",
                        self.now
                    ),
                    FailReason::Deadlock { cycle } => self.check_deadlock_victim(i, cycle),
                    _ => {}
                }
                M::Ended
            }
            other => self.fail(format!("unknown event {other:?} for {lock}")),
        }
    }

    // ----- state checks after every step -----

    fn check_state(&mut self) {
        for i in 0..self.locks.len() {
            let (id, state, kind) = (self.locks[i].id, self.locks[i].state, self.locks[i].kind);
            let expect = match (kind, state) {
                (TaskKind::Observer | TaskKind::Revoke | TaskKind::Inspect | TaskKind::Scan, _)
                | (_, M::Ended) => None,
                (_, M::Waiting) => Some(LockState::Waiting),
                (_, M::Held) => Some(LockState::Held),
                (_, M::Suspended) => Some(LockState::Suspended),
                (_, M::Releasing) => Some(LockState::Releasing),
            };
            let got = self.s.state(id);
            check!(
                self,
                got == expect,
                "state({id}) = {got:?}, events say {state:?}"
            );
            if state == M::Held {
                check!(
                    self,
                    matches!(self.conn, Conn::Connected(_)),
                    "{id} trusted while {:?}",
                    self.conn
                );
            }
        }
        check!(
            self,
            self.s.stats().acquired == self.acquired_events,
            "stats.acquired {} but {} Acquired events",
            self.s.stats().acquired,
            self.acquired_events
        );
        check!(
            self,
            self.s.stats().stale_replies >= self.stale_expected,
            "stale replies {} < the {} surely stale ones fed",
            self.s.stats().stale_replies,
            self.stale_expected
        );
        if self.conn == Conn::Closed {
            check!(
                self,
                self.s.tracked() == 0,
                "closed session still tracks tasks"
            );
        }
        if self.honest {
            self.check_safety();
        }
    }

    /// Honest world: every trusted holder really holds.
    fn check_safety(&mut self) {
        for i in 0..self.locks.len() {
            if self.locks[i].state != M::Held {
                continue;
            }
            let l = &self.locks[i];
            let g = l.grant.clone().expect("held without grant");
            let Some(node) = self.world.nodes.get(&g.path) else {
                self.fail(format!("{} trusted but its node {} is gone", l.id, g.path));
            };
            check!(
                self,
                Some(node.owner) == self.session_id() && self.world.session == self.session_id(),
                "{} trusted but {} is owned by {:#x}, session {:?}",
                l.id,
                g.path,
                node.owner,
                self.session_id()
            );
            check!(
                self,
                node.czxid == g.token.0,
                "{} token {} but czxid {}",
                l.id,
                g.token,
                node.czxid
            );
            let own = parse_name(name_of(&g.path)).expect("grant name parses");
            let blockers = self.blockers(&l.dir, l.recipe, own.attempt, own.seq);
            let kinds: Vec<NodeKind> = blockers.iter().map(|(_, k)| *k).collect();
            check!(
                self,
                !l.recipe.is_blocked(&kinds),
                "{} ({:?}) trusted holder of {} but lower blockers exist: {blockers:?}",
                l.id,
                l.recipe,
                g.path
            );
        }
    }

    /// The participants of `dir` below `seq` that count against `recipe`.
    fn blockers(
        &self,
        dir: &str,
        recipe: Rec,
        attempt: AttemptId,
        seq: i32,
    ) -> Vec<(String, NodeKind)> {
        self.world
            .children(dir)
            .into_iter()
            .filter_map(|n| {
                let p = parse_name(&n)?;
                let counts = p.attempt != attempt
                    && relative_sequence(p.seq, seq) < 0
                    && recipe.blocked_by(p.kind);
                counts.then_some((n, p.kind))
            })
            .collect()
    }

    // ----- the steps -----

    fn pick_lock(&self, p: LockPick) -> LockId {
        match p {
            LockPick::Known(i) if !self.locks.is_empty() => {
                self.locks[usize::from(i) % self.locks.len()].id
            }
            LockPick::Known(i) => LockId(u64::from(i)),
            LockPick::Raw(r) => LockId(r),
        }
    }

    fn dir_of(p: &DirPick) -> String {
        match p {
            DirPick::Known(i) => DIRS[usize::from(*i) % DIRS.len()].to_owned(),
            DirPick::Raw(s) => s.clone(),
        }
    }

    fn acquire(&mut self, a: &AcquireStep) {
        // The model knows semaphores in zklock's own layout only: one in Curator's
        // or kazoo's (a lease pool behind an internal mutex) is taken natively
        // here, and checked in lock-core's tests and the simulation instead.
        let native_semaphore;
        let a = match a.recipe {
            RecipePick::Semaphore(_) => {
                native_semaphore = AcquireStep {
                    scheme: SchemePick::Native,
                    ..a.clone()
                };
                &native_semaphore
            }
            _ => a,
        };
        let path = Self::dir_of(&a.dir);
        let data = a.data.bytes();
        let (mut spec, rec) = match a.recipe {
            RecipePick::Write => (LockSpec::write(path.clone()), Rec::Write),
            RecipePick::Read => (LockSpec::read(path.clone()), Rec::Read),
            RecipePick::Semaphore(n) => {
                let n = u32::from(n % 4);
                (LockSpec::semaphore(path.clone(), n), Rec::Semaphore(n))
            }
            RecipePick::Leader => (LockSpec::leader(path.clone(), data.clone()), Rec::Leader),
        };
        spec = spec.scheme(a.scheme.scheme()).data(data.clone());
        let deadline = a
            .deadline_ms
            .map(|ms| self.now + Duration::from_millis(u64::from(ms)));
        if let Some(d) = deadline {
            spec = spec.deadline(d);
        }
        if a.try_only {
            spec = spec.try_only();
        }
        if a.revocable {
            spec = spec.revocable();
        }
        if a.detect_crashes {
            spec = spec.detect_crashes();
        }
        let max_hold = a.max_hold_ms.map(|ms| Duration::from_millis(u64::from(ms)));
        if let Some(m) = max_hold {
            spec = spec.max_hold(m);
        }
        let owner = a
            .owner
            .map(|o| OWNERS[usize::from(o) % OWNERS.len()].to_owned());
        if let Some(o) = &owner {
            spec = spec.owner(o.clone());
        }
        if let Some(short) = a.detect {
            spec = spec.detect_deadlocks(detect_after(short));
        }
        let node_len = detect::node_data_len(a.scheme.scheme(), owner.as_deref(), &data);
        // The harness keeps the default packet limit.
        let max_data = |path: &str| Config::default().max_data_len(path).unwrap_or(0);
        // The documented refusals, in order.
        let expected_err = if self.conn == Conn::Closed {
            Some(UsageError::Closed)
        } else if let Err(e) = lock_core::validate_lock_path(&path) {
            Some(e)
        } else if node_len > max_data(&path) {
            Some(UsageError::DataTooLarge {
                len: node_len,
                max: max_data(&path),
            })
        } else if rec == Rec::Semaphore(0) {
            Some(UsageError::ZeroPermits)
        } else if rec == Rec::Leader && data.is_empty() {
            Some(UsageError::EmptyParticipant)
        } else if a.detect_crashes && !matches!(rec, Rec::Write | Rec::Leader) {
            Some(UsageError::Unsupported(
                "crash detection needs an exclusive recipe",
            ))
        } else {
            detect::detection_refusal(a, owner.as_deref(), &data)
        };
        self.log(|| format!("acquire {path} {rec:?} {a:?}"));
        let before = self.s.tracked();
        // Register the directory first: the requests of this call belong to it.
        let known_dir = self.dirs.contains(&path);
        if expected_err.is_none() {
            self.dirs.insert(path.clone());
        }
        match self.s.acquire(spec, self.now) {
            Ok(id) => {
                check!(
                    self,
                    expected_err.is_none(),
                    "acquire accepted, expected {expected_err:?}"
                );
                let i = self.add_task(id, TaskKind::Lock, path);
                let l = &mut self.locks[i];
                l.recipe = rec;
                l.try_only = a.try_only;
                l.revocable = a.revocable;
                l.detect_crashes = a.detect_crashes;
                l.max_hold = max_hold;
                l.deadline = deadline;
                l.owner = owner;
                l.detect = a.detect.is_some();
            }
            Err(e) => {
                // An owner re-entering a lock it holds is refused (the harness
                // does not model `Granting`: accept it when a live acquisition of
                // the same owner on the path could block this one).
                let self_deadlock = expected_err.is_none()
                    && matches!(&e, UsageError::SelfDeadlock { path: p, owner: o, .. }
                        if *p == path && Some(o) == owner.as_ref())
                    && !a.try_only
                    && rec.permits() == 1
                    && self.locks.iter().any(|l| {
                        l.kind == TaskKind::Lock
                            && l.dir == path
                            && l.owner == owner
                            && l.state != M::Ended
                    });
                check!(
                    self,
                    self_deadlock || Some(&e) == expected_err.as_ref(),
                    "acquire refused with {e:?}, expected {expected_err:?}"
                );
                check!(
                    self,
                    self.s.tracked() == before,
                    "a refused acquire changed the session"
                );
                if !known_dir {
                    self.dirs.remove(&path);
                }
            }
        }
        self.drain();
    }

    fn observe(&mut self, dir: &DirPick) {
        let path = Self::dir_of(dir);
        let expected_err = if self.conn == Conn::Closed {
            Some(UsageError::Closed)
        } else {
            lock_core::validate_lock_path(&path).err()
        };
        let known = self.read_dirs.contains(&path);
        if expected_err.is_none() {
            self.read_dirs.insert(path.clone());
        }
        let r = self.s.observe(&path, self.now);
        self.log(|| format!("observe {path} -> {r:?}"));
        match r {
            Ok(id) => {
                check!(
                    self,
                    expected_err.is_none(),
                    "observe accepted, expected {expected_err:?}"
                );
                self.add_task(id, TaskKind::Observer, path);
            }
            Err(e) => {
                check!(
                    self,
                    Some(&e) == expected_err.as_ref(),
                    "observe refused with {e:?}"
                );
                if !known {
                    self.read_dirs.remove(&path);
                }
            }
        }
        self.drain();
    }

    fn revoke_call(&mut self, t: &RevokeTarget) {
        let path = match t {
            RevokeTarget::Dir(i) => DIRS[usize::from(*i) % DIRS.len()].to_owned(),
            RevokeTarget::Node(i) => {
                let parts: Vec<String> = self
                    .world
                    .nodes
                    .keys()
                    .filter(|p| parse_name(name_of(p)).is_some())
                    .cloned()
                    .collect();
                if parts.is_empty() {
                    return;
                }
                parts[usize::from(*i) % parts.len()].clone()
            }
            RevokeTarget::Raw(s) => s.clone(),
        };
        let expected_err = if self.conn == Conn::Closed {
            Some(UsageError::Closed)
        } else {
            lock_core::validate_lock_path(&path).err()
        };
        if expected_err.is_none() {
            if parse_name(name_of(&path)).is_some() {
                self.revoke_nodes.insert(path.clone());
            } else {
                self.read_dirs.insert(path.clone());
            }
        }
        let r = self.s.revoke(&path, self.now);
        self.log(|| format!("revoke {path} -> {r:?}"));
        match r {
            Ok(id) => {
                check!(
                    self,
                    expected_err.is_none(),
                    "revoke accepted, expected {expected_err:?}"
                );
                self.add_task(id, TaskKind::Revoke, path);
            }
            Err(e) => check!(
                self,
                Some(&e) == expected_err.as_ref(),
                "revoke refused with {e:?}"
            ),
        }
        self.drain();
    }

    /// Expected outcome of a holder-only call (`open_section`, `close_section`,
    /// `fenced_write`) on `id`: `Ok(())` or the set of acceptable errors.
    fn holder_call_expect(&self, id: LockId, needs_detect: bool) -> Result<(), Vec<UsageError>> {
        let Some(&i) = self.by_id.get(&id) else {
            return Err(vec![UsageError::UnknownLock(id)]);
        };
        let l = &self.locks[i];
        match (l.kind, l.state) {
            (_, M::Ended) => Err(vec![
                UsageError::UnknownLock(id),
                UsageError::NotHeld(id),
                UsageError::Unsupported("not a lock acquisition"),
            ]),
            (TaskKind::Observer | TaskKind::Revoke | TaskKind::Inspect | TaskKind::Scan, _) => {
                Err(vec![UsageError::Unsupported("not a lock acquisition")])
            }
            (TaskKind::Lock, M::Held) if needs_detect && !l.detect_crashes => {
                Err(vec![UsageError::Unsupported(
                    "sections need LockSpec::detect_crashes",
                )])
            }
            (TaskKind::Lock, M::Held) => Ok(()),
            (TaskKind::Lock, _) => Err(vec![UsageError::NotHeld(id)]),
        }
    }

    fn section(&mut self, p: LockPick, open: bool) {
        let id = self.pick_lock(p);
        let expect = self.holder_call_expect(id, true);
        let r = if open {
            self.s.open_section(id, self.now)
        } else {
            self.s.close_section(id, self.now)
        };
        self.log(|| format!("section open={open} {id} -> {r:?}"));
        match (&r, &expect) {
            (Ok(()), Ok(())) => {}
            (Err(e), Err(allowed)) if allowed.contains(e) => {}
            _ => self.fail(format!(
                "section(open={open}) on {id}: {r:?}, expected {expect:?}"
            )),
        }
        self.drain();
    }

    fn fenced_write(&mut self, p: LockPick, ops: &[FencedOpPick]) {
        let id = self.pick_lock(p);
        let expect = self.holder_call_expect(id, false);
        let ops: Vec<MultiOp> = ops.iter().take(4).map(FencedOpPick::op).collect();
        self.fenced.push(ops.clone());
        let max_before = self.max_issued;
        let r = self.s.fenced_write(id, ops, self.now);
        self.log(|| format!("fenced write on {id} -> {r:?}"));
        match (&r, &expect) {
            (Ok(w), Ok(())) => {
                check!(self, *w > self.last_write, "write id {w} not increasing");
                self.last_write = *w;
                let i = self.by_id[&id];
                self.locks[i].writes.push((*w, None));
            }
            (Err(e), Err(allowed)) if allowed.contains(e) => {}
            _ => self.fail(format!("fenced_write on {id}: {r:?}, expected {expect:?}")),
        }
        self.drain();
        if let Ok(w) = r {
            // The multi this call emitted is the write's request.
            let req = self
                .outstanding
                .iter()
                .find(|q| q.id.0 > max_before && matches!(q.op, Op::Multi(_)))
                .map(|q| q.id);
            check!(self, req.is_some(), "fenced write {w} sent no multi");
            let i = self.by_id[&id];
            if let Some(e) = self.locks[i].writes.iter_mut().find(|(x, _)| *x == w) {
                e.1 = req;
            }
        }
    }

    fn release(&mut self, p: LockPick) {
        let id = self.pick_lock(p);
        let task = self
            .by_id
            .get(&id)
            .map(|&i| (self.locks[i].kind, self.locks[i].state));
        let r = self.s.release(id, self.now);
        self.log(|| format!("release {id} ({task:?}) -> {r:?}"));
        match task {
            None => check!(
                self,
                r == Err(UsageError::UnknownLock(id)),
                "release of unknown {id}: {r:?}"
            ),
            Some((_, M::Ended)) => check!(
                self,
                r == Err(UsageError::NotHeld(id)) || r == Err(UsageError::UnknownLock(id)),
                "release of ended {id}: {r:?}"
            ),
            Some((TaskKind::Lock, M::Held | M::Suspended)) => {
                check!(self, r.is_ok(), "release of held {id}: {r:?}");
                self.locks[self.by_id[&id]].state = M::Releasing;
            }
            Some(_) => check!(
                self,
                r == Err(UsageError::NotHeld(id)),
                "release of {task:?} {id}: {r:?}"
            ),
        }
        let events = self.drain();
        if matches!(task, Some((_, M::Ended))) {
            check!(
                self,
                events.iter().all(|(l, _)| *l != id),
                "events after the end of {id}"
            );
        }
    }

    fn cancel(&mut self, p: LockPick) {
        let id = self.pick_lock(p);
        let task = self
            .by_id
            .get(&id)
            .map(|&i| (self.locks[i].kind, self.locks[i].state));
        if let Some(&i) = self.by_id.get(&id) {
            if self.locks[i].state == M::Waiting {
                self.locks[i].cancelled = true;
            }
        }
        let r = self.s.cancel(id, self.now);
        self.log(|| format!("cancel {id} ({task:?}) -> {r:?}"));
        match task {
            None => check!(
                self,
                r == Err(UsageError::UnknownLock(id)),
                "cancel of unknown {id}: {r:?}"
            ),
            Some((_, M::Ended)) => check!(
                self,
                r.is_ok() || r == Err(UsageError::UnknownLock(id)),
                "cancel of ended {id}: {r:?}"
            ),
            Some((TaskKind::Lock, M::Held | M::Suspended)) => {
                check!(self, r.is_ok(), "cancel of held {id}: {r:?}");
                self.locks[self.by_id[&id]].state = M::Releasing;
            }
            Some(_) => check!(self, r.is_ok(), "cancel of {task:?} {id}: {r:?}"),
        }
        let events = self.drain();
        if matches!(task, Some((_, M::Waiting))) {
            check!(
                self,
                events.contains(&(id, LockEvent::Failed(FailReason::Cancelled))),
                "cancel of waiting {id} did not fail it: {events:?}"
            );
        }
        if matches!(task, Some((_, M::Ended))) {
            check!(
                self,
                events.iter().all(|(l, _)| *l != id),
                "events after the end of {id}"
            );
        }
    }

    fn feed(&mut self, input: CoreInput) {
        self.log(|| format!("feed {input:?}"));
        self.s.handle_input(input, self.now);
        self.drain();
    }

    fn reply(&mut self, id: RequestId, result: Result<Reply, ZkError>) {
        self.feed(CoreInput::Reply {
            request: id,
            result,
        });
    }

    fn apply(&mut self, sid: i64, r: &Request) -> Result<Reply, ZkError> {
        let mut result = self.world.apply(sid, &r.op, self.case_stat_on_create);
        if matches!(r.op, Op::Multi(_)) && result.is_ok() {
            self.applied_multis.insert(r.id);
        }
        if self.reverse_listings {
            if let Ok(Reply::Children(c)) = &mut result {
                c.reverse();
            }
        }
        result
    }

    /// The server answers the front request from the world.
    fn serve_one(&mut self) -> bool {
        let Conn::Connected(sid) = self.conn else {
            return false;
        };
        let Some(r) = self.outstanding.pop_front() else {
            return false;
        };
        let result = self.apply(sid, &r);
        self.note_read(&r, &result);
        self.past.push(r.clone());
        self.reply(r.id, result);
        true
    }

    fn fail_front(&mut self, err: ErrPick, applied: bool) {
        let Conn::Connected(sid) = self.conn else {
            return;
        };
        let Some(r) = self.outstanding.pop_front() else {
            return;
        };
        let e = err.error();
        if e.is_connection_loss() {
            if applied {
                let _ = self.apply(sid, &r);
            }
        } else {
            let truthful = self.world.clone().apply(sid, &r.op, true).err() == Some(e.clone());
            let harmless = matches!(
                e,
                ZkError::NoAuth | ZkError::BadArguments | ZkError::Other(_)
            );
            if !truthful && !harmless {
                self.lying("an error reply that lies about the state");
            }
        }
        self.past.push(r.clone());
        self.reply(r.id, Err(e));
    }

    fn crafted(&self, op: &Op, c: &Crafted) -> Result<Reply, ZkError> {
        let owner = match c.owner {
            OwnerPick::Current => self.session_id().unwrap_or(0),
            OwnerPick::Zero => 0,
            OwnerPick::Raw(o) => o,
        };
        let stat = Stat {
            czxid: c.czxid,
            mzxid: c.czxid,
            ephemeral_owner: owner,
            ..Stat::default()
        };
        match c.shape {
            Shape::Error(e) => Err(e.error()),
            Shape::WrongType(t) => Ok(match t % 6 {
                0 => Reply::Created {
                    path: format!("/x/{}", format_sequence(c.seq)),
                    stat: Some(stat),
                },
                1 => Reply::Children(vec!["stray".into()]),
                2 => Reply::Data {
                    data: c.data.bytes(),
                    stat,
                },
                3 => Reply::Stat(stat),
                4 => Reply::Deleted,
                _ => Reply::Multi(Vec::new()),
            }),
            Shape::Plausible => Ok(match op {
                Op::Create { path, mode, .. } => Reply::Created {
                    path: if *mode == CreateMode::EphemeralSequential {
                        format!("{path}{}", format_sequence(c.seq))
                    } else {
                        path.clone()
                    },
                    stat: c.with_stat.then_some(stat),
                },
                Op::GetChildren { path } | Op::WatchChildren { path } => Reply::Children(
                    c.children
                        .iter()
                        .map(|ch| self.child_name(path, ch))
                        .collect(),
                ),
                Op::GetData { .. } => Reply::Data {
                    data: match &c.data {
                        DataPick::TooLarge => b"unlock".to_vec(),
                        d => d.bytes(),
                    },
                    stat,
                },
                Op::SetData { .. } => Reply::Stat(stat),
                Op::Delete { .. } => Reply::Deleted,
                Op::Multi(ops) => Reply::Multi(
                    ops.iter()
                        .map(|m| match m {
                            MultiOp::Create { path, .. } => {
                                MultiResult::Created { path: path.clone() }
                            }
                            MultiOp::Delete { .. } => MultiResult::Deleted,
                            MultiOp::SetData { .. } => MultiResult::SetData { stat },
                            _ => MultiResult::Checked,
                        })
                        .collect(),
                ),
                _ => Reply::Deleted,
            }),
        }
    }

    fn child_name(&self, dir: &str, ch: &ChildPick) -> String {
        match ch {
            ChildPick::Ours { pick, seq } => match self.attempts.get(dir) {
                Some(v) if !v.is_empty() => {
                    let prefix = &v[usize::from(*pick) % v.len()].1;
                    format!("{}{}", name_of(prefix), format_sequence(*seq))
                }
                _ => format!("zkl-{:032x}-write-{}", 0, format_sequence(*seq)),
            },
            ChildPick::World(i) => {
                let c = self.world.children(dir);
                if c.is_empty() {
                    "empty".into()
                } else {
                    c[usize::from(*i) % c.len()].clone()
                }
            }
            ChildPick::Peer {
                scheme,
                kind,
                attempt,
                seq,
            } => peer_name(scheme.scheme(), *attempt, kind.kind(), *seq),
            ChildPick::Foreign(i) => FOREIGN_NAMES[usize::from(*i) % FOREIGN_NAMES.len()].into(),
            ChildPick::Raw(s) => s.clone(),
        }
    }

    fn craft(&mut self, pick: u8, c: &Crafted) {
        if self.outstanding.is_empty() {
            return;
        }
        let i = usize::from(pick) % self.outstanding.len();
        let r = self.outstanding.remove(i).expect("index in range");
        let result = self.crafted(&r.op, c);
        self.lying("a crafted reply");
        self.past.push(r.clone());
        self.reply(r.id, result);
    }

    fn stale_reply(&mut self, id: RequestId, op: Option<Op>, c: &Crafted) {
        if self.outstanding.iter().any(|r| r.id == id) {
            return;
        }
        let op = op.unwrap_or(Op::GetChildren { path: "/".into() });
        let result = self.crafted(&op, c);
        let before = self.s.stats().stale_replies;
        self.reply(id, result);
        self.stale_expected += 1;
        check!(
            self,
            self.s.stats().stale_replies == before + 1,
            "reply to forgotten/unknown {id:?} was not counted as stale"
        );
    }

    fn our_world_nodes(&self) -> Vec<String> {
        self.world
            .nodes
            .iter()
            .filter(|(p, n)| {
                !n.container && n.owner != PEER_SESSION && n.owner != 0 && self.in_a_dir(p)
            })
            .map(|(p, _)| p.clone())
            .collect()
    }

    fn peer_nodes(&self) -> Vec<String> {
        self.world
            .nodes
            .iter()
            .filter(|(_, n)| n.owner == PEER_SESSION)
            .map(|(p, _)| p.clone())
            .collect()
    }

    fn ensure_dir(&mut self, dir: &str) {
        let mut ds: Vec<String> = Vec::new();
        for (i, c) in dir.char_indices().skip(1) {
            if c == '/' {
                ds.push(dir[..i].to_owned());
            }
        }
        ds.push(dir.to_owned());
        for d in ds {
            if !self.world.exists(&d) {
                let _ = self.world.create(&d, b"", CreateMode::Container, 0);
            }
        }
    }

    fn deliver(&mut self, i: u8) {
        if self.world.queue.is_empty() {
            return;
        }
        let i = usize::from(i) % self.world.queue.len();
        let (path, kind) = self.world.queue.remove(i).expect("index in range");
        self.feed(CoreInput::Watch { path, kind });
    }

    fn after_session_change(&mut self) {
        // Replies to requests of the old connection are never delivered.
        let dropped: Vec<Request> = self.outstanding.drain(..).collect();
        self.past.extend(dropped);
    }

    fn disconnect(&mut self, applied: u8, report_errors: bool, since_contact_ms: u16) {
        if let Conn::Connected(sid) = self.conn {
            let mut applied = usize::from(applied);
            let mut guard = 0;
            while let Some(r) = self.outstanding.pop_front() {
                if applied > 0 {
                    applied -= 1;
                    let _ = self.apply(sid, &r);
                }
                self.past.push(r.clone());
                guard += 1;
                if report_errors && guard < 256 {
                    self.reply(r.id, Err(ZkError::ConnectionLoss));
                }
            }
            self.conn = Conn::Disconnected(sid);
        }
        self.feed(CoreInput::Session(SessionEvent::Disconnected {
            since_contact: Duration::from_millis(u64::from(since_contact_ms)),
        }));
        self.after_session_change();
    }

    fn new_session_id(&mut self) -> i64 {
        self.next_session += 1;
        self.next_session
    }

    fn reconnect(&mut self, new_session: bool) {
        if self.conn == Conn::Closed {
            return;
        }
        let sid = match (self.conn, self.world.session) {
            (Conn::Connected(s) | Conn::Disconnected(s), Some(w)) if s == w && !new_session => s,
            _ => {
                if let Some(old) = self.world.session {
                    self.world.end_session(old);
                }
                let s = self.new_session_id();
                self.world.session = Some(s);
                s
            }
        };
        self.after_session_change();
        self.conn = Conn::Connected(sid);
        self.feed(CoreInput::Session(SessionEvent::Connected {
            session_id: sid,
        }));
    }

    fn server_expire(&mut self) {
        if matches!(self.conn, Conn::Connected(_)) {
            self.lying("the server expired a session whose client is still connected");
        }
        if let Some(s) = self.world.session {
            self.world.end_session(s);
        }
    }

    fn expired(&mut self) {
        if self.conn == Conn::Closed {
            return;
        }
        if let Some(s) = self.world.session {
            self.world.end_session(s);
        }
        self.after_session_change();
        self.conn = Conn::NoSession;
        self.feed(CoreInput::Session(SessionEvent::Expired));
    }

    fn close(&mut self) {
        if let Some(s) = self.world.session {
            self.world.end_session(s);
        }
        self.after_session_change();
        self.conn = Conn::Closed;
        self.feed(CoreInput::Session(SessionEvent::Closed));
        for i in 0..self.locks.len() {
            let (id, state) = (self.locks[i].id, self.locks[i].state);
            check!(
                self,
                state == M::Ended,
                "{id} has no terminal event after Closed ({state:?})"
            );
        }
        check!(self, self.s.is_idle(), "closed session not idle");
        check!(
            self,
            self.s.in_flight() == 0,
            "closed session has requests in flight"
        );
        check!(
            self,
            self.s.poll_timeout().is_none(),
            "closed session still has timers"
        );
    }

    fn advance_to(&mut self, t: Timestamp) {
        if t > self.now {
            self.now = t;
        }
        if self.s.poll_timeout().is_some_and(|d| d <= self.now) {
            self.log(|| "handle_timeout".into());
            self.s.handle_timeout(self.now);
            self.drain();
        }
        let next = self.s.poll_timeout();
        check!(
            self,
            !matches!(next, Some(d) if d <= self.now),
            "handle_timeout({:?}) left a timer due at {next:?}",
            self.now
        );
    }

    fn run_step(&mut self, step: &Step) {
        match step {
            Step::Acquire(a) => self.acquire(a),
            Step::Release(p) => self.release(*p),
            Step::Cancel(p) => self.cancel(*p),
            Step::Observe(d) => self.observe(d),
            Step::RevokeCall(t) => self.revoke_call(t),
            Step::OpenSection(p) => self.section(*p, true),
            Step::CloseSection(p) => self.section(*p, false),
            Step::FencedWrite { lock, ops } => self.fenced_write(*lock, ops),
            Step::Serve(n) => {
                for _ in 0..=(n % 8) {
                    if !self.serve_one() {
                        break;
                    }
                }
            }
            Step::Settle => {
                for _ in 0..256 {
                    if self.serve_one() {
                        continue;
                    }
                    if self.world.queue.is_empty() {
                        break;
                    }
                    self.deliver(0);
                }
            }
            Step::Fail { err, applied } => self.fail_front(*err, *applied),
            Step::Craft { pick, reply } => self.craft(*pick, reply),
            Step::Unknown { id, reply } => {
                let id = RequestId(self.max_issued.saturating_add(1 + id % 1024));
                self.stale_reply(id, None, reply);
            }
            Step::Stale { pick, reply } => {
                if !self.past.is_empty() {
                    let r = self.past[usize::from(*pick) % self.past.len()].clone();
                    self.stale_reply(r.id, Some(r.op), reply);
                }
            }
            Step::PeerJoin {
                dir,
                scheme,
                kind,
                attempt,
            } => {
                let dir = DIRS[usize::from(*dir) % DIRS.len()];
                self.ensure_dir(dir);
                let prefix = format!(
                    "{dir}/{}",
                    node_prefix(scheme.scheme(), peer_attempt(*attempt), kind.kind())
                );
                let r = self.world.create(
                    &prefix,
                    &[*attempt],
                    CreateMode::EphemeralSequential,
                    PEER_SESSION,
                );
                self.log(|| format!("peer joins: {r:?}"));
            }
            Step::Foreign { dir, name } => {
                let dir = DIRS[usize::from(*dir) % DIRS.len()];
                self.ensure_dir(dir);
                let n = FOREIGN_NAMES[usize::from(*name) % FOREIGN_NAMES.len()];
                let _ = self
                    .world
                    .create(&format!("{dir}/{n}"), b"", CreateMode::Persistent, 0);
            }
            Step::PeerLeave(i) => {
                let peers = self.peer_nodes();
                if !peers.is_empty() {
                    let p = &peers[usize::from(*i) % peers.len()];
                    self.log(|| format!("peer leaves: {p}"));
                    let _ = self.world.delete(p, None);
                }
            }
            Step::AdminDeleteOwn(i) => {
                let ours = self.our_world_nodes();
                if !ours.is_empty() {
                    let p = ours[usize::from(*i) % ours.len()].clone();
                    self.log(|| format!("admin deletes {p}"));
                    self.lying("an admin deleted one of our nodes");
                    let _ = self.world.delete(&p, None);
                }
            }
            Step::Revoke { pick, curator } => {
                let ours = self.our_world_nodes();
                if !ours.is_empty() {
                    let p = ours[usize::from(*pick) % ours.len()].clone();
                    let marker: &[u8] = if *curator { b"__REVOKE__" } else { b"unlock" };
                    let _ = self.world.set_data(&p, marker, None);
                }
            }
            Step::Reap => self.world.reap(),
            Step::Deliver(i) => self.deliver(*i),
            Step::Spurious { path, kind } => {
                let path = match path {
                    PathPick::Ours(i) => {
                        let ours: Vec<String> = self
                            .locks
                            .iter()
                            .filter_map(|l| l.grant.as_ref().map(|g| g.path.clone()))
                            .collect();
                        if ours.is_empty() {
                            return;
                        }
                        ours[usize::from(*i) % ours.len()].clone()
                    }
                    PathPick::World(i) => {
                        let all: Vec<String> = self.world.nodes.keys().cloned().collect();
                        if all.is_empty() {
                            return;
                        }
                        all[usize::from(*i) % all.len()].clone()
                    }
                    PathPick::Dir(i) => DIRS[usize::from(*i) % DIRS.len()].to_owned(),
                    PathPick::Raw(s) => s.clone(),
                };
                let kind = kind.kind();
                if kind == WatchKind::NodeDeleted && self.world.exists(&path) {
                    self.lying("a deletion notice for a node that exists");
                }
                self.feed(CoreInput::Watch { path, kind });
            }
            Step::Disconnect {
                applied,
                report_errors,
                since_contact_ms,
            } => self.disconnect(*applied, *report_errors, *since_contact_ms),
            Step::Reconnect { new_session } => self.reconnect(*new_session),
            Step::ServerExpire => self.server_expire(),
            Step::Expired => self.expired(),
            Step::Close => self.close(),
            Step::Advance(ms) => {
                let t = self.now + Duration::from_millis(u64::from(*ms));
                self.advance_to(t);
            }
            Step::AdvanceToTimeout => {
                if let Some(t) = self.s.poll_timeout() {
                    self.advance_to(t);
                }
            }
            Step::Inspect(d) => self.read_task(TaskKind::Inspect, d),
            Step::Scan(d) => self.read_task(TaskKind::Scan, d),
            Step::PeerOwner { pick, owner, waits } => self.peer_owner(*pick, *owner, waits),
        }
    }

    /// Serves honestly until nothing is left to do but timers beyond the horizon
    /// (observers of a missing directory poll forever).
    fn settle(&mut self) {
        let horizon = self.now + SETTLE_HORIZON;
        for _ in 0..50_000 {
            if self.serve_one() {
                continue;
            }
            if !self.world.queue.is_empty() {
                self.deliver(0);
                continue;
            }
            match self.s.poll_timeout() {
                Some(t) if t <= horizon => self.advance_to(t),
                _ => return,
            }
        }
        self.fail("no quiescence after 50000 honest steps".into());
    }

    /// The end of a case: serve honestly, check what is left, cancel everything,
    /// check the session comes to rest, then close.
    fn finish(&mut self, end_with_expiry: bool) {
        self.step = usize::MAX;
        if self.conn == Conn::Closed {
            return;
        }
        if !matches!(self.conn, Conn::Connected(_)) {
            self.reconnect(false);
        }
        self.settle();
        self.check_state();
        if self.honest {
            self.check_quiescent();
        }
        let ids: Vec<LockId> = self
            .locks
            .iter()
            .filter(|l| l.state != M::Ended)
            .map(|l| l.id)
            .collect();
        for id in ids {
            self.cancel(LockPick::Raw(id.0));
        }
        self.settle();
        self.check_state();
        check!(
            self,
            self.s.tracked() == 0 && self.s.is_idle(),
            "after cancelling everything and serving honestly, {} tasks are still tracked",
            self.s.tracked()
        );
        for i in 0..self.locks.len() {
            let (id, state) = (self.locks[i].id, self.locks[i].state);
            check!(
                self,
                state == M::Ended,
                "{id} has not ended after cancel ({state:?})"
            );
        }
        if self.honest {
            let sid = self.session_id().expect("connected");
            let left = self.world.ours(sid);
            check!(
                self,
                left.is_empty(),
                "orphan nodes of ours at quiescence: {left:?}"
            );
        }
        if end_with_expiry {
            self.expired();
        }
        self.close();
    }

    /// Honest world at rest: a waiter is really blocked, every node of ours belongs
    /// to a live acquisition, revocations are done and observers report the truth.
    fn check_quiescent(&mut self) {
        let sid = self.session_id().expect("connected");
        let ours = self.world.ours(sid);
        let mut attempts: BTreeMap<AttemptId, usize> = BTreeMap::new();
        for p in &ours {
            if let Some(n) = parse_name(name_of(p)) {
                *attempts.entry(n.attempt).or_default() += 1;
            }
        }
        check!(
            self,
            attempts.values().all(|&n| n == 1),
            "duplicate nodes of one attempt at rest: {ours:?}"
        );
        let live = self
            .locks
            .iter()
            .filter(|l| l.kind == TaskKind::Lock && l.state != M::Ended)
            .count();
        check!(
            self,
            ours.len() <= live,
            "{} nodes of ours at rest but only {live} live acquisitions: {ours:?}",
            ours.len()
        );
        for l in &self.locks {
            if l.state == M::Ended {
                if let Some(g) = &l.grant {
                    if self
                        .world
                        .nodes
                        .get(&g.path)
                        .is_some_and(|n| n.owner == sid)
                    {
                        self.fail(format!("{} ended but its node {} remains", l.id, g.path));
                    }
                }
            }
            if matches!(
                l.kind,
                TaskKind::Revoke | TaskKind::Inspect | TaskKind::Scan
            ) {
                check!(
                    self,
                    l.state == M::Ended,
                    "{:?} {} still running at rest",
                    l.kind,
                    l.id
                );
            }
            if l.kind == TaskKind::Observer && l.state != M::Ended {
                let truth = self.world_leader(&l.dir).map(|(p, _)| p);
                let told = l.reported.clone().flatten().map(|x| x.path);
                check!(
                    self,
                    truth == told,
                    "observer {} at rest says {told:?}, the leader is {truth:?}",
                    l.id
                );
            }
        }
        let held: BTreeSet<String> = self
            .locks
            .iter()
            .filter(|o| o.state != M::Ended)
            .filter_map(|o| o.grant.as_ref().map(|g| g.path.clone()))
            .collect();
        for i in 0..self.locks.len() {
            let l = &self.locks[i];
            if l.kind != TaskKind::Lock || l.state != M::Waiting {
                continue;
            }
            // Its node: one of ours in its directory that no live holder has. With
            // several waiters in one directory we cannot tell whose node is whose;
            // require that at least one of the candidates is blocked.
            let mine: Vec<&String> = ours
                .iter()
                .filter(|p| parent_of(p) == l.dir && !held.contains(p.as_str()))
                .collect();
            let blocked = mine.iter().any(|p| {
                let own = parse_name(name_of(p)).expect("ours parse");
                let b = self.blockers(&l.dir, l.recipe, own.attempt, own.seq);
                l.recipe
                    .is_blocked(&b.iter().map(|(_, k)| *k).collect::<Vec<_>>())
            });
            check!(
                self,
                blocked,
                "{} waits at rest but nothing blocks it (candidates {mine:?}, dir {:?})",
                l.id,
                self.world.children(&l.dir)
            );
        }
    }
}

fn peer_attempt(a: u8) -> AttemptId {
    AttemptId(0xfeed_0000_0000_0000_0000_0000_0000_0000 | u128::from(a)).as_uuid_v4()
}

fn peer_name(scheme: NameScheme, attempt: u8, kind: NodeKind, seq: i32) -> String {
    format!(
        "{}{}",
        node_prefix(scheme, peer_attempt(attempt), kind),
        format_sequence(seq)
    )
}

/// What a case came to (for tests that build cases by hand).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// Acquisitions failed with `FailReason::Deadlock`.
    pub deadlock_failures: usize,
    /// Inspections that reported participants.
    pub inspections: usize,
    /// Scans that reported, and the cycles they found.
    pub scans: usize,
    /// Cycles the scans found.
    pub scan_cycles: usize,
}

/// Runs one case; panics on a contract violation.
pub fn check_case(case: &SessionCase) -> Outcome {
    let mut h = Harness::new(case);
    h.log(|| format!("{case:#?}"));
    if case.start_connected {
        h.reconnect(false);
    }
    for (i, step) in case.steps.iter().enumerate() {
        h.step = i;
        h.log(|| format!("STEP {step:?}"));
        h.run_step(step);
        h.check_state();
    }
    h.finish(case.end_with_expiry);
    if std::env::var_os("ZKLOCK_FUZZ_TRACE").is_some_and(|v| v == "all") {
        eprintln!("{}", h.trace.take().unwrap_or_default());
    }
    h.outcome
}

/// Decodes a case from fuzzer bytes and runs it (the fuzz target's entry point).
/// Returns whether the bytes decoded to a case (the others test nothing).
pub fn run(data: &[u8]) -> bool {
    let u = Unstructured::new(data);
    match SessionCase::arbitrary_take_rest(u) {
        Ok(case) => {
            check_case(&case);
            true
        }
        Err(_) => false,
    }
}
