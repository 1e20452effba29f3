//! [`CancelOnDrop`]: a task started in the core whose handle has not taken it over yet,
//! and [`poll_event`], how every handle reads its task's events.

use super::{Hold, LockGuard};
use crate::error::Error;
use crate::handle::LockClient;
use lock_core::{Grant, LockEvent, LockId};
use std::collections::VecDeque;
use std::future::poll_fn;
use std::task::{Context, Poll};

/// Polls for the next event of task `id` for its handle; `None` if its slot is
/// gone or it has ended.
pub(crate) fn poll_event(
    client: &LockClient,
    id: LockId,
    cx: &mut Context<'_>,
) -> Poll<Option<LockEvent>> {
    client.shared().with(|s| {
        let Some(slot) = s.locks.slot_mut(id) else {
            return Poll::Ready(None);
        };
        match slot.events.pop_front() {
            Some(event) => {
                if slot.events.is_empty() {
                    // Events are few and far between: a held lock's slot keeps
                    // no room for them.
                    slot.events = VecDeque::new();
                }
                Poll::Ready(Some(event))
            }
            None if slot.ended => Poll::Ready(None),
            None => {
                slot.register(cx.waker());
                Poll::Pending
            }
        }
    })
}

/// A task started in the core (an acquisition, observer or revocation) whose
/// handle has not taken it over yet: cancelled when dropped before it ends.
pub(crate) struct CancelOnDrop {
    client: LockClient,
    id: LockId,
    /// The task ended, or was handed to a guard.
    done: bool,
    /// Its slot belongs to a guard now.
    handed: bool,
}

impl CancelOnDrop {
    pub(crate) fn new(client: LockClient, id: LockId) -> CancelOnDrop {
        CancelOnDrop {
            client,
            id,
            done: false,
            handed: false,
        }
    }

    /// Whether the task may still be going on (not ended, not handed on).
    pub(crate) fn is_live(&self) -> bool {
        !self.done && !self.handed
    }

    /// The next event; `None` once the task ended (then it is forgotten).
    pub(crate) fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<LockEvent>> {
        if self.done {
            return Poll::Ready(None);
        }
        let polled = poll_event(&self.client, self.id, cx);
        if let Poll::Ready(event) = &polled {
            match event {
                Some(e) if !e.is_terminal() => {}
                _ => self.done = true,
            }
        }
        polled
    }

    /// An acquisition's grant. On an error the acquisition has ended.
    pub(crate) fn poll_granted(&mut self, cx: &mut Context<'_>) -> Poll<Result<Grant, Error>> {
        loop {
            match self.poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(LockEvent::Acquired(grant))) => return Poll::Ready(Ok(grant)),
                Poll::Ready(Some(LockEvent::Failed(reason))) => {
                    return Poll::Ready(Err(reason.into()))
                }
                // Nothing else is reported before `Acquired`.
                Poll::Ready(Some(_)) => {}
                Poll::Ready(None) => return Poll::Ready(Err(Error::Closed)),
            }
        }
    }

    /// The next event. Cancel-safe.
    pub(crate) async fn next(&mut self) -> Option<LockEvent> {
        poll_fn(|cx| self.poll_next(cx)).await
    }

    /// Waits for an acquisition's grant. Cancel-safe: dropping the future loses
    /// nothing (the task goes on).
    pub(crate) async fn granted(&mut self) -> Result<Grant, Error> {
        poll_fn(|cx| self.poll_granted(cx)).await
    }

    /// Hands a granted acquisition to a guard.
    pub(crate) fn into_guard(mut self, grant: Grant) -> LockGuard {
        self.handed = true;
        LockGuard {
            client: self.client.clone(),
            id: self.id,
            grant,
            hold: Hold::Single,
        }
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if self.handed {
            return;
        }
        let (id, done) = (self.id, self.done);
        self.client.shared().with(|s| {
            s.locks.reentrant.remove(&id);
            match s.locks.holds.get(&id) {
                // A reentrant mutex granted, never handed out, but re-entered
                // meanwhile: it is theirs now (the last of them releases it).
                Some(h) if h.count > 0 => return,
                Some(_) => drop(s.locks.holds.remove(&id)),
                None => {}
            }
            if !done {
                // Waiting: cancelled; granted but never handed out: released.
                let now = s.now();
                let _ = s.core.cancel(id, now);
                s.mark_link();
            }
            s.locks.drop_slot(id);
        });
    }
}
