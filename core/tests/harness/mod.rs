//! A driver for the core. A scenario made by [`H::served`] has a model server
//! answer (server.rs); the methods here answer one request by hand, for what no
//! honest server would say.
#![allow(dead_code)]

mod server;

use lock_core::*;
#[allow(unused_imports)] // each test file uses a part
pub use server::{delete_of, multi_delete_of, ops, read_of, Zk};
use std::collections::VecDeque;
use std::time::Duration;

pub const SID: i64 = 0x1001;

pub struct H {
    pub s: Session,
    pub now: Timestamp,
    pub reqs: VecDeque<Request>,
    pub events: Vec<(LockId, LockEvent)>,
    /// Diagnostics ([`Output::Progress`]), in order.
    pub progress: Vec<(LockId, Progress)>,
    /// Our session's id.
    pub sid: i64,
    /// The model server of a served scenario.
    pub zk: Option<Zk>,
}

impl H {
    /// A session connected as `SID`, 10 s session timeout.
    pub fn new() -> H {
        let mut h = H::unconnected();
        h.session(SessionEvent::Connected { session_id: SID });
        h
    }

    pub fn unconnected() -> H {
        H {
            s: Session::new(Config::new(Duration::from_secs(10), 1)),
            now: Timestamp::ZERO,
            reqs: VecDeque::new(),
            events: Vec::new(),
            progress: Vec::new(),
            sid: SID,
            zk: None,
        }
    }

    pub fn drain(&mut self) {
        while let Some(out) = self.s.poll_output() {
            match out {
                Output::Request(r) => self.reqs.push_back(r),
                Output::Event { lock, event } => self.events.push((lock, event)),
                Output::Progress { lock, progress } => self.progress.push((lock, progress)),
                _ => unreachable!(),
            }
        }
    }

    pub fn acquire(&mut self, spec: LockSpec) -> LockId {
        let id = self.s.acquire(spec, self.now).unwrap();
        self.drain();
        id
    }

    /// Calls the session (`f` gets it and the time), which must accept the call,
    /// and collects what it sends.
    #[track_caller]
    pub fn run<T, E: std::fmt::Debug>(
        &mut self,
        f: impl FnOnce(&mut Session, Timestamp) -> Result<T, E>,
    ) -> T {
        let accepted = f(&mut self.s, self.now).unwrap();
        self.drain();
        accepted
    }

    pub fn session(&mut self, e: SessionEvent) {
        self.s.handle_input(Input::Session(e), self.now);
        self.drain();
    }

    pub fn advance(&mut self, d: Duration) {
        self.now = self.now + d;
        if let Some(t) = self.s.poll_timeout() {
            if t <= self.now {
                self.s.handle_timeout(self.now);
            }
        }
        self.drain();
    }

    pub fn next_req(&mut self) -> Request {
        self.reqs.pop_front().expect("expected a request")
    }

    /// The next request, which must be a create: its path and data.
    #[track_caller]
    pub fn next_create(&mut self) -> (String, Vec<u8>) {
        match self.next_req().op {
            Op::Create { path, data, .. } => (path, data),
            other => panic!("expected a create, got {other:?}"),
        }
    }

    pub fn no_requests(&self) -> bool {
        self.reqs.is_empty()
    }

    pub fn reply(&mut self, id: RequestId, result: Result<Reply, ZkError>) {
        self.s.handle_input(
            Input::Reply {
                request: id,
                result,
            },
            self.now,
        );
        self.drain();
    }

    pub fn watch(&mut self, path: &str, kind: WatchKind) {
        self.s.handle_input(
            Input::Watch {
                path: path.to_owned(),
                kind,
            },
            self.now,
        );
        self.drain();
    }

    pub fn answer_err(&mut self, e: ZkError) -> Request {
        let r = self.next_req();
        self.reply(r.id, Err(e));
        r
    }

    /// Checks that the events since the last look are `expected`, and consumes them.
    #[track_caller]
    pub fn expect_events<const N: usize>(&mut self, expected: [LockEvent; N]) {
        assert_eq!(self.take_events(), expected);
    }

    /// Checks that the one event since the last look is `Acquired`; returns its grant.
    #[track_caller]
    pub fn acquired(&mut self) -> Grant {
        match &self.take_events()[..] {
            [LockEvent::Acquired(grant)] => grant.clone(),
            other => panic!("expected Acquired, got {other:?}"),
        }
    }

    /// Checks that the lock was just suspended and is lost exactly `after` from
    /// now (not a millisecond earlier).
    #[track_caller]
    pub fn lost_exactly_after(&mut self, after: Duration) {
        self.expect_events([LockEvent::Suspended]);
        self.advance(after - Duration::from_millis(1));
        assert!(self.take_events().is_empty(), "lost before {after:?}");
        self.advance(Duration::from_millis(1));
        self.expect_events([LockEvent::Lost(LostReason::SuspendedTooLong)]);
    }

    pub fn take_events(&mut self) -> Vec<LockEvent> {
        std::mem::take(&mut self.events)
            .into_iter()
            .map(|(_, e)| e)
            .collect()
    }
}

pub fn name_of(path: &str) -> String {
    path.rsplit('/').next().unwrap().to_owned()
}

/// A participant name of another client.
pub fn peer(kind: NodeKind, n: u128, seq: i32) -> String {
    format!(
        "{}{}",
        names::node_prefix(NameScheme::Native, AttemptId(n), kind),
        names::format_sequence(seq)
    )
}
