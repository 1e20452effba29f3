//! Which async runtime the driver (and zookeeper-client's own session task) runs on:
//! spawning and timers per runtime.

use futures::future::BoxFuture;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

/// The async runtime a [`LockClient`](crate::LockClient) runs its tasks on.
///
/// Each variant exists when its crate feature is enabled. [`Runtime::current`] picks
/// one automatically; pass one to [`Builder::runtime`](crate::Builder::runtime) to
/// choose (needed to run on smol while the `async-std` feature is also enabled,
/// since neither can be detected from inside `block_on`).
///
/// ```
/// # #[cfg(feature = "tokio")]
/// # {
/// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// let handle = rt.handle().clone();
/// let runtime = zklock::Runtime::Tokio(handle);
/// assert!(format!("{runtime:?}").starts_with("Tokio"));
/// # }
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Runtime {
    /// Tasks go to this tokio runtime; timers are tokio's (the runtime needs its
    /// time driver, e.g. `enable_all()`).
    #[cfg(feature = "tokio")]
    Tokio(tokio::runtime::Handle),
    /// Tasks go to async-std's global executor.
    #[cfg(feature = "async-std")]
    AsyncStd,
    /// Tasks go to smol's global executor.
    #[cfg(feature = "smol")]
    Smol,
}

impl Runtime {
    /// The runtime to use from here: the current tokio runtime if called inside one
    /// (feature `tokio`), else async-std (feature `async-std`), else smol (feature
    /// `smol`). `None` when no runtime feature is enabled (or only `tokio`, outside
    /// a tokio runtime).
    ///
    /// ```
    /// // Outside any runtime, with only the default `tokio` feature, there is none.
    /// # #[cfg(not(any(feature = "async-std", feature = "smol")))]
    /// assert!(zklock::Runtime::current().is_none());
    /// ```
    pub fn current() -> Option<Runtime> {
        #[cfg(feature = "tokio")]
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            return Some(Runtime::Tokio(handle));
        }
        #[cfg(feature = "async-std")]
        return Some(Runtime::AsyncStd);
        #[cfg(all(feature = "smol", not(feature = "async-std")))]
        return Some(Runtime::Smol);
        #[allow(unreachable_code)]
        None
    }

    /// Spawns a detached task.
    pub(crate) fn spawn(&self, future: impl Future<Output = ()> + Send + 'static) {
        match self {
            #[cfg(feature = "tokio")]
            Runtime::Tokio(handle) => drop(handle.spawn(future)),
            #[cfg(feature = "async-std")]
            Runtime::AsyncStd => drop(async_std::task::spawn(future)),
            #[cfg(feature = "smol")]
            Runtime::Smol => smol::spawn(future).detach(),
            #[allow(unreachable_patterns)]
            _ => {
                drop(future);
                unreachable!("no runtime variant exists without a runtime feature")
            }
        }
    }

    /// A future that completes at `deadline`.
    pub(crate) fn sleep_until(&self, deadline: Instant) -> BoxFuture<'static, ()> {
        match self {
            #[cfg(feature = "tokio")]
            Runtime::Tokio(_) => Box::pin(tokio::time::sleep_until(deadline.into())),
            #[cfg(feature = "async-std")]
            Runtime::AsyncStd => Box::pin(async_std::task::sleep(
                deadline.saturating_duration_since(Instant::now()),
            )),
            #[cfg(feature = "smol")]
            Runtime::Smol => Box::pin(async move {
                smol::Timer::at(deadline).await;
            }),
            #[allow(unreachable_patterns)]
            _ => {
                let _ = deadline;
                unreachable!("no runtime variant exists without a runtime feature")
            }
        }
    }

    /// Wraps `future` so that whatever zookeeper-client spawns while it is polled
    /// (its session task, spawned during `connect`) goes to this runtime.
    pub(crate) fn scope<F: Future>(&self, future: F) -> InRuntime<F> {
        InRuntime {
            runtime: self.clone(),
            future: Box::pin(future),
        }
    }
}

impl spawns_core::Spawn for Runtime {
    fn spawn(&self, task: spawns_core::Task) {
        Runtime::spawn(self, Box::into_pin(task.future));
    }
}

/// A future polled with a [`Runtime`] as the spawner of `spawns` (which
/// zookeeper-client uses for its own tasks).
pub(crate) struct InRuntime<F> {
    runtime: Runtime,
    future: Pin<Box<F>>,
}

impl<F: Future> Future for InRuntime<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = &mut *self;
        let _scope = spawns_core::enter(&this.runtime);
        this.future.as_mut().poll(cx)
    }
}
