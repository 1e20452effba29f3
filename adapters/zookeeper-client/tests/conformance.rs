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
use lock_zookeeper_client::{
    AsyncStdRuntime, Error, LockClient, Runtime, SmolRuntime, TokioRuntime,
};
use std::future::Future;
use std::pin::Pin;

/// create + getChildren (pipelined; create returns the Stat, so the listing
/// grants), delete.
const REQUESTS_PER_CYCLE: u64 = 3;

/// The binding on `runtime`, connecting with lock-client's options
/// (`ZkEnv::with_options`), `block_on` waiting for each connect.
fn env<R: Runtime + Clone + Send + Sync + 'static>(
    name: &str,
    runtime: R,
    block_on: impl Fn(Connecting) -> Result<LockClient, Error> + Send + Sync + 'static,
) -> ZkEnv {
    ZkEnv::with_options(
        name,
        Style::Async,
        REQUESTS_PER_CYCLE,
        move |cluster, options| {
            let builder = lock_zookeeper_client::builder(cluster).options(options);
            block_on(Box::pin(builder.runtime(runtime.clone()).connect()))
        },
    )
}

/// A connect under way.
type Connecting = Pin<Box<dyn Future<Output = Result<LockClient, Error>> + Send>>;

mod tokio {
    use super::*;

    /// A runtime of its own per test (2 workers), dropped with the environment.
    fn env() -> ZkEnv {
        let rt = ::tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("tokio runtime");
        let runtime = TokioRuntime(rt.handle().clone());
        super::env(
            "lock-zookeeper-client (tokio)",
            runtime,
            move |connecting| rt.block_on(connecting),
        )
        .under_load()
    }

    lock_conformance::conformance_tests!(env(), [all]);
}

mod async_std {
    use super::*;

    fn env() -> ZkEnv {
        let name = "lock-zookeeper-client (async-std)";
        super::env(name, AsyncStdRuntime, ::async_std::task::block_on)
    }

    // The same capabilities as on tokio (declared there), less `load`.
    lock_conformance::conformance_tests!(env());
}

mod smol {
    use super::*;

    fn env() -> ZkEnv {
        super::env(
            "lock-zookeeper-client (smol)",
            SmolRuntime,
            ::smol::block_on,
        )
    }

    // The same capabilities as on tokio (declared there), less `load`.
    lock_conformance::conformance_tests!(env());
}
