//! The one policy of the tasks that own no node (inspection, revocation, election
//! observer, deadlock scan): when a request fails, retry or stop.
//!
//! * The outcome is unknown ([`ZkError::is_connection_loss`]) or the session is
//!   going away (`SessionExpired`, `Closed`): retry after
//!   [`Config::retry_interval`](crate::Config::retry_interval), once connected. The
//!   task owns no node, so asking again is always safe, and the session's end (if it
//!   comes) decides the rest: these tasks go on with the next session, or stop with
//!   `Closed`.
//! * Anything else the server or the client answered (`NoAuth`, `BadArguments`, an
//!   op the binding cannot send ([`ZkError::Unimplemented`]), [`ZkError::Other`]),
//!   and a reply of the wrong kind
//!   (a binding's mistake): stop with [`FailReason::Zk`]. Asking again would get the
//!   same answer, and a task retried forever leaves its caller waiting forever.
//!
//! `NoNode` is no error here: each task says what a missing node means to it.
//!
//! A task waiting for its retry has not finished, whatever its other requests
//! answer meanwhile: a request that failed is out of the task's books, and the
//! replies still coming could otherwise look like a complete answer (an inspection
//! reporting an empty queue it never listed, a revocation reporting nodes sent
//! without the one it could not ask). [`OneShotRun::retry_due`] says so until the
//! retry starts over.

use crate::ctx::Ctx;
use crate::event::{FailReason, LockEvent};
use crate::ids::LockId;
use crate::proto::ZkError;
use crate::timers::TimerKind;

/// Whether the policy retries after `error` (else the task stops).
pub(crate) fn retries(error: &ZkError) -> bool {
    error.is_connection_loss() || matches!(error, ZkError::SessionExpired | ZkError::Closed)
}

/// Where a one-shot task stands for the policy, the same in every such task.
pub(crate) struct OneShotRun {
    /// The task's id: its events and timers are filed under it.
    pub(crate) id: LockId,
    /// The task has ended (set once it has).
    pub(crate) done: bool,
    /// A failed request is to be asked again: set when the policy retries,
    /// cleared when the task starts over. The task must not finish while it is set.
    pub(crate) retry_due: bool,
}

impl OneShotRun {
    pub(crate) fn new(id: LockId) -> OneShotRun {
        OneShotRun {
            id,
            done: false,
            retry_due: false,
        }
    }
}

/// A task that owns no node and ends in one event (or, for an observer, runs until
/// stopped): the shared half of inspect, revoke, observer, break and scan.
pub(crate) trait OneShot {
    /// Where the task stands for the policy.
    fn run(&mut self) -> &mut OneShotRun;
    /// Sends the task's requests again from its own state (the replies to its
    /// earlier ones are forgotten by then).
    fn restart(&mut self, cx: &mut Ctx);

    /// Starts over (a retry, or a reconnect): the retry is no longer due.
    fn recover(&mut self, cx: &mut Ctx) {
        let run = self.run();
        run.retry_due = false;
        cx.requests.forget_lock(run.id);
        self.restart(cx);
    }

    /// Applies the policy to a failed request: a retry timer, or the end.
    fn trouble(&mut self, cx: &mut Ctx, error: ZkError) {
        if retries(&error) {
            let run = self.run();
            run.retry_due = true;
            cx.timers
                .set(run.id, TimerKind::Retry, cx.now + cx.config.retry_interval);
        } else {
            self.stop(cx, FailReason::Zk(error));
        }
    }

    /// A timer of the task fired: a retry starts over, once connected.
    fn on_timer(&mut self, cx: &mut Ctx, kind: TimerKind) {
        if kind == TimerKind::Retry && cx.connected && !self.run().done {
            self.recover(cx);
        }
    }

    /// Ends the task with `reason`, once.
    fn stop(&mut self, cx: &mut Ctx, reason: FailReason) {
        let run = self.run();
        if !run.done {
            run.done = true;
            cx.emit(run.id, LockEvent::Failed(reason));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_outcomes_and_ending_sessions_retry_the_rest_stops() {
        for retried in [
            ZkError::ConnectionLoss,
            ZkError::OperationTimeout,
            ZkError::SessionExpired,
            ZkError::Closed,
        ] {
            assert!(retries(&retried), "{retried:?}");
        }
        for final_answer in [
            ZkError::NoAuth,
            ZkError::BadArguments,
            ZkError::NodeExists,
            ZkError::Unimplemented,
            ZkError::unexpected_reply(),
        ] {
            assert!(!retries(&final_answer), "{final_answer:?}");
        }
    }
}
