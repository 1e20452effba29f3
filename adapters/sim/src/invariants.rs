//! The safety and liveness properties checked while a simulation runs.
//!
//! The checker follows every acquisition through the events its core reports and
//! the calls the user made, and after every step asserts:
//!
//! * at most one *trusted* holder of an exclusive (write or leader) lock, where
//!   trusted = `Acquired` (or `Resumed`), not `Suspended`, not ended and not released
//!   by the user;
//! * no trusted writer beside any other trusted holder; at most `n` trusted holders of
//!   a semaphore(`n`);
//! * fencing tokens of successive exclusive holders of a lock strictly increase;
//! * every grant names a node that exists, is owned by the holder's session, and has
//!   the token as its `czxid`; a trusted holder's node exists as long as it is trusted;
//! * events come in a legal order, and every acquisition gets exactly one terminal
//!   event and nothing after;
//! * at quiescence (faults stopped): every acquisition has ended and no lock node is
//!   left that its owner does not know about.
//!
//! And for the features beyond plain locking:
//!
//! * revocation: only a revocable acquisition hears `RevocationRequested` (and only
//!   when its node really carries a revocation request) or fails with `Revoked`;
//! * crash-detecting sections: the checker follows the section marker through the
//!   events (`SectionOpened`, `SectionClosed`, clean releases, losses) and every
//!   crash-detecting grant must report `previous_holder_crashed` exactly as the
//!   marker stands, whenever its state is known: a holder that died inside a section
//!   is always reported, a clean release or a closed section never is;
//! * fenced writes, on the data nodes registered with
//!   [`Sim::audit_fenced_writes`](crate::Sim::audit_fenced_writes): every write to
//!   them is audited at the instant the server applies it. Its token (the data,
//!   `<token>` or `<token>:<anything>`) must be the `czxid` of a lock node that exists,
//!   is owned by the writing session and has no lower participant (the writer holds
//!   the lock at that instant), and must not be lower than the last applied token
//!   (the data's token sequence never goes backwards). A `FencedWrite` event must
//!   agree with the server: `Ok` only if applied, `NotHeld` or a failed write only
//!   if not.
//!
//! A holder whose node an administrator deleted (a fault ZooKeeper cannot prevent)
//! is *compromised*: it no longer counts as trusted, since nothing could have told it
//! in time.

use crate::client::ClientId;
use crate::model::ZkModel;
use lock_core::names::{parse_kazoo_lease, parse_name, semaphore_lease_dir, semaphore_mutex_dir};
use lock_core::NameScheme;
use lock_core::{LockEvent, LockId, MultiOp, Op, Recipe, Timestamp};
use std::collections::{BTreeMap, BTreeSet};

/// Which property failed.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[non_exhaustive]
pub enum ViolationKind {
    /// Two trusted holders of an exclusive lock.
    TwoExclusiveHolders,
    /// A trusted writer beside another trusted holder.
    WriterBesideHolder,
    /// More trusted semaphore holders than permits.
    TooManySemaphoreHolders,
    /// A fencing token not greater than the previous exclusive holder's.
    TokenNotIncreasing,
    /// A grant that does not match the tree (missing node, wrong owner or token).
    BadGrant,
    /// A trusted holder whose node is gone.
    HolderWithoutNode,
    /// A holder of another session, suspended but not yet told `Lost`, while a
    /// conflicting holder was granted: it learned of its loss too late.
    LostTooLate,
    /// An event that is illegal in the acquisition's state (including a second
    /// terminal event, or any event after the terminal one).
    IllegalEvent,
    /// The core refused a call it should have accepted.
    UsageRefused,
    /// With faults stopped, an acquisition never ended (or a core never went idle).
    Liveness,
    /// A lock node left in the tree that no live owner knows about.
    Orphan,
    /// A fenced write applied although its writer did not hold the lock at that
    /// instant, or with a token lower than one applied before.
    StaleWrite,
    /// An event that contradicts the server: a crash-detection flag contrary to the
    /// section marker, a fenced-write outcome contrary to what was applied, a
    /// revocation request nobody made.
    WrongOutcome,
    /// A waiter failed as a deadlock victim for a cycle of waits that never existed
    /// as a whole.
    FalseDeadlock,
    /// A cycle of waits outlived the detection bound.
    DeadlockNotBroken,
    /// A cycle had a second victim, or a victim that was not its youngest candidate.
    SecondVictim,
    /// The simulation could not make progress (a timer that never advances, or a run
    /// exceeding its limit).
    Stalled,
}

