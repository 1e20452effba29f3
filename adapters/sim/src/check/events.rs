//! The plain locking checks on each event an acquisition reports: legal order, one
//! terminal event, grants that match the tree, exclusion and increasing tokens.

use super::*;

/// Whether `grant` names a participant node of the queue `dir` whose name carries
/// the grant's sequence number: the one rule of where a queue's grant may point,
/// for the simulator's checker and the fuzz session harness.
pub fn grant_in_queue(grant: &lock_core::Grant, dir: &str) -> bool {
    let (parent, name) = grant.path.rsplit_once('/').unwrap_or(("", ""));
    parent == dir && parse_name(name).map(|p| p.seq) == Some(grant.sequence)
}

impl Checker {
    pub(super) fn on_lock_event(
        &mut self,
        key: Key,
        event: &LockEvent,
        client_session: Option<i64>,
        model: &ZkModel,
    ) -> Result<(), Failure> {
        let illegal = |why: &str| {
            Err((
                ViolationKind::IllegalEvent,
                format!("{} {}: {event:?} {why}", key.0, key.1),
            ))
        };
        let Some(t) = self.tracks.get_mut(&key) else {
            return illegal("for an acquisition never started");
        };
        if t.phase == Phase::Ended {
            return illegal("after the terminal event");
        }
        if t.recipe.is_none() {
            // Observers and revocations: only the terminal-event rules apply.
            if event.is_terminal() {
                self.end(key);
            }
            return Ok(());
        }
        match event {
            LockEvent::Acquired(grant) => {
                if t.phase != Phase::Waiting {
                    return illegal("while not waiting");
                }
                t.phase = Phase::Held;
                t.node = Some(grant.path.to_string());
                t.session = grant.session_id;
                self.held.insert(key);
                if client_session != Some(grant.session_id) {
                    return Err((
                        ViolationKind::BadGrant,
                        format!(
                            "{} {}: grant on session {:#x}, client is on {client_session:?}",
                            key.0, key.1, grant.session_id
                        ),
                    ));
                }
                let well_placed = match lease_dir(t) {
                    // A lease node of a peer's layout (kazoo's have no sequence).
                    Some(pool) => grant.path.rsplit_once('/').map(|(p, _)| p) == Some(&*pool),
                    None => grant_in_queue(grant, &t.path),
                };
                if !well_placed {
                    return Err((
                        ViolationKind::BadGrant,
                        format!("{} {}: grant {grant:?} for lock {}", key.0, key.1, t.path),
                    ));
                }
                self.check_node(key, true, model)?;
                let t = &self.tracks[&key];
                // A grant of a node an administrator already deleted is void (the
                // holder hears of it next); it takes no part in fencing.
                if is_exclusive(t.recipe) && !t.compromised {
                    let last = self.last_token.insert(t.path.clone(), grant.token.0);
                    if let Some(last) = last {
                        if grant.token.0 <= last {
                            return Err((
                                ViolationKind::TokenNotIncreasing,
                                format!(
                                    "{} {}: token {} after {last} on {}",
                                    key.0, key.1, grant.token, t.path
                                ),
                            ));
                        }
                    }
                }
                self.check_exclusion(key)
            }
            LockEvent::Suspended => {
                if t.phase != Phase::Held || t.suspended {
                    return illegal("while not held or already suspended");
                }
                t.suspended = true;
                Ok(())
            }
            LockEvent::Resumed => {
                if t.phase != Phase::Held || !t.suspended {
                    return illegal("while not suspended");
                }
                t.suspended = false;
                if t.released {
                    return Ok(());
                }
                self.check_node(key, false, model)?;
                self.check_exclusion(key)
            }
            LockEvent::RevocationRequested => {
                if t.phase != Phase::Held {
                    return illegal("while not held");
                }
                if !t.revocable {
                    return illegal("for a lock that is not revocable");
                }
                Ok(())
            }
            LockEvent::Failed(lock_core::FailReason::Revoked) if !t.revocable => {
                illegal("for a lock that is not revocable")
            }
            LockEvent::Released => {
                if t.phase != Phase::Held || !t.released {
                    return illegal("without a release of a held lock");
                }
                self.end(key);
                Ok(())
            }
            LockEvent::Lost(_) => {
                if t.phase != Phase::Held {
                    return illegal("while not held");
                }
                self.end(key);
                Ok(())
            }
            LockEvent::Failed(_) => {
                if t.phase == Phase::Held && !t.released {
                    return illegal("for a held lock (expected Lost)");
                }
                self.end(key);
                Ok(())
            }
            e if e.is_terminal() => {
                self.end(key);
                Ok(())
            }
            LockEvent::LeaderChanged { .. } | LockEvent::RevocationSent { .. } => {
                illegal("for a lock acquisition")
            }
            _ => Ok(()),
        }
    }
}
