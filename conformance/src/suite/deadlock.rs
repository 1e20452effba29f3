//! Owners and deadlocks: cycles across sessions and across recipes broken with
//! one victim, a self-deadlock refused at once, participants in queue order.

use super::*;
use lock_client::{Cycle, NodeKind};
use lock_core::LockSpec;

/// Detection starts chasing a wait this long after it began.
const AFTER: Duration = Duration::from_millis(200);

/// `spec` of `owner` with deadlock detection on, waited for at most [`LONG`]:
/// `Ok(None)` once granted (and released), `Ok(Some(cycle))` if the owner was the
/// victim of a deadlock, `Err` on any other end.
fn victim_of(b: &Suite, client: &LockClient, spec: LockSpec) -> Option<Cycle> {
    match b.acquire(client, spec.detect_deadlocks(AFTER), LONG) {
        Ok(guard) => {
            b.release(guard).expect("release");
            None
        }
        Err(Error::Deadlock { cycle }) => Some(cycle),
        Err(e) => panic!("{}: {e:?}", b.name()),
    }
}

/// Two, then three owners on as many sessions and locks in a ring, each holding
/// one lock and waiting for the next: exactly one victim fails with `Deadlock`
/// (the cycle starting at its wait, naming every owner, chased no sooner than
/// `detect_after`), releases what it holds, and the others acquire in turn,
/// leaving no node.
pub fn a_cycle_across_sessions_is_broken_by_one_victim(b: &Suite) {
    for n in [2, 3] {
        let (server, dir, admin) = shared(b, &format!("deadlock{n}"));
        let parties: Vec<_> = (0..n)
            .map(|i| {
                let client = connect(b, server).with_owner(format!("P{i}"));
                let held = lock(b, &client, Kind::Mutex, &format!("{dir}/l{i}"));
                (client, held)
            })
            .collect();
        let victims: Vec<_> = thread::scope(|s| {
            let tasks: Vec<_> = parties
                .into_iter()
                .enumerate()
                .map(|(i, (client, held))| {
                    let (owner, want) = (format!("P{i}"), format!("{dir}/l{}", (i + 1) % n));
                    s.spawn(move || {
                        let start = Instant::now();
                        let spec = LockSpec::exclusive(want).owner(owner.clone());
                        let victim = victim_of(b, &client, spec);
                        let waited = start.elapsed();
                        b.release(held).expect("release");
                        b.close(&client);
                        victim.map(|cycle| (owner, cycle, waited))
                    })
                })
                .collect();
            tasks
                .into_iter()
                .filter_map(|t| t.join().unwrap())
                .collect()
        });
        assert_eq!(victims.len(), 1, "{}: {n} parties: {victims:?}", b.name());
        let (victim, cycle, waited) = &victims[0];
        assert_eq!(cycle.len(), 2 * n, "{n} holders and waiters: {cycle:?}");
        assert_eq!(cycle[0].owner.as_ref(), Some(victim), "{cycle:?}");
        assert!(!cycle[0].holds, "the cycle starts at the victim's wait");
        let mut owners: Vec<_> = cycle.iter().filter_map(|p| p.owner.clone()).collect();
        owners.sort();
        owners.dedup();
        assert_eq!(owners, (0..n).map(|i| format!("P{i}")).collect::<Vec<_>>());
        assert!(*waited >= AFTER, "chased before detect_after: {waited:?}");
        eprintln!(
            "{}: {n}-party cycle broken {waited:?} after the victim began to wait",
            b.name()
        );
        for i in 0..n {
            assert!(admin.children(&format!("{dir}/l{i}")).is_empty());
        }
    }
}

