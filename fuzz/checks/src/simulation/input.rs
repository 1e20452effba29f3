//! The `simulation` target's input: a case (the seed, the clients, chaos, the
//! reaper) and its steps, decoded from the fuzzer's bytes by `arbitrary`.

use arbitrary::Arbitrary;
/// One fuzz case.
#[derive(Arbitrary, Debug, Clone)]
pub struct SimCase {
    /// The simulation's seed (latencies, seeded faults, attempt ids).
    pub seed: u64,
    /// The clients (1 to 4 are used).
    pub clients: Vec<ClientPick>,
    /// Random faults on top of the explicit ones: mean interval in ms.
    pub chaos_ms: Option<u16>,
    /// Whether the container reaper runs on its own.
    pub reaper: bool,
    /// The schedule.
    pub steps: Vec<SimStep>,
}

/// One client.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub struct ClientPick {
    /// The blocking crate's profile (new session silently after expiry, watches
    /// lost on reconnect) instead of the async one's.
    pub loses_watches: bool,
    /// Session timeout, 1 to 8 s.
    pub timeout_s: u8,
    /// Suspension grace in ms, if not the session timeout.
    pub grace_ms: Option<u16>,
}

/// One step of the schedule. Bytes run out as zeros: the first variant (`Run`).
#[derive(Arbitrary, Debug, Clone)]
pub enum SimStep {
    /// Virtual time passes (ms).
    Run(u16),
    /// Run until the network is quiet (under chaos: half a second).
    Settle,
    /// A user acquires.
    Acquire {
        /// Which client.
        client: u8,
        /// Which directory.
        dir: u8,
        /// The recipe.
        recipe: SimRecipe,
        /// Naming scheme.
        scheme: u8,
        /// Deadline from now (ms).
        deadline_ms: Option<u16>,
        /// `try_only`.
        try_only: bool,
        /// `revocable`.
        revocable: bool,
        /// `detect_crashes` (exclusive recipes only).
        detect_crashes: bool,
        /// `max_hold` (ms).
        max_hold_ms: Option<u16>,
    },
    /// A user releases one of its acquisitions.
    Release(u8),
    /// A user cancels one of its acquisitions (or observers, revocations).
    Cancel(u8),
    /// A user follows an election.
    Observe {
        /// Which client.
        client: u8,
        /// Which directory.
        dir: u8,
    },
    /// A user asks holders (of a directory, or one node) to let go.
    Revoke {
        /// Which client.
        client: u8,
        /// Which directory, or a node in it.
        dir: u8,
        /// Target one participant node instead of the directory.
        node: Option<u8>,
    },
    /// A holder opens a critical section.
    OpenSection(u8),
    /// A holder closes its critical section.
    CloseSection(u8),
    /// A holder writes under `/data`, fenced by its lock.
    FencedWrite {
        /// Which acquisition.
        lock: u8,
        /// Which data node.
        node: u8,
    },
    /// A connection reset.
    Disconnect {
        /// Which client.
        client: u8,
        /// What happened to requests in flight.
        in_flight: InFlightPick,
    },
    /// A partition of `frac`/64 of the session timeout (longer than it expires the
    /// session).
    Partition {
        /// Which client.
        client: u8,
        /// Length in 64ths of the session timeout.
        frac: u8,
    },
    /// A partition ends.
    Heal(u8),
    /// The next reconnect waits (ms).
    DelayReconnect {
        /// Which client.
        client: u8,
        /// How long.
        ms: u16,
    },
    /// The server expires a session.
    Expire(u8),
    /// Notifications in flight to a client are lost (by resetting its connection).
    LoseNotifications(u8),
    /// An administrator deletes a participant node.
    AdminDelete(u8),
    /// An administrator writes a revocation marker into a participant node.
    AdminRevoke(u8),
    /// An administrator creates a non-participant child (or a stale crash marker).
    AdminForeign {
        /// Which directory.
        dir: u8,
        /// Which name.
        name: u8,
    },
    /// An administrator creates an empty directory whose counter is near the wrap
    /// (or the 10/11-character boundary).
    NearWrap {
        /// Which directory.
        dir: u8,
        /// Where exactly.
        at: u8,
    },
    /// The container reaper runs now.
    Reap,
    /// A client closes for good.
    Close(u8),
}

/// A recipe.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum SimRecipe {
    /// Exclusive.
    Write,
    /// Shared.
    Read,
    /// Semaphore of `1 + n % 3`.
    Semaphore(u8),
    /// Leader.
    Leader,
}

/// Requests in flight at a reset.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum InFlightPick {
    /// All applied.
    Applied,
    /// None applied.
    Lost,
    /// The first n.
    First(u8),
    /// Seeded.
    Seeded,
}
