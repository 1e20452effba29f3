//! [`Queue`]: our place in the lock directory's queue, the part of an acquisition
//! that owns the lower blockers from the last listing, the watched window and the
//! listing in flight.
//!
//! Deciding from the cache ([`Queue::decide`]) returns a [`Decision`] and sends
//! nothing: the acquisition acts on it (grant, fail, or watch the window).

use super::{DELAY_MARKER, SECTION_MARKER};
use crate::ctx::Ctx;
use crate::ids::LockId;
use crate::names::{
    parse_participant, relative_sequence, AttemptId, NameScheme, NodeKind, ParsedName,
};
use crate::output::{Progress, QueuePlace};
use crate::proto::{Op, Reply, RequestId, ZkError};
use crate::requests::{InFlight, Purpose};
use crate::spec::Recipe;
use std::collections::BTreeMap;

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

/// What the cached lower blockers say.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(super) enum Decision {
    /// Nothing in the cache can block us: hold.
    Hold,
    /// Blocked: wait, watching `window` (the `permits` closest blockers, or the
    /// closest writer below a semaphore), closest last.
    Wait { window: Vec<String> },
}

/// The queue as we last saw it (see the module docs).
#[derive(Default, Debug)]
pub(super) struct Queue {
    /// The directory our node is created and queued in: the lock's path, or for a
    /// semaphore in Curator's or kazoo's layout its internal mutex (see
    /// [`lease`](super::lease)).
    pub(super) dir: String,
    /// Lower blockers from the last listing, farthest first: (relative seq, name).
    /// Sequence numbers only grow, so the set can only shrink until the next listing.
    pub(super) lower: Vec<(i32, String)>,
    /// Watches on lower blockers, by name.
    pub(super) watched: BTreeMap<String, Watch>,
    /// The listing of the lock directory in flight.
    pub(super) list: InFlight,
    /// A listing came back without our node while its create was in flight.
    pub(super) relist_after_create: bool,
    /// The place last reported (`Progress::Queued`): a new one is reported only
    /// when it differs.
    pub(super) reported: Option<QueuePlace>,
}

impl Queue {
    /// The queue in the directory `dir`, not listed yet.
    pub(super) fn new(dir: String) -> Self {
        Queue {
            dir,
            ..Queue::default()
        }
    }

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
                .find(|(_, n)| {
                    parse_participant(n)
                        .is_some_and(|p| matches!(p.kind, NodeKind::Write | NodeKind::Leader))
                })
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
                let exclusive = self
                    .lower
                    .iter()
                    .filter(|(_, n)| {
                        parse_participant(n)
                            .is_some_and(|p| matches!(p.kind, NodeKind::Write | NodeKind::Leader))
                    })
                    .count();
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

