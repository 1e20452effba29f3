//! The runtime a test or bench body runs on: the binding's shipped runtimes behind an
//! implementation of the open `Runtime` trait of the tests' own, as an application's
//! would be. (The `zk` bench includes this file too.)

use lock_zookeeper_client::BoxedFuture;
use std::time::Instant;

/// The runtime's name, for lock paths and reports.
pub fn runtime_name(rt: &Runtime) -> &'static str {
    match rt {
        Runtime::Tokio(_) => "tokio",
        Runtime::AsyncStd => "async-std",
        Runtime::Smol => "smol",
    }
}

/// One of the binding's shipped runtimes.
#[derive(Clone, Debug)]
pub enum Runtime {
    Tokio(tokio::runtime::Handle),
    AsyncStd,
    Smol,
}

impl lock_zookeeper_client::Runtime for Runtime {
    fn spawn(&self, future: BoxedFuture) {
        match self {
            Runtime::Tokio(handle) => {
                lock_zookeeper_client::TokioRuntime(handle.clone()).spawn(future)
            }
            Runtime::AsyncStd => lock_zookeeper_client::AsyncStdRuntime.spawn(future),
            Runtime::Smol => lock_zookeeper_client::SmolRuntime.spawn(future),
        }
    }

    fn sleep_until(&self, deadline: Instant) -> BoxedFuture {
        match self {
            Runtime::Tokio(handle) => {
                lock_zookeeper_client::TokioRuntime(handle.clone()).sleep_until(deadline)
            }
            Runtime::AsyncStd => lock_zookeeper_client::AsyncStdRuntime.sleep_until(deadline),
            Runtime::Smol => lock_zookeeper_client::SmolRuntime.sleep_until(deadline),
        }
    }
}
