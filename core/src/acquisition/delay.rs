//! [`Delay`]: lock-delay ([`LockSpec::lock_delay`](crate::LockSpec::lock_delay)),
//! the part of an acquisition that owns the marker a lock-delay holder keeps for
//! its whole hold, and the wait a grant makes when it finds another holder's
//! marker (that holder ended without a clean release).
//!
//! The acquisition's grant asks [`Delay::may_grant`] once the token (and a crash
//! marker) are known; meanwhile the delay creates the marker, reads it, waits
//! out the delay ([`TimerKind::LockDelay`]) or takes it over. A clean release
//! deletes the marker in its multi ([`Delay::marker_ours`]).

use super::{Identity, PartAsks};
use crate::ctx::Ctx;
use crate::ctx::InFlight;
use crate::event::FailReason;
use crate::names::DELAY_MARKER;
use crate::output::Progress;
use crate::path::split_parent;
use crate::proto::{MultiOp, Op, Reply, RequestId, ZkError};
use crate::requests::Purpose;
use crate::time::Timestamp;
use crate::timers::TimerKind;

/// The part of an acquisition that owns its lock-delay (only with a delay set).
/// The wait's state is boxed and made at the first use: few specs set a
/// lock-delay, and every held lock and waiting acquisition keeps this part.
#[derive(Default, Debug)]
pub(super) struct Delay {
    /// The marker names our node (we created or took it over): a clean release
    /// deletes it.
    pub(super) marker_ours: bool,
    wait: Option<Box<Wait>>,
}

/// The lock-delay's wait (see [`Delay`]).
#[derive(Default, Debug)]
struct Wait {
    /// When this acquisition first found nobody ahead of it (its predecessor's end
    /// observed, or the lock free): the delay counts from here, on our own clock.
    free_since: Option<Timestamp>,
    /// The marker named another node: no grant before this.
    until: Option<Timestamp>,
    /// The marker's create, read or take-over in flight.
    request: InFlight,
}

/// The path of the lock-delay marker of the lock at `lock_path`.
pub(super) fn marker_path(lock_path: &str) -> String {
    format!("{lock_path}/{DELAY_MARKER}")
}

impl Delay {
    /// The wait's state, made at first use.
    fn wait(&mut self) -> &mut Wait {
        self.wait.get_or_insert_with(Box::default)
    }

    // Replies.

    /// Takes the reply to `request` if it answers the marker request in flight.
    pub(super) fn take_reply(&mut self, request: RequestId) -> bool {
        self.wait
            .as_mut()
            .is_some_and(|wait| wait.request.take_reply(request))
    }

    /// A reply about the marker, taken ([`take_reply`](Self::take_reply)):
    /// to its create or take-over, or to its read.
    pub(super) fn on_reply(
        &mut self,
        cx: &mut Ctx,
        identity: Identity<'_>,
        purpose: Purpose,
        result: Result<Reply, ZkError>,
    ) -> PartAsks {
        match purpose {
            Purpose::DelayMarker { take } => self.on_marker_reply(cx, identity, take, result),
            _ => self.on_read_reply(cx, identity, result),
        }
    }

    /// The reply to our marker's create (`take: false`) or take-over.
    fn on_marker_reply(
        &mut self,
        cx: &mut Ctx,
        identity: Identity<'_>,
        take: bool,
        result: Result<Reply, ZkError>,
    ) -> PartAsks {
        match result {
            Ok(_) => {
                self.marker_ours = true;
                PartAsks::Grant
            }
            Err(ZkError::MultiFailed { index: 0, .. }) => PartAsks::Lost,
            Err(ZkError::MultiFailed { index: 1, error }) => match (*error, take) {
                // Someone's marker is there: whose?
                (ZkError::NodeExists, false) => {
                    let op = Op::read(marker_path(&identity.spec.path));
                    let wait = self.wait();
                    wait.request.send(cx, identity.id, Purpose::DelayRead, op);
                    PartAsks::Pending
                }
                // Gone between our read and the take-over (deleted by hand): create.
                (ZkError::NoNode, true) => {
                    self.send_marker(cx, identity, false);
                    PartAsks::Pending
                }
                (e, _) => PartAsks::Trouble(e),
            },
            Err(e) => PartAsks::Trouble(e),
        }
    }

