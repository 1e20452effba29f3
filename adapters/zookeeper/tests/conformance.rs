//! The shared conformance suite (lock-conformance), against lock-zookeeper and real
//! ZooKeeper servers: every test.

mod common;

lock_conformance::conformance_tests!(
    common::env(),
    [
        hold_replies,
        watchers,
        request_count,
        ensemble,
        connect_failures
    ]
);
