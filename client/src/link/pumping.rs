//! [`Pumping`]: a waiting future's side of the binding's [`Pump`](crate::Pump).

use crate::handle::LockClient;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::Context;

/// The next waiter's number.
static NEXT_WAITER: AtomicU64 = AtomicU64::new(1);

/// A waiting future's side of the [`Pump`](crate::Pump): pumps on each poll, and tells the
/// pump when it stops waiting (dropped, or [`stop`](Self::stop) on completion).
pub(crate) struct Pumping {
    client: LockClient,
    waiter: u64,
    /// The pump may hold this waiter's waker.
    pumped: bool,
}

impl Pumping {
    pub(crate) fn new(client: LockClient) -> Pumping {
        Pumping {
            client,
            waiter: NEXT_WAITER.fetch_add(1, Ordering::Relaxed),
            pumped: false,
        }
    }

    /// Drives the binding's I/O in place if it has a pump and nothing else
    /// drives it now. `unsent`: this waiter changed the core without waking the
    /// link (`start_task`'s `wake: false`), so if it cannot send the requests
    /// itself it wakes the link to.
    pub(crate) fn pump(&mut self, cx: &mut Context<'_>, unsent: bool) {
        let shared = self.client.shared();
        let pumped = shared.pump.get().is_some_and(|p| p.pump(self.waiter, cx));
        self.pumped |= pumped;
        if !pumped && unsent {
            shared.with(|s| s.mark_link());
        }
    }

    /// This waiter stopped waiting (see [`Pump::stop`](crate::Pump::stop)).
    pub(crate) fn stop(&mut self) {
        if std::mem::take(&mut self.pumped) {
            if let Some(pump) = self.client.shared().pump.get() {
                pump.stop(self.waiter);
            }
        }
    }
}

impl Drop for Pumping {
    fn drop(&mut self) {
        self.stop();
    }
}
