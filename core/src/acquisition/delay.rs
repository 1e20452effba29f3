//! Lock-delay ([`LockSpec::lock_delay`](crate::LockSpec::lock_delay)): the marker a
//! lock-delay holder keeps for its whole hold, and the wait a grant makes when it
//! finds another holder's marker (that holder ended without a clean release).
//!
//! Calling order: [`Acquisition::grant`] calls [`Acquisition::delay_grant`] once the
//! token (and a crash marker) are known; it returns `true` once the marker names our
//! node and the grant may go on. Until then the acquisition stays in
//! [`State::Granting`]: creating the marker, reading it, waiting out the delay
//! ([`TimerKind::LockDelay`]) or taking it over. A clean release deletes the marker
//! in its multi ([`Acquisition::release_markers`](super::release)).

use super::{Acquisition, State, DELAY_MARKER};
use crate::ctx::Ctx;
use crate::event::{FailReason, LostReason};
use crate::output::Progress;
use crate::path::split_parent;
use crate::proto::{CreateMode, MultiOp, Op, Reply, ZkError};
use crate::requests::{InFlight, Purpose};
use crate::time::Timestamp;
use crate::timers::TimerKind;

/// The part of an acquisition that owns its lock-delay (only with a delay set).
#[derive(Default, Debug)]
pub(super) struct Delay {
    /// The marker names our node (we created or took it over): a clean release
    /// deletes it.
    pub(super) marker_ours: bool,
    /// When this acquisition first found nobody ahead of it (its predecessor's end
    /// observed, or the lock free): the delay counts from here, on our own clock.
    pub(super) free_since: Option<Timestamp>,
    /// The marker named another node: no grant before this.
    pub(super) until: Option<Timestamp>,
    /// The marker's create, read or take-over in flight.
    pub(super) request: InFlight,
}

impl Delay {
    /// The connection dropped: the request in flight is gone (what it found is
    /// asked again after the reconnect; the wait keeps its start).
    pub(super) fn forget(&mut self) {
        self.request.forget();
    }
}

impl Acquisition {
    fn delay_marker_path(&self) -> String {
        format!("{}/{DELAY_MARKER}", self.spec.path)
    }

    /// Our node's name: the marker's data.
    fn own_name(&self) -> Option<String> {
        let own = self.node.own.as_ref()?;
        Some(split_parent(&own.path).1.to_owned())
    }

    /// The grant's lock-delay step: `true` when the grant may go on (no delay set,
    /// or the marker is ours). Otherwise the state is [`State::Granting`] and a
    /// reply or the delay's timer calls [`Acquisition::grant`] again.
    pub(super) fn delay_grant(&mut self, cx: &mut Ctx) -> bool {
        let Some(delay) = self.spec.lock_delay else {
            return true;
        };
        if self.delay.marker_ours {
            return true;
        }
        self.state = State::Granting;
        let free_since = *self.delay.free_since.get_or_insert(cx.now);
        if self.delay.request.is_pending() {
            return false;
        }
        let Some(until) = self.delay.until else {
            // First the cheap case: no marker (the last holder released cleanly).
            self.send_delay_marker(cx, false);
            return false;
        };
        if cx.now < until {
            if !cx.timers.is_armed(self.id, TimerKind::LockDelay) {
                cx.timers.set(self.id, TimerKind::LockDelay, until);
            }
            return false;
        }
        debug_assert!(until >= free_since + delay);
        self.send_delay_marker(cx, true);
        false
    }

    /// Creates (`take: false`) or takes over our marker, checking our node in the
    /// same multi (a node no longer ours writes nothing).
    fn send_delay_marker(&mut self, cx: &mut Ctx, take: bool) {
        let (Some(own), Some(name)) = (self.node.own.as_ref(), self.own_name()) else {
            return;
        };
        let check = MultiOp::Check {
            path: own.path.clone(),
            version: None,
        };
        let path = self.delay_marker_path();
        let data = name.into_bytes();
        let op = if take {
            MultiOp::SetData {
                path,
                data,
                version: None,
            }
        } else {
            MultiOp::Create {
                path,
                data,
                mode: CreateMode::Persistent,
            }
        };
        let op = Op::Multi(vec![check, op]);
        self.delay
            .request
            .send(cx, self.id, Purpose::DelayMarker { take }, op);
    }

    /// The reply to our marker's create or take-over.
    pub(super) fn on_delay_marker(
        &mut self,
        cx: &mut Ctx,
        take: bool,
        result: Result<Reply, ZkError>,
    ) {
        if self.state != State::Granting {
            return;
        }
        match result {
            Ok(_) => {
                self.delay.marker_ours = true;
                self.state = State::Waiting;
                self.grant(cx);
            }
            Err(ZkError::MultiFailed { index: 0, .. }) => {
                self.own_gone(cx, LostReason::NodeDeleted)
            }
            Err(ZkError::MultiFailed { index: 1, error }) => match (*error, take) {
                // Someone's marker is there: whose?
                (ZkError::NodeExists, false) => {
                    let op = Op::GetData {
                        path: self.delay_marker_path(),
                        watch: false,
                    };
                    self.delay.request.send(cx, self.id, Purpose::DelayRead, op);
                }
                // Gone between our read and the take-over (deleted by hand): create.
                (ZkError::NoNode, true) => self.send_delay_marker(cx, false),
                (e, _) => self.trouble(cx, e),
            },
            Err(e) => self.trouble(cx, e),
        }
    }

    /// The marker's data: ours (a create of ours retried), or another holder's,
    /// which ended without a clean release: wait out the delay.
    pub(super) fn on_delay_read(&mut self, cx: &mut Ctx, result: Result<Reply, ZkError>) {
        if self.state != State::Granting {
            return;
        }
        let data = match result {
            Ok(Reply::Data { data, .. }) => data,
            Ok(_) => return self.trouble(cx, ZkError::Other("unexpected reply".into())),
            // Gone since our create failed: create again.
            Err(ZkError::NoNode) => return self.send_delay_marker(cx, false),
            Err(e) => return self.trouble(cx, e),
        };
        if self.own_name().is_some_and(|name| name.as_bytes() == data) {
            self.delay.marker_ours = true;
            self.state = State::Waiting;
            return self.grant(cx);
        }
        if !self.spec.wait {
            return self.fail(cx, FailReason::WouldBlock);
        }
        let delay = self.spec.lock_delay.unwrap_or_default();
        let since = self.delay.free_since.unwrap_or(cx.now);
        let until = since + delay;
        self.delay.until = Some(until);
        cx.stats.lock_delays += 1;
        if let Some(own) = &self.node.own {
            let node = own.path.clone();
            cx.progress(self.id, Progress::LockDelay { node, until });
        }
        self.state = State::Waiting;
        self.grant(cx);
    }

    /// The delay is over: the grant goes on (taking the marker over).
    pub(super) fn on_delay_timer(&mut self, cx: &mut Ctx) {
        if self.state == State::Granting && cx.connected {
            self.state = State::Waiting;
            self.grant(cx);
        }
    }
}
