//! The acquisitions' side of the shared state: one slot per task the core runs
//! for a handle (its events, status, section calls and fenced writes), and the
//! reentrant mutexes' counted holds.

use super::wakeups::register;
use crate::error::Error;
use crate::section_calls::SectionCalls;
use crate::shared::WriteResult;
use crate::status::LockStatus;
use lock_core::{Grant, LockEvent, LockId, Progress};
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::task::Waker;

/// One more hold on a reentrant mutex held by the same owner on this session.
pub(crate) struct Holds {
    pub(crate) owner: String,
    pub(crate) path: String,
    pub(crate) grant: Grant,
    /// Guards alive on it; the node is released when the last one goes.
    pub(crate) count: usize,
}

/// What one acquisition, observer or revocation has for its handle.
pub(crate) struct Slot {
    /// Events for the handle, in order (answers to section calls and fenced
    /// writes go to the fields below instead).
    pub(crate) events: VecDeque<LockEvent>,
    /// Meaningful once `acquired`.
    pub(crate) status: LockStatus,
    pub(crate) acquired: bool,
    pub(crate) revocation_requested: bool,
    /// The terminal event was dispatched.
    pub(crate) ended: bool,
    /// The handle is gone: the slot goes with the terminal event.
    dropped: bool,
    /// The handle's section calls and their answers.
    pub(crate) section: SectionCalls,
    /// Fenced writes in flight, by the core's write id (`Some` once answered).
    pub(crate) writes: FencedWrites,
    /// The election whose stream also gets this slot's events.
    election: Option<u64>,
    /// The acquisition's tracing span, unless disabled (no subscriber wants
    /// it, or another task): boxed, as most slots have none and a `Span` is 40
    /// bytes.
    pub(crate) span: Option<Box<tracing::Span>>,
    /// The acquisition's metrics (`None` for other tasks).
    pub(crate) metrics: Option<crate::metrics::AcquisitionMetrics>,
    /// The core's last `Progress::Queued`, while it waits. Boxed, and dropped at
    /// the grant: a `Queued` is 56 bytes and only a waiting acquisition has one.
    pub(crate) queued: Option<Box<crate::status::Queued>>,
    wakers: Vec<Waker>,
}

impl Slot {
    fn new(election: Option<u64>) -> Slot {
        Slot {
            events: VecDeque::new(),
            status: LockStatus::Held,
            acquired: false,
            revocation_requested: false,
            ended: false,
            dropped: false,
            section: SectionCalls::default(),
            writes: FencedWrites::default(),
            election,
            span: None,
            metrics: None,
            queued: None,
            wakers: Vec::new(),
        }
    }

    pub(crate) fn register(&mut self, waker: &Waker) {
        register(&mut self.wakers, waker);
    }

    /// Traces and counts `event` (a disabled span still parents it, to none).
    fn observe(&mut self, event: &LockEvent) {
        crate::trace::event(
            self.span.as_deref().unwrap_or(&tracing::Span::none()),
            event,
        );
        if let Some(metrics) = &mut self.metrics {
            metrics.on_event(event);
        }
    }

    /// Answers the handle's own calls (section calls, fenced writes): `None`
    /// when `event` was such an answer, else the event.
    fn answer(&mut self, event: LockEvent) -> Option<LockEvent> {
        match event {
            LockEvent::FencedWrite { write, result } => {
                if let Some(answer) = self.writes.get_mut(&write) {
                    *answer = Some(result);
                }
            }
            LockEvent::SectionOpened | LockEvent::SectionClosed => self.section.answer(Ok(())),
            LockEvent::SectionFailed(e) => self.section.answer(Err(Error::Zk(e))),
            event => return Some(event),
        }
        None
    }

