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
mod owner;
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

pub use break_lock::BreakOutcome;
pub use contact::ServerRole;
pub use deadlock::WaitFor;
pub use event::{FailReason, FencedError, Grant, Leader, LockEvent, LostReason, UsageError};
pub use ids::{FencingToken, LockId};
pub use names::{AttemptId, NameScheme, NodeKind};
pub use output::{Output, Progress, QueuePlace};
pub use participants::{CycleNode, Participant, Participants};
pub use path::validate_lock_path;
pub use proto::{
    CreateMode, Input, MultiOp, MultiResult, Op, Reply, Request, RequestId, SessionEvent, Stat,
    WatchKind, WatchType, ZkError, ACL_ALLOWANCE,
};
pub use session::{LockState, Session};
pub use spec::{Config, LockSpec, Recipe, DEFAULT_SESSION_TIMEOUT, MAX_DATA_LEN};
pub use stats::Stats;
pub use time::Timestamp;
