//! What a holder calls on its guard through lock-client besides reading its events
//! and releasing: crash-detecting sections and fenced writes.
//!
//! Calls on one guard overlap when the workload makes one before the last has
//! returned: a later section call supersedes one in flight, as in the core, and
//! both return. The checker hears of each call when lock-client hands it to the
//! core ([`Drained::SectionCall`], [`Drained::FencedCall`]) and of its outcome as
//! the event the bare core would report, while the lock is still held; a
//! superseded section call has none (the core reports only the latest). A fenced
//! write is named by the harness only to pair the call with its outcome.

use crate::sim::user_face::{lost_wake_up, take_woken, Drained, TaskWaker};
use lock_client::{Error, LockGuard, Writes};
use lock_core::{FencedError, LockEvent, LockId, MultiOp, MultiResult, UsageError};
use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

/// Which call a side future is.
#[derive(Clone, Copy, Debug)]
enum Call {
    /// `superseded`: a later section call on the same guard went to the core while
    /// this one was in flight.
    Section {
        open: bool,
        superseded: bool,
    },
    Fenced {
        write: u64,
    },
}

/// What the call returned to the user.
enum Answer {
    Section(Result<(), Error>),
    Fenced(Result<Vec<MultiResult>, FencedError>),
}

type SideFuture = Pin<Box<dyn Future<Output = Answer> + Send>>;

struct Side {
    lock: LockId,
    call: Call,
    future: SideFuture,
    wake: TaskWaker,
}

/// The side calls of one client's holders.
#[derive(Default)]
pub(crate) struct Sides {
    running: BTreeMap<u64, Side>,
    next_side: u64,
    next_write: u64,
}

impl Sides {
    /// Whether a call on `lock` is in flight (a release waits for them: it needs
    /// the guard back).
    pub(crate) fn busy(&self, lock: LockId) -> bool {
        self.running.values().any(|s| s.lock == lock)
    }

    /// The user calls `open_section` (`open`) or `close_section` on the guard of
    /// `lock`.
    pub(crate) fn section(
        &mut self,
        guard: &Arc<LockGuard>,
        lock: LockId,
        open: bool,
        out: &mut VecDeque<Drained>,
    ) -> Result<(), UsageError> {
        let guard = guard.clone();
        let future: SideFuture = Box::pin(async move {
            Answer::Section(if open {
                guard.open_section().await
            } else {
                guard.close_section().await
            })
        });
        let before: Vec<u64> = self.running.keys().copied().collect();
        let call = Call::Section {
            open,
            superseded: false,
        };
        match self.start(lock, call, future) {
            // Refused at once: nothing was sent.
            Err(Answer::Section(Err(Error::Usage(e)))) => Err(e),
            Err(_) => Err(UsageError::NotHeld(lock)),
            Ok(()) => {
                for k in before {
                    let side = self.running.get_mut(&k).expect("running");
                    if let (true, Call::Section { superseded, .. }) =
                        (side.lock == lock, &mut side.call)
                    {
                        *superseded = true;
                    }
                }
                out.push_back(Drained::SectionCall { lock, open });
                Ok(())
            }
        }
    }

    /// The user calls `fenced_write(ops)` on the guard of `lock`: the harness's
    /// name of the write, or why nothing was sent.
    pub(crate) fn fenced_write(
        &mut self,
        guard: &Arc<LockGuard>,
        lock: LockId,
        ops: Vec<MultiOp>,
        out: &mut VecDeque<Drained>,
    ) -> Result<u64, UsageError> {
        let guard = guard.clone();
        let writes = Writes::from(ops.clone());
        let future: SideFuture =
            Box::pin(async move { Answer::Fenced(guard.fenced_write(writes).await) });
        let write = self.next_write + 1;
        let answered = match self.start(lock, Call::Fenced { write }, future) {
            // Not held or not trusted: nothing was sent.
            Err(Answer::Fenced(Err(FencedError::NotHeld))) => {
                return Err(UsageError::NotHeld(lock))
            }
            Err(answer) => Some(answer),
            Ok(()) => None,
        };
        self.next_write = write;
        out.push_back(Drained::FencedCall { lock, write, ops });
        // Answered at the first poll, but sent: its outcome follows the call.
        out.extend(answered.and_then(|answer| outcome(lock, Call::Fenced { write }, answer)));
        Ok(write)
    }

