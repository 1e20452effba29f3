//! Blocking twins: every async method of the API has a `*_blocking` twin that runs
//! it on the calling thread, parked on a `Condvar` until the state it waits for
//! changes (the waker the twin passes in notifies that `Condvar`).
//!
//! The scheme is one rule: `foo().await` in async code is `foo_blocking()` in
//! threaded code, with the same arguments, result and cancel-safety. The twins
//! need no runtime, but they do need the binding's loop running elsewhere (its own
//! task or thread), as the async methods do. Do not call them from inside an async
//! task: they block its thread.
//!
//! [`block_on`] and [`block_on_until`] are public for whatever else a blocking
//! caller wants to wait on (e.g. a guard's next event with a time limit).

use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Instant;

/// Writes blocking twins: `fn foo_blocking(&self, x: T) -> R = foo;` is a
/// documented `pub fn foo_blocking` that runs `self.foo(x)` with [`block_on`].
macro_rules! twins {
    () => {};
    (fn $twin:ident(&mut $s:ident $(, $a:ident: $t:ty)*) $(-> $out:ty)? = $m:ident; $($rest:tt)*) => {
        $crate::blocking::twins!(@ $twin [&mut $s] $s [$($a: $t),*] [$($out)?] $m);
        $crate::blocking::twins!($($rest)*);
    };
    (fn $twin:ident(& $s:ident $(, $a:ident: $t:ty)*) $(-> $out:ty)? = $m:ident; $($rest:tt)*) => {
        $crate::blocking::twins!(@ $twin [&$s] $s [$($a: $t),*] [$($out)?] $m);
        $crate::blocking::twins!($($rest)*);
    };
    (fn $twin:ident($s:ident $(, $a:ident: $t:ty)*) $(-> $out:ty)? = $m:ident; $($rest:tt)*) => {
        $crate::blocking::twins!(@ $twin [$s] $s [$($a: $t),*] [$($out)?] $m);
        $crate::blocking::twins!($($rest)*);
    };
    (@ $twin:ident [$($recv:tt)*] $s:ident [$($a:ident: $t:ty),*] [$($out:ty)?] $m:ident) => {
        #[doc = concat!("Blocking twin of [`", stringify!($m), "`](Self::", stringify!($m), ").")]
        pub fn $twin($($recv)* $(, $a: $t)*) $(-> $out)? {
            $crate::blocking::block_on($s.$m($($a),*))
        }
    };
}
pub(crate) use twins;

/// A waker that notifies a parked thread.
#[derive(Default)]
struct Signal {
    woken: Mutex<bool>,
    cv: Condvar,
}

impl Wake for Signal {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        *self.woken.lock().unwrap_or_else(|p| p.into_inner()) = true;
        self.cv.notify_one();
    }
}

/// Runs `future` to completion on this thread.
///
/// ```
/// assert_eq!(zklock::blocking::block_on(async { 7 }), 7);
/// ```
pub fn block_on<F: Future>(future: F) -> F::Output {
    block_on_until(future, None).expect("no deadline")
}

/// Runs `future` on this thread until it completes (`Some`) or `deadline` passes
/// (`None`; the future is dropped, which cancels what it was doing, as dropping it
/// does in async code).
///
/// ```
/// use std::time::{Duration, Instant};
/// let never = std::future::pending::<()>();
/// let soon = Instant::now() + Duration::from_millis(1);
/// assert_eq!(zklock::blocking::block_on_until(never, Some(soon)), None);
/// ```
pub fn block_on_until<F: Future>(future: F, deadline: Option<Instant>) -> Option<F::Output> {
    let signal = Arc::new(Signal::default());
    let waker = Waker::from(signal.clone());
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return Some(out);
        }
        let mut woken = signal.woken.lock().unwrap_or_else(|p| p.into_inner());
        while !*woken {
            woken = match deadline {
                None => signal.cv.wait(woken).unwrap_or_else(|p| p.into_inner()),
                Some(at) => {
                    let left = at.checked_duration_since(Instant::now())?;
                    signal
                        .cv
                        .wait_timeout(woken, left)
                        .unwrap_or_else(|p| p.into_inner())
                        .0
                }
            };
        }
        *woken = false;
    }
}