    /// The marker's data: ours (a create of ours retried), or another holder's,
    /// which ended without a clean release: the delay to wait out is set.
    fn on_read_reply(
        &mut self,
        cx: &mut Ctx,
        identity: Identity<'_>,
        result: Result<Reply, ZkError>,
    ) -> PartAsks {
        let data = match result {
            Ok(Reply::Data { data, .. }) => data,
            Ok(_) => return PartAsks::Trouble(ZkError::unexpected_reply()),
            // Gone since our create failed: create again.
            Err(ZkError::NoNode) => {
                self.send_marker(cx, identity, false);
                return PartAsks::Pending;
            }
            Err(e) => return PartAsks::Trouble(e),
        };
        if own_name(identity).is_some_and(|name| name.as_bytes() == data) {
            self.marker_ours = true;
            return PartAsks::Grant;
        }
        if !identity.spec.wait {
            return PartAsks::Fail(FailReason::WouldBlock);
        }
        let delay = identity.spec.rare().lock_delay.unwrap_or_default();
        let since = self.wait().free_since.unwrap_or(cx.now);
        let until = since + delay;
        self.wait().until = Some(until);
        cx.stats.lock_delays += 1;
        if let Some(own) = identity.node {
            let node = own.path.clone();
            cx.progress(
                identity.id,
                Progress::LockDelay {
                    node: node.to_string(),
                    until,
                },
            );
        }
        PartAsks::Grant
    }

    // Mutators.

    /// The grant's lock-delay step: `true` when the grant may go on (no delay
    /// set, or the marker is ours). Otherwise the acquisition stays granting and
    /// a reply (its [`PartAsks::Grant`]) or the delay's timer tries again.
    pub(super) fn may_grant(&mut self, cx: &mut Ctx, identity: Identity<'_>) -> bool {
        let Some(delay) = identity.spec.rare().lock_delay else {
            return true;
        };
        if self.marker_ours {
            return true;
        }
        let wait = self.wait();
        let free_since = *wait.free_since.get_or_insert(cx.now);
        if wait.request.is_pending() {
            return false;
        }
        let Some(until) = wait.until else {
            // First the cheap case: no marker (the last holder released cleanly).
            self.send_marker(cx, identity, false);
            return false;
        };
        if cx.now < until {
            if !cx.timers.is_armed(identity.id, TimerKind::LockDelay) {
                cx.timers.set(identity.id, TimerKind::LockDelay, until);
            }
            return false;
        }
        debug_assert!(until >= free_since + delay);
        self.send_marker(cx, identity, true);
        false
    }

    /// Creates (`take: false`) or takes over our marker, checking our node in the
    /// same multi (a node no longer ours writes nothing).
    fn send_marker(&mut self, cx: &mut Ctx, identity: Identity<'_>, take: bool) {
        let (Some(own), Some(name)) = (identity.node, own_name(identity)) else {
            return;
        };
        let check = MultiOp::check(own.path.to_string());
        let marker = MultiOp::put_persistent(
            marker_path(&identity.spec.path),
            name.as_bytes().to_vec(),
            take,
        );
        let op = Op::Multi(vec![check, marker]);
        self.wait()
            .request
            .send(cx, identity.id, Purpose::DelayMarker { take }, op);
    }

    /// The connection dropped: the request in flight is gone (what it found is
    /// asked again after the reconnect; the wait keeps its start).
    pub(super) fn forget(&mut self) {
        if let Some(wait) = &mut self.wait {
            wait.request.forget();
        }
    }
}

/// Our node's name: the marker's data.
fn own_name(identity: Identity<'_>) -> Option<&str> {
    Some(split_parent(&identity.node?.path).1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acquisition::node::OwnNode;
    use crate::ids::LockId;
    use crate::proto::CreateMode;
    use crate::spec::LockSpec;
    use std::time::Duration;

    #[test]
    fn the_marker_is_created_one_request_at_a_time() {
        let mut session = crate::ctx::tests::CtxParts::default();
        let spec = LockSpec::write("/l").lock_delay(Duration::from_secs(5));
        let own = OwnNode::unread("/l/n-0000000002", 2);
        let identity = Identity::with_node(LockId(1), &spec, &own);
        let mut delay = Delay::default();
        assert!(!delay.may_grant(&mut session.cx(), identity));
        let sent = session.sent();
        let check = MultiOp::check("/l/n-0000000002");
        let create = MultiOp::Create {
            path: "/l/zkl-delay".into(),
            data: b"n-0000000002".to_vec(),
            mode: CreateMode::Persistent,
        };
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0].op, Op::Multi(vec![check, create]));
        assert!(
            !delay.may_grant(&mut session.cx(), identity),
            "one at a time"
        );
        assert!(session.sent_ops().is_empty());
        assert!(!delay.take_reply(RequestId(0)), "not the marker's reply");
        assert!(delay.take_reply(sent[0].id));
    }

    #[test]
    fn a_failed_check_at_the_take_over_is_a_loss() {
        let mut session = crate::ctx::tests::CtxParts::default();
        let spec = LockSpec::write("/l").lock_delay(Duration::from_secs(5));
        let own = OwnNode::unread("/l/n-0000000002", 2);
        let identity = Identity::with_node(LockId(1), &spec, &own);
        let mut delay = Delay::default();
        let gone = Err(ZkError::MultiFailed {
            index: 0,
            error: Box::new(ZkError::NoNode),
        });
        let outcome = delay.on_marker_reply(&mut session.cx(), identity, true, gone);
        assert_eq!(outcome, PartAsks::Lost);
    }
}
