//! What a simulated client runs: the bare core [`Session`] (the default), or
//! lock-client's user API over a [`Link`](lock_client::Link)
//! ([`SimConfig::user_api`](crate::SimConfig::user_api), see [`crate::sim::user_face`]).
//! The scheduler drives both alike: inputs in, drain, timers.

use crate::sim::user_face::{Drained, UserClient};
use crate::sim::user_queries::Ask;
use lock_core::{
    Input, LockId, LockSpec, LockState, MultiOp, Output, Session, Timestamp, UsageError,
};

// The bare core is the common case and stays inline; the user face is boxed.
#[allow(clippy::large_enum_variant)]
pub(crate) enum ClientCore {
    Session(Session),
    User(Box<UserClient>),
}

impl ClientCore {
    /// The bare core; the user face has none to lend.
    pub(crate) fn session(&self) -> &Session {
        match self {
            ClientCore::Session(core) => core,
            ClientCore::User(_) => {
                panic!("this client runs lock-client (SimConfig::user_api): its core is private")
            }
        }
    }

    pub(crate) fn handle_input(&mut self, input: Input, now: Timestamp) {
        match self {
            ClientCore::Session(core) => core.handle_input(input, now),
            ClientCore::User(user) => user.handle_input(input, now),
        }
    }

    pub(crate) fn handle_timeout(&mut self, now: Timestamp) {
        match self {
            ClientCore::Session(core) => core.handle_timeout(now),
            ClientCore::User(user) => user.handle_timeout(now),
        }
    }

    /// The next request or event (`check`: run the user face's own checks;
    /// `trace`: note the user's polls).
    pub(crate) fn poll_output(
        &mut self,
        now: Timestamp,
        check: bool,
        trace: bool,
    ) -> Option<Drained> {
        match self {
            ClientCore::Session(core) => loop {
                match core.poll_output()? {
                    Output::Request(request) => return Some(Drained::Request(request)),
                    Output::Event { lock, event } => return Some(Drained::Event { lock, event }),
                    Output::Progress { lock, progress } => {
                        return Some(Drained::Progress { lock, progress })
                    }
                    _ => {}
                }
            },
            ClientCore::User(user) => user.poll_output(now, check, trace),
        }
    }

    pub(crate) fn poll_timeout(&self) -> Option<Timestamp> {
        match self {
            ClientCore::Session(core) => core.poll_timeout(),
            ClientCore::User(user) => user.poll_timeout(),
        }
    }

    pub(crate) fn session_id(&self) -> Option<i64> {
        match self {
            ClientCore::Session(core) => core.session_id(),
            ClientCore::User(user) => user.session_id(),
        }
    }

    pub(crate) fn is_idle(&self) -> bool {
        match self {
            ClientCore::Session(core) => core.is_idle(),
            ClientCore::User(user) => user.is_idle(),
        }
    }

    /// Tasks the core tracks (the user face: acquisitions the user has a handle on).
    pub(crate) fn tracked(&self) -> usize {
        match self {
            ClientCore::Session(core) => core.tracked(),
            ClientCore::User(user) => user.tracked(),
        }
    }

    /// Requests awaiting replies (unknown on the user face: 0).
    pub(crate) fn in_flight(&self) -> usize {
        match self {
            ClientCore::Session(core) => core.in_flight(),
            ClientCore::User(_) => 0,
        }
    }

    pub(crate) fn state(&self, lock: LockId) -> Option<LockState> {
        match self {
            ClientCore::Session(core) => core.state(lock),
            ClientCore::User(user) => user.state(lock),
        }
    }

    pub(crate) fn acquire(&mut self, spec: LockSpec, now: Timestamp) -> Result<LockId, UsageError> {
        match self {
            ClientCore::Session(core) => core.acquire(spec, now),
            ClientCore::User(user) => user.acquire(spec, now),
        }
    }

    pub(crate) fn release(&mut self, lock: LockId, now: Timestamp) -> Result<(), UsageError> {
        match self {
            ClientCore::Session(core) => core.release(lock, now),
            ClientCore::User(user) => user.release(lock, now),
        }
    }

    pub(crate) fn cancel(&mut self, lock: LockId, now: Timestamp) -> Result<(), UsageError> {
        match self {
            ClientCore::Session(core) => core.cancel(lock, now),
            ClientCore::User(user) => user.cancel(lock, now),
        }
    }

    pub(crate) fn open_section(
        &mut self,
        lock: LockId,
        open: bool,
        now: Timestamp,
    ) -> Result<(), UsageError> {
        match self {
            ClientCore::Session(core) if open => core.open_section(lock, now),
            ClientCore::Session(core) => core.close_section(lock, now),
            ClientCore::User(user) => user.section(lock, open, now),
        }
    }

    pub(crate) fn fenced_write(
        &mut self,
        lock: LockId,
        ops: Vec<MultiOp>,
        now: Timestamp,
    ) -> Result<u64, UsageError> {
        match self {
            ClientCore::Session(core) => core.fenced_write(lock, ops, now),
            ClientCore::User(user) => user.fenced_write(lock, ops, now),
        }
    }

    /// Whether the calls a holder makes are reported by the face itself, when the
    /// user API hands them to the core ([`Drained::SectionCall`],
    /// [`Drained::FencedCall`]), rather than by the caller at once.
    pub(crate) fn reports_calls(&self) -> bool {
        matches!(self, ClientCore::User(_))
    }

    /// Starts a revocation, an inspection, a deadlock scan or an election observer.
    pub(crate) fn ask(&mut self, ask: Ask, now: Timestamp) -> Result<LockId, UsageError> {
        match (self, ask) {
            (ClientCore::Session(core), Ask::Revoke(path)) => core.revoke(&path, now),
            (ClientCore::Session(core), Ask::Inspect(path)) => core.inspect(&path, now),
            (ClientCore::Session(core), Ask::Deadlocks(root)) => core.deadlocks(&root, now),
            (ClientCore::Session(core), Ask::Observe(path)) => core.observe(&path, now),
            (ClientCore::User(user), ask) => user.query(ask, now),
        }
    }
}
