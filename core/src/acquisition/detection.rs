//! [`Detection`]: deadlock detection for one acquisition (see
//! [`crate::deadlock`]), the part that owns the wait, the chase from our node,
//! the publication of where our owner waits in our held node, and a downgrade's
//! write nodes. Its life: [`Detection::start_waiting`], [`Detection::on_timer`]
//! (chases), [`Detection::on_chase_reply`], [`Detection::stop`]; the session
//! publishes through [`Detection::publish`] after every call.

use super::Identity;
use crate::ctx::Ctx;
use crate::deadlock::chase::{Chase, ChaseResult};
use crate::deadlock::publish::Publication;
use crate::event::FailReason;
use crate::ids::LockId;
use crate::proto::{Reply, RequestId, Stat, ZkError};
use crate::spec::LockSpec;
use crate::time::Timestamp;
use crate::timers::TimerKind;

/// The part of an acquisition that owns its deadlock detection (see the module
/// docs).
///
/// Boxed, and only once used: most acquisitions neither detect deadlocks nor
/// name an owner. The downgrade's names stay inline, read by every look at a
/// listing.
#[derive(Default)]
pub(super) struct Detection {
    /// For a downgrade (a read taken by the owner of the held write half of the
    /// same read/write lock, on this session): the names of those write nodes,
    /// which do not block us (see `Acquisition::downgrade_from`).
    pub(super) downgrade: Vec<String>,
    parts: Option<Box<Parts>>,
}

/// What [`Detection`] keeps once used.
#[derive(Default)]
struct Parts {
    /// We have waited past `detect_after` and publish our wait.
    detecting: bool,
    /// When we started waiting (the first look that did not grant).
    wait_started: Option<Timestamp>,
    /// The deadlock chase in progress (boxed: most acquisitions never chase,
    /// and a `Chase` is several times the size of the rest).
    chase: Option<Box<Chase>>,
    /// Where our owner waits, as published in our held node's header.
    publication: Publication,
    /// The nodes our owner holds on this session (kept by the session while
    /// detection is on), where a chase must come back to.
    owner_held: Vec<String>,
}

impl Parts {
    fn start_chase(&mut self, cx: &mut Ctx, identity: Identity<'_>) {
        let (Some(own), Some(owner)) = (identity.node, &identity.spec.rare().owner) else {
            return;
        };
        let chase = Chase::start(
            cx,
            identity.id,
            own.path.to_string(),
            owner.clone(),
            self.owner_held.clone(),
        );
        cx.stats.deadlock_chases += 1;
        self.chase = Some(Box::new(chase));
    }
}

impl Detection {
    /// The parts, made at first use.
    fn parts(&mut self) -> &mut Parts {
        self.parts.get_or_insert_with(Box::default)
    }

    /// Whether `spec` uses detection's state at all: a deadlock detector, or an
    /// owner whose waits other acquisitions may publish in our node's header.
    fn used_by(spec: &LockSpec) -> bool {
        spec.rare().detect_after.is_some() || spec.rare().owner.is_some()
    }

    // Getters.

