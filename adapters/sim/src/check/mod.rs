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

mod exclusion;
mod features;
mod fenced;
mod sections;

use exclusion::is_exclusive;
pub(crate) use fenced::AuditedWrite;
use fenced::FencedData;
use sections::SectionMarker;

use crate::ids::ClientId;
use crate::model::ZkModel;
use lock_core::names::{parse_kazoo_lease, parse_name, semaphore_lease_dir, semaphore_mutex_dir};
use lock_core::NameScheme;
use lock_core::{LockEvent, LockId, Recipe, Timestamp};
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

/// Sums the coverage of several runs.
///
/// ```
/// let mut total = lock_sim::Coverage::default();
/// total += lock_sim::Workload::sections().run(1).unwrap().coverage;
/// total += lock_sim::Workload::sections().run(2).unwrap().coverage;
/// assert!(total.crash_flags_checked > 0);
/// ```
impl std::ops::AddAssign for Coverage {
    fn add_assign(&mut self, other: Coverage) {
        self.crash_flags_checked += other.crash_flags_checked;
        self.crashes_reported += other.crashes_reported;
        self.fenced_applied += other.fenced_applied;
        self.fenced_outcomes_checked += other.fenced_outcomes_checked;
        self.fenced_not_held += other.fenced_not_held;
        self.revocations_requested += other.revocations_requested;
        self.waiters_revoked += other.waiters_revoked;
        self.leases_expired += other.leases_expired;
        self.section_calls_interrupted += other.section_calls_interrupted;
    }
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

    /// What the feature checks have exercised so far.
    pub fn coverage(&self) -> Coverage {
        self.coverage
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
