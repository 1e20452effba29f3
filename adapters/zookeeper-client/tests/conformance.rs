//! The shared conformance suite (lock-conformance), against lock-zookeeper-client and
//! real ZooKeeper servers, on each of its runtimes: every test, once per runtime
//! (`tokio::*`, `async_std::*`, `smol::*`).
//!
//! The suite's threads await lock-client's futures on their own (they need only a
//! waker); the runtime runs the binding's driver and zookeeper-client's session
//! task, and must go on while no thread of the suite is inside it (the suite waits
//! on the server meanwhile): a multi-threaded tokio runtime, async-std's and
//! smol's global executors.

use lock_conformance::{Style, ZkEnv};
use lock_zookeeper_client::{AsyncStdRuntime, Runtime, SmolRuntime, TokioRuntime};
use std::time::Duration;

/// create + getChildren (pipelined; create returns the Stat, so the listing
/// grants), delete.
const REQUESTS_PER_CYCLE: u64 = 3;

fn builder(
    cluster: &str,
    timeout: Duration,
    runtime: impl Runtime,
) -> lock_zookeeper_client::Builder {
    lock_zookeeper_client::builder(cluster)
        .session_timeout(timeout)
        .runtime(runtime)
}

mod tokio {
    use super::*;

    /// A runtime of its own per test (2 workers), dropped with the environment.
    fn env() -> ZkEnv {
        let rt = ::tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("tokio runtime");
        let name = "lock-zookeeper-client (tokio)";
        ZkEnv::new(
            name,
            Style::Async,
            REQUESTS_PER_CYCLE,
            move |cluster, timeout| {
                let runtime = TokioRuntime(rt.handle().clone());
                rt.block_on(builder(cluster, timeout, runtime).connect())
            },
        )
        .under_load()
    }

    lock_conformance::conformance_tests!(
        env(),
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
            multi
        ]
    );
}

mod async_std {
    use super::*;

    fn env() -> ZkEnv {
        let name = "lock-zookeeper-client (async-std)";
        ZkEnv::new(
            name,
            Style::Async,
            REQUESTS_PER_CYCLE,
            |cluster, timeout| {
                ::async_std::task::block_on(builder(cluster, timeout, AsyncStdRuntime).connect())
            },
        )
    }

    // The same capabilities as on tokio (declared there), less `load`.
    lock_conformance::conformance_tests!(env());
}

mod smol {
    use super::*;

    fn env() -> ZkEnv {
        let name = "lock-zookeeper-client (smol)";
        ZkEnv::new(
            name,
            Style::Async,
            REQUESTS_PER_CYCLE,
            |cluster, timeout| ::smol::block_on(builder(cluster, timeout, SmolRuntime).connect()),
        )
    }

    // The same capabilities as on tokio (declared there), less `load`.
    lock_conformance::conformance_tests!(env());
}
