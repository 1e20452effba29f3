//! The shared conformance suite (lock-conformance), against lock-zookeeper and real
//! ZooKeeper servers: every test.

mod common;

lock_conformance::conformance_tests!(common::env().under_load(), [all]);
