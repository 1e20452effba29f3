//! CPU cost of the core: `cargo bench -p lock-core --bench core`.
//!
//! * `listing_1000_children`: handling the listing of a contended directory of
//!   1,000 participants (parse, classify, sort, pick the watch).
//! * `handoff`: a waiter's predecessor is deleted; the core grants from its cache.
//! * `uncontended_cycle`: acquire, create/list/own-data replies, release, delete reply.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use lock_core::*;
use std::hint::black_box;
use std::time::Duration;

const SID: i64 = 7;

fn drain(s: &mut Session) -> Vec<Request> {
    let mut reqs = Vec::new();
    while let Some(o) = s.poll_output() {
        if let Output::Request(r) = o {
            reqs.push(r);
        }
    }
    reqs
}

fn peer(n: u128, seq: i32) -> String {
    format!(
        "{}{}",
        names::node_prefix(NameScheme::Native, AttemptId(n), NodeKind::Write),
        names::format_sequence(seq)
    )
}

/// A connected session whose write acquisition has its create answered (seq `seq`);
/// returns the session, the pending list request and our node name.
fn created(seq: i32) -> (Session, RequestId, String) {
    let mut s = Session::new(Config::new(Duration::from_secs(10), 1));
    let now = Timestamp::ZERO;
    s.handle_input(
        Input::Session(SessionEvent::Connected { session_id: SID }),
        now,
    );
    s.acquire(LockSpec::write("/bench/lock"), now).unwrap();
    let reqs = drain(&mut s);
    let Op::Create { path, .. } = &reqs[0].op else {
        unreachable!()
    };
    let path = format!("{path}{seq:010}");
    let name = path.rsplit('/').next().unwrap().to_owned();
    let stat = Stat {
        czxid: 1,
        ephemeral_owner: SID,
        ..Stat::default()
    };
    s.handle_input(
        Input::Reply {
            request: reqs[0].id,
            result: Ok(Reply::Created {
                path,
                stat: Some(stat),
            }),
        },
        now,
    );
    let _ = drain(&mut s);
    (s, reqs[1].id, name)
}

fn listing(c: &mut Criterion) {
    let mut children: Vec<String> = (0..999).map(|i| peer(i as u128 + 1, i)).collect();
    c.bench_function("listing_1000_children", |b| {
        b.iter_batched(
            || {
                let (s, list, name) = created(999);
                let mut ch = children.clone();
                ch.push(name);
                (s, list, ch)
            },
            |(mut s, list, ch)| {
                s.handle_input(
                    Input::Reply {
                        request: list,
                        result: Ok(Reply::Children(ch)),
                    },
                    Timestamp::ZERO,
                );
                black_box(drain(&mut s));
                s
            },
            BatchSize::SmallInput,
        )
    });
    children.clear();
}

fn handoff(c: &mut Criterion) {
    let pred = peer(1, 0);
    let pred_path = format!("/bench/lock/{pred}");
    c.bench_function("handoff", |b| {
        b.iter_batched(
            || {
                let (mut s, list, name) = created(1);
                s.handle_input(
                    Input::Reply {
                        request: list,
                        result: Ok(Reply::Children(vec![pred.clone(), name])),
                    },
                    Timestamp::ZERO,
                );
                let _ = drain(&mut s);
                s
            },
            |mut s| {
                s.handle_input(
                    Input::Watch {
                        path: pred_path.clone(),
                        kind: WatchKind::NodeDeleted,
                    },
                    Timestamp::ZERO,
                );
                let mut acquired = false;
                while let Some(o) = s.poll_output() {
                    acquired |= matches!(
                        o,
                        Output::Event {
                            event: LockEvent::Acquired(_),
                            ..
                        }
                    );
                }
                assert!(acquired);
                s
            },
            BatchSize::SmallInput,
        )
    });
}

fn cycle(c: &mut Criterion) {
    let mut s = Session::new(Config::new(Duration::from_secs(10), 1));
    let now = Timestamp::ZERO;
    s.handle_input(
        Input::Session(SessionEvent::Connected { session_id: SID }),
        now,
    );
    let mut seq = 0i32;
    c.bench_function("uncontended_cycle", |b| {
        b.iter(|| {
            let id = s.acquire(LockSpec::write("/bench/lock"), now).unwrap();
            let reqs = drain(&mut s);
            let Op::Create { path, .. } = &reqs[0].op else {
                unreachable!()
            };
            let path = format!("{path}{seq:010}");
            seq = seq.wrapping_add(1);
            let name = path.rsplit('/').next().unwrap().to_owned();
            let stat = Stat {
                czxid: 1,
                ephemeral_owner: SID,
                ..Stat::default()
            };
            s.handle_input(
                Input::Reply {
                    request: reqs[0].id,
                    result: Ok(Reply::Created {
                        path,
                        stat: Some(stat),
                    }),
                },
                now,
            );
            let own = drain(&mut s);
            s.handle_input(
                Input::Reply {
                    request: reqs[1].id,
                    result: Ok(Reply::Children(vec![name])),
                },
                now,
            );
            let _ = drain(&mut s);
            s.handle_input(
                Input::Reply {
                    request: own[0].id,
                    result: Ok(Reply::Data { data: vec![], stat }),
                },
                now,
            );
            s.release(id, now).unwrap();
            let del = drain(&mut s);
            s.handle_input(
                Input::Reply {
                    request: del[0].id,
                    result: Ok(Reply::Deleted),
                },
                now,
            );
            black_box(drain(&mut s));
        })
    });
}

criterion_group!(benches, listing, handoff, cycle);
criterion_main!(benches);
