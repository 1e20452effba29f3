//! What the core hands the adapter: requests to send, events for the user and
//! progress for its logs.

use crate::event::LockEvent;
use crate::ids::LockId;
use crate::proto::Request;

/// Something the adapter must act on, from [`Session::poll_output`](crate::Session::poll_output).
#[derive(Clone, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum Output {
    /// Send this request now, after every request polled before it.
    Request(Request),
    /// Tell the user about an acquisition.
    Event {
        /// Which acquisition.
        lock: LockId,
        /// What happened.
        event: LockEvent,
    },
    /// How an acquisition is getting on, for diagnostics only (an adapter's logs or
    /// tracing spans); ignoring it changes nothing.
    Progress {
        /// Which acquisition.
        lock: LockId,
        /// What it did.
        progress: Progress,
    },
}

/// A step of an acquisition on its way to the lock, from [`Output::Progress`].
#[derive(Clone, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum Progress {
    /// Our node exists: created, or found again by its attempt id after the create's
    /// reply was lost.
    Created {
        /// Its full path.
        node: String,
    },
    /// Waiting behind this participant: its node is watched, and its deletion is
    /// what the acquisition waits for.
    QueuedBehind {
        /// The participant's full path.
        node: String,
    },
    /// Waiting in the lock's queue, at `place`: emitted at the first look that
    /// does not grant (our node exists by then), and again whenever the place
    /// changes. Costs no request: it is read from the listing the acquisition
    /// makes anyway.
    Queued {
        /// Our node's full path.
        node: String,
        /// Where we stand.
        place: QueuePlace,
    },
    /// Nobody is ahead any more, but the previous holder ended uncleanly (or a
    /// stale marker says one did): the grant waits out the lock-delay
    /// ([`LockSpec::lock_delay`](crate::LockSpec::lock_delay)) until `until`.
    LockDelay {
        /// Our node's full path.
        node: String,
        /// When the delay ends (the session's time line): the grant comes no
        /// sooner.
        until: crate::time::Timestamp,
    },
}

/// Where a waiting acquisition stands in its lock's queue (see
/// [`Progress::Queued`]).
///
/// Both numbers come from the acquisition's last look at the lock directory and
/// the deletions it watched since: a participant ahead of us that leaves while
/// we watch another one is seen at the next listing, so `position` is an upper
/// bound between listings (it never claims we are closer than we are).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub struct QueuePlace {
    /// How many participants ahead of ours must leave before the lock (or a
    /// permit) is ours: 1 when we are next.
    pub position: usize,
    /// For a semaphore: how many of its permits the participants ahead of us
    /// take (at most its permits; participants of an exclusive kind sharing
    /// the path take none, but block it). `None` for other locks.
    pub permits_in_use: Option<u32>,
}

impl QueuePlace {
    /// A place (for adapters' and users' tests).
    pub fn new(position: usize, permits_in_use: Option<u32>) -> QueuePlace {
        QueuePlace {
            position,
            permits_in_use,
        }
    }
}
