//! [`Queue`]: our place in the lock directory's queue, the part of an acquisition
//! that owns the lower blockers from the last listing, the watched window and the
//! listing in flight.
//!
//! Deciding from the cache ([`Queue::decide`]) returns a [`Decision`] and sends
//! nothing: the acquisition acts on it (grant, fail, or watch the window).

use crate::ctx::Ctx;
use crate::ctx::InFlight;
use crate::event::FailReason;
use crate::ids::LockId;
use crate::names::{
    parse_participant, relative_sequence, AttemptId, NameScheme, NodeKind, ParsedName,
    DELAY_MARKER, SECTION_MARKER,
};
use crate::output::{Progress, QueuePlace};
use crate::path::split_parent;
use crate::proto::{Op, Reply, RequestId, ZkError};
use crate::requests::Purpose;
use crate::spec::{LockSpec, Recipe};
use std::sync::Arc;

/// A listing of the lock directory, sorted out.
#[derive(Debug, Default)]
pub(super) struct Listing {
    /// Our nodes (by attempt id): (sequence, name).
    pub(super) mine: Vec<(i32, String)>,
    /// Every other participant, of any scheme.
    pub(super) others: Vec<(ParsedName, String)>,
    /// The crash-detection marker is there.
    pub(super) marker_seen: bool,
}

/// What the reply to a blocker's watch says.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(super) enum PeerOutcome {
    /// Not the watch we wait for, or the watch is set: nothing to do.
    Done,
    /// The blocker is gone.
    Gone,
    /// Lost with the connection: retry after a pause.
    Trouble(ZkError),
    /// Refused.
    Failed(ZkError),
}

/// A watch on a lower blocker.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Watch {
    /// Its `getData` is in flight.
    Pending(RequestId),
    /// Its `getData` was answered: the watch is set on the server.
    Armed,
}

/// The watches on lower blockers: a small list, as the window is (one entry
/// for a lock, `permits` for a semaphore), each under the blocker's path as the
/// session's watch index keeps it (one allocation for both), looked up by name.
#[derive(Default, Debug)]
pub(super) struct Watched(Vec<(Arc<str>, Watch)>);

impl Watched {
    fn find(&self, name: &str) -> Option<usize> {
        self.0.iter().position(|(p, _)| split_parent(p).1 == name)
    }

    pub(super) fn get(&self, name: &str) -> Option<&Watch> {
        self.find(name).map(|i| &self.0[i].1)
    }

    pub(super) fn contains_key(&self, name: &str) -> bool {
        self.find(name).is_some()
    }

    #[cfg(test)]
    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Sets the watch on `path` (replacing the one there).
    pub(super) fn insert(&mut self, path: Arc<str>, watch: Watch) {
        match self.find(split_parent(&path).1) {
            Some(i) => self.0[i].1 = watch,
            None => {
                // Room for this one only: the window rarely holds more.
                self.0.reserve_exact(1);
                self.0.push((path, watch));
            }
        }
    }

    /// The watch on `name` is set on the server.
    fn arm(&mut self, name: &str) {
        if let Some(i) = self.find(name) {
            self.0[i].1 = Watch::Armed;
        }
    }

    /// Removes the watch on `name`, if any.
    pub(super) fn remove(&mut self, name: &str) -> Option<Watch> {
        let (_, watch) = self.0.swap_remove(self.find(name)?);
        self.free_if_empty();
        Some(watch)
    }

    /// Keeps the watches on the names `keep` says yes to.
    pub(super) fn retain(&mut self, mut keep: impl FnMut(&str) -> bool) {
        self.0.retain(|(p, _)| keep(split_parent(p).1));
        self.free_if_empty();
    }

    /// Drops every watch (and the room they took).
    pub(super) fn clear(&mut self) {
        self.0 = Vec::new();
    }

    fn free_if_empty(&mut self) {
        if self.0.is_empty() {
            self.0 = Vec::new();
        }
    }
}

impl std::ops::Index<&str> for Watched {
    type Output = Watch;

    fn index(&self, name: &str) -> &Watch {
        self.get(name).expect("no watch on that name")
    }
}

