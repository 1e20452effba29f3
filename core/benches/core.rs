//! CPU cost of the core: `cargo bench -p lock-core --bench core`.
//!
//! * `listing_1000_children`: handling the listing of a contended directory of
//!   1,000 participants (parse, classify, sort, pick the watch).
//! * `handoff`: a waiter's predecessor is deleted; the core grants from its cache.
//! * `uncontended_cycle`: acquire, create/list/own-data replies, release, delete reply.
//! * `cycle_beside_held/N`: the same cycle on a session that holds N other locks
//!   (N = 1,000, 10,000, 100,000), each past a sync interval (so watching its
//!   node), with 1 ms passing per cycle and the session's `sync`s answered: what
//!   one more lock costs a busy session. It stays flat in N unless something
//!   walks every lock per operation.

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion};
use lock_core::*;
use std::collections::HashMap;
use std::hint::black_box;
use std::time::Duration;

const SID: i64 = 7;

/// A session with an honest, prompt server played by hand (a model server
/// would be timed with it): one participant per node name, no watch fires.
struct Served {
    s: Session,
    now: Timestamp,
    /// The nodes under each directory, by name.
    children: HashMap<String, Vec<String>>,
    zxid: i64,
    acquired: usize,
}

impl Served {
    fn new(config: Config) -> Served {
        let mut s = Session::new(config);
        s.handle_input(
            Input::Session(SessionEvent::Connected { session_id: SID }),
            Timestamp::ZERO,
        );
        Served {
            s,
            now: Timestamp::ZERO,
            children: HashMap::new(),
            zxid: 0,
            acquired: 0,
        }
    }

    /// The session's requests since the last call.
    fn drain(&mut self) -> Vec<Request> {
        let mut reqs = Vec::new();
        while let Some(o) = self.s.poll_output() {
            match o {
                Output::Request(r) => reqs.push(r),
                Output::Event {
                    event: LockEvent::Acquired(_),
                    ..
                } => self.acquired += 1,
                _ => {}
            }
        }
        reqs
    }

    /// The server's answer to `op`.
    fn apply(&mut self, op: &Op) -> Result<Reply, ZkError> {
        let stat = |zxid| Stat {
            czxid: zxid,
            ephemeral_owner: SID,
            ..Stat::default()
        };
        Ok(match op {
            Op::Create { path, .. } => {
                self.zxid += 1;
                let path = format!("{path}{:010}", self.zxid);
                let (dir, name) = path.rsplit_once('/').unwrap();
                let names = self.children.entry(dir.to_owned()).or_default();
                names.push(name.to_owned());
                Reply::Created {
                    path,
                    stat: Some(stat(self.zxid)),
                }
            }
            Op::GetChildren { path } => Reply::Children(self.children[path].clone()),
            Op::GetData { .. } => Reply::Data {
                data: vec![],
                stat: stat(1),
            },
            Op::Delete { path, .. } => {
                let (dir, name) = path.rsplit_once('/').unwrap();
                let names = self.children.get_mut(dir).ok_or(ZkError::NoNode)?;
                names.retain(|n| n != name);
                Reply::Deleted
            }
            Op::Sync { .. } => Reply::Synced,
            Op::RemoveWatch { .. } => Reply::WatchRemoved,
            other => unimplemented!("{other:?}"),
        })
    }

    /// Answers `r`.
    fn answer(&mut self, r: Request) {
        let result = self.apply(&r.op);
        let reply = Input::Reply {
            request: r.id,
            result,
        };
        self.s.handle_input(reply, self.now);
    }

    /// Answers every request, and those the answers lead to.
    fn serve(&mut self) {
        loop {
            let reqs = self.drain();
            if reqs.is_empty() {
                return;
            }
            reqs.into_iter().for_each(|r| self.answer(r));
        }
    }

