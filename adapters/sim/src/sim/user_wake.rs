//! The harness as the user's executor and the binding's clock: the wakers that
//! record whether (and how often) a future asked to be polled again, and the
//! virtual clock lock-client reads.

use lock_client::Clock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::Wake;
use std::time::{Duration, Instant};

/// A client's virtual clock: `zero` plus the simulation's time, which the harness
/// sets before every call into the client.
pub(crate) struct SimClock {
    pub(crate) zero: Instant,
    pub(crate) nanos: AtomicU64,
}

impl Clock for SimClock {
    fn now(&self) -> Instant {
        self.zero + Duration::from_nanos(self.nanos.load(Ordering::Relaxed))
    }
}

/// A task's waker: records that it was woken, and how often.
#[derive(Default)]
pub(crate) struct WakeFlag {
    pub(crate) woken: AtomicBool,
    pub(crate) wakes: AtomicU64,
}

impl Wake for WakeFlag {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Relaxed);
        self.wakes.fetch_add(1, Ordering::Relaxed);
    }
}
