//! The shared conformance suite (lock-conformance), against lock-zookeeper and real
//! ZooKeeper servers: every test.

use lock_conformance::{Style, ZkEnv};

/// lock-zookeeper on real ZooKeeper, the suite calling the blocking API. An
/// uncontended acquire + release costs 4 requests: create, getChildren, a getData
/// of our node without a watch (the fencing token: the crate's create returns no
/// Stat), delete.
///
/// An uncontended acquisition takes 2 round trips: the `zookeeper` crate gives no
/// order between calls from different threads, so the binding sends the
/// `getChildren` (with the `getData`) only once the `create` is answered
/// (`driver/ordering.rs`).
fn env() -> ZkEnv {
    ZkEnv::with_options("lock-zookeeper", Style::Blocking, 4, |cluster, options| {
        lock_zookeeper::builder(cluster).options(options).connect()
    })
    .round_trips_per_acquire(2)
}

lock_conformance::conformance_tests!(env().under_load(), [all]);