    /// Where our owner waits, if we publish it (`waiting`: the acquisition
    /// waits): (owner, our waiting node).
    pub(super) fn published_wait<'a>(
        &self,
        waiting: bool,
        identity: Identity<'a>,
    ) -> Option<(&'a str, String)> {
        if !self.parts.as_ref()?.detecting || !waiting {
            return None;
        }
        Some((
            identity.spec.rare().owner.as_deref()?,
            identity.node?.path.to_string(),
        ))
    }

    // Replies.

    /// A reply that the request book attributed to our chase, if any: the
    /// deadlock to fail with when we are its victim and still `waiting`.
    pub(super) fn on_chase_reply(
        &mut self,
        cx: &mut Ctx,
        request: RequestId,
        result: Result<Reply, ZkError>,
        waiting: bool,
    ) -> Option<FailReason> {
        let parts = self.parts.as_mut()?;
        let chase = parts.chase.as_mut()?;
        if !chase.owns(request) {
            return None;
        }
        match chase.on_reply(cx, request, result) {
            ChaseResult::Pending => None,
            ChaseResult::NoCycle => {
                parts.chase = None;
                None
            }
            ChaseResult::Cycle { victim, cycle } => {
                parts.chase = None;
                cx.stats.deadlocks_seen += 1;
                (victim && waiting).then_some(FailReason::Deadlock { cycle })
            }
        }
    }

    /// The reply to a publication's `setData` on our node.
    pub(super) fn on_publish_reply(
        &mut self,
        cx: &mut Ctx,
        identity: Identity<'_>,
        request: RequestId,
        result: &Result<Reply, ZkError>,
    ) {
        if let (Some(parts), Some(own)) = (&mut self.parts, identity.node) {
            parts
                .publication
                .on_reply(cx, identity.id, &own.path, request, result);
        }
    }

    /// Our create's reply brought our node's stat: the node holds `data` (our
    /// header) at that version. Without an owner our header names nobody,
    /// nothing is ever published in it, and nothing is kept.
    pub(super) fn node_created(&mut self, spec: &LockSpec, data: Vec<u8>, stat: &Stat) {
        if Self::used_by(spec) {
            let owner = spec.rare().owner.as_deref();
            self.parts()
                .publication
                .created(data, stat, spec.scheme, owner);
        }
    }

    /// A read of our node found `data` at `stat`: what our header says, if it is
    /// still ours (a revocation marker is not).
    pub(super) fn node_read(&mut self, spec: &LockSpec, data: &[u8], stat: &Stat) {
        if Self::used_by(spec) {
            let owner = spec.rare().owner.as_deref();
            self.parts()
                .publication
                .observe(data, stat, spec.scheme, owner);
        }
    }

    // Mutators.

    /// A look did not grant: the wait starts (once), and with detection on, its
    /// timer.
    pub(super) fn start_waiting(&mut self, cx: &mut Ctx, id: LockId, spec: &LockSpec) {
        let Some(after) = spec.rare().detect_after else {
            return;
        };
        let parts = self.parts();
        if parts.wait_started.is_none() {
            parts.wait_started = Some(cx.now);
            cx.timers.set(id, TimerKind::Detect, cx.now + after);
        }
    }

    /// The detect timer fired (`waiting`: the acquisition still waits): arm it
    /// again, and chase from our node unless a chase runs.
    pub(super) fn on_timer(&mut self, cx: &mut Ctx, identity: Identity<'_>, waiting: bool) {
        let Some(after) = identity.spec.rare().detect_after else {
            return;
        };
        let parts = self.parts();
        if !waiting {
            return;
        }
        cx.timers
            .set(identity.id, TimerKind::Detect, cx.now + after);
        if !cx.connected || identity.node.is_none() {
            return;
        }
        parts.detecting = true;
        if parts.chase.is_none() {
            parts.start_chase(cx, identity);
        }
    }

    /// A watched blocker's data changed: someone may have published a wait
    /// there, so a detecting waiter chases now.
    pub(super) fn on_blocker_changed(&mut self, cx: &mut Ctx, identity: Identity<'_>) {
        if let Some(parts) = &mut self.parts {
            if parts.detecting && parts.chase.is_none() {
                parts.start_chase(cx, identity);
            }
        }
    }

    /// Tells a detecting waiter which nodes its owner holds on this session.
    pub(super) fn set_owner_held(&mut self, spec: &LockSpec, held: &[String]) {
        if spec.rare().detect_after.is_some() {
            let parts = self.parts();
            if parts.owner_held != held {
                parts.owner_held = held.to_vec();
            }
        }
    }

    /// Publishes `waits` in our held node's header (or withdraws what is there),
    /// while `trusted` (held, not suspended) and connected. Nothing to withdraw
    /// where nothing was kept.
    pub(super) fn publish(
        &mut self,
        cx: &mut Ctx,
        identity: Identity<'_>,
        trusted: bool,
        waits: Vec<String>,
    ) {
        let active = self.parts.as_ref().is_some_and(|p| p.publication.active());
        if waits.is_empty() && !active {
            return;
        }
        let Some(own) = identity.node.filter(|_| trusted && cx.connected) else {
            return;
        };
        self.parts()
            .publication
            .publish(cx, identity.id, &own.path, waits);
    }

    /// Granted or ended: no more chasing or detect timer.
    pub(super) fn stop(&mut self, cx: &mut Ctx, id: LockId) {
        if let Some(parts) = &mut self.parts {
            parts.detecting = false;
            parts.chase = None;
        }
        cx.timers.cancel(id, TimerKind::Detect);
    }

    /// The connection dropped (or a recovery starts): a chase in progress and a
    /// publication in flight are gone; the next detect timer chases again.
    pub(super) fn forget(&mut self) {
        if let Some(parts) = &mut self.parts {
            parts.chase = None;
            parts.publication.forget();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acquisition::node::OwnNode;
    use crate::proto::Op;
    use std::time::Duration;

    fn spec() -> LockSpec {
        LockSpec::write("/l")
            .owner("w1")
            .detect_deadlocks(Duration::from_secs(2))
    }

    fn node() -> OwnNode {
        OwnNode::unread(format!("/l/zkl-{:032x}-write-0000000002", 7), 2)
    }

    #[test]
    fn forget_keeps_what_outlives_a_connection() {
        let mut detection = Detection {
            downgrade: vec!["w".into()],
            parts: Some(Box::new(Parts {
                detecting: true,
                owner_held: vec!["/a/n".into()],
                ..Parts::default()
            })),
        };
        detection.forget();
        assert_eq!(detection.downgrade, ["w"]);
        let detection = detection.parts.expect("kept");
        assert!(detection.chase.is_none());
        assert!(!detection.publication.active());
        assert!(detection.detecting);
        assert_eq!(detection.owner_held, ["/a/n"]);
    }

    #[test]
    fn a_wait_past_the_threshold_chases_from_our_node_and_publishes() {
        let mut session = crate::ctx::tests::CtxParts::default();
        let (spec, own) = (spec(), node());
        let identity = Identity::with_node(LockId(3), &spec, &own);
        let mut detection = Detection::default();
        detection.start_waiting(&mut session.cx(), identity.id, &spec);
        assert!(session.timers.is_armed(identity.id, TimerKind::Detect));
        assert_eq!(detection.published_wait(true, identity), None, "not yet");
        // Before the threshold nothing is sent.
        assert!(session.out.is_empty());
        detection.on_timer(&mut session.cx(), identity, true);
        assert!(detection.parts.as_ref().unwrap().chase.is_some());
        assert_eq!(session.stats.deadlock_chases, 1);
        let reads = session.sent_ops();
        assert_eq!(
            reads.first(),
            Some(&Op::GetChildren { path: "/l".into() }),
            "the chase lists our directory first: {reads:?}"
        );
        assert_eq!(
            detection.published_wait(true, identity),
            Some(("w1", own.path.to_string()))
        );
        assert_eq!(detection.published_wait(false, identity), None);
        // A reply that is not the chase's changes nothing.
        let other = detection.on_chase_reply(
            &mut session.cx(),
            RequestId(999),
            Ok(Reply::Children(Vec::new())),
            true,
        );
        assert_eq!(other, None);
        assert!(detection.parts.as_ref().unwrap().chase.is_some());
        detection.stop(&mut session.cx(), identity.id);
        assert!(detection.parts.as_ref().unwrap().chase.is_none());
        assert!(!session.timers.is_armed(identity.id, TimerKind::Detect));
        assert_eq!(detection.published_wait(true, identity), None);
    }

    #[test]
    fn nothing_is_published_while_untrusted_or_with_nothing_to_say() {
        let mut session = crate::ctx::tests::CtxParts::default();
        let (spec, own) = (spec(), node());
        let identity = Identity::with_node(LockId(3), &spec, &own);
        let mut detection = Detection::default();
        detection.publish(&mut session.cx(), identity, true, Vec::new());
        detection.publish(&mut session.cx(), identity, false, vec!["/m/x".into()]);
        assert!(session.out.is_empty());
    }
}
