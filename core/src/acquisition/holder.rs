//! [`SectionsAndWrites`]: what a holder can do besides releasing, the part of an
//! acquisition that owns critical sections that a successor can tell were
//! interrupted (the Ready-file idea, with the crash marker a grant looks at)
//! and writes fenced by a `check` on the lock node.
//!
//! The acquisition hands the part our node's path only while it holds and is
//! trusted (`own`); the part sends, emits the section and write events, and
//! returns what the acquisition must act on (our node gone, a retry).

use super::{Identity, PartAsks};
use crate::ctx::Ctx;
use crate::ctx::InFlight;
use crate::event::{FailReason, FencedError, LockEvent, LostReason, UsageError};
use crate::ids::LockId;
use crate::names::SECTION_MARKER;
use crate::proto::{CreateMode, MultiOp, Op, Reply, RequestId, ZkError};
use crate::requests::Purpose;
use crate::spec::LockSpec;
use crate::time::Timestamp;

/// The part of an acquisition that owns what a holder does besides releasing:
/// its critical section (and the crash marker a grant looks at) and its fenced
/// writes.
#[derive(Default, Debug)]
pub(super) struct SectionsAndWrites {
    /// Whether the crash marker exists, when known without asking (from a listing in
    /// which we could be granted); `None` once we waited, as it may have changed.
    marker_known: Option<bool>,
    marker_check: InFlight,
    /// Our section marker is set (release deletes it in the same multi).
    section_open: bool,
    section_request: InFlight,
    /// A section call whose outcome is unknown (in flight at a disconnect, or not
    /// yet answered): `Some(open)`. Sent again once our node is verified.
    section_wanted: Option<bool>,
    /// Fenced writes awaiting a reply: (write id, request).
    writes: Vec<(u64, RequestId)>,
    /// Released by `Acquisition::abandon`: the node goes, the section marker stays.
    abandoned: bool,
    /// When the lock was granted (reported held): a hold that outlives a sync
    /// interval watches its node (see `Acquisition::on_sync_timer`).
    held_since: Option<Timestamp>,
}

/// The path of the crash-detection marker of the lock at `lock_path`.
pub(super) fn marker_path(lock_path: &str) -> String {
    format!("{lock_path}/{SECTION_MARKER}")
}

impl SectionsAndWrites {
    // Getters.

    /// Whether the previous holder crashed inside its section, for a grant:
    /// `Some(false)` without crash detection, `None` while unknown.
    pub(super) fn previous_crashed(&self, spec: &LockSpec) -> Option<bool> {
        if spec.detect_crashes {
            self.marker_known
        } else {
            Some(false)
        }
    }

    /// Whether the hold has lasted `interval` by `now`.
    pub(super) fn held_for(&self, now: Timestamp, interval: std::time::Duration) -> bool {
        self.held_since.is_some_and(|since| now >= since + interval)
    }

    /// Whether a release leaves the section marker (an abandonment).
    pub(super) fn is_abandoned(&self) -> bool {
        self.abandoned
    }

    /// Whether a clean release closes a section: one open, or maybe opened (its
    /// reply lost): if the marker is not there, the release's multi fails on it
    /// and goes again without it ([`SectionsAndWrites::section_gone`]).
    pub(super) fn release_closes_section(&self) -> bool {
        self.section_open || self.section_wanted == Some(true)
    }

    // Replies.

    /// Takes the reply to the crash-marker check in flight, if `request` is it.
    pub(super) fn take_marker_check(&mut self, request: RequestId) -> bool {
        self.marker_check.take_reply(request)
    }

    /// The reply to the crash-marker check of a contended grant: `Ok` once the
    /// marker's presence is known (the grant goes on).
    pub(super) fn on_marker_check(
        &mut self,
        result: Result<Reply, ZkError>,
    ) -> Result<(), ZkError> {
        match result {
            Ok(_) => self.marker_known = Some(true),
            Err(ZkError::NoNode) => self.marker_known = Some(false),
            Err(e) => return Err(e),
        }
        Ok(())
    }

    /// Takes the reply to the section call in flight, if `request` is it.
    pub(super) fn take_section_reply(&mut self, request: RequestId) -> bool {
        self.section_request.take_reply(request)
    }

