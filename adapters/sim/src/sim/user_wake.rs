//! The harness as the user's executor and the binding's clock: the wakers that
//! record whether (and how often) a future asked to be polled again, and the
//! virtual clock lock-client reads.

use crate::sim::user_face::Drained;
use lock_client::Clock;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Wake, Waker};
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

/// A task's waker, which records that it was woken and how often: the three small
/// executors of the user face (acquisitions, side calls, queries) poll a future
/// only when [`take_woken`] finds its flag set.
pub(crate) struct TaskWaker {
    flag: Arc<WakeFlag>,
    pub(crate) waker: Waker,
}

impl Default for TaskWaker {
    fn default() -> TaskWaker {
        let flag = Arc::new(WakeFlag::default());
        let waker = Waker::from(flag.clone());
        TaskWaker { flag, waker }
    }
}

impl TaskWaker {
    /// Marks the task to be polled at the next drain, as a wake does.
    pub(crate) fn wake(&self) {
        self.flag.woken.store(true, Ordering::Relaxed);
    }

    /// How often the future woke it so far (for the trace and lost wake-ups).
    pub(crate) fn wakes(&self) -> u64 {
        self.flag.wakes.load(Ordering::Relaxed)
    }
}

/// The tasks woken since the last look, with their wakers (clearing their flags).
pub(crate) fn take_woken<K: Copy, T>(
    tasks: &BTreeMap<K, T>,
    wake: impl Fn(&T) -> &TaskWaker,
) -> Vec<(K, Waker)> {
    let woken = |t: &T| wake(t).flag.woken.swap(false, Ordering::Relaxed);
    let with_waker = |(k, t): (&K, &T)| (*k, wake(t).waker.clone());
    tasks
        .iter()
        .filter(|(_, t)| woken(t))
        .map(with_waker)
        .collect()
}

/// What a probe reports when the future `what`, not woken, was ready: a wake-up
/// the client lost (one sentence for the acquisitions, side calls and queries).
pub(crate) fn lost_wake_up(what: impl std::fmt::Display, wakes: u64) -> Drained {
    let detail = format!(
        "lost wake-up: {what} was ready but its waker was not woken ({wakes} wakes so far): \
         an executor would never poll it again"
    );
    Drained::Broken(crate::ViolationKind::Liveness, detail)
}

#[derive(Default)]
struct WakeFlag {
    woken: AtomicBool,
    wakes: AtomicU64,
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