/// A failed property, with everything needed to reproduce it.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("{kind:?} at step {step} (t={at}), seed {seed}: {detail}")]
pub struct Violation {
    /// Which property.
    pub kind: ViolationKind,
    /// The simulation seed.
    pub seed: u64,
    /// The step at which it was found (the number of wakeups processed).
    pub step: u64,
    /// The virtual time at which it was found.
    pub at: Timestamp,
    /// What exactly.
    pub detail: String,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    Waiting,
    Held,
    Ended,
}

#[derive(Clone, Debug)]
struct Track {
    path: String,
    /// `None` for tasks that take no lock (election observers, revocations).
    recipe: Option<Recipe>,
    phase: Phase,
    node: Option<String>,
    session: i64,
    suspended: bool,
    /// The user called release (or cancel while held): no longer trusted.
    released: bool,
    /// The node was deleted by an administrator while held.
    compromised: bool,
    /// Honours revocation requests.
    revocable: bool,
    /// Crash-detecting (`LockSpec::detect_crashes`).
    detects: bool,
    /// The naming scheme (see [`Options::scheme`]).
    scheme: NameScheme,
    /// Its section is open (as last reported).
    section_open: bool,
    /// `open_section`/`close_section` calls without a reported outcome yet.
    section_pending: u32,
    /// The last section call: `Some(true)` for an open.
    section_last_call: Option<bool>,
}

/// The lease pool of a semaphore track in a peer's layout.
fn lease_dir(t: &Track) -> Option<String> {
    match t.recipe {
        Some(Recipe::Semaphore { .. }) => semaphore_lease_dir(t.scheme, &t.path),
        _ => None,
    }
}

impl Track {
    fn trusted(&self) -> bool {
        self.phase == Phase::Held && !self.suspended && !self.released && !self.compromised
    }
}

type Key = (ClientId, LockId);
type Failure = (ViolationKind, String);

/// What an acquisition asked for beyond its recipe (read off its `LockSpec`).
#[derive(Clone, Copy, PartialEq, Eq, Default, Debug)]
pub(crate) struct Options {
    /// `LockSpec::revocable`.
    pub revocable: bool,
    /// `LockSpec::detect_crashes`.
    pub detects: bool,
    /// The naming scheme: a semaphore in Curator's or kazoo's layout keeps its
    /// nodes in a queue and a lease pool beside or under its path.
    pub scheme: NameScheme,
}

/// The crash-detection marker of one lock path, as the events tell it.
#[derive(Clone, Debug)]
struct SectionMarker {
    /// Whether the marker exists, when known (it is unknown while a section call has
    /// no outcome, or after a release whose delete may or may not have applied).
    exists: Option<bool>,
    /// The last exclusive holder granted on the path: the only one whose section
    /// calls can still change the marker.
    holder: Option<Key>,
}

impl Default for SectionMarker {
    fn default() -> Self {
        // Only `open_section` creates the marker.
        SectionMarker {
            exists: Some(false),
            holder: None,
        }
    }
}

/// A data node whose writes are audited against the lock that fences them.
#[derive(Clone, Debug)]
struct FencedData {
    lock_path: String,
    last_token: Option<i64>,
    /// Every data value applied (writes carry unique data to be told apart).
    applied: BTreeSet<Vec<u8>>,
}

/// A write to an audited data node, found in a request.
pub(crate) type AuditedWrite = (String, Vec<u8>);

/// How much of the feature checks a run exercised (so that a passing run is known
/// not to be vacuous), from [`Sim::coverage`](crate::Sim::coverage).
#[derive(Clone, Copy, PartialEq, Eq, Default, Debug)]
#[non_exhaustive]
pub struct Coverage {
    /// Crash-detecting grants checked against a known section marker.
    pub crash_flags_checked: u64,
    /// Of those, grants that reported a previous holder dying inside its section.
    pub crashes_reported: u64,
    /// Audited fenced writes applied by the server (each checked to come from the
    /// holder, with a token not lower than the last).
    pub fenced_applied: u64,
    /// Fenced-write outcomes checked against the server.
    pub fenced_outcomes_checked: u64,
    /// Of those, writes rejected because the lock was no longer held.
    pub fenced_not_held: u64,
    /// `RevocationRequested` events (each checked: revocable, and asked).
    pub revocations_requested: u64,
    /// Waiters that gave up with `Failed(Revoked)`.
    pub waiters_revoked: u64,
    /// Holders that lost their lease (`Lost(LeaseExpired)`).
    pub leases_expired: u64,
    /// `open_section`/`close_section` calls still without an outcome when their
    /// holder resumed after a disconnect (the core sends them again once its node is
    /// verified).
    pub section_calls_interrupted: u64,
}