    /// Takes the reply to the listing in flight, if `request` is it.
    pub(super) fn take_list_reply(&mut self, request: RequestId) -> bool {
        self.list.take_reply(request)
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
                self.watched.insert(name.to_owned(), Watch::Armed);
                PeerOutcome::Done
            }
            Err(ZkError::NoNode) => PeerOutcome::Gone,
            Err(e) if e.is_connection_loss() => PeerOutcome::Trouble(e),
            Err(e) => PeerOutcome::Failed(e),
        }
    }

    // Mutators.

    /// Lists our directory (superseding a listing in flight).
    pub(super) fn send_list(&mut self, cx: &mut Ctx, id: LockId) {
        let op = Op::GetChildren {
            path: self.dir.clone(),
        };
        self.list.send(cx, id, Purpose::List, op);
    }

    /// Lists our directory unless a listing is in flight.
    pub(super) fn ensure_list(&mut self, cx: &mut Ctx, id: LockId) {
        if !self.list.is_pending() {
            self.send_list(cx, id);
        }
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
        self.lower = lower;
        downgrading
    }

    /// Watches the blocker `name` (a `getData` with a watch).
    pub(super) fn watch_peer(&mut self, cx: &mut Ctx, id: LockId, name: String) {
        let path = format!("{}/{}", self.dir, name);
        let op = Op::GetData {
            path: path.clone(),
            watch: true,
        };
        if let Some(request) = cx.send(id, Purpose::WatchPeer { name: name.clone() }, op) {
            self.watched.insert(name, Watch::Pending(request));
            cx.stats.watches_set += 1;
            cx.progress(id, Progress::QueuedBehind { node: path });
        }
    }

    /// A firing other than a deletion on `name`: if we watched it, the watch is
    /// spent; set it again. Returns whether we watched it.
    pub(super) fn on_peer_fired(&mut self, cx: &mut Ctx, id: LockId, name: &str) -> bool {
        if self.watched.remove(name).is_none() {
            return false;
        }
        self.watch_peer(cx, id, name.to_owned());
        true
    }

    /// Holding: no blocker is watched any more.
    pub(super) fn unwatch_all(&mut self) {
        self.watched.clear();
    }

    /// Waits behind `window`: keeps the watches on it, sets the missing ones.
    pub(super) fn watch_window(&mut self, cx: &mut Ctx, id: LockId, window: Vec<String>) {
        for name in self.narrow_to(window) {
            self.watch_peer(cx, id, name);
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
        name: &str,
        permits: usize,
    ) -> bool {
        if !self.drop_blocker(name, permits) {
            return true;
        }
        self.ensure_list(cx, id);
        false
    }

    /// The blocker `name` is gone: drops it from the cache and its watch. Returns
    /// whether the cache can still block us with `permits`.
    pub(super) fn drop_blocker(&mut self, name: &str, permits: usize) -> bool {
        self.watched.remove(name);
        self.lower.retain(|(_, n)| n != name);
        self.lower.len() >= permits
    }

    /// Keeps only the watches on `window`; returns the names still to watch.
    pub(super) fn narrow_to(&mut self, window: Vec<String>) -> Vec<String> {
        self.watched.retain(|n, _| window.contains(n));
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

    /// The acquisition ended: nothing of the queue matters any more.
    pub(super) fn clear(&mut self) {
        self.forget();
        self.lower.clear();
        self.reported = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(kind: &str, seq: i32) -> String {
        format!("zkl-{:032x}-{kind}-{seq:010}", seq as u128 + 1)
    }

    fn queue(lower: &[String]) -> Queue {
        Queue {
            lower: lower
                .iter()
                .enumerate()
                .map(|(i, n)| (i as i32 - lower.len() as i32, n.clone()))
                .collect(),
            ..Queue::default()
        }
    }

    #[test]
    fn one_permit_holds_on_an_empty_cache_and_watches_its_predecessor() {
        assert_eq!(queue(&[]).decide(Recipe::Write), Decision::Hold);
        let q = queue(&[name("write", 1), name("write", 2)]);
        assert_eq!(
            q.decide(Recipe::Write),
            Decision::Wait {
                window: vec![name("write", 2)]
            }
        );
    }

    #[test]
    fn a_semaphore_watches_its_permits_closest_or_the_closest_writer() {
        let sem = Recipe::Semaphore { permits: 2 };
        let readers = [name("sem2", 1), name("sem2", 2), name("sem2", 3)];
        assert_eq!(queue(&readers[..1]).decide(sem), Decision::Hold);
        assert_eq!(
            queue(&readers).decide(sem),
            Decision::Wait {
                window: readers[1..].to_vec()
            }
        );
        // One writer below: it goes first, whatever the permits.
        let with_writer = [name("write", 1), name("sem2", 2)];
        assert_eq!(
            queue(&with_writer[..1]).decide(sem),
            Decision::Wait {
                window: vec![name("write", 1)]
            }
        );
        assert_eq!(
            queue(&with_writer).decide(sem),
            Decision::Wait {
                window: vec![name("write", 1)]
            }
        );
    }

    #[test]
    fn the_place_counts_who_must_leave_first() {
        let mutex = queue(&[name("write", 1), name("write", 2), name("write", 3)]);
        assert_eq!(mutex.place(Recipe::Write), QueuePlace::new(3, None));
        assert_eq!(queue(&[]).place(Recipe::Write), QueuePlace::new(0, None));
        // Three permits, four taking a permit below us: one must leave.
        let sem = Recipe::Semaphore { permits: 3 };
        let sharing: Vec<String> = (1..=4).map(|i| name("sem3", i)).collect();
        assert_eq!(queue(&sharing).place(sem), QueuePlace::new(2, Some(3)));
        assert_eq!(queue(&sharing[..3]).place(sem), QueuePlace::new(1, Some(3)));
        assert_eq!(queue(&sharing[..1]).place(sem), QueuePlace::new(0, Some(1)));
        // A writer below: it must go, whatever the permits; it takes none.
        let with_writer = [name("write", 1), name("sem3", 2)];
        assert_eq!(queue(&with_writer).place(sem), QueuePlace::new(1, Some(1)));
    }

    #[test]
    fn a_place_is_reported_once_until_it_changes() {
        let mut q = queue(&[name("write", 1), name("write", 2)]);
        assert_eq!(
            q.report_place(Recipe::Write),
            Some(QueuePlace::new(2, None))
        );
        assert_eq!(q.report_place(Recipe::Write), None);
        q.drop_blocker(&name("write", 2), 1);
        assert_eq!(
            q.report_place(Recipe::Write),
            Some(QueuePlace::new(1, None))
        );
        q.clear();
        assert_eq!(q.reported, None);
    }

    #[test]
    fn a_gone_blocker_shrinks_the_cache_and_the_window() {
        let blockers = [name("write", 1), name("write", 2)];
        let mut q = queue(&blockers);
        q.watched
            .insert(blockers[1].clone(), Watch::Pending(RequestId(5)));
        assert!(q.blocks_with(&blockers[1]));
        assert!(q.take_watch_reply(&blockers[1], RequestId(5)));
        assert!(!q.take_watch_reply(&blockers[1], RequestId(4)));
        assert!(q.drop_blocker(&blockers[1], 1), "one blocker still cached");
        assert!(q.watched.is_empty());
        assert!(!q.blocks_with(&blockers[1]));
        assert_eq!(
            q.narrow_to(vec![blockers[0].clone()]),
            vec![blockers[0].clone()]
        );
        assert!(!q.drop_blocker(&blockers[0], 1), "nothing left to block us");
    }

    #[test]
    fn forget_drops_watches_and_the_listing_but_keeps_the_cache() {
        let blockers = [name("write", 1)];
        let mut q = queue(&blockers);
        q.watched.insert(blockers[0].clone(), Watch::Armed);
        let mut session = crate::ctx::tests::Session::default();
        let op = crate::proto::Op::GetChildren { path: "/l".into() };
        q.list.send(
            &mut session.cx(),
            crate::ids::LockId(1),
            crate::requests::Purpose::List,
            op,
        );
        q.forget();
        assert!(q.watched.is_empty());
        assert!(!q.list.is_pending());
        assert_eq!(q.lower.len(), 1);
        q.clear();
        assert!(q.lower.is_empty());
    }

    #[test]
    fn a_listing_is_sorted_into_ours_others_and_the_marker() {
        let mut session = crate::ctx::tests::Session::default();
        let ours = name("write", 3);
        let attempt = parse_participant(&ours).unwrap().attempt;
        let children = vec![
            name("write", 1),
            ours.clone(),
            SECTION_MARKER.to_owned(),
            DELAY_MARKER.to_owned(),
            "README".to_owned(),
        ];
        let listing = Queue::sort_listing(&mut session.cx(), children, attempt);
        assert_eq!(listing.mine, [(3, ours)]);
        assert_eq!(listing.others.len(), 1);
        assert!(listing.marker_seen);
        assert_eq!(
            session.stats.foreign_children, 1,
            "the markers are not foreign"
        );
    }

    #[test]
    fn only_lower_blockers_are_cached_and_a_downgrade_skips_its_own_write() {
        let parsed = |n: &String| (parse_participant(n).unwrap(), n.clone());
        let (w1, r2, w4) = (name("write", 1), name("read", 2), name("write", 4));
        let others = vec![parsed(&w1), parsed(&r2), parsed(&w4)];
        let mut q = Queue::new("/l".into());
        assert!(!q.set_lower(others.clone(), 3, Recipe::Read, &[]));
        assert_eq!(
            q.lower,
            [(-2, w1.clone())],
            "a read is blocked by lower writes only"
        );
        assert!(q.set_lower(others, 3, Recipe::Write, std::slice::from_ref(&w1)));
        assert_eq!(q.lower, [(-1, r2)]);
    }

    #[test]
    fn a_watch_reply_arms_it_and_a_gone_blocker_lists_again_or_decides() {
        let mut session = crate::ctx::tests::Session::default();
        let lock = crate::ids::LockId(1);
        let blockers = [name("write", 1), name("write", 2)];
        let mut q = queue(&blockers);
        q.dir = "/l".into();
        q.watch_window(&mut session.cx(), lock, vec![blockers[1].clone()]);
        let request = match session.out.pop_front() {
            Some(crate::output::Output::Request(r)) => {
                let path = format!("/l/{}", blockers[1]);
                assert_eq!(r.op, Op::GetData { path, watch: true });
                r.id
            }
            other => panic!("no watch: {other:?}"),
        };
        let ok = Ok(Reply::Data {
            data: Vec::new(),
            stat: Default::default(),
        });
        assert_eq!(
            q.on_peer_reply(RequestId(0), &blockers[1], ok.clone()),
            PeerOutcome::Done
        );
        assert_eq!(q.watched[&blockers[1]], Watch::Pending(request));
        assert_eq!(
            q.on_peer_reply(request, &blockers[1], ok),
            PeerOutcome::Done
        );
        assert_eq!(q.watched[&blockers[1]], Watch::Armed);
        session.out.clear();
        // One blocker left below: list again (once).
        assert!(!q.on_blocker_gone(&mut session.cx(), lock, &blockers[1], 1));
        assert!(q.list.is_pending());
        assert!(!q.on_blocker_gone(&mut session.cx(), lock, &blockers[1], 1));
        assert_eq!(session.out.len(), 1, "one listing");
        // None left: decide from the cache, no request.
        assert!(q.on_blocker_gone(&mut session.cx(), lock, &blockers[0], 1));
        assert_eq!(session.out.len(), 1);
    }
}
