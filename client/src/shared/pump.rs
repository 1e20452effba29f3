//! [`Pump`]: a binding's I/O driven in place by the futures that wait on it
//! (async-io's `block_on`: whoever polls drives). The state holds the one the
//! binding registered; `link::pumping` is a waiting future's side of it.

use std::task::Context;

/// A binding's I/O that a waiting future drives itself, registered with
/// [`Link::set_pump`](crate::Link::set_pump): the future's task then hears a
/// reply first and feeds it, rather than the binding's loop hearing it and
/// waking the task (one wake-up per reply instead of two).
///
/// Waiters are told apart by a number (`waiter`), unique in the process.
pub trait Pump: Send + Sync {
    /// Drives the binding's I/O from the poll of waiter `waiter`, unless
    /// something else drives it right now (then `false` at once: it never
    /// blocks). Under one hold of the binding's I/O state, and in this order
    /// until nothing is left: feed the link every completion already at hand
    /// (in the order the binding received them; each once), send what
    /// [`Link::poll`](crate::Link::poll) hands over (in its order), and poll the
    /// replies in flight with `cx`'s waker, which stays registered for them.
    /// Anything it does not take itself (a session change, a timer due earlier
    /// than the one armed, a close) it leaves to the binding's loop, woken.
    fn pump(&self, waiter: u64, cx: &mut Context<'_>) -> bool;

    /// Waiter `waiter` stopped waiting (it completed or was dropped): if its
    /// waker is the one registered for the replies in flight, the binding's
    /// loop takes them over (its waker registered again, or woken), so that no
    /// reply goes unheard. Never blocks.
    fn stop(&self, waiter: u64);
}