    /// What `event` makes of the status the handles read; a terminal event
    /// ends the slot, and with it a section call still waiting (a call survives
    /// a suspension: the core sends it again once the node is verified).
    fn apply(&mut self, event: &LockEvent) {
        match event {
            LockEvent::Acquired(_) => {
                self.status = LockStatus::Held;
                self.acquired = true;
                // Read only while waiting: a holder keeps no queue place (nor
                // its copy of the node's path).
                self.queued = None;
            }
            LockEvent::Resumed => self.status = LockStatus::Held,
            LockEvent::Suspended => self.status = LockStatus::Suspended,
            LockEvent::Lost(reason) => self.status = LockStatus::Lost(reason.clone()),
            LockEvent::Released => self.status = LockStatus::Released,
            LockEvent::RevocationRequested => self.revocation_requested = true,
            _ => {}
        }
        if event.is_terminal() {
            self.ended = true;
            self.section.answer(Err(match event {
                LockEvent::Lost(reason) => Error::Lost(reason.clone()),
                _ => Error::Closed,
            }));
        }
    }
}

/// A slot's fenced writes in flight, by the core's write id (`Some` once
/// answered): made at the first write, as few holders write fenced and an
/// empty `HashMap` is 48 bytes inline in every slot.
// Boxed on purpose: the point is the 8 bytes inline, not the map's buffer.
#[allow(clippy::box_collection)]
#[derive(Default)]
pub(crate) struct FencedWrites(Option<Box<HashMap<u64, Option<WriteResult>>>>);

impl FencedWrites {
    pub(crate) fn insert(&mut self, write: u64, answer: Option<WriteResult>) {
        self.0
            .get_or_insert_with(Box::default)
            .insert(write, answer);
    }

    pub(crate) fn get(&self, write: &u64) -> Option<&Option<WriteResult>> {
        self.0.as_ref()?.get(write)
    }

    pub(crate) fn get_mut(&mut self, write: &u64) -> Option<&mut Option<WriteResult>> {
        self.0.as_mut()?.get_mut(write)
    }

    /// Removes `write`'s entry (and the map once empty).
    pub(crate) fn remove(&mut self, write: &u64) -> Option<Option<WriteResult>> {
        let map = self.0.as_mut()?;
        let removed = map.remove(write);
        if map.is_empty() {
            self.0 = None;
        }
        removed
    }
}

/// Every slot, and the reentrant mutexes' holds.
#[derive(Default)]
pub(crate) struct Locks {
    /// Boxed: one per held or waiting lock, in a table with room to spare.
    slots: HashMap<LockId, Box<Slot>>,
    /// Reentrant mutexes held, by acquisition: who holds, and how many guards.
    pub(crate) holds: HashMap<LockId, Holds>,
    /// Reentrant mutexes not granted yet: (owner, path), for `holds` at the grant.
    pub(crate) reentrant: HashMap<LockId, (String, String)>,
    /// The opt-in depth of the metrics' `prefix` label.
    pub(crate) metrics_prefix: Option<usize>,
    /// The acquisitions with metrics, by the hash of the node each waits behind:
    /// a deletion reaches those, not every slot (a held lock's own watch fires
    /// at its release, which would otherwise walk every slot of the session).
    /// A set of pairs, not a map of lists: no allocation of its own per waiter.
    behind: BTreeSet<(u64, LockId)>,
}

impl Locks {
    // Getters.

    pub(crate) fn slot(&self, id: LockId) -> Option<&Slot> {
        self.slots.get(&id).map(|slot| &**slot)
    }

    pub(crate) fn slot_mut(&mut self, id: LockId) -> Option<&mut Slot> {
        self.slots.get_mut(&id).map(|slot| &mut **slot)
    }

    /// Whether no slot is left (every handle gone and every task ended).
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    // Mutators.

    /// A slot for a task the core just started.
    pub(crate) fn add(&mut self, id: LockId, election: Option<u64>) -> &mut Slot {
        self.slots.insert(id, Box::new(Slot::new(election)));
        self.slot_mut(id).expect("just added")
    }

