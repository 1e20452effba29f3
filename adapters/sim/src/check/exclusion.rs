//! Exclusion: at most the permitted number of trusted holders of a lock at any instant.

use super::{Checker, Failure, Key, Track, ViolationKind};
use lock_core::Recipe;

pub(super) fn is_exclusive(r: Option<Recipe>) -> bool {
    matches!(r, Some(Recipe::Write | Recipe::Leader))
}

/// Whether holders of `a` and `b` on one path exclude each other (a semaphore's
/// count is checked on its own).
fn conflicts(a: Option<Recipe>, b: Option<Recipe>) -> bool {
    a.is_some() && b.is_some() && (is_exclusive(a) || is_exclusive(b))
}

impl Checker {
    /// After `key` became a trusted holder: does it clash with another?
    pub(super) fn check_exclusion(&self, key: Key) -> Result<(), Failure> {
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
}
