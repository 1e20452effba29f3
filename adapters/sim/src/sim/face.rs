//! What a simulated client runs: the bare core [`Session`] (the default), or
//! lock-client's user API over a [`Link`](lock_client::Link)
//! ([`SimConfig::user_api`](crate::SimConfig::user_api), see [`crate::sim::user_face`]).
//! The scheduler drives both alike: inputs in, drain, timers.

use crate::sim::user_face::Drained;
use crate::sim::user_queries::Ask;
use lock_core::{
    Input, LockId, LockSpec, LockState, MultiOp, Output, Session, Timestamp, UsageError,
};

/// A simulated client's core, as the scheduler drives it: [`Session`]'s calls, which
/// the user face implements through lock-client.
pub(crate) trait ClientCore {
    fn handle_input(&mut self, input: Input, now: Timestamp);
    fn handle_timeout(&mut self, now: Timestamp);
    /// The next request or event (`check`: run the user face's own checks;
    /// `trace`: note the user's polls).
    fn poll_output(&mut self, now: Timestamp, check: bool, trace: bool) -> Option<Drained>;
    fn poll_timeout(&self) -> Option<Timestamp>;
    fn session_id(&self) -> Option<i64>;
    fn is_idle(&self) -> bool;
    /// Tasks the core tracks (the user face: acquisitions the user has a handle on).
    fn tracked(&self) -> usize;
    /// Requests awaiting replies (unknown on the user face: 0).
    fn in_flight(&self) -> usize {
        0
    }
    fn state(&self, lock: LockId) -> Option<LockState>;
    fn acquire(&mut self, spec: LockSpec, now: Timestamp) -> Result<LockId, UsageError>;
    fn release(&mut self, lock: LockId, now: Timestamp) -> Result<(), UsageError>;
    fn cancel(&mut self, lock: LockId, now: Timestamp) -> Result<(), UsageError>;
    /// `open_section` (`open`) or `close_section`.
    fn section(&mut self, lock: LockId, open: bool, now: Timestamp) -> Result<(), UsageError>;
    fn fenced_write(
        &mut self,
        lock: LockId,
        ops: Vec<MultiOp>,
        now: Timestamp,
    ) -> Result<u64, UsageError>;
    /// Starts a revocation, an inspection, a deadlock scan or an election observer.
    fn ask(&mut self, ask: Ask, now: Timestamp) -> Result<LockId, UsageError>;
    /// Whether the calls a holder makes are reported by the face itself, when the
    /// user API hands them to the core ([`Drained::SectionCall`],
    /// [`Drained::FencedCall`]), rather than by the caller at once.
    fn reports_calls(&self) -> bool {
        false
    }
    /// The bare core; the user face has none to lend.
    fn session(&self) -> &Session {
        panic!("this client runs lock-client (SimConfig::user_api): its core is private")
    }
}

impl ClientCore for Session {
    fn handle_input(&mut self, input: Input, now: Timestamp) {
        Session::handle_input(self, input, now);
    }

    fn handle_timeout(&mut self, now: Timestamp) {
        Session::handle_timeout(self, now);
    }

    fn poll_output(&mut self, _: Timestamp, _: bool, _: bool) -> Option<Drained> {
        loop {
            match Session::poll_output(self)? {
                Output::Request(request) => return Some(Drained::Request(request)),
                Output::Event { lock, event } => return Some(Drained::Event { lock, event }),
                Output::Progress { lock, progress } => {
                    return Some(Drained::Progress { lock, progress })
                }
                _ => {}
            }
        }
    }

    fn poll_timeout(&self) -> Option<Timestamp> {
        Session::poll_timeout(self)
    }

    fn session_id(&self) -> Option<i64> {
        Session::session_id(self)
    }

    fn is_idle(&self) -> bool {
        Session::is_idle(self)
    }

    fn tracked(&self) -> usize {
        Session::tracked(self)
    }

    fn in_flight(&self) -> usize {
        Session::in_flight(self)
    }

    fn state(&self, lock: LockId) -> Option<LockState> {
        Session::state(self, lock)
    }

    fn acquire(&mut self, spec: LockSpec, now: Timestamp) -> Result<LockId, UsageError> {
        Session::acquire(self, spec, now)
    }

    fn release(&mut self, lock: LockId, now: Timestamp) -> Result<(), UsageError> {
        Session::release(self, lock, now)
    }

    fn cancel(&mut self, lock: LockId, now: Timestamp) -> Result<(), UsageError> {
        Session::cancel(self, lock, now)
    }

    fn section(&mut self, lock: LockId, open: bool, now: Timestamp) -> Result<(), UsageError> {
        if open {
            self.open_section(lock, now)
        } else {
            self.close_section(lock, now)
        }
    }

    fn fenced_write(
        &mut self,
        lock: LockId,
        ops: Vec<MultiOp>,
        now: Timestamp,
    ) -> Result<u64, UsageError> {
        Session::fenced_write(self, lock, ops, now)
    }

    fn ask(&mut self, ask: Ask, now: Timestamp) -> Result<LockId, UsageError> {
        match ask {
            Ask::Revoke(path) => self.revoke(&path, now),
            Ask::Inspect(path) => self.inspect(&path, now),
            Ask::Deadlocks(root) => self.deadlocks(&root, now),
            Ask::Observe(path) => self.observe(&path, now),
        }
    }

    fn session(&self) -> &Session {
        self
    }
}
