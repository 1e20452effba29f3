//! What a holder can do besides releasing: critical sections that a successor can
//! tell were interrupted (the Ready-file idea), and writes fenced by a `check` on the
//! lock node.

use super::{Acquisition, State, SECTION_MARKER};
use crate::ctx::Ctx;
use crate::event::{FencedError, LockEvent, LostReason, UsageError};
use crate::proto::{CreateMode, MultiOp, Op, Reply, RequestId, ZkError};
use crate::requests::{InFlight, Purpose};
use crate::time::Timestamp;

/// The part of an acquisition that owns what a holder does besides releasing:
/// its critical section (and the crash marker a grant looks at) and its fenced
/// writes.
#[derive(Default, Debug)]
pub(super) struct Holder {
    /// Whether the crash marker exists, when known without asking (from a listing in
    /// which we could be granted); `None` once we waited, as it may have changed.
    pub(super) marker_known: Option<bool>,
    pub(super) marker_check: InFlight,
    /// Our section marker is set (release deletes it in the same multi).
    pub(super) section_open: bool,
    pub(super) section_request: InFlight,
    /// A section call whose outcome is unknown (in flight at a disconnect, or not
    /// yet answered): `Some(open)`. Sent again once our node is verified.
    pub(super) section_wanted: Option<bool>,
    /// Fenced writes awaiting a reply: (write id, request).
    pub(super) writes: Vec<(u64, RequestId)>,
    /// Released by [`Acquisition::abandon`]: the node goes, the section marker stays.
    pub(super) abandoned: bool,
    /// When the lock was granted (reported held): a hold that outlives a sync
    /// interval watches its node (see `Acquisition::on_sync_timer`).
    pub(super) held_since: Option<Timestamp>,
}

impl Holder {
    /// The connection dropped (or a recovery starts): the marker check and the
    /// section call in flight are gone. A section call still wanted is sent again
    /// once our node is verified; fenced writes are settled by the acquisition
    /// (their outcome is reported, not retried).
    pub(super) fn forget(&mut self) {
        self.marker_check.forget();
        self.section_request.forget();
    }
}

impl Acquisition {
    /// The reply to the crash-marker check of a contended grant.
    pub(super) fn on_marker_check(&mut self, cx: &mut Ctx, result: Result<Reply, ZkError>) {
        if self.state != State::Granting {
            return;
        }
        match result {
            Ok(_) => self.holder.marker_known = Some(true),
            Err(ZkError::NoNode) => self.holder.marker_known = Some(false),
            Err(e) => return self.trouble(cx, e),
        }
        self.state = State::Waiting;
        self.grant(cx);
    }

    fn own_path(&self) -> Result<String, UsageError> {
        match (&self.node.own, self.state) {
            (Some(own), State::Held) if !self.suspended => Ok(own.path.clone()),
            _ => Err(UsageError::NotHeld(self.id)),
        }
    }

    /// Marks a critical section as in progress, fenced by our node: if we no longer
    /// hold the lock, nothing is written.
    pub(crate) fn open_section(&mut self, cx: &mut Ctx) -> Result<(), UsageError> {
        let own = self.own_path()?;
        if !self.spec.detect_crashes {
            return Err(UsageError::Unsupported(
                "sections need LockSpec::detect_crashes",
            ));
        }
        self.send_section(cx, true, own, false);
        Ok(())
    }

    /// Closes the critical section (the work is consistent again).
    pub(crate) fn close_section(&mut self, cx: &mut Ctx) -> Result<(), UsageError> {
        let own = self.own_path()?;
        if !self.spec.detect_crashes {
            return Err(UsageError::Unsupported(
                "sections need LockSpec::detect_crashes",
            ));
        }
        self.send_section(cx, false, own, false);
        Ok(())
    }

    /// Our node is verified: a section call whose outcome was lost goes again (both
    /// directions are idempotent and fenced by the check on our node).
    pub(super) fn resend_section(&mut self, cx: &mut Ctx) {
        if self.holder.section_request.is_pending() {
            return;
        }
        if let (Some(open), Ok(own)) = (self.holder.section_wanted, self.own_path()) {
            self.send_section(cx, open, own, false);
        }
    }

    /// `overwrite`: the marker of a crashed holder exists; take it over.
    fn send_section(&mut self, cx: &mut Ctx, open: bool, own: String, overwrite: bool) {
        self.holder.section_wanted = Some(open);
        let marker = format!("{}/{SECTION_MARKER}", self.spec.path);
        let data = own
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .as_bytes()
            .to_vec();
        let op = match (open, overwrite) {
            (true, false) => MultiOp::Create {
                path: marker,
                data,
                mode: CreateMode::Persistent,
            },
            (true, true) => MultiOp::SetData {
                path: marker,
                data,
                version: None,
            },
            (false, _) => MultiOp::Delete {
                path: marker,
                version: None,
            },
        };
        let check = MultiOp::Check {
            path: own,
            version: None,
        };
        self.holder.section_request.send(
            cx,
            self.id,
            Purpose::Section { open },
            Op::Multi(vec![check, op]),
        );
    }