/// The checker's state; driven by [`Sim`](crate::Sim).
#[derive(Default, Debug)]
pub(crate) struct Checker {
    tracks: BTreeMap<Key, Track>,
    held: BTreeSet<Key>,
    last_token: BTreeMap<String, i64>,
    admin_deleted: BTreeSet<String>,
    sections: BTreeMap<String, SectionMarker>,
    fenced: BTreeMap<String, FencedData>,
    /// The audited writes of each fenced write, by (acquisition, write id).
    writes: BTreeMap<(Key, u64), Vec<AuditedWrite>>,
    coverage: Coverage,
}

/// The token a fenced data value carries: `<token>` or `<token>:<anything>`.
pub(crate) fn token_of(data: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(data).ok()?;
    s.split(':').next()?.parse().ok()
}

/// What the exit of holder `t` did to the section marker, if anything (`None`: left
/// as it was; `Some(None)`: unknown now).
///
/// A clean release deletes the marker with the node in one multi when the holder's
/// section is open or may be (an open whose outcome it has not heard yet). A loss
/// leaves it: the holder died inside its section (or, with a section call in
/// flight, perhaps did). A release the session may not have survived leaves it
/// unknown.
fn marker_after_exit(t: &Track, released: bool, clean: bool) -> Option<Option<bool>> {
    let maybe_open = t.section_open || (t.section_pending > 0 && t.section_last_call == Some(true));
    if t.compromised {
        return Some(None);
    }
    match (released, clean) {
        (true, true) if maybe_open => Some(Some(false)),
        (true, true) if t.section_pending > 0 => Some(None),
        (true, true) => None,
        (true, false) if maybe_open || t.section_pending > 0 => Some(None),
        (true, false) => None,
        (false, _) if t.section_pending > 0 => Some(None),
        (false, _) if t.section_open => Some(Some(true)),
        (false, _) => None,
    }
}

/// The section marker of `path`, tracked from now on if it was not.
fn marker_of<'a>(
    sections: &'a mut BTreeMap<String, SectionMarker>,
    path: &str,
) -> &'a mut SectionMarker {
    if !sections.contains_key(path) {
        sections.insert(path.to_owned(), SectionMarker::default());
    }
    sections.get_mut(path).expect("just inserted")
}

const REVOKE_MARKERS: [&[u8]; 2] = [b"__REVOKE__", b"unlock"];

fn is_exclusive(r: Option<Recipe>) -> bool {
    matches!(r, Some(Recipe::Write | Recipe::Leader))
}

/// Whether holders of `a` and `b` on one path exclude each other (a semaphore's
/// count is checked on its own).
fn conflicts(a: Option<Recipe>, b: Option<Recipe>) -> bool {
    a.is_some() && b.is_some() && (is_exclusive(a) || is_exclusive(b))
}

impl Checker {
    /// A new acquisition (`recipe`) or another task (`None`) started.
    pub fn on_start(
        &mut self,
        key: Key,
        path: &str,
        recipe: Option<Recipe>,
        options: Options,
    ) -> Result<(), Failure> {
        let track = Track {
            path: path.to_owned(),
            recipe,
            phase: Phase::Waiting,
            node: None,
            session: 0,
            suspended: false,
            released: false,
            compromised: false,
            revocable: options.revocable,
            detects: options.detects,
            scheme: options.scheme,
            section_open: false,
            section_pending: 0,
            section_last_call: None,
        };
        if self.tracks.insert(key, track).is_some() {
            return Err((
                ViolationKind::IllegalEvent,
                format!("{} {} reused", key.0, key.1),
            ));
        }
        Ok(())
    }

