//! Jepsen-style partition tests of zklock (dev-only).
//!
//! A 3-server ZooKeeper ensemble and contender processes, each in a network
//! namespace of its own ([`lock_testkit::NetLab`]), contend for shared lock
//! paths: zklock over both bindings (the `contender` program of this crate) beside
//! Curator and kazoo (`contenders/`). Each prints a history line per event
//! ([`history`]); the test cuts the network in the shapes of a real partition and
//! [`check`] judges the merged history.
//!
//! The tests (as root; `scripts/test.sh` installs iproute2 and nftables):
//! `tests/contenders.rs` runs every contender without faults,
//! `tests/partition.rs` cuts the network in four shapes for each binding and
//! prints the margins between each cut-off holder's `Lost` (and its end of
//! trust) and the next grant, min/median/max per shape and binding. For ten
//! faults of each shape and binding, with holders busy reading:
//!
//! ```text
//! ZKLOCK_PARTITION_ROUNDS=10 ZKLOCK_PARTITION_WORK=reads \
//!     cargo test -p lock-partition --test partition -- --nocapture
//! ```
//!
//! (`ZKLOCK_PARTITION_WORK=idle` or `writes` for idle holders, or holders that
//! also make fenced writes.)

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod check;
pub mod contenders;
pub mod history;
