//! The shared conformance suite (lock-conformance), against lock-zookeeper-async
//! and real ZooKeeper servers (lock-testkit).

use lock_conformance::{Capability, Style, ZkEnv};

/// create2 (the Stat comes with it) + getChildren, pipelined; delete.
const REQUESTS_PER_CYCLE: u64 = 3;

/// A tokio runtime of its own per test (2 workers), which runs the driver and
/// zookeeper-async's tasks while the suite's threads wait on the server.
fn env() -> ZkEnv {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    ZkEnv::with_options(
        "lock-zookeeper-async",
        Style::Async,
        REQUESTS_PER_CYCLE,
        move |cluster, options| {
            rt.block_on(
                lock_zookeeper_async::builder(cluster)
                    .options(options)
                    .connect(),
            )
        },
    )
    // zookeeper-async has no `multi`: the binding refuses what needs it
    // (tests/refusals.rs), and the suite's tests of it say `not applicable`.
    .without(Capability::Multi)
    // zookeeper-async's sockets keep Nagle's algorithm: the suite's nodelay
    // tests say `not applicable`.
    .without(Capability::Nodelay)
    // Its crate hides when it last heard the server and notices silence late:
    // a held lock does not outlive a cut of 0.8 T, which the availability tests
    // of `full_tolerance` make.
    .without(Capability::FullTolerance)
    // It reads the servers' `conf` only to work out its session timeout: no
    // server check, no ServerHazard event.
    .without(Capability::ServerChecks)
}

lock_conformance::conformance_tests!(
    env(),
    [
        hold_replies,
        watchers,
        request_count,
        ensemble,
        processes,
        connect_failures,
        connect_options
    ]
);