    /// The reply to a section call of a holder (`own`: our node, while trusted).
    pub(super) fn on_section_reply(
        &mut self,
        cx: &mut Ctx,
        identity: Identity<'_>,
        own: Option<String>,
        open: bool,
        result: Result<Reply, ZkError>,
    ) -> PartAsks {
        match result {
            Ok(_) => {
                self.section_open = open;
                self.section_wanted = None;
                let event = if open {
                    LockEvent::SectionOpened
                } else {
                    LockEvent::SectionClosed
                };
                cx.emit(identity.id, event);
            }
            // The check on our node failed: the lock is gone.
            Err(ZkError::MultiFailed { index: 0, .. }) => return PartAsks::Lost,
            Err(ZkError::MultiFailed { index: 1, error }) => match (*error, open) {
                (ZkError::NodeExists, true) => {
                    if let Some(own) = own {
                        self.send_section(cx, identity, true, own, true)
                    }
                }
                (ZkError::NoNode, false) => {
                    self.section_gone();
                    cx.emit(identity.id, LockEvent::SectionClosed);
                }
                (ZkError::NoNode, true) => {
                    // The marker vanished between our create and set: create it.
                    if let Some(own) = own {
                        self.send_section(cx, identity, true, own, false)
                    }
                }
                (e, _) if e.is_connection_loss() => return PartAsks::Trouble(e),
                // A lasting refusal (e.g. an ACL): retrying would never end, so say so.
                (e, _) => {
                    self.section_wanted = None;
                    cx.emit(identity.id, LockEvent::SectionFailed(e));
                }
            },
            Err(e) if e.is_connection_loss() => return PartAsks::Trouble(e),
            Err(e) => {
                self.section_wanted = None;
                cx.emit(identity.id, LockEvent::SectionFailed(e));
            }
        }
        PartAsks::Pending
    }

    /// The reply to a fenced write, if `request` is the one of `write`: its
    /// outcome is reported; [`PartAsks::Lost`] when its check found our
    /// node gone.
    pub(super) fn on_fenced_reply(
        &mut self,
        cx: &mut Ctx,
        id: LockId,
        request: RequestId,
        write: u64,
        result: Result<Reply, ZkError>,
    ) -> PartAsks {
        let Some(pos) = self.writes.iter().position(|w| *w == (write, request)) else {
            return PartAsks::Pending;
        };
        self.writes.remove(pos);
        let result = match result {
            Ok(Reply::Multi(mut results)) => {
                if !results.is_empty() {
                    results.remove(0);
                }
                Ok(results)
            }
            Ok(_) => Err(FencedError::Unknown(ZkError::unexpected_reply())),
            Err(ZkError::MultiFailed { index: 0, .. }) => Err(FencedError::NotHeld),
            Err(ZkError::MultiFailed { index, error }) => Err(FencedError::Write {
                index: index as usize - 1,
                error: *error,
            }),
            Err(e) => Err(FencedError::Unknown(e)),
        };
        let lost = matches!(result, Err(FencedError::NotHeld));
        cx.emit(id, LockEvent::FencedWrite { write, result });
        if lost {
            PartAsks::Lost
        } else {
            PartAsks::Pending
        }
    }

    // Mutators.

    /// A listing in which we could be granted saw whether the crash marker is
    /// there (`None`: we waited, and it may change).
    pub(super) fn set_marker_known(&mut self, known: Option<bool>) {
        self.marker_known = known;
    }

    /// A grant waits for the crash marker: look at it (once at a time).
    pub(super) fn check_marker(&mut self, cx: &mut Ctx, identity: Identity<'_>) {
        if self.marker_check.is_pending() {
            return;
        }
        let op = Op::read(marker_path(&identity.spec.path));
        self.marker_check
            .send(cx, identity.id, Purpose::MarkerCheck, op);
    }

    /// Held from `now`.
    pub(super) fn granted(&mut self, now: Timestamp) {
        self.held_since = Some(now);
    }

    /// The user lets go inside an open section: the marker stays.
    pub(super) fn abandon(&mut self) {
        self.abandoned = true;
    }

    /// The section marker is gone (a release's multi found no marker to delete).
    pub(super) fn section_gone(&mut self) {
        self.section_open = false;
        self.section_wanted = None;
    }

