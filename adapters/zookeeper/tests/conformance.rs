//! The shared conformance suite (lock-conformance), against lock-zookeeper and real
//! ZooKeeper servers.

mod common;

lock_conformance::conformance_tests!(common::Blocking);
