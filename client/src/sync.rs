//! The mutex and condition variable the shared state is built on: std's, and
//! in this crate's unit tests shuttle's when the state is made inside a shuttle
//! execution, so that shuttle's schedulers interleave handles and the link at
//! every lock of the state (see `tests::schedules`). One type either way: the
//! state's code is the same.

#[cfg(not(test))]
pub(crate) use std::sync::{Condvar, Mutex, MutexGuard};

#[cfg(test)]
pub(crate) use checked::{Condvar, Mutex, MutexGuard};

#[cfg(test)]
mod checked {
    use std::sync::{LockResult, PoisonError};
    use std::time::Duration;

    fn in_shuttle() -> bool {
        shuttle::current::try_get_current_task().is_some()
    }

    /// `f` over a lock result, poisoned or not.
    fn map<G, H>(result: LockResult<G>, f: impl FnOnce(G) -> H) -> LockResult<H> {
        match result {
            Ok(guard) => Ok(f(guard)),
            Err(poisoned) => Err(PoisonError::new(f(poisoned.into_inner()))),
        }
    }

    pub(crate) enum Mutex<T> {
        Std(std::sync::Mutex<T>),
        Shuttle(shuttle::sync::Mutex<T>),
    }

    pub(crate) enum MutexGuard<'a, T> {
        Std(std::sync::MutexGuard<'a, T>),
        Shuttle(shuttle::sync::MutexGuard<'a, T>),
    }

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Mutex<T> {
            if in_shuttle() {
                Mutex::Shuttle(shuttle::sync::Mutex::new(value))
            } else {
                Mutex::Std(std::sync::Mutex::new(value))
            }
        }

        pub(crate) fn lock(&self) -> LockResult<MutexGuard<'_, T>> {
            match self {
                Mutex::Std(m) => map(m.lock(), MutexGuard::Std),
                Mutex::Shuttle(m) => map(m.lock(), MutexGuard::Shuttle),
            }
        }
    }

    impl<T> std::ops::Deref for MutexGuard<'_, T> {
        type Target = T;

        fn deref(&self) -> &T {
            match self {
                MutexGuard::Std(g) => g,
                MutexGuard::Shuttle(g) => g,
            }
        }
    }

    impl<T> std::ops::DerefMut for MutexGuard<'_, T> {
        fn deref_mut(&mut self) -> &mut T {
            match self {
                MutexGuard::Std(g) => g,
                MutexGuard::Shuttle(g) => g,
            }
        }
    }

    pub(crate) enum Condvar {
        Std(std::sync::Condvar),
        Shuttle(shuttle::sync::Condvar),
    }

    impl Condvar {
        pub(crate) fn new() -> Condvar {
            if in_shuttle() {
                Condvar::Shuttle(shuttle::sync::Condvar::new())
            } else {
                Condvar::Std(std::sync::Condvar::new())
            }
        }

        pub(crate) fn notify_all(&self) {
            match self {
                Condvar::Std(c) => c.notify_all(),
                Condvar::Shuttle(c) => c.notify_all(),
            }
        }

        pub(crate) fn wait<'a, T>(
            &self,
            guard: MutexGuard<'a, T>,
        ) -> LockResult<MutexGuard<'a, T>> {
            match (self, guard) {
                (Condvar::Std(c), MutexGuard::Std(g)) => map(c.wait(g), MutexGuard::Std),
                (Condvar::Shuttle(c), MutexGuard::Shuttle(g)) => {
                    map(c.wait(g), MutexGuard::Shuttle)
                }
                _ => unreachable!("a condvar and its mutex are made together"),
            }
        }

        pub(crate) fn wait_timeout<'a, T>(
            &self,
            guard: MutexGuard<'a, T>,
            timeout: Duration,
        ) -> LockResult<(MutexGuard<'a, T>, bool)> {
            match (self, guard) {
                (Condvar::Std(c), MutexGuard::Std(g)) => {
                    map(c.wait_timeout(g, timeout), |(g, t)| {
                        (MutexGuard::Std(g), t.timed_out())
                    })
                }
                (Condvar::Shuttle(c), MutexGuard::Shuttle(g)) => {
                    map(c.wait_timeout(g, timeout), |(g, t)| {
                        (MutexGuard::Shuttle(g), t.timed_out())
                    })
                }
                _ => unreachable!("a condvar and its mutex are made together"),
            }
        }
    }
}
