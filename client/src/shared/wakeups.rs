//! Who to wake once the state's mutex is released: the tasks waiting for the
//! core to go idle, and every waker a part collected under this lock.

use std::task::Waker;

#[derive(Default)]
pub(crate) struct Wakeups {
    /// `LockClient::wait_idle` callers.
    idle: Vec<Waker>,
    /// Wakers to wake once the mutex is released.
    ready: Vec<Waker>,
}

impl Wakeups {
    // Mutators.

    pub(crate) fn register_idle(&mut self, waker: &Waker) {
        register(&mut self.idle, waker);
    }

    /// Where parts move their wakers (`append`) for the unlock.
    pub(crate) fn ready(&mut self) -> &mut Vec<Waker> {
        &mut self.ready
    }

    // Inputs.

    /// The core went idle (or never will again): its idle waiters go.
    pub(crate) fn handle_idle(&mut self) {
        self.ready.append(&mut self.idle);
    }

    // Outputs.

    /// Everything queued for the unlock.
    pub(crate) fn take(&mut self) -> Vec<Waker> {
        std::mem::take(&mut self.ready)
    }
}

/// Adds `waker` to `wakers` unless it would wake the same task as one there.
pub(crate) fn register(wakers: &mut Vec<Waker>, waker: &Waker) {
    if !wakers.iter().any(|w| w.will_wake(waker)) {
        // Room for one more only: a waiting acquisition usually has one task
        // waiting on it, and a first push would make room for four.
        wakers.reserve_exact(1);
        wakers.push(waker.clone());
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::Wake;

    /// A waker that counts its wake-ups.
    pub(crate) struct Counter(pub(crate) AtomicUsize);

    impl Wake for Counter {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    pub(crate) fn counter() -> (Arc<Counter>, Waker) {
        let counter = Arc::new(Counter(AtomicUsize::new(0)));
        (counter.clone(), Waker::from(counter))
    }

    #[test]
    fn idle_waiters_are_registered_once_and_go_when_the_core_idles() {
        let (count, waker) = counter();
        let mut wakeups = Wakeups::default();
        wakeups.register_idle(&waker);
        wakeups.register_idle(&waker);
        assert!(wakeups.take().is_empty(), "nothing before the core idles");
        wakeups.handle_idle();
        let ready = wakeups.take();
        assert_eq!(ready.len(), 1, "one task, one wake-up");
        ready.into_iter().for_each(Waker::wake);
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        wakeups.handle_idle();
        assert!(wakeups.take().is_empty(), "an idle waiter is woken once");
    }
}
