//! The performance heart of the design, measured in virtual time and request
//! counters: one round trip to acquire, zero requests on handoff, one waiter woken
//! per release, and the sequence-number corner cases.

mod support;

use lock_core::{CreateMode, LockId, LockSpec};
use lock_sim::{ClientId, Latency, OpKind, Profile, Sim, SimConfig};
use std::time::Duration;
use support::{acquired_at, holder_and_waiter, sim_1ms as sim};

const T: Duration = Duration::from_secs(2);
const L: Duration = Duration::from_millis(1);

#[test]
fn uncontended_acquire_takes_one_round_trip() {
    for profile in [Profile::KeepsWatches, Profile::LosesWatchesNewSession] {
        let mut sim = sim(1);
        let c = sim.add_client(profile, T);
        sim.admin_create("/locks", b"", CreateMode::Persistent)
            .unwrap();
        sim.admin_create("/locks/job", b"", CreateMode::Persistent)
            .unwrap();
        sim.settle().unwrap();
        sim.reset_counters();
        let t0 = sim.now();
        let lock = sim.acquire(c, LockSpec::write("/locks/job")).unwrap();
        // Create and GetChildren leave back to back, before any reply.
        let sent = sim.counters(c);
        assert_eq!(sent.requests(), 2, "{sent:?}");
        assert_eq!(sent.requests_of(OpKind::Create), 1);
        assert_eq!(sent.requests_of(OpKind::GetChildren), 1);
        assert_eq!(sim.requests_in_flight(c), 2);
        sim.run_until(|s| s.holds(c, lock)).unwrap();
        // Acquired exactly one round trip later.
        assert_eq!(acquired_at(&sim, c, lock) - t0, 2 * L);
        // Besides the two, only the holder's watch on its own node (pipelined when
        // the create reply came, not waited for).
        let sent = sim.counters(c);
        assert_eq!(
            (
                sent.requests_of(OpKind::Create),
                sent.requests_of(OpKind::GetChildren)
            ),
            (1, 1),
            "{sent:?}"
        );
        assert!(sent.requests_of(OpKind::GetData) <= 1, "{sent:?}");
        sim.release(c, lock).unwrap();
        sim.run_until_idle().unwrap();
        // Release is one round trip too: one delete.
        assert_eq!(sim.counters(c).requests_of(OpKind::Delete), 1);
        sim.check_quiescent().unwrap();
    }
}

#[test]
fn handoff_needs_no_request_after_the_notification() {
    let mut sim = sim(2);
    let ((a, la), (b, lb)) = holder_and_waiter(
        &mut sim,
        Profile::KeepsWatches,
        LockSpec::write("/locks/h"),
        T,
    );
    sim.reset_counters();
    let t0 = sim.now();
    sim.release(a, la).unwrap();
    sim.run_until(|s| s.holds(b, lb)).unwrap();
    let cb = sim.counters(b);
    assert_eq!(cb.notifications, 1, "woken by one notification");
    // Held at once, without asking the server, and nothing sent after the grant:
    // the watch it set on its own node while next in line stays (it hears a
    // break under it at once).
    assert_eq!(
        cb.requests(),
        0,
        "held at once, without asking the server: {cb:?}"
    );
    // Delete to the server, notification back: one round trip after the release.
    assert_eq!(acquired_at(&sim, b, lb) - t0, 2 * L);
    // The fencing token moved on.
    assert!(sim.grant(b, lb).unwrap().token > sim.grant(a, la).unwrap().token);
}

