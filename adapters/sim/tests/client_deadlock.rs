//! Owners, inspection and deadlock detection through the user API (lock-client's
//! `LockClient`) on the in-process server: cycles across sessions broken with one
//! victim, self-deadlock refused at once, participants in queue order. Every wait
//! has a generous bound that turns a hang into a failure; nothing sleeps to
//! synchronise.

use lock_client::{Cycle, Error, LockClient, NodeKind};
use lock_sim::Server;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

const BOUND: Duration = Duration::from_secs(20);
const AFTER: Duration = Duration::from_millis(100);

/// What one party of a cycle ended with.
enum End {
    /// It got its second lock.
    Acquired,
    /// It was the victim, failed with this cycle (after `waited`).
    Victim(Cycle, Duration),
}

/// Each owner (its own client, so its own session) takes `first`, waits at the
/// barrier until every party holds its first lock, then waits for `second` with
/// detection on. A victim releases its first lock (as a program would) so the
/// others can move on.
fn run_cycle(server: &Server, root: &str, n: usize) -> Vec<(String, End)> {
    let barrier = Arc::new(Barrier::new(n));
    let threads: Vec<_> = (0..n)
        .map(|i| {
            let owner = format!("owner-{i}");
            let client: LockClient = server.client().with_owner(owner.clone());
            let (first, second) = (format!("{root}/l{i}"), format!("{root}/l{}", (i + 1) % n));
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let held = client.mutex(first).lock_timeout_blocking(BOUND).unwrap();
                barrier.wait();
                let start = Instant::now();
                let end = match client
                    .mutex(second)
                    .detect_deadlocks(AFTER)
                    .lock_timeout_blocking(BOUND)
                {
                    Ok(guard) => {
                        guard.release_blocking().unwrap();
                        End::Acquired
                    }
                    Err(Error::Deadlock { cycle }) => End::Victim(cycle, start.elapsed()),
                    Err(e) => panic!("{owner}: {e:?}"),
                };
                held.release_blocking().unwrap();
                client.close_blocking();
                (owner, end)
            })
        })
        .collect();
    threads.into_iter().map(|t| t.join().unwrap()).collect()
}

fn check_one_victim(ends: &[(String, End)], n: usize) {
    let victims: Vec<_> = ends
        .iter()
        .filter_map(|(owner, end)| match end {
            End::Victim(cycle, waited) => Some((owner, cycle, waited)),
            End::Acquired => None,
        })
        .collect();
    assert_eq!(victims.len(), 1, "exactly one victim");
    let (victim, cycle, waited) = victims[0];
    // n holders and n waiters, in wait order, ours first.
    assert_eq!(cycle.len(), 2 * n, "{cycle:?}");
    assert_eq!(cycle[0].owner.as_deref(), Some(victim.as_str()));
    assert!(!cycle[0].holds, "the victim's own node waits");
    let mut owners: Vec<_> = cycle.iter().filter_map(|c| c.owner.clone()).collect();
    owners.sort();
    owners.dedup();
    assert_eq!(owners.len(), n, "every owner is in the cycle: {cycle:?}");
    assert!(*waited >= AFTER, "nothing is chased before detect_after");
    println!("{n}-party cycle broken after {waited:?}, victim {victim}");
}

#[test]
fn a_cycle_of_two_or_three_sessions_fails_one_victim_and_the_others_acquire() {
    for n in [2, 3] {
        let server = Server::new();
        let root = format!("/dl{n}");
        let ends = run_cycle(&server, &root, n);
        check_one_victim(&ends, n);
        for i in 0..n {
            assert_eq!(server.children(&format!("{root}/l{i}")), Some(vec![]));
        }
    }
}

#[test]
fn a_self_deadlock_is_refused_at_once() {
    let server = Server::new();
    let worker = server.client().with_owner("worker");
    let guard = worker.mutex("/self/a").lock_blocking().unwrap();
    let start = Instant::now();
    let err = worker
        .mutex("/self/a")
        .detect_deadlocks(AFTER)
        .lock_timeout_blocking(BOUND)
        .unwrap_err();
    assert!(start.elapsed() < BOUND / 2, "refused, not timed out");
    match &err {
        Error::SelfDeadlock { path, owner, held } => {
            assert_eq!((path.as_str(), owner.as_str()), ("/self/a", "worker"));
            assert_eq!(*held, NodeKind::Write);
        }
        e => panic!("{e:?}"),
    }
    assert!(err.is_deadlock());
    // A read/write lock of the same owner: an upgrade is refused too.
    let table = worker.rwlock("/self/t");
    let reader = table.read().lock_blocking().unwrap();
    assert!(matches!(
        table.write().lock_timeout_blocking(BOUND),
        Err(Error::SelfDeadlock {
            held: NodeKind::Read,
            ..
        })
    ));
    // Another owner on the same session just waits its turn.
    let other = worker.mutex("/self/a").owner("someone-else");
    assert!(other.try_lock_blocking().unwrap().is_none());
    reader.release_blocking().unwrap();
    guard.release_blocking().unwrap();
    assert!(other.try_lock_blocking().unwrap().is_some());
}

