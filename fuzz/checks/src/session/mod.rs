//! The `session` fuzz target's input and checks: arbitrary user calls, replies, watch
//! firings, session changes and time steps fed into one [`lock_core::Session`]; the
//! checks are listed in `fuzz/README.md`.
//!
//! The harness plays the server with lock-sim's ZooKeeper model ([`lock_sim::ZkModel`],
//! wrapped in a world, `world.rs`, that knows which session is ours and holds the watch
//! firings until a step delivers them). Most steps keep that world *honest* (FIFO
//! replies computed from it, truthful watch firings, expiry only while the client is
//! disconnected); others lie (crafted replies, spurious deletions, an admin deleting
//! our node), and from then on only the checks that hold against any server run.

use lock_core::LockState::Waiting;
use lock_core::{
    AttemptId, Config, CreateMode, Grant, Leader, LockEvent, LockId, LockState, MultiOp, Recipe,
    Request, RequestId, Session, Timestamp,
};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write as _;
use std::time::Duration;

/// Lock directories the fuzzer picks from: `/a` is an ancestor of `/a/b` (so one lock
/// directory holds another's container as a foreign child).
pub const DIRS: [&str; 4] = ["/a", "/a/b", "/locks/job", "/x"];

/// The crash-detection marker's name inside a lock directory.
const SECTION_MARKER: &str = "zkl-section";

/// Where fenced writes write (outside every lock directory).
const DATA_DIR: &str = "/data";

/// How long `settle` lets virtual time run for retries and polls.
const SETTLE_HORIZON: Duration = Duration::from_secs(5);

mod input;
pub use input::*;

mod world;
use world::{name_of, parent_of, World};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Conn {
    NoSession,
    Connected(i64),
    Disconnected(i64),
    Closed,
}

/// A task's state as its events tell it: lock-core's own [`LockState`] (an
/// observer, revocation, inspection or scan stays `Waiting`), `None` once it has
/// had its terminal event.
type TaskState = Option<LockState>;

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
    recipe: Recipe,
    try_only: bool,
    revocable: bool,
    detect_crashes: bool,
    max_hold: Option<Duration>,
    deadline: Option<Timestamp>,
    state: TaskState,
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
    world: World,
    honest: bool,
    locks: Vec<MLock>,
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
mod detect;

mod checks;
mod outputs;
mod running;
mod serving;
mod steps;

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
        let mut world = World::new(case.seq_start.value());
        world
            .create(lock_sim::NO_SESSION, DATA_DIR, b"", CreateMode::Persistent)
            .expect("a fresh server takes /data");
        Harness {
            s: Session::new(config),
            case_stat_on_create: case.stat_on_create,
            reverse_listings: case.reverse_listings,
            now: Timestamp::ZERO,
            conn: Conn::NoSession,
            world,
            honest: true,
            locks: Vec::new(),
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

    /// The index of task `id` in `locks`, if this session started it.
    fn task(&self, id: LockId) -> Option<usize> {
        self.locks.iter().position(|l| l.id == id)
    }

    fn add_task(&mut self, id: LockId, kind: TaskKind, dir: String) -> usize {
        check!(self, self.task(id).is_none(), "id {id} returned twice");
        let i = self.locks.len();
        self.locks.push(MLock {
            id,
            kind,
            dir,
            recipe: Recipe::Write,
            try_only: false,
            revocable: false,
            detect_crashes: false,
            max_hold: None,
            deadline: None,
            state: Some(Waiting),
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
}

fn peer_attempt(a: u8) -> AttemptId {
    AttemptId(0xfeed_0000_0000_0000_0000_0000_0000_0000 | u128::from(a)).as_uuid_v4()
}

/// What a case came to (for tests that build cases by hand).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// Acquisitions failed with `FailReason::Deadlock`.
    pub deadlock_failures: usize,
    /// Inspections that reported participants.
    pub inspections: usize,
    /// Scans that reported.
    pub scans: usize,
    /// Cycles the scans found.
    pub scan_cycles: usize,
    /// Events a holder hears while it holds (sections, fenced writes, revocation
    /// requests, resumptions), each checked against its lock's state.
    pub holder_events: usize,
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