#[test]
fn one_release_wakes_one_waiter_among_100() {
    let mut sim = sim(3);
    let holder = sim.add_client(Profile::KeepsWatches, T);
    let lh = sim.acquire(holder, LockSpec::write("/locks/herd")).unwrap();
    sim.settle().unwrap();
    let waiters: Vec<(ClientId, LockId)> = (0..100)
        .map(|i| {
            let profile = if i % 2 == 0 {
                Profile::KeepsWatches
            } else {
                Profile::LosesWatchesNewSession
            };
            let c = sim.add_client(profile, T);
            sim.settle().unwrap();
            let l = sim.acquire(c, LockSpec::write("/locks/herd")).unwrap();
            (c, l)
        })
        .collect();
    sim.settle().unwrap();
    assert!(sim.holds(holder, lh));
    sim.reset_counters();
    sim.release(holder, lh).unwrap();
    sim.settle().unwrap();
    let woken: u64 = waiters
        .iter()
        .map(|(c, _)| sim.counters(*c).notifications)
        .sum();
    let asked: u64 = waiters
        .iter()
        .map(|(c, _)| sim.counters(*c).requests())
        .sum();
    assert_eq!(woken, 1, "exactly one waiter hears of the release");
    assert_eq!(asked, 0, "and nobody asks the server anything");
    assert!(
        sim.holds(waiters[0].0, waiters[0].1),
        "the next in line holds"
    );
    assert_eq!(waiters.iter().filter(|(c, l)| sim.holds(*c, *l)).count(), 1);
}

#[test]
fn wraparound_at_2_pow_31_keeps_fifo_order() {
    for profile in [Profile::KeepsWatches, Profile::LosesWatchesNewSession] {
        let mut sim = sim(4);
        sim.admin_create("/locks", b"", CreateMode::Persistent)
            .unwrap();
        sim.admin_create("/locks/wrap", b"", CreateMode::Container)
            .unwrap();
        sim.set_cversion("/locks/wrap", i32::MAX - 2).unwrap();
        let mut order = Vec::new();
        for _ in 0..5 {
            let c = sim.add_client(profile, T);
            sim.settle().unwrap();
            let l = sim.acquire(c, LockSpec::write("/locks/wrap")).unwrap();
            sim.settle().unwrap();
            order.push((c, l));
        }
        let names = sim.children("/locks/wrap");
        assert!(
            names.iter().any(|n| n.ends_with("-2147483648")),
            "{names:?}"
        );
        // Release in turn: each one is followed by the next created, across the wrap.
        let mut seqs = Vec::new();
        for (k, &(c, l)) in order.iter().enumerate() {
            sim.run_until(|s| s.holds(c, l)).unwrap();
            for &(c2, l2) in &order[k + 1..] {
                assert!(!sim.holds(c2, l2), "{c2} jumped the queue");
            }
            seqs.push(sim.grant(c, l).unwrap().sequence);
            sim.release(c, l).unwrap();
        }
        assert_eq!(
            seqs,
            vec![i32::MAX - 2, i32::MAX - 1, i32::MAX, i32::MIN, i32::MIN + 1]
        );
        sim.wind_down(&[]).unwrap();
    }
}

#[test]
fn reaped_parent_restarts_counter_and_tokens_still_increase() {
    let mut sim = sim(5);
    let a = sim.add_client(Profile::KeepsWatches, T);
    let b = sim.add_client(Profile::LosesWatchesNewSession, T);
    let mut tokens = Vec::new();
    for round in 0..3 {
        let la = sim.acquire(a, LockSpec::write("/app/locks/r")).unwrap();
        sim.settle().unwrap();
        let lb = sim.acquire(b, LockSpec::write("/app/locks/r")).unwrap();
        sim.settle().unwrap();
        let ga = sim.grant(a, la).unwrap();
        assert_eq!(ga.sequence, 0, "round {round}: the counter restarted");
        sim.release(a, la).unwrap();
        sim.run_until(|s| s.holds(b, lb)).unwrap();
        let gb = sim.grant(b, lb).unwrap();
        assert_eq!(gb.sequence, 1);
        tokens.extend([ga.token, gb.token]);
        sim.release(b, lb).unwrap();
        sim.run_until_idle().unwrap();
        // The reaper takes the emptied lock directory, then its parents.
        assert_eq!(sim.reap_containers(), vec!["/app/locks/r".to_owned()]);
        assert!(sim.get("/app/locks/r").is_none());
        assert_eq!(sim.reap_containers(), vec!["/app/locks".to_owned()]);
        assert_eq!(sim.reap_containers(), vec!["/app".to_owned()]);
    }
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "{tokens:?}");
    sim.check_quiescent().unwrap();
}

