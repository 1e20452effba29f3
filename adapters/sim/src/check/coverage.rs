//! How much of the feature checks a run exercised ([`Coverage`]).

/// How much of the feature checks a run exercised (so that a passing run is known
/// not to be vacuous), from [`Sim::coverage`](crate::Sim::coverage). Several runs'
/// add up with `+=`:
///
/// ```
/// let mut total = zklock::sim::Coverage::default();
/// total += zklock::sim::Workload::sections().run(1).unwrap().coverage;
/// total += zklock::sim::Workload::sections().run(2).unwrap().coverage;
/// assert!(total.crash_flags_checked > 0);
/// ```
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

add_assign_fields!(Coverage: crash_flags_checked, crashes_reported, fenced_applied,
    fenced_outcomes_checked, fenced_not_held, revocations_requested, waiters_revoked,
    leases_expired, section_calls_interrupted);
