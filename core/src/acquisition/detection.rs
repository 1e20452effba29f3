//! Deadlock detection for one acquisition (see [`crate::deadlock`]): publishing
//! where our owner waits, and chasing the waits from our node.

use super::{Acquisition, State};
use crate::ctx::Ctx;
use crate::deadlock::chase::{Chase, Outcome};
use crate::event::FailReason;
use crate::proto::{Reply, RequestId, ZkError};
use crate::timers::TimerKind;

/// Deadlock detection (see [`crate::deadlock`]).
impl Acquisition {
    /// Where our owner waits, if we publish it: (owner, our waiting node).
    pub(crate) fn published_wait(&self) -> Option<(&str, String)> {
        if !self.detecting || self.state != State::Waiting {
            return None;
        }
        Some((self.spec.owner.as_deref()?, self.own.as_ref()?.path.clone()))
    }

    /// The node we hold, for our owner's chases.
    pub(crate) fn held_node(&self) -> Option<(&str, &str)> {
        match self.state {
            State::Held => Some((
                self.spec.owner.as_deref()?,
                self.own.as_ref()?.path.as_str(),
            )),
            _ => None,
        }
    }

    /// Tells a detecting waiter which nodes its owner holds on this session.
    pub(crate) fn set_owner_held(&mut self, held: &[String]) {
        if self.spec.detect_after.is_some() && self.owner_held != held {
            self.owner_held = held.to_vec();
        }
    }

    /// Publishes `waits` in our held node's header (or withdraws what is there).
    pub(crate) fn publish(&mut self, cx: &mut Ctx, waits: Vec<String>) {
        if waits.is_empty() && !self.publication.active() {
            return;
        }
        if self.state != State::Held || self.suspended || !cx.connected {
            return;
        }
        let Some(own) = &self.own else { return };
        let path = own.path.clone();
        self.publication.publish(cx, self.id, &path, waits);
    }

    pub(super) fn on_detect_timer(&mut self, cx: &mut Ctx) {
        let Some(after) = self.spec.detect_after else {
            return;
        };
        if self.state != State::Waiting {
            return;
        }
        cx.timers.set(self.id, TimerKind::Detect, cx.now + after);
        if !cx.connected || self.own.is_none() {
            return;
        }
        self.detecting = true;
        if self.chase.is_none() {
            self.start_chase(cx);
        }
    }

    pub(super) fn start_chase(&mut self, cx: &mut Ctx) {
        let (Some(own), Some(owner)) = (&self.own, &self.spec.owner) else {
            return;
        };
        let chase = Chase::start(
            cx,
            self.id,
            own.path.clone(),
            owner.clone(),
            self.owner_held.clone(),
        );
        cx.stats.deadlock_chases += 1;
        self.chase = Some(Box::new(chase));
    }

    pub(super) fn on_chase_reply(
        &mut self,
        cx: &mut Ctx,
        request: RequestId,
        result: Result<Reply, ZkError>,
    ) {
        let Some(chase) = &mut self.chase else { return };
        if !chase.owns(request) {
            return;
        }
        match chase.on_reply(cx, request, result) {
            Outcome::Pending => {}
            Outcome::NoCycle => self.chase = None,
            Outcome::Cycle { victim, cycle } => {
                self.chase = None;
                cx.stats.deadlocks_seen += 1;
                if victim && self.state == State::Waiting {
                    self.fail(cx, FailReason::Deadlock { cycle });
                }
            }
        }
    }

    pub(super) fn stop_detecting(&mut self, cx: &mut Ctx) {
        self.detecting = false;
        self.chase = None;
        cx.timers.cancel(self.id, TimerKind::Detect);
    }
}