    /// The user released (or cancelled) `key` and the core accepted it: a held lock is
    /// no longer trusted from now on.
    pub fn on_release_call(&mut self, key: Key) {
        if let Some(t) = self.tracks.get_mut(&key) {
            if t.phase == Phase::Held {
                t.released = true;
            }
        }
    }

    /// Whether the checker considers `key` held (possibly suspended) and not ended.
    pub fn is_held(&self, key: Key) -> bool {
        self.tracks
            .get(&key)
            .is_some_and(|t| t.phase == Phase::Held)
    }

    /// Whether `key` has had its terminal event.
    pub fn is_ended(&self, key: Key) -> bool {
        self.tracks
            .get(&key)
            .is_some_and(|t| t.phase == Phase::Ended)
    }

    /// An administrator created (`exists`) or deleted a node: if it is a crash
    /// marker, the marker's state is now known to be that (unless a section call
    /// with no outcome yet may still change it).
    pub fn on_admin_marker(&mut self, path: &str, exists: bool) {
        let Some(lock) = path.strip_suffix("/zkl-section") else {
            return;
        };
        let marker = self.sections.entry(lock.to_owned()).or_default();
        if marker.exists.is_some() {
            marker.exists = Some(exists);
        }
    }

    /// The server expired `session` by force (not after a session timeout of
    /// silence, which is all ZooKeeper itself does): nothing could have told its
    /// holders in time.
    pub fn on_forced_expiry(&mut self, session: i64) {
        for key in self.held.clone() {
            let t = self.tracks.get_mut(&key).expect("held is tracked");
            if t.session == session {
                t.compromised = true;
            }
        }
    }

    pub fn on_admin_delete(&mut self, path: &str) {
        self.on_admin_marker(path, false);
        self.admin_deleted.insert(path.to_owned());
        for key in self.held.clone() {
            let t = self.tracks.get_mut(&key).expect("held is tracked");
            if t.node.as_deref() == Some(path) {
                t.compromised = true;
            }
        }
    }

    pub fn on_event(
        &mut self,
        key: Key,
        event: &LockEvent,
        client_session: Option<i64>,
        model: &ZkModel,
    ) -> Result<(), Failure> {
        let lock = self.tracks.get(&key).is_some_and(|t| t.recipe.is_some());
        // What the section bookkeeping needs from before the event.
        let before = self.tracks.get(&key).map(|t| t.phase);
        self.on_lock_event(key, event, client_session, model)?;
        if lock {
            self.on_feature_event(key, event, before, client_session, model)?;
        }
        Ok(())
    }