/// What the cached lower blockers say.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(super) enum Decision {
    /// Nothing in the cache can block us: hold.
    Hold,
    /// Blocked: wait, watching `window` (the `permits` closest blockers, or the
    /// closest writer below a semaphore), closest last.
    Wait { window: Vec<String> },
}

/// Whether the participant `name` excludes every other (a write lock or leader).
fn is_exclusive(name: &str) -> bool {
    parse_participant(name).is_some_and(|p| matches!(p.kind, NodeKind::Write | NodeKind::Leader))
}

/// The queue as we last saw it (see the module docs).
#[derive(Default, Debug)]
pub(super) struct Queue {
    /// Lower blockers from the last listing, farthest first: (relative seq, name).
    /// Sequence numbers only grow, so the set can only shrink until the next listing.
    pub(super) lower: Vec<(i32, String)>,
    /// Watches on lower blockers, by name.
    pub(super) watched: Watched,
    /// The listing of the lock directory in flight.
    pub(super) list: InFlight,
    /// A listing came back without our node while its create was in flight.
    pub(super) relist_after_create: bool,
    /// The place last reported (`Progress::Queued`): a new one is reported only
    /// when it differs.
    pub(super) reported: Option<QueuePlace>,
}

impl Queue {
    // Getters.

    /// Decides from the cached lower blockers, for the walk's `recipe`.
    pub(super) fn decide(&self, recipe: Recipe) -> Decision {
        let permits = recipe.permits();
        // A semaphore never holds beside an exclusive participant below it (a write
        // lock or leader on the same path): that one must go first, whatever the
        // permits. `lower` is farthest first, so this is the closest such writer.
        let writer = match recipe {
            Recipe::Semaphore { .. } => self
                .lower
                .iter()
                .rev()
                .find(|(_, n)| is_exclusive(n))
                .map(|(_, n)| n.clone()),
            _ => None,
        };
        match writer {
            Some(writer) => Decision::Wait {
                window: vec![writer],
            },
            None if self.lower.len() < permits => Decision::Hold,
            None => Decision::Wait {
                window: self.lower[self.lower.len() - permits..]
                    .iter()
                    .map(|(_, n)| n.clone())
                    .collect(),
            },
        }
    }

    /// Where we stand among the cached lower blockers, for the walk's `recipe`:
    /// how many of them must leave before [`decide`](Self::decide) holds.
    /// A semaphore holds once no exclusive participant (write lock or leader)
    /// is below it and fewer than `permits` others are; so all of the first
    /// kind must go, and enough of the rest.
    pub(super) fn place(&self, recipe: Recipe) -> QueuePlace {
        let permits = recipe.permits();
        match recipe {
            Recipe::Semaphore { permits: total } => {
                let exclusive = self.lower.iter().filter(|(_, n)| is_exclusive(n)).count();
                let sharing = self.lower.len() - exclusive;
                QueuePlace {
                    position: exclusive + (sharing + 1).saturating_sub(permits),
                    permits_in_use: Some(total.min(u32::try_from(sharing).unwrap_or(u32::MAX))),
                }
            }
            _ => QueuePlace {
                position: (self.lower.len() + 1).saturating_sub(permits),
                permits_in_use: None,
            },
        }
    }

    /// Whether a firing on `name` concerns a blocker we cache.
    pub(super) fn blocks_with(&self, name: &str) -> bool {
        self.lower.iter().any(|(_, n)| n == name)
    }

    /// Sorts a listing of our directory out: our nodes (by `attempt`), the
    /// other participants, the crash marker; children that are no participant
    /// are counted.
    pub(super) fn sort_listing(cx: &mut Ctx, children: Vec<String>, attempt: AttemptId) -> Listing {
        let mut listing = Listing {
            marker_seen: children.iter().any(|c| c == SECTION_MARKER),
            ..Listing::default()
        };
        // Our own markers are neither participants nor foreign.
        for name in children
            .into_iter()
            .filter(|c| c != SECTION_MARKER && c != DELAY_MARKER)
        {
            // Every participant counts, of a scheme zklock does not know too (as
            // an exclusive one: see names::parse_participant); only a known name
            // carries an attempt id that can be ours.
            match parse_participant(&name) {
                Some(p) if p.scheme != NameScheme::Other && p.attempt == attempt => {
                    listing.mine.push((p.seq, name))
                }
                Some(p) => listing.others.push((p, name)),
                None => cx.stats.foreign_children += 1,
            }
        }
        listing
    }