    /// Acquisition `id` is `owner`'s reentrant mutex at `path`: its grant
    /// becomes a counted hold at once.
    pub(crate) fn expect_reentrant(&mut self, id: LockId, owner: String, path: String) {
        self.reentrant.insert(id, (owner, path));
    }

    /// The handle of `id` is gone: forget its slot now if it has ended, else when
    /// its terminal event comes.
    pub(crate) fn drop_slot(&mut self, id: LockId) {
        if let Some(slot) = self.slots.get_mut(&id) {
            if slot.ended {
                self.remove(id);
            } else {
                slot.dropped = true;
            }
        }
    }

    // Inputs.

    /// An event of acquisition `lock` for its handle; its waiters go to
    /// `to_wake`, and the election the slot belongs to gets the event back.
    #[must_use = "a term's events go to its election"]
    pub(crate) fn handle_event(
        &mut self,
        lock: LockId,
        event: LockEvent,
        to_wake: &mut Vec<Waker>,
    ) -> Option<(u64, LockEvent)> {
        let slot = self.slots.get_mut(&lock)?;
        slot.observe(&event);
        // Taken, not appended: a held lock's slot keeps no room for wakers.
        to_wake.extend(std::mem::take(&mut slot.wakers));
        let event = slot.answer(event)?;
        if let Some((owner, path)) = self.reentrant.get(&lock) {
            if let LockEvent::Acquired(grant) = &event {
                // Held for its owner from now on: a re-entry counts on it even
                // before the first guard is handed out.
                let (owner, path, grant) = (owner.clone(), path.clone(), grant.clone());
                let held = Holds {
                    owner,
                    path,
                    grant,
                    count: 0,
                };
                self.holds.insert(lock, held);
            }
            if matches!(event, LockEvent::Acquired(_)) || event.is_terminal() {
                self.reentrant.remove(&lock);
            }
        }
        slot.apply(&event);
        let forward = slot.election.map(|election| (election, event.clone()));
        if !slot.dropped {
            slot.events.push_back(event);
        } else if slot.ended {
            self.remove(lock);
        }
        forward
    }

    fn remove(&mut self, id: LockId) {
        if let Some(slot) = self.slots.remove(&id) {
            let behind = slot.metrics.as_ref().map_or(0, |m| m.behind());
            self.behind.remove(&(behind, id));
        }
    }

    /// Where acquisition `lock` stands while it waits; `queued` makes of it the
    /// place the handles read (from `Queued` or a lock-delay), which wakes them.
    pub(crate) fn handle_progress(
        &mut self,
        lock: LockId,
        progress: Progress,
        queued: impl FnOnce(Progress) -> Option<crate::status::Queued>,
        to_wake: &mut Vec<Waker>,
    ) {
        let Some(slot) = self.slots.get_mut(&lock) else {
            return;
        };
        crate::trace::progress(
            slot.span.as_deref().unwrap_or(&tracing::Span::none()),
            &progress,
        );
        let mut moved = None;
        if let Some(metrics) = &mut slot.metrics {
            let before = metrics.behind();
            metrics.on_progress(&progress);
            moved = (metrics.behind() != before).then(|| (before, metrics.behind()));
        }
        if let Some(queued) = queued(progress) {
            slot.queued = Some(Box::new(queued));
            to_wake.extend(std::mem::take(&mut slot.wakers));
        }
        if let Some((before, now)) = moved {
            self.behind.remove(&(before, lock));
            self.behind.insert((now, lock));
        }
    }

