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

mod coverage;
mod events;
mod exclusion;
mod features;
mod fenced;
mod quiescence;
mod sections;
mod violation;

pub use coverage::Coverage;
pub use events::grant_in_queue;
use exclusion::is_exclusive;
pub use fenced::fenced_outcome_agrees;
pub(crate) use fenced::AuditedWrite;
use fenced::FencedData;
use sections::SectionMarker;
pub use violation::{Violation, ViolationKind};

use crate::ids::ClientId;
use crate::model::ZkModel;
use lock_core::names::{parse_kazoo_lease, parse_name, semaphore_lease_dir, semaphore_mutex_dir};
use lock_core::{LockEvent, LockId, NameScheme, Recipe};
use std::collections::{BTreeMap, BTreeSet};

#[derive(Clone, Copy, PartialEq, Eq, Default, Debug)]
enum Phase {
    #[default]
    Waiting,
    Held,
    Ended,
}

#[derive(Clone, Default, Debug)]
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
            revocable: options.revocable,
            detects: options.detects,
            scheme: options.scheme,
            ..Track::default()
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
}

#[cfg(test)]
mod tests;
