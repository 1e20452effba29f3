//! Reentrancy: the counted holds of one owner on one node of a
//! [reentrant](crate::Mutex::reentrant) mutex (the counts live in the shared state,
//! `Locks::holds`).

use super::LockGuard;
use crate::handle::LockClient;
use crate::shared::Holds;
use lock_core::LockState;

/// How a guard holds its lock: alone, or as one of the counted holds of a
/// [reentrant](crate::Mutex::reentrant) mutex (see `Locks::holds`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Hold {
    Single,
    Counted,
    /// A counted hold already given back (by `release`): its drop does nothing.
    Spent,
}

impl LockGuard {
    /// Makes this fresh guard of a reentrant mutex the first counted hold of
    /// `owner` on its path.
    pub(crate) fn count_holds(mut self, owner: &str, path: &str) -> LockGuard {
        let (id, grant) = (self.id, &self.grant);
        self.client.shared().with(|s| {
            let holds = s.locks.holds.entry(id).or_insert_with(|| Holds {
                owner: owner.to_owned(),
                path: path.to_owned(),
                grant: grant.clone(),
                count: 0,
            });
            holds.count += 1;
        });
        self.hold = Hold::Counted;
        self
    }

    /// Another counted hold on the reentrant mutex at `path` that `owner` holds
    /// (trusted or suspended) on this session, if it does.
    pub(crate) fn reenter(client: &LockClient, owner: &str, path: &str) -> Option<LockGuard> {
        client.shared().with(|s| {
            let (&id, holds) =
                (s.locks.holds.iter_mut()).find(|(_, h)| h.owner == owner && h.path == path)?;
            if !matches!(
                s.core.state(id),
                Some(LockState::Held | LockState::Suspended)
            ) {
                return None;
            }
            holds.count += 1;
            Some(LockGuard {
                client: client.clone(),
                id,
                grant: holds.grant.clone(),
                hold: Hold::Counted,
            })
        })
    }

    /// Gives back a counted hold: `true` if other holds remain (then nothing more
    /// is to be done); `false` for the last one (or a single hold), to be released.
    pub(super) fn give_back(&mut self) -> bool {
        match self.hold {
            Hold::Single => false,
            Hold::Spent => true,
            Hold::Counted => {
                let id = self.id;
                let others = self
                    .client
                    .shared()
                    .with(|s| match s.locks.holds.get_mut(&id) {
                        Some(h) if h.count > 1 => {
                            h.count -= 1;
                            true
                        }
                        _ => {
                            s.locks.holds.remove(&id);
                            false
                        }
                    });
                self.hold = if others { Hold::Spent } else { Hold::Single };
                others
            }
        }
    }

    /// How many guards hold this lock: more than 1 for a
    /// [reentrant](crate::Mutex::reentrant) mutex its owner re-entered (the node is
    /// released when the last one goes), else 1.
    pub fn holds(&self) -> usize {
        match self.hold {
            Hold::Single | Hold::Spent => 1,
            Hold::Counted => self
                .client
                .shared()
                .with(|s| s.locks.holds.get(&self.id).map_or(1, |h| h.count)),
        }
    }
}
