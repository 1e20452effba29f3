//! # lock-core: ZooKeeper lock protocols as sans-IO state machines
//!
//! Every recipe of zklock (exclusive/write, read, semaphore, leader) lives here as
//! pure logic: it turns inputs (replies, watch firings, session changes, the passing
//! of time) into outputs (ZooKeeper requests to send, events for the user). There is
//! no I/O, no async, no clock and no OS randomness: the same inputs always give the
//! same outputs, which is what makes the protocols testable in simulation and fuzzable.
//!
//! The adapters (`lock-zookeeper-client`, `lock-zookeeper`, `lock-sim`) bind a
//! [`Session`] to a ZooKeeper client. See [`Session`] for the calling contract.
//!
//! ## Markers in a lock directory
//!
//! Besides the participants' ephemeral nodes, zklock keeps at most two persistent
//! markers in a lock directory, both named `zkl-...` (which no listing counts as a
//! participant, see [`names`]), both written only in a `multi` that checks the
//! writer's own lock node, both deleted in one `multi` with the node by a clean
//! release, so that a marker left behind means an unclean end:
//!
//! * `zkl-section` ([`LockSpec::detect_crashes`]): exists while a holder is inside a
//!   critical section; the next grant says [`Grant::previous_holder_crashed`].
//! * `zkl-delay` ([`LockSpec::lock_delay`]): names the node of the lock-delay holder
//!   for its whole hold, rather than being left by each clean release: a newcomer
//!   could not tell a clean release from a lock never taken, and every lock
//!   directory would keep a node for ever.
//!
//! A third persistent node, `zkl-broken`, is no marker of a hold but a record: an
//! operator's break ([`Session::break_node`]) writes it in the `multi` that deletes
//! the broken node (which node, its token, by whom; the server's `mtime` says when),
//! and an inspection reports it ([`Participants::last_break`]). The next break
//! overwrites it; nothing else removes it.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod acquisition;
mod break_lock;
pub mod contact;
mod ctx;
pub mod deadlock;
mod event;
mod ids;
mod inspect;
mod lease_inspect;
mod limits;
pub mod names;
mod observer;
mod oneshot;
mod output;
pub mod owner;
mod participants;
mod path;
mod proto;
mod requests;
mod revoke;
mod rng;
mod session;
mod spec;
mod stats;
mod time;
mod timers;
mod watches;

pub use break_lock::BreakRecord;
pub use contact::ServerRole;
pub use deadlock::WaitFor;
pub use event::{
    BreakOutcome, FailReason, FencedError, Grant, Leader, LockEvent, LostReason, UsageError,
};
pub use ids::{FencingToken, LockId};
pub use names::{AttemptId, NameScheme, NodeKind};
pub use output::{Output, Progress, QueuePlace};
pub use participants::{CycleNode, LastBreak, Participant, Participants};
pub use path::validate_lock_path;
pub use proto::{
    CreateMode, Input, MultiOp, MultiResult, Op, Reply, Request, RequestId, SessionEvent, Stat,
    WatchKind, WatchType, ZkError, ACL_ALLOWANCE,
};
pub use session::{LockState, Session};
pub use spec::{Config, LockSpec, Recipe, DEFAULT_SESSION_TIMEOUT, MAX_DATA_LEN};
pub use stats::Stats;
pub use time::Timestamp;
