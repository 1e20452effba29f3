//! Where a lock stands, as its handles and the shared state see it: held
//! ([`LockStatus`]) or waiting in its queue ([`Queued`]).

use crate::clock::Clock;
use lock_core::{LostReason, QueuePlace};
use std::sync::Arc;
use std::time::Instant;

/// Where a held lock stands, from [`LockGuard::status`](crate::LockGuard::status).
#[derive(Clone, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum LockStatus {
    /// Held and trusted.
    Held,
    /// The connection is down, or the trust deadline
    /// ([`LockGuard::trusted_until`](crate::LockGuard::trusted_until)) has passed
    /// before the driver got to it (after a pause): ownership is not guaranteed
    /// until it is resumed (or lost, see [`Lost`](Self::Lost)). Stop touching the protected resource, or
    /// fence your writes with [`LockGuard::token`](crate::LockGuard::token). Nobody else can hold the lock
    /// yet: the lock turns `Lost` before the server could expire the session.
    Suspended,
    /// No longer held. After a suspension, `Lost(SuspendedTooLong)` comes before
    /// anyone else could have been granted the lock: a margin
    /// ([`Config::expiry_margin`](lock_core::Config::expiry_margin)) before one
    /// session timeout has passed since the server last heard from this client,
    /// the earliest the server could expire the session and delete our node (or
    /// earlier, after a shorter [`Config::suspended_grace`](lock_core::Config::suspended_grace)).
    /// Both ends measure with monotonic clocks only (`Instant` here, ZooKeeper's
    /// own on the server), so wall-clock jumps do not matter; a process paused
    /// longer than the margin between the deadline and your code does.
    Lost(LostReason),
    /// Released by us.
    Released,
}

// Defined here, beside `LockStatus`, rather than with `PendingLock`: the shared
// state keeps one per waiting slot, and the shared state must not import the
// handles built on it.
/// Where a waiting acquisition stands in its lock's queue ([`PendingLock::queued`](crate::PendingLock::queued),
/// [`QueueWatch::changed`](crate::QueueWatch::changed)).
///
/// It comes from the acquisition's own looks at the lock directory and the
/// deletions it watched since, at no cost: a participant ahead that leaves
/// while another one is watched is seen at the next look, so `position` is
/// an upper bound between looks (never closer than the truth), made exact by
/// [`QueueWatch::refresh`](crate::QueueWatch::refresh) (one read).
///
/// Two places are equal when their public fields are.
#[derive(Clone)]
#[non_exhaustive]
pub struct Queued {
    /// Our node's full path.
    pub node: String,
    /// How many participants ahead of ours must leave before the lock (or a
    /// permit) is ours: 1 when we are next.
    pub position: usize,
    /// For a semaphore: the permits the participants ahead of ours take (at
    /// most all of them). `None` for other locks.
    pub permits_in_use: Option<u32>,
    /// Nobody is ahead any more, but the previous holder ended uncleanly: the
    /// grant waits out the [lock-delay](crate::Mutex::lock_delay) until this
    /// instant, on the client's [`Clock`] (`position` is then 0).
    pub lock_delay_ends: Option<Instant>,
    /// The client's clock, the one `lock_delay_ends` is on: `Display` reads its
    /// countdown from it when shown.
    clock: Arc<dyn Clock>,
}

impl Queued {
    pub(crate) fn new(node: String, place: QueuePlace, clock: Arc<dyn Clock>) -> Queued {
        Queued {
            node,
            position: place.position,
            permits_in_use: place.permits_in_use,
            lock_delay_ends: None,
            clock,
        }
    }

    /// Waiting out a lock-delay that ends at `ends` on `clock`.
    pub(crate) fn lock_delay(node: String, ends: Instant, clock: Arc<dyn Clock>) -> Queued {
        Queued {
            node,
            position: 0,
            permits_in_use: None,
            lock_delay_ends: Some(ends),
            clock,
        }
    }

    /// When the lock-delay this acquisition waits out ends, if it waits one.
    pub fn lock_delay_ends(&self) -> Option<Instant> {
        self.lock_delay_ends
    }
}

impl PartialEq for Queued {
    fn eq(&self, other: &Queued) -> bool {
        // Not the clock: a place is where the acquisition stands.
        self.node == other.node
            && self.position == other.position
            && self.permits_in_use == other.permits_in_use
            && self.lock_delay_ends == other.lock_delay_ends
    }
}

impl Eq for Queued {}

impl std::fmt::Debug for Queued {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queued")
            .field("node", &self.node)
            .field("position", &self.position)
            .field("permits_in_use", &self.permits_in_use)
            .field("lock_delay_ends", &self.lock_delay_ends)
            .finish()
    }
}

impl std::fmt::Display for Queued {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(ends) = self.lock_delay_ends {
            // Read when shown: a line redrawn each second counts down.
            let left = ends.saturating_duration_since(self.clock.now());
            return write!(
                f,
                "lock-delay after an unclean end of the previous holder, {:.1} s left",
                left.as_secs_f64()
            );
        }
        match self.position {
            1 => write!(f, "next in the queue")?,
            n => write!(f, "{n} ahead in the queue")?,
        }
        if let Some(in_use) = self.permits_in_use {
            write!(f, ", {in_use} permit(s) in use")?;
        }
        Ok(())
    }
}
