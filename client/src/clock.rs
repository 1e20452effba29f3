//! [`Clock`]: where a [`LockClient`](crate::LockClient)'s handles read the time.

use std::time::Instant;

/// The time source of a client's handles, given by the binding with
/// [`pair_with_clock`](crate::pair_with_clock) ([`pair`](crate::pair) uses
/// [`SystemClock`]).
///
/// The binding hands its own `now` to every [`Link`](crate::Link) input; the
/// handles (a lock asked for, released, cancelled, a timeout turned into a
/// deadline) read this clock instead, so that both ends of the client see one
/// time line. A seeded simulation gives a virtual clock here and the same virtual
/// instants to the link, and every timer of the client then runs on virtual time.
///
/// # Calling contract
///
/// 1. **Monotonic**: `now` never goes backwards (across threads too).
/// 2. **One time line with the link**: the `now` the binding passes to
///    `Link::handle_*` is read from the same clock (or one no further apart than
///    timer precision): a deadline computed by a handle is compared with those.
/// 3. **Cheap and non-blocking**: it is called under the client's state mutex;
///    it must not call back into the client.
/// 4. **Read once at [`pair`](crate::pair_with_clock)**: that reading is the core's
///    time zero; readings before it count as zero.
///
/// The blocking twins (`*_blocking`, [`blocking`](crate::blocking)) park the
/// thread on the operating system's clock whatever the client's: a virtual clock
/// is for code that polls the futures itself.
///
/// ```
/// use zklock::Clock;
/// use std::sync::{Arc, Mutex};
/// use std::time::{Duration, Instant};
///
/// /// A clock that moves only when told (e.g. by a simulator's scheduler).
/// struct Manual { zero: Instant, elapsed: Mutex<Duration> }
/// impl Clock for Manual {
///     fn now(&self) -> Instant {
///         self.zero + *self.elapsed.lock().unwrap()
///     }
/// }
///
/// let clock = Arc::new(Manual { zero: Instant::now(), elapsed: Mutex::new(Duration::ZERO) });
/// let config = lock_core::Config::new(Duration::from_secs(10), 7);
/// let (locks, _link) = zklock::pair_with_clock(config, clock.clone());
/// *clock.elapsed.lock().unwrap() = Duration::from_secs(3);
/// assert_eq!(locks.now(), clock.zero + Duration::from_secs(3));
/// ```
pub trait Clock: Send + Sync + 'static {
    /// The current instant.
    fn now(&self) -> Instant;
}

/// The operating system's monotonic clock (`Instant::now()`): the default of
/// [`pair`](crate::pair), and what every binding uses.
#[derive(Clone, Copy, Default, Debug)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
}
