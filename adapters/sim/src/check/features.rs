//! The audits of the features beyond plain locking, per event: revocation, sections,
//! fenced writes and leases.

use super::exclusion::is_exclusive;
use super::sections::{marker_after_exit, marker_of};
use super::{fenced_outcome_agrees, Checker, Failure, Key, Phase, ViolationKind};
use crate::model::ZkModel;
use lock_core::LockEvent;

const REVOKE_MARKERS: [&[u8]; 2] = [b"__REVOKE__", b"unlock"];

impl Checker {
    /// Revocation, sections and fenced-write outcomes, after the base rules passed.
    pub(super) fn on_feature_event(
        &mut self,
        key: Key,
        event: &LockEvent,
        before: Option<Phase>,
        client_session: Option<i64>,
        model: &ZkModel,
    ) -> Result<(), Failure> {
        let wrong = |why: String| {
            Err((
                ViolationKind::WrongOutcome,
                format!("{} {}: {why}", key.0, key.1),
            ))
        };
        let t = &self.tracks[&key];
        match event {
            LockEvent::RevocationRequested => {
                self.coverage.revocations_requested += 1;
                let node = t.node.clone().unwrap_or_default();
                if let Some(info) = model.get(&node) {
                    if !REVOKE_MARKERS.contains(&info.data.as_slice()) {
                        return wrong(format!(
                            "RevocationRequested, but {node} holds {:?}",
                            String::from_utf8_lossy(&info.data)
                        ));
                    }
                }
                Ok(())
            }
            LockEvent::Acquired(grant) if is_exclusive(t.recipe) => {
                let marker = marker_of(&mut self.sections, &t.path);
                // The previous holder's node is gone, or we would not hold: if it has
                // not heard yet, settle what its exit did to the marker now.
                if let Some(prev) = marker.holder.filter(|k| *k != key) {
                    let p = &self.tracks[&prev];
                    if p.phase != Phase::Ended {
                        let clean = p.released && model.session_is_alive(p.session);
                        if let Some(m) = marker_after_exit(p, p.released, clean) {
                            marker.exists = m;
                        }
                    }
                }
                marker.holder = Some(key);
                if !t.detects || t.compromised {
                    return Ok(());
                }
                let expected = marker.exists;
                marker.exists = Some(grant.previous_holder_crashed);
                if expected.is_some() {
                    self.coverage.crash_flags_checked += 1;
                    self.coverage.crashes_reported += u64::from(grant.previous_holder_crashed);
                }
                match expected {
                    Some(e) if e != grant.previous_holder_crashed => wrong(format!(
                        "grant {} says previous_holder_crashed = {}, but the section marker of {} {}",
                        grant.path,
                        grant.previous_holder_crashed,
                        t.path,
                        if e { "was left by a holder that died inside its section" } else { "was closed (clean release or close_section)" }
                    )),
                    _ => Ok(()),
                }
            }
            LockEvent::SectionOpened | LockEvent::SectionClosed => {
                let open = *event == LockEvent::SectionOpened;
                let tr = self.tracks.get_mut(&key).expect("tracked");
                tr.section_pending = tr.section_pending.saturating_sub(1);
                tr.section_open = open;
                let settled = tr.section_pending == 0 && !tr.compromised;
                let marker = marker_of(&mut self.sections, &tr.path);
                if marker.holder == Some(key) && settled {
                    marker.exists = Some(open);
                }
                Ok(())
            }
            LockEvent::Released | LockEvent::Lost(_) => {
                if *event == LockEvent::Lost(lock_core::LostReason::LeaseExpired) {
                    self.coverage.leases_expired += 1;
                }
                if before != Some(Phase::Held) {
                    return Ok(());
                }
                let marker = marker_of(&mut self.sections, &t.path);
                if marker.holder != Some(key) {
                    return Ok(());
                }
                let released = *event == LockEvent::Released;
                let clean = released
                    && client_session == Some(t.session)
                    && model.session_is_alive(t.session);
                if let Some(m) = marker_after_exit(t, released, clean) {
                    marker.exists = m;
                }
                Ok(())
            }
            LockEvent::FencedWrite { write, result } => {
                let Some(writes) = self.writes.remove(&(key, *write)) else {
                    return Ok(());
                };
                let applied: Vec<bool> = writes
                    .iter()
                    .map(|(p, d)| self.fenced.get(p).is_some_and(|f| f.applied.contains(d)))
                    .collect();
                self.coverage.fenced_outcomes_checked += 1;
                if matches!(result, Err(lock_core::FencedError::NotHeld)) {
                    self.coverage.fenced_not_held += 1;
                }
                if !fenced_outcome_agrees(result, &applied) {
                    return wrong(format!(
                        "fenced write {write} reported {result:?}, but the server applied {:?} of {:?}",
                        applied,
                        writes.iter().map(|(p, d)| format!("{p}={}", String::from_utf8_lossy(d))).collect::<Vec<_>>()
                    ));
                }
                Ok(())
            }
            LockEvent::Failed(lock_core::FailReason::Revoked) => {
                self.coverage.waiters_revoked += 1;
                Ok(())
            }
            LockEvent::Resumed => {
                self.coverage.section_calls_interrupted += u64::from(t.section_pending);
                Ok(())
            }
            _ => Ok(()),
        }
    }
}