    /// Opens (`open`) or closes the critical section, fenced by our node `own`
    /// (if we no longer hold the lock, nothing is written).
    pub(super) fn section(
        &mut self,
        cx: &mut Ctx,
        identity: Identity<'_>,
        own: String,
        open: bool,
    ) -> Result<(), UsageError> {
        if !identity.spec.detect_crashes {
            return Err(UsageError::Unsupported(
                "sections need LockSpec::detect_crashes",
            ));
        }
        self.send_section(cx, identity, open, own, false);
        Ok(())
    }

    /// Our node `own` is verified: a section call whose outcome was lost goes
    /// again (both directions are idempotent and fenced by the check on our node).
    pub(super) fn resend_section(&mut self, cx: &mut Ctx, identity: Identity<'_>, own: String) {
        if self.section_request.is_pending() {
            return;
        }
        if let Some(open) = self.section_wanted {
            self.send_section(cx, identity, open, own, false);
        }
    }

    /// `overwrite`: the marker of a crashed holder exists; take it over.
    fn send_section(
        &mut self,
        cx: &mut Ctx,
        identity: Identity<'_>,
        open: bool,
        own: String,
        overwrite: bool,
    ) {
        self.section_wanted = Some(open);
        let marker = marker_path(&identity.spec.path);
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
        let check = MultiOp::check(own);
        self.section_request.send(
            cx,
            identity.id,
            Purpose::Section { open },
            Op::Multi(vec![check, op]),
        );
    }

    /// Applies `ops` atomically, only while our node `own` exists.
    pub(super) fn fenced_write(
        &mut self,
        cx: &mut Ctx,
        id: LockId,
        own: String,
        write: u64,
        ops: Vec<MultiOp>,
    ) -> Result<(), UsageError> {
        if !cx.connected {
            return Err(UsageError::NotHeld(id));
        }
        for op in &ops {
            crate::path::validate_node_path(op.path())?;
        }
        let mut all = Vec::with_capacity(ops.len() + 1);
        all.push(MultiOp::check(own));
        all.extend(ops);
        let op = Op::Multi(all);
        crate::limits::check_request(cx.config.max_packet, &op)?;
        if let Some(request) = cx.send(id, Purpose::FencedWrite { write }, op) {
            self.writes.push((write, request));
        }
        Ok(())
    }

    /// Before a terminal event: pending writes end first, so nothing follows it.
    pub(super) fn abandon_writes(&mut self, cx: &mut Ctx, id: LockId, terminal: &LockEvent) {
        for (write, request) in std::mem::take(&mut self.writes) {
            cx.requests.take(request);
            // Replies and notifications share one ordered stream: a write still
            // unanswered when our node's deletion is seen was applied after it, and
            // its check failed.
            let result = match terminal {
                LockEvent::Lost(LostReason::NodeDeleted | LostReason::NodeNotOwned) => {
                    Err(FencedError::NotHeld)
                }
                LockEvent::Lost(LostReason::SessionExpired)
                | LockEvent::Failed(FailReason::SessionExpired) => {
                    Err(FencedError::Unknown(ZkError::SessionExpired))
                }
                LockEvent::Lost(LostReason::Closed) => Err(FencedError::Unknown(ZkError::Closed)),
                _ => Err(FencedError::Unknown(ZkError::ConnectionLoss)),
            };
            cx.emit(id, LockEvent::FencedWrite { write, result });
        }
    }

    /// The connection dropped with writes in flight: their outcome is unknown.
    pub(super) fn writes_unknown(&mut self, cx: &mut Ctx, id: LockId) {
        for (write, _) in std::mem::take(&mut self.writes) {
            let result = Err(FencedError::Unknown(ZkError::ConnectionLoss));
            cx.emit(id, LockEvent::FencedWrite { write, result });
        }
    }