    // Replies.

    /// Takes the reply to the watch on `name`: `true` if it answers the `getData`
    /// we wait for (then the caller acts on it).
    pub(super) fn take_watch_reply(&self, name: &str, request: RequestId) -> bool {
        self.watched.get(name) == Some(&Watch::Pending(request))
    }

    /// The reply to the watch on the blocker `name`.
    pub(super) fn on_peer_reply(
        &mut self,
        request: RequestId,
        name: &str,
        result: Result<Reply, ZkError>,
    ) -> PeerOutcome {
        if !self.take_watch_reply(name, request) {
            return PeerOutcome::Done;
        }
        match result {
            Ok(_) => {
                self.watched.arm(name);
                PeerOutcome::Done
            }
            Err(ZkError::NoNode) => PeerOutcome::Gone,
            Err(e) if e.is_connection_loss() => PeerOutcome::Trouble(e),
            Err(e) => PeerOutcome::Failed(e),
        }
    }

    // Mutators.

    /// Lists our directory `dir` (superseding a listing in flight).
    pub(super) fn send_list(&mut self, cx: &mut Ctx, id: LockId, dir: &str) {
        let op = Op::GetChildren {
            path: dir.to_owned(),
        };
        self.list.send(cx, id, Purpose::List, op);
    }

    /// Takes our place from a listing's `others` for our node at `seq`, walking
    /// as `recipe` (see [`set_lower`](Self::set_lower), with `downgrade` our
    /// owner's write nodes): refused with the reason to fail when a semaphore's
    /// peers count other permits than ours, or when a downgrade of `spec`, which
    /// waits, would queue behind a writer between our owner's write and us.
    pub(super) fn take_place(
        &mut self,
        others: Vec<(ParsedName, String)>,
        seq: i32,
        recipe: Recipe,
        downgrade: &[String],
        spec: &LockSpec,
    ) -> Result<(), FailReason> {
        if let Recipe::Semaphore { permits: ours } = recipe {
            let theirs = others.iter().find_map(|(p, _)| match p.permits {
                Some(theirs) if p.kind == NodeKind::Semaphore && theirs != ours => Some(theirs),
                _ => None,
            });
            if let Some(theirs) = theirs {
                return Err(FailReason::PermitsMismatch { ours, theirs });
            }
        }
        let downgrading = self.set_lower(others, seq, recipe, downgrade);
        if downgrading && !self.lower.is_empty() && spec.wait {
            // Our owner's write node is still held, and a writer queued between it
            // and us: that writer waits for our owner, we would wait for it.
            return Err(FailReason::SelfDeadlock {
                path: spec.path.clone(),
                owner: spec.rare().owner.clone().unwrap_or_default(),
                held: NodeKind::Write,
            });
        }
        Ok(())
    }

    /// Caches the blockers of `recipe` lower than our sequence `seq` among
    /// `others`, but for the write nodes of a `downgrade`. Returns whether one
    /// of those was there.
    pub(super) fn set_lower(
        &mut self,
        others: Vec<(ParsedName, String)>,
        seq: i32,
        recipe: Recipe,
        downgrade: &[String],
    ) -> bool {
        let mut downgrading = false;
        let mut lower: Vec<(i32, String)> = others
            .into_iter()
            .map(|(p, n)| (relative_sequence(p.seq, seq), p, n))
            .filter(|(rel, p, _)| *rel < 0 && recipe.is_blocked_by(p.kind))
            .filter(|(_, _, n)| {
                let ours = downgrade.contains(n);
                downgrading |= ours;
                !ours
            })
            .map(|(rel, _, n)| (rel, n))
            .collect();
        lower.sort();
        // At its size: kept while we wait, and `collect` leaves room for four.
        lower.shrink_to_fit();
        self.lower = lower;
        downgrading
    }