    /// Polls `future` once, as `.await` does: `Err` with its answer if it is ready
    /// at once; otherwise it runs from now on.
    fn start(&mut self, lock: LockId, call: Call, mut future: SideFuture) -> Result<(), Answer> {
        let wake = TaskWaker::default();
        if let Poll::Ready(answer) = future.as_mut().poll(&mut Context::from_waker(&wake.waker)) {
            return Err(answer);
        }
        self.next_side += 1;
        let side = Side {
            lock,
            call,
            future,
            wake,
        };
        self.running.insert(self.next_side, side);
        Ok(())
    }

    /// Polls every side future whose waker was woken; true if one was. `held`: whether
    /// the user still holds a lock (an outcome after the lock's end is not reported).
    pub(crate) fn poll_woken(
        &mut self,
        held: &dyn Fn(LockId) -> bool,
        out: &mut VecDeque<Drained>,
    ) -> bool {
        let woken = take_woken(&self.running, |s| &s.wake);
        for (k, waker) in &woken {
            if let Some((lock, call, answer)) = self.poll_side(*k, waker) {
                self.finish(lock, call, answer, held, out);
            }
        }
        !woken.is_empty()
    }

    /// Polls every side future not woken with `probe`: a ready one lost its
    /// wake-up (an executor would never poll it again).
    pub(crate) fn probe_unwoken(
        &mut self,
        probe: &Waker,
        held: &dyn Fn(LockId) -> bool,
        out: &mut VecDeque<Drained>,
    ) {
        let keys: Vec<u64> = self.running.keys().copied().collect();
        for k in keys {
            let wakes = self.running[&k].wake.wakes();
            if let Some((lock, call, answer)) = self.poll_side(k, probe) {
                out.push_back(lost_wake_up(format!("{call:?} on {lock}"), wakes));
                self.finish(lock, call, answer, held, out);
            }
        }
    }

    fn poll_side(&mut self, k: u64, waker: &Waker) -> Option<(LockId, Call, Answer)> {
        let side = self.running.get_mut(&k)?;
        match side.future.as_mut().poll(&mut Context::from_waker(waker)) {
            Poll::Pending => None,
            Poll::Ready(answer) => {
                let side = self.running.remove(&k).expect("polled");
                Some((side.lock, side.call, answer))
            }
        }
    }

    /// A call returned: its outcome for the checker while the lock is held.
    fn finish(
        &mut self,
        lock: LockId,
        call: Call,
        answer: Answer,
        held: &dyn Fn(LockId) -> bool,
        out: &mut VecDeque<Drained>,
    ) {
        if held(lock) {
            out.extend(outcome(lock, call, answer));
        } else {
            // The user saw the lock end first: the core reports nothing after it.
            out.push_back(Drained::Note(format!(
                "{call:?} on {lock} returned after the lock ended"
            )));
        }
    }
}

/// The event the bare core reports for a call's answer, if any (a call that ended
/// with the lock has none: the lock's own end says it).
fn outcome(lock: LockId, call: Call, answer: Answer) -> Option<Drained> {
    let event = match (call, answer) {
        (
            Call::Section {
                superseded: true, ..
            },
            Answer::Section(result),
        ) => {
            return Some(Drained::Note(format!(
                "{call:?} on {lock} returned {result:?}: the answer to the later call"
            )))
        }
        (Call::Section { open, .. }, Answer::Section(Ok(()))) => {
            if open {
                LockEvent::SectionOpened
            } else {
                LockEvent::SectionClosed
            }
        }
        (Call::Section { .. }, Answer::Section(Err(Error::Zk(e)))) => LockEvent::SectionFailed(e),
        (Call::Fenced { write }, Answer::Fenced(result)) => {
            LockEvent::FencedWrite { write, result }
        }
        (call, Answer::Section(Err(e))) => {
            return Some(Drained::Note(format!("{call:?} on {lock} failed: {e}")))
        }
        (call, _) => unreachable!("{call:?} answered as another call"),
    };
    Some(Drained::Event { lock, event })
}
