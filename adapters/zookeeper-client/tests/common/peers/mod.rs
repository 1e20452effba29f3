//! Interop harness: real peer clients (Apache Curator in a JVM, kazoo in Python) driven
//! line by line, zklock workers, and the scenarios and the counter workload that the
//! interop tests run against both peers.
//!
//! The peers are `tests/peers/CuratorPeer.java` (compiled here with `javac` against
//! Debian's Curator 5.4 jars) and `tests/peers/kazoo_peer.py` (Debian's kazoo 2.8 under
//! `/usr/bin/python3`). Both speak the same protocol (described at the top of each):
//! commands `<slot> <op> [args]` on stdin, replies `<slot> <WORD> [args]` on stdout, one
//! thread per slot, so one process can hold a lock in one slot while it waits or tries
//! in another. A missing installation fails the test with the fix in the message.
//!
//! The counter workload: every participant loops take-lock / register under
//! `<root>/inside` / non-atomic read-sleep-write of `<root>/counter` / leave / release.
//! An exclusive holder registers `w-...` and finds an overlap if anyone else is inside;
//! a reader registers `r-...` and finds one if a `w-...` is inside (or the counter
//! changed while it read). Of two overlapping sections the later one to register
//! always sees the earlier, so no overlap goes unseen; lost updates show in the counter.
//! The read/write workload runs writers only first, then readers and writers (see
//! [`counter_workload`]).

mod counter;
mod election;
mod process;
mod scenarios;
mod zklock_side;

// Each test binary uses a different part of the harness (hence `common`'s
// `allow(dead_code)`); the re-exports follow the same rule.
#[allow(unused_imports)]
pub use counter::{counter_workload, log_section, start_fleet, Tally, Workload, RW_PHASES};
#[allow(unused_imports)]
pub use election::{mixed_election_in_turn, Candidate, MixedElection};
#[allow(unused_imports)]
pub use process::{go_peer_binary, pypi_kazoo_python, Kind, Library, Peer};
#[allow(unused_imports)]
pub use scenarios::{mutex_handoff, rwlock_exclusion};
#[allow(unused_imports)]
pub use zklock_side::{
    assert_node, delivered, node_name, received, within, zk_lock, zk_start_lock, zk_try,
};