    pub(super) fn on_section_reply(
        &mut self,
        cx: &mut Ctx,
        open: bool,
        result: Result<Reply, ZkError>,
    ) {
        if self.state != State::Held {
            return;
        }
        match result {
            Ok(_) => {
                self.holder.section_open = open;
                self.holder.section_wanted = None;
                let event = if open {
                    LockEvent::SectionOpened
                } else {
                    LockEvent::SectionClosed
                };
                cx.emit(self.id, event);
            }
            Err(ZkError::MultiFailed { index: 0, .. }) => {
                // The check on our node failed: the lock is gone.
                self.own_gone(cx, crate::event::LostReason::NodeDeleted)
            }
            Err(ZkError::MultiFailed { index: 1, error }) => match (*error, open) {
                (ZkError::NodeExists, true) => {
                    if let Ok(own) = self.own_path() {
                        self.send_section(cx, true, own, true)
                    }
                }
                (ZkError::NoNode, false) => {
                    self.holder.section_open = false;
                    self.holder.section_wanted = None;
                    cx.emit(self.id, LockEvent::SectionClosed);
                }
                (ZkError::NoNode, true) => {
                    // The marker vanished between our create and set: create it.
                    if let Ok(own) = self.own_path() {
                        self.send_section(cx, true, own, false)
                    }
                }
                (e, _) if e.is_connection_loss() => self.trouble(cx, e),
                // A lasting refusal (e.g. an ACL): retrying would never end, so say so.
                (e, _) => {
                    self.holder.section_wanted = None;
                    cx.emit(self.id, LockEvent::SectionFailed(e));
                }
            },
            Err(e) if e.is_connection_loss() => self.trouble(cx, e),
            Err(e) => {
                self.holder.section_wanted = None;
                cx.emit(self.id, LockEvent::SectionFailed(e));
            }
        }
    }

    /// Applies `ops` atomically, only while our node exists.
    pub(crate) fn fenced_write(
        &mut self,
        cx: &mut Ctx,
        write: u64,
        ops: Vec<MultiOp>,
    ) -> Result<(), UsageError> {
        let own = self.own_path()?;
        if !cx.connected {
            return Err(UsageError::NotHeld(self.id));
        }
        for op in &ops {
            crate::path::validate_node_path(op.path())?;
        }
        let mut all = Vec::with_capacity(ops.len() + 1);
        all.push(MultiOp::Check {
            path: own,
            version: None,
        });
        all.extend(ops);
        let op = Op::Multi(all);
        crate::limits::check_request(cx.config.max_packet, &op)?;
        if let Some(request) = cx.send(self.id, Purpose::FencedWrite { write }, op) {
            self.holder.writes.push((write, request));
        }
        Ok(())
    }

    pub(super) fn on_fenced_reply(
        &mut self,
        cx: &mut Ctx,
        request: RequestId,
        write: u64,
        result: Result<Reply, ZkError>,
    ) {
        let Some(pos) = self
            .holder
            .writes
            .iter()
            .position(|w| *w == (write, request))
        else {
            return;
        };
        self.holder.writes.remove(pos);
        let result = match result {
            Ok(Reply::Multi(mut results)) => {
                if !results.is_empty() {
                    results.remove(0);
                }
                Ok(results)
            }
            Ok(other) => Err(FencedError::Unknown(ZkError::Other(format!(
                "unexpected reply {other:?}"
            )))),
            Err(ZkError::MultiFailed { index: 0, .. }) => Err(FencedError::NotHeld),
            Err(ZkError::MultiFailed { index, error }) => Err(FencedError::Write {
                index: index as usize - 1,
                error: *error,
            }),
            Err(e) => Err(FencedError::Unknown(e)),
        };
        let lost = matches!(result, Err(FencedError::NotHeld));
        cx.emit(self.id, LockEvent::FencedWrite { write, result });
        if lost {
            self.own_gone(cx, crate::event::LostReason::NodeDeleted);
        }
    }

    /// Before a terminal event: pending writes end first, so nothing follows it.
    pub(super) fn abandon_writes(&mut self, cx: &mut Ctx, terminal: &LockEvent) {
        for (write, request) in std::mem::take(&mut self.holder.writes) {
            cx.requests.take(request);
            // Replies and notifications share one ordered stream: a write still
            // unanswered when our node's deletion is seen was applied after it, and
            // its check failed.
            let result = match terminal {
                LockEvent::Lost(LostReason::NodeDeleted | LostReason::NodeNotOwned) => {
                    Err(FencedError::NotHeld)
                }
                LockEvent::Lost(LostReason::SessionExpired)
                | LockEvent::Failed(crate::event::FailReason::SessionExpired) => {
                    Err(FencedError::Unknown(ZkError::SessionExpired))
                }
                LockEvent::Lost(LostReason::Closed) => Err(FencedError::Unknown(ZkError::Closed)),
                _ => Err(FencedError::Unknown(ZkError::ConnectionLoss)),
            };
            cx.emit(self.id, LockEvent::FencedWrite { write, result });
        }
    }

    /// The connection dropped with writes in flight: their outcome is unknown.
    pub(super) fn writes_unknown(&mut self, cx: &mut Ctx) {
        for (write, _) in std::mem::take(&mut self.holder.writes) {
            let result = Err(FencedError::Unknown(ZkError::ConnectionLoss));
            cx.emit(self.id, LockEvent::FencedWrite { write, result });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::LockId;

    #[test]
    fn forget_drops_requests_in_flight_but_keeps_the_section_wanted() {
        let mut session = crate::ctx::tests::Session::default();
        let lock = LockId(2);
        let mut holder = Holder::default();
        let check = || Op::GetData {
            path: "/l/zkl-section".into(),
            watch: false,
        };
        assert!(holder
            .marker_check
            .send(&mut session.cx(), lock, Purpose::MarkerCheck, check()));
        assert!(holder.section_request.send(
            &mut session.cx(),
            lock,
            Purpose::Section { open: true },
            check()
        ));
        holder.section_wanted = Some(true);
        holder.writes.push((9, RequestId(40)));
        holder.forget();
        assert!(!holder.marker_check.is_pending());
        assert!(!holder.section_request.is_pending());
        assert_eq!(
            holder.section_wanted,
            Some(true),
            "sent again once verified"
        );
        assert_eq!(holder.writes, [(9, RequestId(40))]);
    }
}
