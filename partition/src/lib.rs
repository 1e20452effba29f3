//! Jepsen-style partition tests of zklock (dev-only).
//!
//! A 3-server ZooKeeper ensemble and contender processes, each in a network
//! namespace of its own ([`lock_testkit::NetLab`]), contend for shared lock
//! paths: zklock over both bindings (the `contender` program of this crate) beside
//! Curator and kazoo (`contenders/`). Each prints a history line per event
//! ([`history`]); the test cuts the network in the shapes of a real partition and
//! [`check`] judges the merged history.
//!
//! The tests run as root (`scripts/test.sh` installs iproute2 and nftables):
//! `tests/contenders.rs` runs every contender without faults, `tests/partition.rs`
//! cuts the network in four shapes (its docs give the knobs); the bench
//! `tolerance` measures how long a held lock survives restarts and cuts.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod check;
pub mod contenders;
pub mod history;
