//! zklock's markers in a lock directory (persistent nodes beside the
//! participants; their names are in `names`, which inspection reads too): the
//! ones a clean release deletes in one multi with our node.

use super::delay::{self, Delay};
use super::holder::{self, SectionsAndWrites};
use crate::proto::{Reply, ZkError};

/// A marker a clean release deletes in the multi with our node.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum ReleaseMarker {
    /// The crash-detection section marker (an open section closed by the release).
    Section,
    /// Our lock-delay marker.
    Delay,
}

impl ReleaseMarker {
    /// The markers a release deletes with our node, in the multi's order. Only a
    /// `clean` release (not an abandonment, not the cleanup after a loss or
    /// failure) deletes them: a marker left behind is how the next holder learns
    /// of an unclean end.
    pub(super) fn for_release(
        clean: bool,
        holder: &SectionsAndWrites,
        delay: &Delay,
    ) -> Vec<ReleaseMarker> {
        let mut markers = Vec::new();
        if !clean || holder.is_abandoned() {
            return markers;
        }
        if holder.release_closes_section() {
            markers.push(ReleaseMarker::Section);
        }
        if delay.marker_ours {
            markers.push(ReleaseMarker::Delay);
        }
        markers
    }

    /// Its path in the lock directory `lock_path`.
    pub(super) fn path(self, lock_path: &str) -> String {
        match self {
            ReleaseMarker::Section => holder::marker_path(lock_path),
            ReleaseMarker::Delay => delay::marker_path(lock_path),
        }
    }

    /// The marker of `markers` (the multi's first ops) that the release's
    /// `result` found missing, if that is why it failed.
    pub(super) fn missing(
        result: &Result<Reply, ZkError>,
        markers: &[ReleaseMarker],
    ) -> Option<ReleaseMarker> {
        match result {
            Err(ZkError::MultiFailed { index, error }) if **error == ZkError::NoNode => {
                markers.get(*index as usize).copied()
            }
            _ => None,
        }
    }

    /// The marker is gone already: the part that owns it stops counting on it,
    /// and the release deletes the rest without it.
    pub(super) fn forget(self, holder: &mut SectionsAndWrites, delay: &mut Delay) {
        match self {
            ReleaseMarker::Section => holder.section_gone(),
            ReleaseMarker::Delay => delay.marker_ours = false,
        }
    }
}
