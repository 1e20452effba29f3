//! The event queues of election participants: every term's events, in order,
//! under the election's own id (terms come and go, the queue stays).

use super::wakeups::register;
use lock_core::{LockEvent, LockId};
use std::collections::{HashMap, VecDeque};
use std::task::{Poll, Waker};

#[derive(Default)]
struct ElectionQueue {
    events: VecDeque<(LockId, LockEvent)>,
    wakers: Vec<Waker>,
}

#[derive(Default)]
pub(crate) struct Elections {
    queues: HashMap<u64, ElectionQueue>,
    last_id: u64,
}

impl Elections {
    // Mutators.

    pub(crate) fn open(&mut self) -> u64 {
        self.last_id += 1;
        self.queues.insert(self.last_id, ElectionQueue::default());
        self.last_id
    }

    pub(crate) fn close(&mut self, election: u64) {
        self.queues.remove(&election);
    }

    // Inputs.

    /// An event of a term of `election`; its waiters go to `to_wake`.
    pub(crate) fn handle_event(
        &mut self,
        election: u64,
        lock: LockId,
        event: LockEvent,
        to_wake: &mut Vec<Waker>,
    ) {
        if let Some(queue) = self.queues.get_mut(&election) {
            queue.events.push_back((lock, event));
            to_wake.append(&mut queue.wakers);
        }
    }

    // Polls.

    /// The election's next event; `None` once closed, or when `more` says no
    /// event is to come (no live term); else registers `waker`.
    pub(crate) fn poll_next(
        &mut self,
        election: u64,
        more: bool,
        waker: &Waker,
    ) -> Poll<Option<(LockId, LockEvent)>> {
        let Some(queue) = self.queues.get_mut(&election) else {
            return Poll::Ready(None);
        };
        match queue.events.pop_front() {
            Some(tagged) => Poll::Ready(Some(tagged)),
            None if more => {
                register(&mut queue.wakers, waker);
                Poll::Pending
            }
            None => Poll::Ready(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared::wakeups::tests::counter;

    #[test]
    fn events_reach_their_election_in_order_and_wake_it() {
        let (_, waker) = counter();
        let mut elections = Elections::default();
        let (one, two) = (elections.open(), elections.open());
        assert_ne!(one, two);
        assert!(elections.poll_next(one, true, &waker).is_pending());
        let mut to_wake = Vec::new();
        elections.handle_event(one, LockId(7), LockEvent::Suspended, &mut to_wake);
        elections.handle_event(one, LockId(7), LockEvent::Resumed, &mut to_wake);
        assert_eq!(to_wake.len(), 1, "the waiting election, once");
        let next = |e: &mut Elections| match e.poll_next(one, true, &waker) {
            Poll::Ready(Some((_, event))) => event,
            other => panic!("{other:?}"),
        };
        assert_eq!(next(&mut elections), LockEvent::Suspended);
        assert_eq!(next(&mut elections), LockEvent::Resumed);
        assert_eq!(elections.poll_next(two, false, &waker), Poll::Ready(None));
        // A closed election gets nothing more.
        elections.close(one);
        elections.handle_event(one, LockId(1), LockEvent::Released, &mut to_wake);
        assert_eq!(to_wake.len(), 1);
        assert_eq!(elections.poll_next(one, true, &waker), Poll::Ready(None));
    }
}
