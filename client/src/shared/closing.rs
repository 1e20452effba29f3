//! How far the client is from closed: `LockClient::close` asked, every user
//! handle gone, the binding's `Link` gone; and who waits for the end.

use super::wakeups::register;
use std::task::{Poll, Waker};

#[derive(Default)]
pub(crate) struct Closing {
    /// `LockClient::close` was called.
    requested: bool,
    /// Every user handle (client, lock object, guard, election) is gone.
    handles_gone: bool,
    /// The binding dropped its `Link`: nothing can be sent any more.
    link_gone: bool,
    wakers: Vec<Waker>,
}

impl Closing {
    // Getters.

    /// Whether the user side may start nothing more.
    pub(crate) fn is_closed(&self) -> bool {
        self.requested || self.link_gone
    }

    /// Whether the binding must close the session: asked, or nobody left to use it.
    pub(crate) fn link_must_close(&self) -> bool {
        self.is_closed() || self.handles_gone
    }

    pub(crate) fn is_link_gone(&self) -> bool {
        self.link_gone
    }

    // Inputs.

    pub(crate) fn handle_handles_gone(&mut self) {
        self.handles_gone = true;
    }

    /// The binding dropped its link: every closer returns (their wakers go to
    /// `to_wake`).
    pub(crate) fn handle_link_gone(&mut self, to_wake: &mut Vec<Waker>) {
        self.link_gone = true;
        to_wake.append(&mut self.wakers);
    }

    // Polls.

    /// `LockClient::close`: asks for the close, ready once the link is gone
    /// (else `waker` is registered).
    pub(crate) fn poll_close(&mut self, waker: &Waker) -> Poll<()> {
        self.requested = true;
        if self.link_gone {
            return Poll::Ready(());
        }
        register(&mut self.wakers, waker);
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared::wakeups::tests::counter;

    #[test]
    fn a_close_waits_for_the_link_and_then_every_closer_returns() {
        let (_, waker) = counter();
        let mut closing = Closing::default();
        assert!(!closing.link_must_close());
        closing.handle_handles_gone();
        assert!(closing.link_must_close());
        assert!(!closing.is_closed(), "handles gone is for the link only");
        assert!(closing.poll_close(&waker).is_pending());
        assert!(closing.poll_close(&waker).is_pending());
        assert!(closing.is_closed());
        let mut to_wake = Vec::new();
        closing.handle_link_gone(&mut to_wake);
        assert_eq!(to_wake.len(), 1, "the closer, registered once");
        assert!(closing.poll_close(&waker).is_ready() && closing.is_link_gone());
    }
}
