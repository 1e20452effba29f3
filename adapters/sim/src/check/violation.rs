//! What a failed check reports: which property ([`ViolationKind`]), where and when
//! ([`Violation`]).

use lock_core::Timestamp;

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
    /// In a liveness run ([`Workload::liveness`](crate::Workload::liveness)),
    /// where nothing fails and every message arrives well within the contact
    /// rules' margins: a holder told `Suspended` or `Lost`, or a waiter that
    /// failed for want of contact.
    FalseAlarm,
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