    /// Watches the blocker `name` in our directory `dir` (a `getData` with a watch).
    pub(super) fn watch_peer(&mut self, cx: &mut Ctx, id: LockId, dir: &str, name: String) {
        let path = format!("{dir}/{name}");
        let op = Op::GetData {
            path: path.clone(),
            watch: true,
        };
        // The path's one allocation, kept by the window and the watch index.
        let shared: Arc<str> = Arc::from(path.as_str());
        let purpose = Purpose::WatchPeer { name };
        if let Some(request) = cx.send_watching(id, purpose, op, Some(&shared)) {
            self.watched.insert(shared, Watch::Pending(request));
            cx.stats.watches_set += 1;
            cx.progress(id, Progress::QueuedBehind { node: path });
        }
    }

    /// A firing other than a deletion on `name`: if we watched it, the watch is
    /// spent; set it again. Returns whether we watched it.
    pub(super) fn on_peer_fired(
        &mut self,
        cx: &mut Ctx,
        id: LockId,
        dir: &str,
        name: &str,
    ) -> bool {
        if self.watched.remove(name).is_none() {
            return false;
        }
        self.watch_peer(cx, id, dir, name.to_owned());
        true
    }

    /// Waits behind `window`: keeps the watches on it, sets the missing ones.
    pub(super) fn watch_window(
        &mut self,
        cx: &mut Ctx,
        id: LockId,
        dir: &str,
        window: Vec<String>,
    ) {
        for name in self.narrow_to(window) {
            self.watch_peer(cx, id, dir, name);
        }
    }

    /// Reports our place behind the cached blockers (our node `node`), when it
    /// changed.
    pub(super) fn report(&mut self, cx: &mut Ctx, id: LockId, recipe: Recipe, node: &str) {
        if let Some(place) = self.report_place(recipe) {
            let node = node.to_owned();
            cx.progress(id, Progress::Queued { node, place });
        }
    }

    /// The blocker `name` is gone. Returns `true` when the cache can no
    /// longer block us with `permits` (decide again: no round trip);
    /// otherwise the rest of the cache is likely stale (in a queue, everyone
    /// below our predecessor left before it did), and one fresh listing beats
    /// checking the candidates one round trip at a time.
    pub(super) fn on_blocker_gone(
        &mut self,
        cx: &mut Ctx,
        id: LockId,
        dir: &str,
        name: &str,
        permits: usize,
    ) -> bool {
        if !self.drop_blocker(name, permits) {
            return true;
        }
        if !self.list.is_pending() {
            self.send_list(cx, id, dir);
        }
        false
    }

    /// The blocker `name` is gone: drops it from the cache and its watch. Returns
    /// whether the cache can still block us with `permits`.
    pub(super) fn drop_blocker(&mut self, name: &str, permits: usize) -> bool {
        self.watched.remove(name);
        self.lower.retain(|(_, n)| n != name);
        if self.lower.is_empty() {
            // Nothing below us any more: a holder keeps no room for blockers.
            self.lower = Vec::new();
        }
        self.lower.len() >= permits
    }

    /// Keeps only the watches on `window`; returns the names still to watch.
    pub(super) fn narrow_to(&mut self, window: Vec<String>) -> Vec<String> {
        self.watched.retain(|n| window.iter().any(|w| w == n));
        window
            .into_iter()
            .filter(|n| !self.watched.contains_key(n))
            .collect()
    }

    /// The connection dropped (or a recovery starts): no watch or listing of ours
    /// is in flight or set any more. The cache stays until the next listing.
    pub(super) fn forget(&mut self) {
        self.watched.clear();
        self.list.forget();
    }

    /// The place to report at a look that did not grant: `Some` when it
    /// differs from the last one reported (which it becomes).
    pub(super) fn report_place(&mut self, recipe: Recipe) -> Option<QueuePlace> {
        let place = self.place(recipe);
        (self.reported != Some(place)).then(|| {
            self.reported = Some(place);
            place
        })
    }
}

#[cfg(test)]
mod tests;
