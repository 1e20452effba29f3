//! A driver for the core. A scenario made by [`H::served`] has a model server
//! answer (server.rs); the methods here answer one request by hand, for what no
//! honest server would say.
#![allow(dead_code)]

mod server;

use lock_core::*;
#[allow(unused_imports)] // each test file uses a part
pub use server::{delete_of, ops, Zk};
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
    pub czxid: i64,
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
            czxid: 100,
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

    /// Answers a Create request as the server would, with sequence `seq`.
    /// Returns the node's full path.
    pub fn answer_create(&mut self, seq: i32) -> String {
        let r = self.next_req();
        let Op::Create { path, mode, .. } = &r.op else {
            panic!("expected create, got {:?}", r.op)
        };
        assert_eq!(*mode, CreateMode::EphemeralSequential);
        let path = format!("{path}{seq:010}");
        self.czxid += 1;
        let stat = Stat {
            czxid: self.czxid,
            ephemeral_owner: SID,
            ..Stat::default()
        };
        self.reply(
            r.id,
            Ok(Reply::Created {
                path: path.clone(),
                stat: Some(stat),
            }),
        );
        path
    }

    /// Answers a GetChildren with these names.
    pub fn answer_list(&mut self, names: &[&str]) {
        let r = self.next_req();
        assert!(
            matches!(r.op, Op::GetChildren { .. }),
            "expected list, got {:?}",
            r.op
        );
        self.reply(
            r.id,
            Ok(Reply::Children(
                names.iter().map(|s| s.to_string()).collect(),
            )),
        );
    }

    /// Answers a GetData (on `expect_path`, with or without a watch) with a stat
    /// owned by `owner`.
    pub fn answer_data(&mut self, expect_path: &str, owner: i64) {
        self.answer_read(expect_path, owner, None);
    }

    /// Answers a GetData on `expect_path` that must leave a watch.
    pub fn answer_watch(&mut self, expect_path: &str, owner: i64) {
        self.answer_read(expect_path, owner, Some(true));
    }

    /// Answers a GetData on `expect_path` that must not leave a watch.
    pub fn answer_plain_read(&mut self, expect_path: &str, owner: i64) {
        self.answer_read(expect_path, owner, Some(false));
    }

    fn answer_read(&mut self, expect_path: &str, owner: i64, expect_watch: Option<bool>) {
        let r = self.next_req();
        match &r.op {
            Op::GetData { path, watch } => {
                assert_eq!(path, expect_path);
                if let Some(expected) = expect_watch {
                    assert_eq!(*watch, expected, "getData watch flag on {path}");
                }
            }
            other => panic!("expected getData on {expect_path}, got {other:?}"),
        }
        let stat = Stat {
            czxid: self.czxid,
            ephemeral_owner: owner,
            ..Stat::default()
        };
        self.reply(
            r.id,
            Ok(Reply::Data {
                data: Vec::new(),
                stat,
            }),
        );
    }

    pub fn answer_err(&mut self, e: ZkError) -> Request {
        let r = self.next_req();
        self.reply(r.id, Err(e));
        r
    }

    pub fn take_events(&mut self) -> Vec<LockEvent> {
        std::mem::take(&mut self.events)
            .into_iter()
            .map(|(_, e)| e)
            .collect()
    }

    /// Runs an uncontended write acquisition to Held; returns (id, node path).
    pub fn held(&mut self, path: &str, seq: i32) -> (LockId, String) {
        self.held_spec(LockSpec::write(path), seq)
    }

    /// Runs an uncontended write acquisition that watches its node to Held.
    pub fn held_watched(&mut self, path: &str, seq: i32) -> (LockId, String) {
        self.held_spec(LockSpec::write(path).watch_node(), seq)
    }

    /// Runs an uncontended acquisition of `spec` to Held (the `Acquired` event is
    /// checked and consumed); returns (id, node path). A spec that watches its node
    /// reads it (with a watch) after the create; a plain one sends nothing more.
    pub fn held_spec(&mut self, spec: LockSpec, seq: i32) -> (LockId, String) {
        let watches = spec.watches_node();
        let id = self.acquire(spec);
        let node = self.answer_create(seq);
        let name = node.rsplit('/').next().unwrap().to_owned();
        self.answer_list(&[&name]);
        if watches {
            self.answer_watch(&node, SID);
        }
        assert!(matches!(self.take_events()[..], [LockEvent::Acquired(_)]));
        assert!(
            self.no_requests(),
            "held with requests left: {:?}",
            self.reqs
        );
        (id, node)
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

/// Waits behind `peer(Write, 1, 1)` with our node at seq 2; returns (id, node, peer path).
pub fn waiting(h: &mut H, path: &str) -> (LockId, String, String) {
    let id = h.acquire(LockSpec::write(path));
    let node = h.answer_create(2);
    let p = peer(NodeKind::Write, 1, 1);
    h.answer_list(&[&p, &name_of(&node)]);
    // Our own node first (watched while we wait), then the predecessor.
    h.answer_watch(&node, SID);
    let ppath = format!("{path}/{p}");
    h.answer_watch(&ppath, 42);
    assert!(h.take_events().is_empty());
    (id, node, ppath)
}
