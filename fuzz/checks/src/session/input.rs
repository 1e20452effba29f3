//! The `session` target's input: the user calls, replies, watch firings, session
//! changes and time steps a fuzz case is made of.

use super::{DATA_DIR, SECTION_MARKER};
use arbitrary::Arbitrary;
use lock_core::{CreateMode, MultiOp, NameScheme, NodeKind, WatchKind, ZkError, MAX_DATA_LEN};

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
    pub(super) fn value(self) -> i32 {
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
        kind: NodeKind,
        /// Its attempt id (small: peers are few).
        attempt: u8,
    },
    /// A peer node goes away (release or its session died): watches fire.
    PeerLeave(u8),
    /// The connection comes back (same session if it lives, unless `new_session`;
    /// the same session's watches are set again with `SetWatches`).
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
    /// One pass of the container manager: it reaps the empty containers that had
    /// children (a parent emptied by the pass goes in the next one).
    Reap,
    /// A watch firing the server did not send.
    Spurious {
        /// Which path.
        path: PathPick,
        /// Which kind.
        kind: WatchKind,
    },
    /// The server expires our session (honest only while disconnected; a connected
    /// client loses its connection with it).
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
    /// `Session::deadlocks` under a root: one of `SCAN_ROOTS` (or an arbitrary path).
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
    /// `detect_deadlocks(after)`: short (true) or long (false), see `detect_after`.
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
    pub(super) fn op(&self) -> MultiOp {
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
    /// One of [`DIRS`](super::DIRS).
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
    pub(super) fn scheme(self) -> NameScheme {
        match self {
            SchemePick::Native => NameScheme::Native,
            SchemePick::Curator => NameScheme::Curator,
            SchemePick::Kazoo => NameScheme::Kazoo,
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
    pub(super) fn bytes(&self) -> Vec<u8> {
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
    pub(super) fn error(self) -> ZkError {
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
        kind: NodeKind,
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

/// Names that are no participants (names::parse_participant): a sequential name
/// of no known scheme counts as an exclusive participant, so none of these ends in
/// a server sequence except inside zklock's own `zkl-` namespace.
pub(super) const FOREIGN_NAMES: [&str; 8] = [
    // A crash marker left by a holder of another client that died in its section.
    SECTION_MARKER,
    "readme",
    "lock-000000001x",
    "zkl-xyz-write-0000000001",
    "_c_short-lock-",
    "leases",
    "00000000000000000000000000000000__lock__0000000001x",
    // A kazoo semaphore lease whose uuid ends in ten decimal digits.
    "3f2504e04f8911d39a0c030123456789",
];