    /// The connection dropped (or a recovery starts): the marker check and the
    /// section call in flight are gone. A section call still wanted is sent again
    /// once our node is verified; fenced writes are settled by
    /// [`SectionsAndWrites::writes_unknown`] (their outcome is reported, not retried).
    pub(super) fn forget(&mut self) {
        self.marker_check.forget();
        self.section_request.forget();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::LockId;

    #[test]
    fn forget_drops_the_marker_check_in_flight() {
        let mut session = crate::ctx::tests::CtxParts::default();
        let mut holder = SectionsAndWrites::default();
        let check = Op::read("/l/zkl-section");
        let lock = LockId(2);
        assert!(holder
            .marker_check
            .send(&mut session.cx(), lock, Purpose::MarkerCheck, check));
        holder.forget();
        assert!(!holder.marker_check.is_pending());
    }

    #[test]
    fn a_section_is_fenced_by_our_node_and_taken_over_from_a_crashed_holder() {
        let mut session = crate::ctx::tests::CtxParts::default();
        let spec = LockSpec::write("/l").detect_crashes();
        let identity = Identity {
            id: LockId(4),
            spec: &spec,
            node: None,
        };
        let own = "/l/n-0000000003".to_owned();
        let mut holder = SectionsAndWrites::default();
        holder
            .section(&mut session.cx(), identity, own.clone(), true)
            .unwrap();
        let check = MultiOp::check(own.clone());
        let create = MultiOp::Create {
            path: "/l/zkl-section".into(),
            data: b"n-0000000003".to_vec(),
            mode: CreateMode::Persistent,
        };
        assert_eq!(session.sent_ops(), [Op::Multi(vec![check.clone(), create])]);
        assert!(holder.release_closes_section(), "maybe opened");
        // A crashed holder's marker is there: take it over.
        let exists = Err(ZkError::MultiFailed {
            index: 1,
            error: Box::new(ZkError::NodeExists),
        });
        let outcome =
            holder.on_section_reply(&mut session.cx(), identity, Some(own.clone()), true, exists);
        assert_eq!(outcome, PartAsks::Pending);
        let take = MultiOp::SetData {
            path: "/l/zkl-section".into(),
            data: b"n-0000000003".to_vec(),
            version: None,
        };
        assert_eq!(session.sent_ops(), [Op::Multi(vec![check, take])]);
        let ok = Ok(Reply::Multi(Vec::new()));
        let outcome = holder.on_section_reply(&mut session.cx(), identity, Some(own), true, ok);
        assert_eq!(outcome, PartAsks::Pending);
        assert!(holder.section_open && holder.section_wanted.is_none());
        assert!(matches!(
            session.out.pop_front(),
            Some(crate::output::Output::Event {
                event: LockEvent::SectionOpened,
                ..
            })
        ));
        // The check on our node failing means the lock is gone.
        let gone = Err(ZkError::MultiFailed {
            index: 0,
            error: Box::new(ZkError::NoNode),
        });
        let outcome = holder.on_section_reply(&mut session.cx(), identity, None, false, gone);
        assert_eq!(outcome, PartAsks::Lost);
        let plain = LockSpec::write("/l");
        let identity = Identity {
            spec: &plain,
            ..identity
        };
        assert!(holder
            .section(&mut session.cx(), identity, "/l/n".into(), true)
            .is_err());
    }

    #[test]
    fn a_fenced_write_reports_its_outcome_and_a_failed_check_is_a_loss() {
        let mut session = crate::ctx::tests::CtxParts::default();
        let lock = LockId(5);
        let mut holder = SectionsAndWrites::default();
        let write = MultiOp::SetData {
            path: "/data".into(),
            data: b"x".to_vec(),
            version: None,
        };
        holder
            .fenced_write(
                &mut session.cx(),
                lock,
                "/l/n-1".into(),
                1,
                vec![write.clone()],
            )
            .unwrap();
        holder
            .fenced_write(&mut session.cx(), lock, "/l/n-1".into(), 2, vec![write])
            .unwrap();
        let ids: Vec<RequestId> = holder.writes.iter().map(|(_, r)| *r).collect();
        assert_eq!(session.sent_ops().len(), 2);
        let stray = holder.on_fenced_reply(
            &mut session.cx(),
            lock,
            ids[1],
            1,
            Ok(Reply::Multi(Vec::new())),
        );
        assert_eq!(stray, PartAsks::Pending);
        assert!(session.out.is_empty(), "not write 1's request");
        let not_held = Err(ZkError::MultiFailed {
            index: 0,
            error: Box::new(ZkError::BadVersion),
        });
        let outcome = holder.on_fenced_reply(&mut session.cx(), lock, ids[0], 1, not_held);
        assert_eq!(outcome, PartAsks::Lost);
        assert_eq!(holder.writes.len(), 1, "the other write is still in flight");
    }
}
