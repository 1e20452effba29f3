//! Which async runtime the driver (and zookeeper-client's own session task) runs on:
//! an open trait, spawning and timers, with one implementation per runtime feature.
//!
//! zookeeper-client needs no more than that of a runtime: its sockets and timers are
//! async-io's (a reactor thread of its own, whatever the runtime), and it spawns its
//! session task through `spawns`, whose spawner the binding sets to the runtime
//! while it polls zookeeper-client's futures ([`InRuntime`]).

use std::fmt::Debug;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

/// A future a [`Runtime`] runs or returns.
pub type BoxedFuture = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// The async runtime a [`LockClient`](crate::LockClient) runs its tasks on: the
/// binding's driver task, zookeeper-client's session task, and the driver's timers.
///
/// Implemented for tokio (`TokioRuntime`, feature `tokio`), async-std
/// (`AsyncStdRuntime`, feature `async-std`) and smol (`SmolRuntime`, feature
/// `smol`); implement it to run on another executor (this crate then needs no
/// runtime feature). [`default_runtime`] picks one of the shipped ones; pass one to
/// [`Builder::runtime`](crate::Builder::runtime) to choose.
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::time::Instant;
/// use zklock::{BoxedFuture, Runtime, TokioRuntime};
///
/// /// Tokio, counting the tasks spawned (an executor of the application's would
/// /// go where `inner` is).
/// #[derive(Debug)]
/// struct Counting {
///     inner: TokioRuntime,
///     spawned: AtomicUsize,
/// }
///
/// impl Runtime for Counting {
///     fn spawn(&self, future: BoxedFuture) {
///         self.spawned.fetch_add(1, Ordering::Relaxed);
///         self.inner.spawn(future);
///     }
///
///     fn sleep_until(&self, deadline: Instant) -> BoxedFuture {
///         self.inner.sleep_until(deadline)
///     }
/// }
///
/// let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
/// let counting = Counting {
///     inner: TokioRuntime(rt.handle().clone()),
///     spawned: AtomicUsize::new(0),
/// };
/// let builder = zklock::builder("127.0.0.1:2181").runtime(counting);
/// # drop(builder);
/// ```
pub trait Runtime: Send + Sync + Debug + 'static {
    /// Runs `future` to completion in the background (a detached task).
    fn spawn(&self, future: BoxedFuture);

    /// A future that completes at `deadline` (or at once if it has passed).
    fn sleep_until(&self, deadline: Instant) -> BoxedFuture;
}

/// The runtime to use from here: the current tokio runtime if called inside one
/// (feature `tokio`), else async-std (feature `async-std`), else smol (feature
/// `smol`). `None` when no runtime feature is enabled (or only `tokio`, outside a
/// tokio runtime): then pass one to [`Builder::runtime`](crate::Builder::runtime).
///
/// ```
/// // Outside any runtime, with only the default `tokio` feature, there is none.
/// # #[cfg(not(any(feature = "async-std", feature = "smol")))]
/// assert!(zklock::default_runtime().is_none());
/// ```
pub fn default_runtime() -> Option<Arc<dyn Runtime>> {
    #[cfg(feature = "tokio")]
    if let Ok(handle) = tokio::runtime::Handle::try_current() {
        return Some(Arc::new(TokioRuntime(handle)));
    }
    #[cfg(feature = "async-std")]
    return Some(Arc::new(AsyncStdRuntime));
    #[cfg(all(feature = "smol", not(feature = "async-std")))]
    return Some(Arc::new(SmolRuntime));
    #[cfg(not(any(feature = "async-std", feature = "smol")))]
    None
}

/// Tasks go to this tokio runtime; timers are tokio's (the runtime needs its time
/// driver, e.g. `enable_all()`).
///
/// ```
/// let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
/// let runtime = zklock::TokioRuntime(rt.handle().clone());
/// let builder = zklock::builder("127.0.0.1:2181").runtime(runtime);
/// # drop(builder);
/// ```
#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
#[derive(Clone, Debug)]
pub struct TokioRuntime(pub tokio::runtime::Handle);

#[cfg(feature = "tokio")]
impl Runtime for TokioRuntime {
    fn spawn(&self, future: BoxedFuture) {
        drop(self.0.spawn(future));
    }

    fn sleep_until(&self, deadline: Instant) -> BoxedFuture {
        Box::pin(tokio::time::sleep_until(deadline.into()))
    }
}

/// Tasks go to async-std's global executor; timers are async-std's.
#[cfg(feature = "async-std")]
#[cfg_attr(docsrs, doc(cfg(feature = "async-std")))]
#[derive(Clone, Copy, Debug, Default)]
pub struct AsyncStdRuntime;

#[cfg(feature = "async-std")]
impl Runtime for AsyncStdRuntime {
    fn spawn(&self, future: BoxedFuture) {
        drop(async_std::task::spawn(future));
    }

    fn sleep_until(&self, deadline: Instant) -> BoxedFuture {
        Box::pin(async_std::task::sleep(
            deadline.saturating_duration_since(Instant::now()),
        ))
    }
}

/// Tasks go to smol's global executor; timers are smol's.
#[cfg(feature = "smol")]
#[cfg_attr(docsrs, doc(cfg(feature = "smol")))]
#[derive(Clone, Copy, Debug, Default)]
pub struct SmolRuntime;

#[cfg(feature = "smol")]
impl Runtime for SmolRuntime {
    fn spawn(&self, future: BoxedFuture) {
        smol::spawn(future).detach();
    }

    fn sleep_until(&self, deadline: Instant) -> BoxedFuture {
        Box::pin(async move {
            smol::Timer::at(deadline).await;
        })
    }
}

/// A [`Runtime`] as the spawner of `spawns` (which zookeeper-client spawns its
/// tasks through).
struct Spawner<'a>(&'a dyn Runtime);

impl spawns_core::Spawn for Spawner<'_> {
    fn spawn(&self, task: spawns_core::Task) {
        self.0.spawn(Box::into_pin(task.future));
    }
}

/// `future`, polled with `runtime` as the spawner of `spawns`: whatever
/// zookeeper-client spawns while it is polled (its session task, spawned during
/// `connect`) goes to `runtime`.
pub(crate) fn in_runtime<F: Future>(runtime: &Arc<dyn Runtime>, future: F) -> InRuntime<F> {
    InRuntime {
        runtime: runtime.clone(),
        future: Box::pin(future),
    }
}

/// A future polled with a [`Runtime`] as the spawner of `spawns` ([`in_runtime`]).
pub(crate) struct InRuntime<F> {
    runtime: Arc<dyn Runtime>,
    future: Pin<Box<F>>,
}

impl<F: Future> Future for InRuntime<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = &mut *self;
        let spawner = Spawner(&*this.runtime);
        let _scope = spawns_core::enter(&spawner);
        this.future.as_mut().poll(cx)
    }
}

/// A shared runtime (what [`default_runtime`] returns) is one too.
impl<R: Runtime + ?Sized> Runtime for Arc<R> {
    fn spawn(&self, future: BoxedFuture) {
        (**self).spawn(future);
    }

    fn sleep_until(&self, deadline: Instant) -> BoxedFuture {
        (**self).sleep_until(deadline)
    }
}