    fn on_lock_event(
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
                t.node = Some(grant.path.clone());
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
                let (parent, name) = grant.path.rsplit_once('/').unwrap_or(("", ""));
                let parsed = parse_name(name);
                let well_placed = match lease_dir(t) {
                    // A lease node of a peer's layout (kazoo's have no sequence).
                    Some(pool) => parent == pool,
                    None => parent == t.path && parsed.map(|p| p.seq) == Some(grant.sequence),
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

    /// Revocation, sections and fenced-write outcomes, after the base rules passed.
    fn on_feature_event(
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
                let ok = match result {
                    Ok(_) => applied.iter().all(|a| *a),
                    Err(lock_core::FencedError::Unknown(_)) => true,
                    Err(_) => applied.iter().all(|a| !*a),
                };
                if !ok {
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

    /// What the feature checks have exercised so far.
    pub fn coverage(&self) -> Coverage {
        self.coverage
    }

    /// The user called `open_section`/`close_section` on `key` and the core accepted:
    /// until its outcome is reported, the marker may or may not change.
    pub fn on_section_call(&mut self, key: Key, open: bool) {
        let Some(t) = self.tracks.get_mut(&key) else {
            return;
        };
        t.section_pending += 1;
        t.section_last_call = Some(open);
        let marker = self.sections.entry(t.path.clone()).or_default();
        if marker.holder == Some(key) {
            marker.exists = None;
        }
    }

    /// Audits every write to `data_path`: it must be fenced by the lock at `lock_path`.
    pub fn audit_fenced(&mut self, data_path: &str, lock_path: &str) {
        self.fenced.insert(
            data_path.to_owned(),
            FencedData {
                lock_path: lock_path.to_owned(),
                last_token: None,
                applied: BTreeSet::new(),
            },
        );
    }

    /// The writes to audited data nodes in `op`.
    pub fn audited_writes(&self, op: &Op) -> Vec<AuditedWrite> {
        if self.fenced.is_empty() {
            return Vec::new();
        }
        let mut out = Vec::new();
        let mut add = |path: &str, data: &[u8]| {
            if self.fenced.contains_key(path) {
                out.push((path.to_owned(), data.to_vec()));
            }
        };
        match op {
            Op::SetData { path, data, .. } => add(path, data),
            Op::Multi(ops) => {
                for o in ops {
                    if let MultiOp::SetData { path, data, .. } = o {
                        add(path, data);
                    }
                }
            }
            _ => {}
        }
        out
    }

    /// A fenced write was handed to the core as write `write` of `key`.
    pub fn on_fenced_call(&mut self, key: Key, write: u64, ops: &[MultiOp]) {
        let writes = self.audited_writes(&Op::Multi(ops.to_vec()));
        if !writes.is_empty() {
            self.writes.insert((key, write), writes);
        }
    }

    /// Whether the writer (`session`, writing `data`) holds the lock fencing
    /// `data_path` in `model` now, before its write applies: `Err` says why not.
    pub fn writer_holds(
        &self,
        session: i64,
        data_path: &str,
        data: &[u8],
        model: &ZkModel,
    ) -> Result<(), String> {
        let f = &self.fenced[data_path];
        let Some(token) = token_of(data) else {
            return Err(format!("{data:?} carries no token"));
        };
        let children = model.children(&f.lock_path).unwrap_or_default();
        let parts: Vec<(String, i32)> = children
            .iter()
            .filter_map(|n| parse_name(n).map(|p| (n.clone(), p.seq)))
            .collect();
        let Some((name, seq)) = parts.iter().find(|(n, _)| {
            model
                .stat(&format!("{}/{n}", f.lock_path))
                .is_some_and(|s| s.czxid == token)
        }) else {
            return Err(format!(
                "no lock node of {} has czxid {token} (the writer's node is gone)",
                f.lock_path
            ));
        };
        let stat = model
            .stat(&format!("{}/{name}", f.lock_path))
            .expect("listed");
        if stat.ephemeral_owner != session {
            return Err(format!(
                "{name} (token {token}) is owned by {:#x}, the writer is {session:#x}",
                stat.ephemeral_owner
            ));
        }
        if let Some((lower, _)) = parts
            .iter()
            .find(|(_, s)| lock_core::names::relative_sequence(*s, *seq) < 0)
        {
            return Err(format!(
                "{name} (token {token}) has a lower participant {lower}: not the holder"
            ));
        }
        Ok(())
    }

    /// Writes to audited data nodes were applied (`holds`: [`Checker::writer_holds`] of
    /// each, checked just before).
    pub fn on_fenced_applied(
        &mut self,
        writes: Vec<AuditedWrite>,
        holds: Vec<Result<(), String>>,
    ) -> Result<(), Failure> {
        for ((path, data), held) in writes.into_iter().zip(holds) {
            let f = self.fenced.get_mut(&path).expect("audited");
            let shown = String::from_utf8_lossy(&data).into_owned();
            if let Err(why) = held {
                return Err((
                    ViolationKind::StaleWrite,
                    format!(
                        "write {path}={shown} applied, but its writer did not hold {}: {why}",
                        f.lock_path
                    ),
                ));
            }
            let token = token_of(&data).expect("checked by writer_holds");
            if let Some(last) = f.last_token.filter(|l| token < *l) {
                return Err((
                    ViolationKind::StaleWrite,
                    format!(
                        "write {path}={shown} applied after token {last}: the token went backwards"
                    ),
                ));
            }
            f.last_token = Some(token);
            f.applied.insert(data);
            self.coverage.fenced_applied += 1;
        }
        Ok(())
    }

    fn end(&mut self, key: Key) {
        if let Some(t) = self.tracks.get_mut(&key) {
            t.phase = Phase::Ended;
        }
        self.held.remove(&key);
    }

    /// The holder's node must exist, be owned by its session and (at grant) carry
    /// the token; unless an administrator deleted it.
    fn check_node(&mut self, key: Key, at_grant: bool, model: &ZkModel) -> Result<(), Failure> {
        let t = self.tracks.get_mut(&key).expect("tracked");
        let node = t.node.clone().unwrap_or_default();
        match model.stat(&node) {
            None if self.admin_deleted.contains(&node) => {
                t.compromised = true;
                Ok(())
            }
            None => Err((
                if at_grant {
                    ViolationKind::BadGrant
                } else {
                    ViolationKind::HolderWithoutNode
                },
                format!("{} {}: holds {node}, which does not exist", key.0, key.1),
            )),
            Some(stat) if stat.ephemeral_owner != t.session => Err((
                ViolationKind::BadGrant,
                format!(
                    "{} {}: holds {node}, owned by {:#x}, not by its session {:#x}",
                    key.0, key.1, stat.ephemeral_owner, t.session
                ),
            )),
            Some(_) => Ok(()),
        }
    }

    /// After `key` became a trusted holder: does it clash with another?
    fn check_exclusion(&self, key: Key) -> Result<(), Failure> {
        let me = &self.tracks[&key];
        if !me.trusted() {
            return Ok(());
        }
        // A suspended holder of another session must have been told `Lost` before
        // the server could let anyone else in.
        let late = self.held.iter().filter(|k| **k != key).find(|k| {
            let t = &self.tracks[k];
            t.path == me.path
                && t.session != me.session
                && t.suspended
                && !t.released
                && !t.compromised
                && conflicts(t.recipe, me.recipe)
        });
        if let Some(other) = late {
            return Err((
                ViolationKind::LostTooLate,
                format!(
                    "{} {} acquired {} while {} {} (session {:#x}) was suspended, not yet lost",
                    key.0, key.1, me.path, other.0, other.1, self.tracks[other].session
                ),
            ));
        }
        let others: Vec<(&Key, &Track)> = self
            .held
            .iter()
            .filter(|k| **k != key)
            .map(|k| (k, &self.tracks[k]))
            .filter(|(_, t)| t.path == me.path && t.trusted())
            .collect();
        let describe = |list: &[(&Key, &Track)]| {
            list.iter()
                .map(|(k, t)| {
                    format!(
                        "{} {} {:?} {}",
                        k.0,
                        k.1,
                        t.recipe,
                        t.node.as_deref().unwrap_or("?")
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        let head = format!(
            "{} {} ({:?}, {}) acquired {} beside",
            key.0,
            key.1,
            me.recipe,
            me.node.as_deref().unwrap_or("?"),
            me.path
        );
        match me.recipe {
            Some(Recipe::Write | Recipe::Leader) if !others.is_empty() => {
                let kind = if others.iter().any(|(_, t)| is_exclusive(t.recipe)) {
                    ViolationKind::TwoExclusiveHolders
                } else {
                    ViolationKind::WriterBesideHolder
                };
                Err((kind, format!("{head} {}", describe(&others))))
            }
            _ if others.iter().any(|(_, t)| is_exclusive(t.recipe)) => Err((
                ViolationKind::WriterBesideHolder,
                format!("{head} {}", describe(&others)),
            )),
            Some(Recipe::Semaphore { permits }) => {
                let holders = 1 + others
                    .iter()
                    .filter(|(_, t)| matches!(t.recipe, Some(Recipe::Semaphore { .. })))
                    .count();
                if holders > permits as usize {
                    return Err((
                        ViolationKind::TooManySemaphoreHolders,
                        format!("{head} {} ({holders} > {permits})", describe(&others)),
                    ));
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// After every step: every trusted holder's node still exists.
    pub fn after_step(&mut self, model: &ZkModel) -> Result<(), Failure> {
        for key in self.held.clone() {
            if self.tracks[&key].trusted() {
                self.check_node(key, false, model)?;
            }
        }
        Ok(())
    }

    /// Acquisitions that have not ended, with their lock path.
    pub fn unfinished(&self) -> Vec<(Key, String)> {
        self.tracks
            .iter()
            .filter(|(_, t)| t.phase != Phase::Ended)
            .map(|(k, t)| (*k, t.path.clone()))
            .collect()
    }

    /// Every lock path ever used.
    pub fn lock_paths(&self) -> BTreeSet<String> {
        self.tracks
            .values()
            .filter(|t| t.recipe.is_some())
            .map(|t| t.path.clone())
            .collect()
    }

    /// Orphans: participant nodes under a lock path whose owner is not a client's
    /// current session with an unfinished acquisition on that path.
    pub fn orphans(&self, model: &ZkModel, sessions: &[(ClientId, Option<i64>)]) -> Vec<String> {
        let mut out = Vec::new();
        // Every directory participants of a lock path create nodes in: the path,
        // and the queues and lease pools of semaphores in peers' layouts on it.
        let mut dirs: BTreeSet<(String, String)> = BTreeSet::new();
        for t in self.tracks.values().filter(|t| t.recipe.is_some()) {
            dirs.insert((t.path.clone(), t.path.clone()));
            if let Some(pool) = lease_dir(t) {
                let mutex = semaphore_mutex_dir(t.scheme, &t.path).expect("a peer layout");
                dirs.insert((t.path.clone(), pool));
                dirs.insert((t.path.clone(), mutex));
            }
        }
        for (path, dir) in dirs {
            for name in model.children(&dir).unwrap_or_default() {
                if parse_name(&name).is_none() && parse_kazoo_lease(&name).is_none() {
                    continue;
                }
                let node = format!("{dir}/{name}");
                let owner = model.stat(&node).map(|s| s.ephemeral_owner).unwrap_or(0);
                let client = sessions
                    .iter()
                    .find(|(_, s)| *s == Some(owner))
                    .map(|(c, _)| *c);
                let known = client.is_some_and(|c| {
                    self.tracks.iter().any(|((tc, _), t)| {
                        *tc == c && t.path == path && t.recipe.is_some() && t.phase != Phase::Ended
                    })
                });
                if !known {
                    out.push(format!("{node} (owner {owner:#x})"));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lock_core::{CreateMode, FailReason, FencingToken, Grant, LostReason};

    struct Fixture {
        model: ZkModel,
        checker: Checker,
        sessions: Vec<i64>,
    }

    impl Fixture {
        fn new(clients: usize) -> Self {
            let mut model = ZkModel::new();
            model.create(0, "/l", b"", CreateMode::Persistent).unwrap();
            let sessions = (0..clients).map(|_| model.create_session()).collect();
            Fixture {
                model,
                checker: Checker::default(),
                sessions,
            }
        }

        fn start(&mut self, c: usize, recipe: Recipe) -> Key {
            let key = (ClientId(c), LockId(c as u64 + 1));
            self.checker
                .on_start(key, "/l", Some(recipe), Options::default())
                .unwrap();
            key
        }

        /// Creates the node and reports `Acquired` for it.
        fn acquire(&mut self, key: Key) -> Result<(), Failure> {
            let s = self.sessions[key.0 .0];
            let (path, stat) = self
                .model
                .create(
                    s,
                    "/l/zkl-0123456789abcdef0123456789abcdef-write-",
                    b"",
                    CreateMode::EphemeralSequential,
                )
                .unwrap();
            let grant = Grant {
                sequence: parse_name(path.rsplit('/').next().unwrap()).unwrap().seq,
                path,
                token: FencingToken(stat.czxid),
                session_id: s,
                previous_holder_crashed: false,
            };
            self.event(key, LockEvent::Acquired(grant))
        }

        fn event(&mut self, key: Key, e: LockEvent) -> Result<(), Failure> {
            let s = Some(self.sessions[key.0 .0]);
            self.checker.on_event(key, &e, s, &self.model)
        }
    }

    fn kind(r: Result<(), Failure>) -> ViolationKind {
        r.unwrap_err().0
    }

    #[test]
    fn two_exclusive_holders() {
        let mut f = Fixture::new(2);
        let (a, b) = (f.start(0, Recipe::Write), f.start(1, Recipe::Leader));
        f.acquire(a).unwrap();
        assert_eq!(kind(f.acquire(b)), ViolationKind::TwoExclusiveHolders);
    }

    #[test]
    fn suspended_holders_must_be_lost_and_released_ones_are_not_trusted() {
        let mut f = Fixture::new(3);
        let (a, b, c) = (
            f.start(0, Recipe::Write),
            f.start(1, Recipe::Write),
            f.start(2, Recipe::Write),
        );
        f.acquire(a).unwrap();
        f.event(a, LockEvent::Suspended).unwrap();
        // Suspended is not enough: a must hear `Lost` before another session holds.
        assert_eq!(kind(f.acquire(b)), ViolationKind::LostTooLate);
        let mut f1 = Fixture::new(2);
        let (a, b) = (f1.start(0, Recipe::Write), f1.start(1, Recipe::Write));
        f1.acquire(a).unwrap();
        f1.event(a, LockEvent::Suspended).unwrap();
        f1.event(a, LockEvent::Lost(lock_core::LostReason::SuspendedTooLong))
            .unwrap();
        f1.acquire(b).unwrap();
        let mut f2 = Fixture::new(3);
        let _ = c;
        let (a, b) = (f2.start(0, Recipe::Write), f2.start(1, Recipe::Write));
        f2.acquire(a).unwrap();
        f2.checker.on_release_call(a);
        f2.acquire(b).unwrap();
        f2.event(a, LockEvent::Released).unwrap();
    }

    #[test]
    fn writer_beside_readers_and_semaphore_permits() {
        let mut f = Fixture::new(3);
        let (r1, r2, w) = (
            f.start(0, Recipe::Read),
            f.start(1, Recipe::Read),
            f.start(2, Recipe::Write),
        );
        f.acquire(r1).unwrap();
        f.acquire(r2).unwrap();
        assert_eq!(kind(f.acquire(w)), ViolationKind::WriterBesideHolder);
        let mut f = Fixture::new(3);
        let sem = Recipe::Semaphore { permits: 2 };
        let (a, b, c) = (f.start(0, sem), f.start(1, sem), f.start(2, sem));
        f.acquire(a).unwrap();
        f.acquire(b).unwrap();
        assert_eq!(kind(f.acquire(c)), ViolationKind::TooManySemaphoreHolders);
    }

    #[test]
    fn tokens_must_increase() {
        let mut f = Fixture::new(2);
        let (a, b) = (f.start(0, Recipe::Write), f.start(1, Recipe::Write));
        // b's node is created first (lower czxid) but granted after a's.
        let s = f.sessions[1];
        let (pb, sb) = f
            .model
            .create(
                s,
                "/l/zkl-0123456789abcdef0123456789abcdef-write-",
                b"",
                CreateMode::EphemeralSequential,
            )
            .unwrap();
        f.acquire(a).unwrap();
        f.checker.on_release_call(a);
        f.event(a, LockEvent::Released).unwrap();
        let grant = Grant {
            sequence: 0,
            path: pb,
            token: FencingToken(sb.czxid),
            session_id: s,
            previous_holder_crashed: false,
        };
        assert_eq!(
            kind(f.event(b, LockEvent::Acquired(grant))),
            ViolationKind::TokenNotIncreasing
        );
    }

    #[test]
    fn grants_must_match_the_tree_and_holders_keep_their_nodes() {
        let mut f = Fixture::new(2);
        let a = f.start(0, Recipe::Write);
        let grant = Grant {
            sequence: 7,
            path: "/l/zkl-0123456789abcdef0123456789abcdef-write-0000000007".into(),
            token: FencingToken(1),
            session_id: f.sessions[0],
            previous_holder_crashed: false,
        };
        assert_eq!(
            kind(f.event(a, LockEvent::Acquired(grant))),
            ViolationKind::BadGrant
        );
        let mut f = Fixture::new(1);
        let a = f.start(0, Recipe::Write);
        f.acquire(a).unwrap();
        f.model.expire_session(f.sessions[0]);
        assert_eq!(
            kind(f.checker.after_step(&f.model)),
            ViolationKind::HolderWithoutNode
        );
    }

    #[test]
    fn event_order_and_terminal_rules() {
        let mut f = Fixture::new(1);
        let a = f.start(0, Recipe::Write);
        assert_eq!(
            kind(f.event(a, LockEvent::Suspended)),
            ViolationKind::IllegalEvent
        );
        assert_eq!(
            kind(f.event(a, LockEvent::Lost(LostReason::NodeDeleted))),
            ViolationKind::IllegalEvent
        );
        assert_eq!(
            kind(f.event(a, LockEvent::Released)),
            ViolationKind::IllegalEvent
        );
        f.event(a, LockEvent::Failed(FailReason::Timeout)).unwrap();
        assert_eq!(
            kind(f.event(a, LockEvent::Failed(FailReason::Timeout))),
            ViolationKind::IllegalEvent
        );
        let b = (ClientId(0), LockId(99));
        assert_eq!(
            kind(f.event(b, LockEvent::Released)),
            ViolationKind::IllegalEvent
        );
        assert_eq!(f.checker.unfinished(), vec![]);
    }
}
