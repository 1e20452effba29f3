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
}