#[test]
fn a_reaper_racing_the_first_create_is_survived() {
    // The reaper runs every millisecond: a lock directory emptied by a release may
    // vanish between a client's listing and its create; the core re-creates it.
    let mut sim = Sim::new(
        SimConfig::new(6)
            .latency(Latency::between(
                Duration::from_micros(100),
                Duration::from_millis(2),
            ))
            .reap_interval(Some(Duration::from_millis(1))),
    );
    let clients: Vec<ClientId> = (0..4)
        .map(|_| sim.add_client(Profile::KeepsWatches, T))
        .collect();
    for _round in 0..30 {
        let mut locks: Vec<(ClientId, LockId)> = clients
            .iter()
            .map(|&c| (c, sim.acquire(c, LockSpec::write("/r/a/b")).unwrap()))
            .collect();
        while !locks.is_empty() {
            sim.run_until(|s| locks.iter().any(|&(c, l)| s.holds(c, l)))
                .unwrap();
            let k = locks.iter().position(|&(c, l)| sim.holds(c, l)).unwrap();
            let (c, l) = locks.remove(k);
            sim.release(c, l).unwrap();
        }
        sim.run_until_idle().unwrap();
    }
    assert!(
        sim.total_counters().requests_of(OpKind::Create) > 30 * 4,
        "parents were re-created"
    );
    sim.check_quiescent().unwrap();
}

/// Drains a queue of `waiters` behind one holder, spread over `sessions` sessions,
/// releasing each holder as soon as it holds. Returns (requests per acquisition,
/// waiter wake-ups per release) over the drain.
fn drain_queue(sessions: usize, waiters: usize) -> (f64, f64) {
    let mut sim = sim(7);
    let clients: Vec<ClientId> = (0..sessions)
        .map(|_| sim.add_client(Profile::KeepsWatches, T))
        .collect();
    sim.settle().unwrap();
    let queue: Vec<(ClientId, LockId)> = (0..=waiters)
        .map(|i| {
            let c = clients[i % sessions];
            let l = sim.acquire(c, LockSpec::write("/locks/queue")).unwrap();
            // Queue order is creation order: let each create land before the next.
            sim.settle().unwrap();
            (c, l)
        })
        .collect();
    sim.settle().unwrap();
    sim.reset_counters();
    let woken = |sim: &Sim| -> u64 {
        clients
            .iter()
            .map(|&c| sim.core(c).stats().handoff_notifications)
            .sum()
    };
    let woken_before = woken(&sim);
    for (k, &(c, l)) in queue.iter().enumerate() {
        sim.run_until(|s| s.holds(c, l)).unwrap();
        assert!(
            queue[k + 1..].iter().all(|&(c2, l2)| !sim.holds(c2, l2)),
            "FIFO order"
        );
        sim.release(c, l).unwrap();
    }
    sim.wind_down(&[]).unwrap();
    let requests = sim.total_counters().requests() as f64;
    let acquisitions = queue.len() as f64;
    (
        requests / acquisitions,
        (woken(&sim) - woken_before) as f64 / waiters as f64,
    )
}

#[test]
fn one_release_wakes_one_waiter_whatever_the_sessions_it_shares() {
    // Every waiter of a session shares its watches: a release must still reach
    // only the waiter that watches the deleted node, not every waiter of that
    // session (which then re-listed: O(n²) requests to drain one session's queue).
    for sessions in [1, 4] {
        let (requests, woken) = drain_queue(sessions, 1_000);
        assert_eq!(woken, 1.0, "{sessions} session(s): wake-ups per release");
        // Per acquisition in a deep queue: the predecessor's delete, then one
        // listing (the cached lower set still names long-gone nodes).
        assert!(
            requests <= 2.5,
            "{sessions} session(s): {requests:.2} requests per acquisition"
        );
    }
}
