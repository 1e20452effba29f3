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

impl Runtime {
    /// The shipped runtime this one stands for.
    fn shipped(&self) -> Box<dyn lock_zookeeper_client::Runtime> {
        match self {
            Runtime::Tokio(handle) => Box::new(lock_zookeeper_client::TokioRuntime(handle.clone())),
            Runtime::AsyncStd => Box::new(lock_zookeeper_client::AsyncStdRuntime),
            Runtime::Smol => Box::new(lock_zookeeper_client::SmolRuntime),
        }
    }
}

impl lock_zookeeper_client::Runtime for Runtime {
    fn spawn(&self, future: BoxedFuture) {
        self.shipped().spawn(future)
    }

    fn sleep_until(&self, deadline: Instant) -> BoxedFuture {
        self.shipped().sleep_until(deadline)
    }
}