    /// `d` passes: the timers due fire, and their requests are answered.
    fn advance(&mut self, d: Duration) {
        self.now = self.now + d;
        if self.s.poll_timeout().is_some_and(|t| t <= self.now) {
            self.s.handle_timeout(self.now);
        }
        self.serve();
    }

    /// `spec` acquired (served to its grant).
    fn acquire(&mut self, spec: LockSpec) -> LockId {
        let before = self.acquired;
        let id = self.s.acquire(spec, self.now).unwrap();
        self.serve();
        assert_eq!(self.acquired, before + 1, "granted");
        id
    }

    /// One lock acquired and released, with `step` passing after.
    fn cycle(&mut self, step: Duration) {
        let id = self.acquire(LockSpec::write("/bench/lock"));
        self.s.release(id, self.now).unwrap();
        self.serve();
        self.advance(step);
    }
}

fn peer(n: u128, seq: i32) -> String {
    format!(
        "{}{}",
        names::node_prefix(NameScheme::Native, AttemptId(n), NodeKind::Write),
        names::format_sequence(seq)
    )
}

/// A served session whose write acquisition of `/bench/lock` has its create
/// answered, behind `peers`; returns it and its listing, not answered yet.
fn created(peers: &[String]) -> (Served, Request) {
    let mut s = Served::new(Config::new(Duration::from_secs(10), 1));
    s.children.insert("/bench/lock".into(), peers.to_vec());
    s.zxid = peers.len() as i64; // our node's sequence is after theirs
    s.s.acquire(LockSpec::write("/bench/lock"), s.now).unwrap();
    let [create, list] = <[Request; 2]>::try_from(s.drain()).unwrap();
    s.answer(create);
    s.drain();
    (s, list)
}

fn listing(c: &mut Criterion) {
    let peers: Vec<String> = (0..999).map(|i| peer(i as u128 + 1, i)).collect();
    c.bench_function("listing_1000_children", |b| {
        b.iter_batched(
            || created(&peers),
            |(mut s, list)| {
                s.answer(list);
                black_box(s.drain())
            },
            BatchSize::SmallInput,
        )
    });
}

fn handoff(c: &mut Criterion) {
    let pred = peer(1, 0);
    let pred_path = format!("/bench/lock/{pred}");
    c.bench_function("handoff", |b| {
        b.iter_batched(
            || {
                // Our node's read and the watch on the predecessor answered.
                let (mut s, list) = created(std::slice::from_ref(&pred));
                s.answer(list);
                s.serve();
                s
            },
            |mut s| {
                let fired = Input::Watch {
                    path: pred_path.clone(),
                    kind: WatchKind::NodeDeleted,
                };
                s.s.handle_input(fired, s.now);
                s.drain();
                assert_eq!(s.acquired, 1);
                s
            },
            BatchSize::SmallInput,
        )
    });
}

fn cycle(c: &mut Criterion) {
    let mut s = Served::new(Config::new(Duration::from_secs(10), 1));
    c.bench_function("uncontended_cycle", |b| b.iter(|| s.cycle(Duration::ZERO)));
}

fn cycle_beside_held(c: &mut Criterion) {
    let mut group = c.benchmark_group("cycle_beside_held");
    group.sample_size(20);
    for n in [1_000, 10_000, 100_000] {
        let mut config = Config::new(Duration::from_secs(10), 1);
        config.sync_interval = Some(Config::default_sync_interval(config.session_timeout));
        let mut s = Served::new(config);
        for i in 0..n {
            s.acquire(LockSpec::write(format!("/bench/held/{i}")));
            s.advance(Duration::from_micros(10));
        }
        // Every hold outlives a sync interval: each watches its node.
        s.advance(Duration::from_secs(1));
        group.bench_function(BenchmarkId::from_parameter(n), |b| {
            b.iter(|| s.cycle(Duration::from_millis(1)))
        });
    }
    group.finish();
}

criterion_group!(benches, listing, handoff, cycle, cycle_beside_held);
criterion_main!(benches);
