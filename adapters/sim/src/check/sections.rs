//! Crash-detecting sections: the section marker of each lock path, followed through
//! the events and the administrator's faults.

use super::{Checker, Key, Track};
use std::collections::BTreeMap;

/// The crash-detection marker of one lock path, as the events tell it.
#[derive(Clone, Debug)]
pub(super) struct SectionMarker {
    /// Whether the marker exists, when known (it is unknown while a section call has
    /// no outcome, or after a release whose delete may or may not have applied).
    pub(super) exists: Option<bool>,
    /// The last exclusive holder granted on the path: the only one whose section
    /// calls can still change the marker.
    pub(super) holder: Option<Key>,
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

/// What the exit of holder `t` did to the section marker, if anything (`None`: left
/// as it was; `Some(None)`: unknown now).
///
/// A clean release deletes the marker with the node in one multi when the holder's
/// section is open or may be (an open whose outcome it has not heard yet). A loss
/// leaves it: the holder died inside its section (or, with a section call in
/// flight, perhaps did). A release the session may not have survived leaves it
/// unknown.
pub(super) fn marker_after_exit(t: &Track, released: bool, clean: bool) -> Option<Option<bool>> {
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
pub(super) fn marker_of<'a>(
    sections: &'a mut BTreeMap<String, SectionMarker>,
    path: &str,
) -> &'a mut SectionMarker {
    sections.entry(path.to_owned()).or_default()
}

impl Checker {
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
}