#[test]
fn participants_list_owners_in_queue_order() {
    let server = Server::new();
    let holder = server.client().with_owner("H");
    let waiters = server.client();
    let guard = holder
        .mutex("/who/q")
        .with_data("payload")
        .lock_blocking()
        .unwrap();
    // One session's requests are served in order: W1, W2, W3 queue in that order.
    let pending: Vec<_> = ["W1", "W2", "W3"]
        .iter()
        .map(|w| waiters.mutex("/who/q").owner(*w).start().unwrap())
        .collect();
    let deadline = Instant::now() + BOUND;
    let found = loop {
        let found = waiters.participants_blocking("/who/q").unwrap();
        if found.waiters.len() == 3 {
            break found;
        }
        assert!(Instant::now() < deadline, "waiters never queued: {found:?}");
        std::thread::yield_now();
    };
    assert_eq!(found.path, "/who/q");
    assert_eq!(found.holders.len(), 1);
    let h = &found.holders[0];
    assert_eq!(h.owner.as_deref(), Some("H"));
    assert_eq!(h.session, holder.session_id().unwrap());
    assert_eq!(h.token, guard.token());
    assert_eq!(h.data, b"payload");
    assert_eq!(h.kind, NodeKind::Write);
    assert!(h.waits_for.is_empty());
    assert_eq!(guard.path(), format!("/who/q/{}", h.node));
    let owners: Vec<_> = found
        .waiters
        .iter()
        .map(|w| w.owner.as_deref().unwrap())
        .collect();
    assert_eq!(owners, ["W1", "W2", "W3"]);
    let mut last = h.token;
    for w in &found.waiters {
        assert_eq!(w.session, waiters.session_id().unwrap());
        assert!(w.token > last, "queue order is age order");
        last = w.token;
        assert!(!w.waits_for.is_empty(), "{w:?}");
    }
    assert_eq!(found.waiters[0].waits_for, std::slice::from_ref(&h.node));
    assert!(holder.deadlocks_blocking("/who").unwrap().is_empty());
    for p in pending {
        p.cancel();
    }
    guard.release_blocking().unwrap();
    assert!(waiters
        .participants_blocking("/who/none")
        .unwrap()
        .holders
        .is_empty());
}

#[test]
fn a_cycle_across_recipes_is_broken_through_rwlock_and_semaphore_options() {
    // A holds a read lock on /mix/t and waits for a one-permit semaphore /mix/s; B
    // holds that permit and waits for the write lock on /mix/t: a read blocks a
    // write, a permit blocks a permit.
    let server = Server::new();
    let a = server.client();
    let b = server.client();
    let table_a = a.rwlock("/mix/t").owner("A").detect_deadlocks(AFTER);
    let table_b = b.rwlock("/mix/t").owner("B").detect_deadlocks(AFTER);
    let slot_a = a.semaphore("/mix/s", 1).owner("A").detect_deadlocks(AFTER);
    let slot_b = b.semaphore("/mix/s", 1).owner("B").detect_deadlocks(AFTER);
    let reader = table_a.read().lock_blocking().unwrap();
    let permit = slot_b.lock_blocking().unwrap();
    let ta = std::thread::spawn(move || {
        let r = slot_a.lock_timeout_blocking(BOUND);
        let victim = matches!(r, Err(Error::Deadlock { .. }));
        drop(r);
        reader.release_blocking().unwrap();
        victim
    });
    let tb = std::thread::spawn(move || {
        let r = table_b.write().lock_timeout_blocking(BOUND);
        let victim = matches!(r, Err(Error::Deadlock { .. }));
        drop(r);
        permit.release_blocking().unwrap();
        victim
    });
    let (va, vb) = (ta.join().unwrap(), tb.join().unwrap());
    assert!(va ^ vb, "exactly one victim (A: {va}, B: {vb})");
}