    /// The binding reported that the watched node at `path` was deleted: for
    /// the handoff metric of the acquisitions waiting behind it.
    pub(crate) fn handle_node_deleted(&mut self, path: &str) {
        let hash = crate::metrics::path_hash(path);
        for (_, id) in self
            .behind
            .range((hash, LockId(0))..=(hash, LockId(u64::MAX)))
        {
            if let Some(metrics) = self.slots.get_mut(id).and_then(|s| s.metrics.as_mut()) {
                metrics.on_node_deleted(path);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared::wakeups::tests::counter;
    use lock_core::{FailReason, LostReason};

    fn grant() -> Grant {
        Grant {
            path: "/l/n-0000000001".into(),
            token: lock_core::FencingToken(1),
            sequence: 1,
            session_id: 1,
            previous_holder_crashed: false,
        }
    }

    #[test]
    fn an_event_wakes_the_slot_and_queues_for_its_handle_but_an_answer_does_not() {
        let (_, waker) = counter();
        let mut locks = Locks::default();
        let slot = locks.add(LockId(1), None);
        slot.register(&waker);
        let call = slot.section.call();
        slot.writes.insert(9, None);
        let mut to_wake = Vec::new();
        let _ = locks.handle_event(LockId(1), LockEvent::SectionOpened, &mut to_wake);
        let result = Ok(vec![]);
        let write = LockEvent::FencedWrite { write: 9, result };
        let _ = locks.handle_event(LockId(1), write, &mut to_wake);
        let forward = locks.handle_event(LockId(1), LockEvent::Acquired(grant()), &mut to_wake);
        assert!(forward.is_none(), "no election");
        assert_eq!(to_wake.len(), 1);
        let slot = locks.slot(LockId(1)).expect("slot");
        assert!(slot.acquired && slot.status == LockStatus::Held);
        assert_eq!(slot.events.len(), 1, "only the grant");
        assert!(matches!(slot.section.answer_to(call), Some(Ok(()))));
        assert!(matches!(slot.writes.get(&9), Some(Some(Ok(_)))));
    }

    #[test]
    fn a_dropped_slot_goes_with_its_terminal_event_and_a_term_reaches_its_election() {
        let mut locks = Locks::default();
        locks.add(LockId(1), Some(4));
        locks.drop_slot(LockId(1));
        assert!(!locks.is_empty(), "kept until the terminal event");
        let lost = LockEvent::Lost(LostReason::Closed);
        let forward = locks.handle_event(LockId(1), lost.clone(), &mut Vec::new());
        assert_eq!(forward, Some((4, lost)));
        assert!(locks.is_empty());
        locks.add(LockId(2), None);
        let failed = LockEvent::Failed(FailReason::Closed);
        let _ = locks.handle_event(LockId(2), failed, &mut Vec::new());
        locks.drop_slot(LockId(2));
        assert!(locks.is_empty(), "an ended slot goes with its handle");
    }

    #[test]
    fn the_handoff_index_follows_each_wait_and_empties_with_the_slots() {
        let mut locks = Locks::default();
        let spec = lock_core::LockSpec::exclusive("/l");
        for id in 1..=3 {
            locks.add(LockId(id), None).metrics =
                Some(crate::metrics::AcquisitionMetrics::start(&spec, None));
        }
        let behind = |node: &str| Progress::QueuedBehind { node: node.into() };
        let hash = crate::metrics::path_hash;
        locks.handle_progress(LockId(1), behind("/l/n-1"), |_| None, &mut Vec::new());
        locks.handle_progress(LockId(2), behind("/l/n-1"), |_| None, &mut Vec::new());
        locks.handle_progress(LockId(2), behind("/l/n-2"), |_| None, &mut Vec::new());
        let waits: Vec<_> = locks.behind.iter().copied().collect();
        let mut expected = vec![(hash("/l/n-1"), LockId(1)), (hash("/l/n-2"), LockId(2))];
        expected.sort();
        assert_eq!(waits, expected, "2 moved on, 3 waits behind nothing");
        for id in 1..=3 {
            let _ = locks.handle_event(
                LockId(id),
                LockEvent::Failed(FailReason::Closed),
                &mut Vec::new(),
            );
            locks.drop_slot(LockId(id));
        }
        assert!(locks.behind.is_empty(), "forgotten with their slots");
    }
}
