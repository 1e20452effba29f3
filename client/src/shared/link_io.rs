//! The link's I/O state: the requests drained from the core for the binding to
//! send, and whether the link has something to look at (with its waker).

use lock_core::Request;
use std::collections::VecDeque;
use std::task::{Poll, Waker};

#[derive(Default)]
pub(crate) struct LinkIo {
    /// Requests drained from the core, for the link to send in this order.
    requests: VecDeque<Request>,
    /// Handles changed something the link must look at (requests, the timer, close).
    marked: bool,
    waker: Option<Waker>,
}

impl LinkIo {
    // Getters.

    /// Whether a handle marked the link since it last looked.
    pub(crate) fn is_marked(&self) -> bool {
        self.marked
    }

    // Mutators.

    pub(crate) fn push(&mut self, request: Request) {
        self.requests.push_back(request);
    }

    /// Marks the link as having something to look at; the waker to wake, if
    /// the link was waiting.
    #[must_use = "the link's waker must be woken after the unlock"]
    pub(crate) fn mark(&mut self) -> Option<Waker> {
        self.marked = true;
        self.waker.take()
    }

    /// The link is gone: nothing queued can be sent.
    pub(crate) fn reset(&mut self) {
        self.requests.clear();
        self.waker = None;
    }

    // Outputs.

    /// Every request queued, in the order the core put them out.
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = Request> + '_ {
        self.requests.drain(..)
    }

    /// Whether the link was marked (clearing the mark).
    pub(crate) fn take_marked(&mut self) -> bool {
        std::mem::take(&mut self.marked)
    }

    /// Ready (clearing the mark) if marked, else registers `waker`.
    pub(crate) fn poll_marked(&mut self, waker: &Waker) -> Poll<()> {
        if self.take_marked() {
            return Poll::Ready(());
        }
        match &self.waker {
            Some(w) if w.will_wake(waker) => {}
            _ => self.waker = Some(waker.clone()),
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared::wakeups::tests::counter;
    use lock_core::{Op, RequestId};

    fn request(id: u64) -> Request {
        Request {
            id: RequestId(id),
            op: Op::Sync { path: "/".into() },
        }
    }

    #[test]
    fn a_mark_readies_the_link_once_and_hands_over_its_waker() {
        let (_, waker) = counter();
        let mut io = LinkIo::default();
        assert!(io.poll_marked(&waker).is_pending());
        assert!(io.mark().is_some(), "the waiting link is to be woken");
        assert!(io.mark().is_none(), "and only once");
        assert!(io.poll_marked(&waker).is_ready());
        assert!(io.poll_marked(&waker).is_pending(), "the mark was taken");
        assert!(!io.take_marked());
    }

    #[test]
    fn requests_come_out_in_order_until_a_reset_drops_them() {
        let (_, waker) = counter();
        let mut io = LinkIo::default();
        (1..=3).for_each(|id| io.push(request(id)));
        let ids: Vec<_> = io.drain().map(|r| r.id.0).collect();
        assert_eq!(ids, [1, 2, 3]);
        io.push(request(4));
        assert!(io.poll_marked(&waker).is_pending());
        io.reset();
        assert!(io.drain().next().is_none());
        assert!(io.mark().is_none(), "no waker kept for a link that is gone");
    }
}