/// A holds a read lock and waits for a one-permit semaphore whose permit B holds
/// while waiting for the write lock: a read blocks a write, a permit a permit.
/// Exactly one of them is the victim.
pub fn a_cycle_across_recipes_is_broken_by_one_victim(b: &Suite) {
    let (server, dir, _) = shared(b, "deadlock-mixed");
    let (table, slot) = (format!("{dir}/t"), format!("{dir}/s"));
    let (a, c) = (connect(b, server), connect(b, server));
    let reader = b
        .acquire(&a, LockSpec::read(&table).owner("A"), SHORT)
        .expect("read");
    let permit = b
        .acquire(&c, LockSpec::semaphore(&slot, 1).owner("B"), SHORT)
        .expect("permit");
    let (va, vb) = thread::scope(|s| {
        let ta = s.spawn(|| {
            let victim = victim_of(b, &a, LockSpec::semaphore(&slot, 1).owner("A"));
            b.release(reader).expect("release");
            victim.is_some()
        });
        let victim = victim_of(b, &c, LockSpec::write(&table).owner("B"));
        b.release(permit).expect("release");
        (ta.join().unwrap(), victim.is_some())
    });
    assert!(va ^ vb, "{}: one victim (A: {va}, B: {vb})", b.name());
    b.close(&a);
    b.close(&c);
}

/// An owner locking what it holds is refused at once with `SelfDeadlock` (an
/// upgrade of its read lock too); another owner on the same session waits its
/// turn. The participants list the holder and the waiters with their owners,
/// sessions, tokens and data, in queue order, and no cycle.
pub fn participants_in_queue_order_and_self_deadlock(b: &Suite) {
    let (server, dir, admin) = shared(b, "participants");
    let holder = connect(b, server).with_owner("H");
    let waiters = connect(b, server);
    let guard = b
        .acquire(
            &holder,
            LockSpec::exclusive(&dir)
                .owner("H")
                .data(b"payload".to_vec()),
            SHORT,
        )
        .expect("lock");
    let start = Instant::now();
    let err = b.lock(&holder, Kind::Mutex, &dir, Wait::Timeout(LONG));
    assert!(start.elapsed() < SHORT, "refused, not timed out");
    match &err {
        Err(Error::SelfDeadlock { path, owner, held }) => {
            assert_eq!((path, owner.as_str(), *held), (&dir, "H", NodeKind::Write));
        }
        other => panic!("{}: {other:?}", b.name()),
    }
    let table = format!("{dir}-table");
    let reader = lock(b, &holder, Kind::Read, &table);
    assert!(matches!(
        b.lock(&holder, Kind::Write, &table, Wait::Timeout(LONG)),
        Err(Error::SelfDeadlock {
            held: NodeKind::Read,
            ..
        })
    ));
    b.release(reader).expect("release");

    // W1, another owner on the holder's session, waits its turn; then W2 and W3
    // queue in that order on one session.
    let mut pending = Vec::new();
    for (i, (client, w)) in [(&holder, "W1"), (&waiters, "W2"), (&waiters, "W3")]
        .into_iter()
        .enumerate()
    {
        let spec = LockSpec::exclusive(&dir).owner(w);
        pending.push(b.start_spec(client, spec).expect("start"));
        admin.wait_children(&dir, SHORT, &|c| c.len() == i + 2);
    }
    let found = b.participants(&waiters, &dir).expect("participants");
    assert_eq!(found.path, dir);
    let [h] = &found.holders[..] else {
        panic!("{}: one holder: {found:?}", b.name())
    };
    assert_eq!(h.owner.as_deref(), Some("H"));
    assert_eq!(Some(h.session), holder.session_id());
    assert_eq!((h.token, &h.data[..]), (guard.token(), &b"payload"[..]));
    assert_eq!(h.kind, NodeKind::Write);
    assert!(h.waits_for.is_empty());
    assert_eq!(name_of(guard.path()), h.node);
    let owners: Vec<_> = found.waiters.iter().map(|w| w.owner.as_deref()).collect();
    assert_eq!(owners, [Some("W1"), Some("W2"), Some("W3")]);
    let mut last = h.token;
    for (w, client) in found.waiters.iter().zip([&holder, &waiters, &waiters]) {
        assert_eq!(Some(w.session), client.session_id());
        assert!(w.token > last, "queue order is age order");
        last = w.token;
        assert!(!w.waits_for.is_empty(), "{w:?}");
    }
    assert_eq!(found.waiters[0].waits_for, std::slice::from_ref(&h.node));
    assert_eq!(b.deadlocks(&holder, &dir), Ok(vec![]));
    b.release(guard).expect("release");
    let mut pending = pending.into_iter();
    let next = b
        .finish(pending.next().unwrap(), SHORT)
        .expect("W1 holds next");
    b.release(next).expect("release");
    pending.for_each(|p| b.cancel(p));
    b.close(&holder);
    b.close(&waiters);
}
