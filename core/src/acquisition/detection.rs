//! Deadlock detection for one acquisition (see [`crate::deadlock`]): publishing
//! where our owner waits, and chasing the waits from our node.

use super::{Acquisition, State};
use crate::ctx::Ctx;
use crate::deadlock::chase::{Chase, Outcome};
use crate::deadlock::publish::Publication;
use crate::event::FailReason;
use crate::proto::{Reply, RequestId, ZkError};
use crate::time::Timestamp;
use crate::timers::TimerKind;

/// The part of an acquisition that owns its deadlock detection: the wait, the
/// chase, the publication in our held node, and a downgrade's write nodes.
#[derive(Default)]
pub(super) struct Detection {
    /// We have waited past `detect_after` and publish our wait.
    pub(super) detecting: bool,
    /// When we started waiting (the first look that did not grant).
    pub(super) wait_started: Option<Timestamp>,
    /// The deadlock chase in progress (boxed: most acquisitions never chase,
    /// and a `Chase` is several times the size of the rest).
    pub(super) chase: Option<Box<Chase>>,
    /// Where our owner waits, as published in our held node's header.
    pub(super) publication: Publication,
    /// For a downgrade (a read taken by the owner of the held write half of the
    /// same read/write lock, on this session): the names of those write nodes,
    /// which do not block us (see [`Acquisition::downgrade_from`]).
    pub(super) downgrade: Vec<String>,
    /// The nodes our owner holds on this session (kept by the session while
    /// detection is on), where a chase must come back to.
    pub(super) owner_held: Vec<String>,
}

impl Detection {
    /// The connection dropped (or a recovery starts): a chase in progress and a
    /// publication in flight are gone; the next detect timer chases again.
    pub(super) fn forget(&mut self) {
        self.chase = None;
        self.publication.forget();
    }
}

/// Deadlock detection (see [`crate::deadlock`]).
impl Acquisition {
    /// Where our owner waits, if we publish it: (owner, our waiting node).
    pub(crate) fn published_wait(&self) -> Option<(&str, String)> {
        if !self.detection.detecting || self.state != State::Waiting {
            return None;
        }
        Some((
            self.spec.owner.as_deref()?,
            self.node.own.as_ref()?.path.clone(),
        ))
    }

    /// The node we hold, for our owner's chases.
    pub(crate) fn held_node(&self) -> Option<(&str, &str)> {
        match self.state {
            State::Held => Some((
                self.spec.owner.as_deref()?,
                self.node.own.as_ref()?.path.as_str(),
            )),
            _ => None,
        }
    }

    /// Tells a detecting waiter which nodes its owner holds on this session.
    pub(crate) fn set_owner_held(&mut self, held: &[String]) {
        if self.spec.detect_after.is_some() && self.detection.owner_held != held {
            self.detection.owner_held = held.to_vec();
        }
    }

    /// Publishes `waits` in our held node's header (or withdraws what is there).
    pub(crate) fn publish(&mut self, cx: &mut Ctx, waits: Vec<String>) {
        if waits.is_empty() && !self.detection.publication.active() {
            return;
        }
        if self.state != State::Held || self.suspended || !cx.connected {
            return;
        }
        let Some(own) = &self.node.own else { return };
        let path = own.path.clone();
        self.detection
            .publication
            .publish(cx, self.id, &path, waits);
    }

    pub(super) fn on_detect_timer(&mut self, cx: &mut Ctx) {
        let Some(after) = self.spec.detect_after else {
            return;
        };
        if self.state != State::Waiting {
            return;
        }
        cx.timers.set(self.id, TimerKind::Detect, cx.now + after);
        if !cx.connected || self.node.own.is_none() {
            return;
        }
        self.detection.detecting = true;
        if self.detection.chase.is_none() {
            self.start_chase(cx);
        }
    }

    pub(super) fn start_chase(&mut self, cx: &mut Ctx) {
        let (Some(own), Some(owner)) = (&self.node.own, &self.spec.owner) else {
            return;
        };
        let chase = Chase::start(
            cx,
            self.id,
            own.path.clone(),
            owner.clone(),
            self.detection.owner_held.clone(),
        );
        cx.stats.deadlock_chases += 1;
        self.detection.chase = Some(Box::new(chase));
    }

    pub(super) fn on_chase_reply(
        &mut self,
        cx: &mut Ctx,
        request: RequestId,
        result: Result<Reply, ZkError>,
    ) {
        let Some(chase) = &mut self.detection.chase else {
            return;
        };
        if !chase.owns(request) {
            return;
        }
        match chase.on_reply(cx, request, result) {
            Outcome::Pending => {}
            Outcome::NoCycle => self.detection.chase = None,
            Outcome::Cycle { victim, cycle } => {
                self.detection.chase = None;
                cx.stats.deadlocks_seen += 1;
                if victim && self.state == State::Waiting {
                    self.fail(cx, FailReason::Deadlock { cycle });
                }
            }
        }
    }

    pub(super) fn stop_detecting(&mut self, cx: &mut Ctx) {
        self.detection.detecting = false;
        self.detection.chase = None;
        cx.timers.cancel(self.id, TimerKind::Detect);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forget_keeps_what_outlives_a_connection() {
        let mut detection = Detection {
            detecting: true,
            downgrade: vec!["w".into()],
            owner_held: vec!["/a/n".into()],
            ..Detection::default()
        };
        detection.forget();
        assert!(detection.chase.is_none());
        assert!(!detection.publication.active());
        assert!(detection.detecting);
        assert_eq!(detection.downgrade, ["w"]);
        assert_eq!(detection.owner_held, ["/a/n"]);
    }
}
