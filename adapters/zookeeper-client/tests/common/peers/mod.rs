//! Interop harness: real peer clients (Curator in a JVM, kazoo in Python, go-zookeeper)
//! driven line by line, zklock workers, and the scenarios and workloads the interop
//! tests run against each peer.
//!
//! The peers (`tests/peers/CuratorPeer.java`, `tests/peers/kazoo_peer.py`,
//! lock-testkit's `peers/go_peer.go`) speak one protocol, described at the top of
//! each: commands `<slot> <op> [args]` on stdin, replies `<slot> <WORD> [args]` on
//! stdout, one thread per slot, so one process can hold in one slot while it waits in
//! another.

// Each test binary uses a different part of the harness (hence `common`'s
// `allow(dead_code)`); the re-exports follow the same rule.
#![allow(unused_imports)]

mod counter;
mod election;
mod process;
mod scenarios;
mod zklock_side;

pub use counter::{counter_workload, start_fleet, RW_PHASES};
pub use election::mixed_election_in_turn;
pub use process::{Kind, Library, Peer};
pub(crate) use scenarios::interop_tests;
pub use scenarios::{meet, mutex_handoff, rwlock_exclusion};
pub use zklock_side::{delivered, node_name, received, within, zk_refused, zk_start_lock};
