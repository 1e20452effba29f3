//! The shared conformance suite (lock-conformance), against lock-zookeeper and real
//! ZooKeeper servers: every test.

mod common;

lock_conformance::conformance_tests!(
    common::env().under_load(),
    [
        hold_replies,
        watchers,
        request_count,
        ensemble,
        load,
        processes,
        connect_failures,
        nodelay,
        full_tolerance,
        connect_options,
        server_checks,
        multi
    ]
);
