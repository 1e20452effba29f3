//! The conformance tests. Each takes a [`Suite`] (an environment with the client
//! side); run each in its own `#[test]` (see
//! [`conformance_tests!`](crate::conformance_tests)).

use crate::env::{unique_path, wait_until, Deployment, Faults, LONG, SESSION_TIMEOUT, SHORT};
use crate::harness::{Suite, Wait};
use crate::Kind;
use lock_client::{Error, LockClient, LockGuard};
use lock_core::{LockEvent, LostReason};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

fn connect(b: &Suite, on: &dyn Deployment) -> LockClient {
    b.client_on(on, SESSION_TIMEOUT)
}

/// The session timeout of a client whose session must simply survive (a bystander
/// of a test about another session's expiry): long enough for any backend's pings on
/// a loaded machine.
const BYSTANDER_SESSION_TIMEOUT: Duration = Duration::from_secs(10);

fn connect_with(b: &Suite, on: &dyn Deployment, timeout: Duration) -> LockClient {
    b.client_on(on, timeout)
}

fn connect_with_faults(b: &Suite, on: &dyn Deployment) -> (LockClient, Box<dyn Faults>) {
    on.client_with_faults(SESSION_TIMEOUT)
        .unwrap_or_else(|e| panic!("{}: connecting: {e}", b.name()))
}

fn watchers_of(b: &Suite, on: &dyn Deployment, path: &str) -> Vec<i64> {
    on.watchers_of(path)
        .unwrap_or_else(|| panic!("{}: generated without Capability::Watchers", b.name()))
}

fn lock(b: &Suite, c: &LockClient, kind: Kind, path: &str) -> LockGuard {
    b.lock(c, kind, path, Wait::Timeout(SHORT))
        .unwrap_or_else(|e| panic!("{}: {kind:?} on {path}: {e}", b.name()))
}

fn name_of(path: &str) -> String {
    path.rsplit('/').next().unwrap_or_default().to_owned()
}

/// Waits for an event matching `want`, skipping others; panics after `within`.
fn expect_event(
    b: &Suite,
    guard: &mut LockGuard,
    within: Duration,
    what: &str,
    want: impl Fn(&LockEvent) -> bool,
) -> LockEvent {
    let deadline = Instant::now() + within;
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match b.next_event(guard, left) {
            Some(event) if want(&event) => return event,
            Some(event) => seen.push(event),
            None => panic!("{}: no {what} within {within:?} (saw {seen:?})", b.name()),
        }
    }
}

/// Before a fault: drains what a loaded machine may have reported meanwhile (a
/// spurious suspension, e.g. a ping answered late), waiting for the resumption of
/// one still under way; returns with the lock trusted and no event queued, or
/// panics (with what it saw) if it is not trusted again within [`SHORT`].
fn settle(b: &Suite, guard: &mut LockGuard, kind: Kind) {
    let deadline = Instant::now() + SHORT;
    let mut seen = Vec::new();
    loop {
        while let Some(event) = b.next_event(guard, Duration::ZERO) {
            seen.push(event);
        }
        if b.is_trusted(guard) {
            return;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        match b.next_event(guard, left) {
            Some(event) => seen.push(event),
            None => panic!(
                "{}: {kind:?} not trusted before the fault (saw {seen:?})",
                b.name()
            ),
        }
    }
}

/// The next event, which must come within `within`.
fn next_event(b: &Suite, guard: &mut LockGuard, within: Duration) -> LockEvent {
    b.next_event(guard, within)
        .unwrap_or_else(|| panic!("{}: no event within {within:?}", b.name()))
}

fn assert_strictly_increasing(tokens: &[i64], what: &str) {
    for pair in tokens.windows(2) {
        assert!(
            pair[0] < pair[1],
            "{what}: fencing tokens must strictly increase, got {} then {}",
            pair[0],
            pair[1]
        );
    }
}

/// 8 sessions × 50 acquisitions of one mutex increment a non-atomic counter: no
/// update is lost, no two holders overlap, and the fencing tokens of successive
/// holders strictly increase.
pub fn mutual_exclusion(b: &Suite) {
    const SESSIONS: usize = 8;
    const ROUNDS: usize = 50;
    let server = b.env().shared();
    let path = unique_path("mutual-exclusion");
    let counter = AtomicU64::new(0);
    let inside = AtomicBool::new(false);
    let tokens = Mutex::new(Vec::new());
    thread::scope(|s| {
        for _ in 0..SESSIONS {
            s.spawn(|| {
                let c = connect(b, server);
                for _ in 0..ROUNDS {
                    let g = b
                        .lock(&c, Kind::Mutex, &path, Wait::Timeout(LONG))
                        .unwrap_or_else(|e| panic!("{}: lock: {e}", b.name()));
                    assert!(!inside.swap(true, Ordering::SeqCst), "two holders at once");
                    // Read, yield, write: a lost update if anyone else is inside.
                    let v = counter.load(Ordering::SeqCst);
                    thread::yield_now();
                    counter.store(v + 1, Ordering::SeqCst);
                    tokens.lock().unwrap().push(b.token(&g));
                    inside.store(false, Ordering::SeqCst);
                    b.release(g)
                        .unwrap_or_else(|e| panic!("{}: release: {e}", b.name()));
                }
                b.close(&c);
            });
        }
    });
    assert_eq!(counter.load(Ordering::SeqCst), (SESSIONS * ROUNDS) as u64);
    assert_strictly_increasing(&tokens.lock().unwrap(), "mutex");
    let admin = server.admin();
    assert!(admin.children(&path).is_empty(), "nodes left behind");
}

/// Waiters get the lock in the order they queued.
pub fn fifo_order(b: &Suite) {
    const WAITERS: usize = 4;
    let server = b.env().shared();
    let path = unique_path("fifo");
    let admin = server.admin();
    let holder = connect(b, server);
    let g = lock(b, &holder, Kind::Mutex, &path);
    let order = Mutex::new(Vec::new());
    thread::scope(|s| {
        for k in 0..WAITERS {
            let order = &order;
            let path = &path;
            let c = connect(b, server);
            s.spawn(move || {
                let g = b
                    .lock(&c, Kind::Mutex, path, Wait::Timeout(LONG))
                    .unwrap_or_else(|e| panic!("{}: waiter {k}: {e}", b.name()));
                order.lock().unwrap().push(k);
                b.release(g).expect("release");
                b.close(&c);
            });
            // The next waiter queues only once this one's node exists.
            admin.wait_children(path, SHORT, &|c| c.len() == k + 2);
        }
        b.release(g).expect("release");
    });
    assert_eq!(*order.lock().unwrap(), (0..WAITERS).collect::<Vec<_>>());
    b.close(&holder);
    assert!(admin.children(&path).is_empty(), "nodes left behind");
}

/// Readers hold together; a writer waits for them and excludes everyone.
pub fn readers_share_writers_exclude(b: &Suite) {
    let server = b.env().shared();
    let path = unique_path("rw-share");
    let admin = server.admin();
    let (c1, c2, c3) = (connect(b, server), connect(b, server), connect(b, server));
    let r1 = lock(b, &c1, Kind::Read, &path);
    let r2 = b
        .lock(&c2, Kind::Read, &path, Wait::Try)
        .expect("a second reader shares the lock at once");
    assert!(matches!(
        b.lock(&c3, Kind::Write, &path, Wait::Try),
        Err(Error::WouldBlock)
    ));
    let w = b.start(&c3, Kind::Write, &path).expect("start writer");
    admin.wait_children(&path, SHORT, &|c| c.len() == 3);
    b.release(r1).expect("release r1");
    b.release(r2).expect("release r2");
    let w = b.finish(w, SHORT).expect("the writer gets the lock");
    assert!(matches!(
        b.lock(&c1, Kind::Read, &path, Wait::Try),
        Err(Error::WouldBlock)
    ));
    assert!(matches!(
        b.lock(&c2, Kind::Mutex, &path, Wait::Try),
        Err(Error::WouldBlock)
    ));
    b.release(w).expect("release writer");
    for c in [&c1, &c2, &c3] {
        b.wait_idle(c).expect("idle");
    }
    assert!(admin.children(&path).is_empty(), "nodes left behind");
    for c in [&c1, &c2, &c3] {
        b.close(c);
    }
}

/// A waiting writer is not overtaken by readers that come after it.
pub fn writer_not_starved_by_later_readers(b: &Suite) {
    let server = b.env().shared();
    let path = unique_path("rw-starve");
    let admin = server.admin();
    let (c1, c2, c3) = (connect(b, server), connect(b, server), connect(b, server));
    let r1 = lock(b, &c1, Kind::Read, &path);
    let w = b.start(&c2, Kind::Write, &path).expect("start writer");
    admin.wait_children(&path, SHORT, &|c| c.len() == 2);
    // A reader arriving now queues behind the writer, although a reader holds.
    assert!(matches!(
        b.lock(&c3, Kind::Read, &path, Wait::Try),
        Err(Error::WouldBlock)
    ));
    let r2 = b.start(&c3, Kind::Read, &path).expect("start reader");
    admin.wait_children(&path, SHORT, &|c| c.len() == 3);
    b.release(r1).expect("release r1");
    // Had the late reader been let in, it would hold (inside its pending acquisition)
    // and the writer could not get the lock.
    let w = b.finish(w, SHORT).expect("the writer gets the lock first");
    b.release(w).expect("release writer");
    let r2 = b.finish(r2, SHORT).expect("then the late reader");
    b.release(r2).expect("release r2");
    for c in [&c1, &c2, &c3] {
        b.wait_idle(c).expect("idle");
        b.close(c);
    }
    assert!(admin.children(&path).is_empty(), "nodes left behind");
}

/// A semaphore of 3 admits 3 holders, refuses a 4th, and under contention never
/// has more than 3.
pub fn semaphore_never_exceeds_permits(b: &Suite) {
    const PERMITS: u32 = 3;
    let server = b.env().shared();
    let path = unique_path("semaphore");
    let admin = server.admin();
    let clients: Vec<_> = (0..6).map(|_| connect(b, server)).collect();
    let kind = Kind::Semaphore(PERMITS);
    let held: Vec<_> = clients[..3]
        .iter()
        .map(|c| lock(b, c, kind, &path))
        .collect();
    assert!(matches!(
        b.lock(&clients[3], kind, &path, Wait::Try),
        Err(Error::WouldBlock)
    ));
    for g in held {
        b.release(g).expect("release");
    }
    let active = AtomicUsize::new(0);
    let max = AtomicUsize::new(0);
    thread::scope(|s| {
        for c in &clients {
            let (active, max, path) = (&active, &max, &path);
            s.spawn(move || {
                for _ in 0..10 {
                    let g = b
                        .lock(c, kind, path, Wait::Timeout(LONG))
                        .unwrap_or_else(|e| panic!("{}: {e}", b.name()));
                    let now = active.fetch_add(1, Ordering::SeqCst) + 1;
                    max.fetch_max(now, Ordering::SeqCst);
                    assert!(
                        now <= PERMITS as usize,
                        "{now} holders of a semaphore({PERMITS})"
                    );
                    thread::yield_now();
                    active.fetch_sub(1, Ordering::SeqCst);
                    b.release(g).expect("release");
                }
            });
        }
    });
    assert!(max.load(Ordering::SeqCst) <= PERMITS as usize);
    for c in &clients {
        b.wait_idle(c).expect("idle");
        b.close(c);
    }
    assert!(admin.children(&path).is_empty(), "nodes left behind");
}

/// A timed-out or busy `try` acquisition leaves no node behind.
pub fn timeout_leaves_no_node(b: &Suite) {
    let server = b.env().shared();
    let path = unique_path("timeout");
    let admin = server.admin();
    let (a, c) = (connect(b, server), connect(b, server));
    let g = lock(b, &a, Kind::Mutex, &path);
    let holder = name_of(&b.node_path(&g));
    let timeout = Duration::from_millis(300);
    assert!(matches!(
        b.lock(&c, Kind::Mutex, &path, Wait::Timeout(timeout)),
        Err(Error::Timeout)
    ));
    assert!(matches!(
        b.lock(&c, Kind::Mutex, &path, Wait::Try),
        Err(Error::WouldBlock)
    ));
    b.wait_idle(&c).expect("idle");
    assert_eq!(
        admin.children(&path),
        vec![holder],
        "the waiter left a node"
    );
    b.release(g).expect("release");
    b.wait_idle(&a).expect("idle");
    assert!(admin.children(&path).is_empty());
    b.close(&a);
    b.close(&c);
}

/// Cancelling a waiting acquisition (queued, or with its create still in flight)
/// leaves no node behind.
pub fn cancel_leaves_no_node(b: &Suite) {
    let server = b.env().shared();
    let path = unique_path("cancel");
    let admin = server.admin();
    let (a, c) = (connect(b, server), connect(b, server));
    let g = lock(b, &a, Kind::Mutex, &path);
    let holder = name_of(&b.node_path(&g));
    // Queued: its node exists.
    let p = b.start(&c, Kind::Mutex, &path).expect("start");
    admin.wait_children(&path, SHORT, &|c| c.len() == 2);
    b.cancel(p);
    b.wait_idle(&c).expect("idle");
    assert_eq!(
        admin.children(&path),
        vec![holder.clone()],
        "cancel left a node"
    );
    // At once: the create may still be in flight.
    let p = b.start(&c, Kind::Mutex, &path).expect("start");
    b.cancel(p);
    b.wait_idle(&c).expect("idle");
    assert_eq!(admin.children(&path), vec![holder], "cancel left a node");
    b.release(g).expect("release");
    b.wait_idle(&a).expect("idle");
    assert!(admin.children(&path).is_empty());
    b.close(&a);
    b.close(&c);
}

/// The connection drops after the server applied our create but before its reply
/// reached us: the node is found again (by the attempt id in its name) and adopted,
/// not created twice; the lock is acquired once; nothing is left behind.
pub fn connection_loss_during_create_adopts_node(b: &Suite) {
    let server = b.env().shared();
    let path = unique_path("create-loss");
    let admin = server.admin();
    // The lock directory exists, so the held request is our node's create.
    let other = connect(b, server);
    let g = lock(b, &other, Kind::Mutex, &path);
    b.release(g).expect("release");
    let (c, proxy) = server
        .client_with_held_replies(SESSION_TIMEOUT)
        .expect("an environment with Capability::HoldReplies")
        .unwrap_or_else(|e| panic!("{}: connecting: {e}", b.name()));
    proxy.hold();
    let mut p = b.start(&c, Kind::Mutex, &path).expect("start");
    let created = admin.wait_children(&path, SHORT, &|c| c.len() == 1);
    // Applied on the server, but the client has heard nothing: it cannot be done.
    assert!(
        b.still_pending(&mut p, Duration::from_millis(200)),
        "{}: the acquisition ended while its replies were held",
        b.name()
    );
    proxy.cut(); // the reply to the create is lost with the connection
    let g = b.finish(p, LONG).expect("acquired after the reconnect");
    assert_eq!(
        name_of(&b.node_path(&g)),
        created[0],
        "the node created before the cut must be adopted"
    );
    assert_eq!(admin.children(&path), created, "exactly one node");
    assert!(b.is_trusted(&g));
    b.release(g).expect("release");
    b.wait_idle(&c).expect("idle");
    assert!(admin.children(&path).is_empty(), "nodes left behind");
    b.close(&c);
    b.close(&other);
}

/// A short connection loss while holding: `Suspended`, then `Resumed` once the node
/// is verified on the same session; the lock is still ours.
pub fn short_cut_suspends_then_resumes(b: &Suite) {
    let server = b.env().shared();
    let path = unique_path("short-cut");
    let admin = server.admin();
    let (c, proxy) = connect_with_faults(b, server);
    let mut g = lock(b, &c, Kind::Mutex, &path);
    let (token, node) = (b.token(&g), b.node_path(&g));
    settle(b, &mut g, Kind::Mutex);
    proxy.cut();
    assert_eq!(next_event(b, &mut g, SHORT), LockEvent::Suspended);
    assert_eq!(next_event(b, &mut g, SHORT), LockEvent::Resumed);
    assert!(b.is_trusted(&g));
    assert_eq!(b.token(&g), token);
    assert_eq!(admin.czxid(&node), Some(token), "same node");
    b.release(g).expect("release");
    b.wait_idle(&c).expect("idle");
    assert!(admin.children(&path).is_empty());
    b.close(&c);
}

/// A waiter whose connection drops gets its watch back (ZooKeeper drops a
/// connection's watches; some clients re-register none): after the reconnect it is
/// still handed the lock when the holder releases.
pub fn waiter_rewatches_after_reconnect(b: &Suite) {
    let server = b.env().shared();
    let path = unique_path("rewatch");
    let admin = server.admin();
    let a = connect(b, server);
    let g = lock(b, &a, Kind::Mutex, &path);
    let holder = b.node_path(&g);
    let (c, proxy) = connect_with_faults(b, server);
    let p = b.start(&c, Kind::Mutex, &path).expect("start");
    admin.wait_children(&path, SHORT, &|c| c.len() == 2);
    let watches = wait_until("the waiter watches the holder", SHORT, || {
        let n = b.stats(&c).expect("stats").watches_set;
        (n >= 1).then_some(n)
    });
    proxy.cut();
    wait_until("the waiter watches again after the reconnect", LONG, || {
        (b.stats(&c).expect("stats").watches_set > watches).then_some(())
    });
    let sid = b.session_id(&c).expect("session");
    wait_until("the server holds the new watch", SHORT, || {
        watchers_of(b, server, &holder).contains(&sid).then_some(())
    });
    b.release(g).expect("release");
    let g = b.finish(p, SHORT).expect("the waiter gets the lock");
    b.release(g).expect("release");
    b.wait_idle(&c).expect("idle");
    assert!(admin.children(&path).is_empty());
    b.close(&a);
    b.close(&c);
}

/// A partition longer than the session timeout while holding: the holder reports
/// `Suspended` before the server can expire its session (so before another session
/// can acquire), then `Lost`. After the network heals, no stale node of the old
/// holder blocks anyone, and its client works again (on a new session).
pub fn blackhole_suspends_before_expiry_then_lost(b: &Suite) {
    let server = b.env().shared();
    let path = unique_path("blackhole");
    let admin = server.admin();
    let (cb, proxy) = connect_with_faults(b, server);
    // The waiter's session is not under test, and it idles through the whole
    // partition (several pings): it gets a session timeout a loaded machine can keep
    // alive. With 2 s, the blocking binding's `zookeeper` crate leaves an idle
    // session silent for 2/3 T plus its 100 ms timer tick (measured 1.45 s), so a
    // stall of about half a second expired the waiter's own session (and its
    // release failed with `Lost(SessionExpired)`).
    let ca = connect_with(b, server, BYSTANDER_SESSION_TIMEOUT);
    let gb = lock(b, &cb, Kind::Mutex, &path);
    let old_session = b.session_id(&cb);
    let pa = b.start(&ca, Kind::Mutex, &path).expect("start");
    admin.wait_children(&path, SHORT, &|c| c.len() == 2);
    let seq = AtomicU64::new(0);
    proxy.blackhole();
    let (suspended_at, lost, acquired_at, ga) = thread::scope(|s| {
        let seq = &seq;
        let holder = s.spawn(move || {
            let mut gb = gb;
            // The last suspension not followed by a resumption (a loaded machine may
            // produce a spurious pair before the partition).
            let mut suspended_at = None;
            loop {
                match b.next_event(&mut gb, LONG) {
                    Some(LockEvent::Suspended) => {
                        suspended_at = Some(seq.fetch_add(1, Ordering::SeqCst));
                    }
                    Some(LockEvent::Resumed) => suspended_at = None,
                    Some(LockEvent::Lost(reason)) => return (suspended_at, reason),
                    Some(other) => panic!("{}: unexpected {other:?}", b.name()),
                    None => panic!("{}: the holder heard nothing", b.name()),
                }
            }
        });
        let ga = b
            .finish(pa, LONG)
            .expect("the other session acquires after the expiry");
        let acquired_at = seq.fetch_add(1, Ordering::SeqCst);
        let (suspended_at, lost) = holder.join().expect("holder thread");
        (suspended_at, lost, acquired_at, ga)
    });
    let suspended_at = suspended_at.expect("the holder must report Suspended");
    assert!(
        suspended_at < acquired_at,
        "{}: the holder must be Suspended before another session can acquire",
        b.name()
    );
    assert!(
        matches!(
            lost,
            LostReason::SessionExpired | LostReason::SuspendedTooLong
        ),
        "lost for {lost:?}"
    );
    proxy.heal();
    b.release(ga).expect("release");
    // The old holder's client recovers on a new session; nothing stale blocks it.
    let g = b
        .lock(&cb, Kind::Mutex, &path, Wait::Timeout(LONG))
        .expect("the old holder's client can lock again");
    assert_ne!(b.session_id(&cb), old_session, "a new session");
    b.release(g).expect("release");
    b.wait_idle(&cb).expect("idle");
    assert!(admin.children(&path).is_empty(), "stale nodes left");
    b.close(&ca);
    b.close(&cb);
}

/// An administrator deleting the node of a holder that watches it: the holder
/// hears `Lost(NodeDeleted)` at once.
pub fn admin_delete_gives_lost(b: &Suite) {
    let server = b.env().shared();
    let path = unique_path("admin-delete");
    let admin = server.admin();
    let c = connect(b, server);
    let mut g = lock(b, &c, Kind::WatchedMutex, &path);
    assert!(admin.delete(&b.node_path(&g)));
    let event = expect_event(b, &mut g, SHORT, "Lost", |e| {
        matches!(e, LockEvent::Lost(_))
    });
    assert_eq!(event, LockEvent::Lost(LostReason::NodeDeleted));
    assert!(!b.is_trusted(&g));
    assert!(matches!(
        b.release(g),
        Err(Error::Lost(LostReason::NodeDeleted))
    ));
    let g = lock(b, &c, Kind::Mutex, &path);
    b.release(g).expect("release");
    b.wait_idle(&c).expect("idle");
    assert!(admin.children(&path).is_empty());
    b.close(&c);
}

/// A plain lock watches no node while held (3 requests a cycle): an administrator
/// deleting its node goes unheard until the release, which still succeeds, and
/// the next holder gets in.
pub fn admin_delete_of_a_plain_lock_is_not_watched(b: &Suite) {
    let server = b.env().shared();
    let path = unique_path("admin-delete-plain");
    let admin = server.admin();
    let c = connect(b, server);
    let g = lock(b, &c, Kind::Mutex, &path);
    let node = b.node_path(&g);
    assert!(
        watchers_of(b, server, &node).is_empty(),
        "a plain holder leaves no watch on its node"
    );
    assert!(admin.delete(&node));
    b.release(g)
        .expect("releasing a node already gone is a release");
    let g = lock(b, &c, Kind::Mutex, &path);
    b.release(g).expect("release");
    b.wait_idle(&c).expect("idle");
    assert!(admin.children(&path).is_empty());
    b.close(&c);
}

/// A 3-node ensemble loses its leader while 4 sessions contend: mutual exclusion
/// holds throughout (no two trusted holders, no lost update, tokens increase), and
/// every session goes on acquiring after the new leader is elected (each keeps
/// contending until then, so the loss lands in the middle of the contention).
pub fn ensemble_leader_loss_keeps_exclusion(b: &Suite) {
    const SESSIONS: usize = 4;
    const KILL_AFTER: usize = 10;
    /// Acquisitions each session makes after the new leader is in place.
    const AFTER: usize = 5;
    let ensemble = b
        .env()
        .ensemble()
        .expect("an environment with Capability::Ensemble");
    let ensemble = &*ensemble;
    let path = unique_path("ensemble");
    let counter = AtomicU64::new(0);
    let successes = AtomicUsize::new(0);
    let inside = AtomicBool::new(false);
    let recovered = AtomicBool::new(false);
    let tokens = Mutex::new(Vec::new());
    let errors = Mutex::new(Vec::new());
    let (kill_tx, kill_rx) = mpsc::channel();
    let start = Instant::now();
    let deadline = start + LONG;
    thread::scope(|s| {
        for _ in 0..SESSIONS {
            let kill_tx = kill_tx.clone();
            let (counter, successes, inside, recovered, tokens, path, errors) = (
                &counter, &successes, &inside, &recovered, &tokens, &path, &errors,
            );
            s.spawn(move || {
                let c = ensemble
                    .client(SESSION_TIMEOUT)
                    .unwrap_or_else(|e| panic!("{}: connecting: {e}", b.name()));
                let mut after = 0;
                while after < AFTER {
                    assert!(
                        Instant::now() < deadline,
                        "{}: did not complete ({} acquisitions, recovered: {}, retried after {:?})",
                        b.name(),
                        successes.load(Ordering::SeqCst),
                        recovered.load(Ordering::SeqCst),
                        errors.lock().unwrap()
                    );
                    let recovered_before = recovered.load(Ordering::SeqCst);
                    // Errors (session expired, timeouts during the election) are retried.
                    let g = match b.lock(&c, Kind::Mutex, path, Wait::Timeout(SHORT)) {
                        Ok(g) => g,
                        Err(e) => {
                            errors.lock().unwrap().push(e);
                            continue;
                        }
                    };
                    if !b.is_trusted(&g) {
                        continue;
                    }
                    assert!(!inside.swap(true, Ordering::SeqCst), "two trusted holders");
                    let v = counter.load(Ordering::SeqCst);
                    thread::yield_now();
                    counter.store(v + 1, Ordering::SeqCst);
                    tokens.lock().unwrap().push(b.token(&g));
                    inside.store(false, Ordering::SeqCst);
                    if recovered_before {
                        after += 1;
                    }
                    if successes.fetch_add(1, Ordering::SeqCst) + 1 == KILL_AFTER {
                        let _ = kill_tx.send(());
                    }
                    let _ = b.release(g);
                }
                b.close(&c);
            });
        }
        drop(kill_tx);
        kill_rx.recv().expect("contention started");
        ensemble.lose_leader();
        recovered.store(true, Ordering::SeqCst);
    });
    let total = successes.load(Ordering::SeqCst);
    eprintln!(
        "{}: {total} acquisitions across a leader loss in {:?}; retried after {:?}",
        b.name(),
        start.elapsed(),
        errors.lock().unwrap()
    );
    assert!(total >= KILL_AFTER + SESSIONS * AFTER);
    assert_eq!(counter.load(Ordering::SeqCst), total as u64, "lost update");
    assert_strictly_increasing(&tokens.lock().unwrap(), "ensemble");
}

/// Invalid paths and bad input are refused with typed errors, before anything is
/// sent.
pub fn invalid_paths_give_typed_errors(b: &Suite) {
    let server = b.env().shared();
    let c = connect(b, server);
    let bad = [
        "",
        "relative",
        "/trailing/",
        "/a//b",
        "/a/../b",
        "/",
        "/zookeeper/x",
    ];
    for path in bad {
        for kind in [Kind::Mutex, Kind::Read, Kind::Write, Kind::Semaphore(2)] {
            for wait in [Wait::Try, Wait::Forever] {
                let got = b.lock(&c, kind, path, wait);
                assert!(
                    got.as_ref().is_err_and(Error::is_invalid_path),
                    "{}: {kind:?} on {path:?}: {:?}",
                    b.name(),
                    got.err()
                );
            }
        }
        let started = b
            .start(&c, Kind::Mutex, path)
            .and_then(|p| b.finish(p, SHORT));
        assert!(
            started.as_ref().is_err_and(Error::is_invalid_path),
            "{path:?}"
        );
    }
    let zero = b.lock(&c, Kind::Semaphore(0), &unique_path("zero"), Wait::Try);
    assert!(matches!(zero, Err(Error::Usage(_))), "{:?}", zero.err());
    b.close(&c);
}

/// A closed client: held locks end with `Lost(Closed)`, the session's nodes are
/// gone, and every call gives `Closed`.
pub fn closed_client_gives_typed_errors(b: &Suite) {
    let server = b.env().shared();
    let path = unique_path("closed");
    let admin = server.admin();
    let c = connect(b, server);
    let mut g = lock(b, &c, Kind::Mutex, &path);
    let node = b.node_path(&g);
    b.close(&c);
    let event = expect_event(b, &mut g, SHORT, "Lost", |e| {
        matches!(e, LockEvent::Lost(_))
    });
    assert_eq!(event, LockEvent::Lost(LostReason::Closed));
    assert!(!b.is_trusted(&g));
    admin.wait_deleted(&node, SHORT);
    for wait in [Wait::Try, Wait::Forever, Wait::Timeout(SHORT)] {
        assert!(matches!(
            b.lock(&c, Kind::Mutex, &path, wait),
            Err(Error::Closed)
        ));
    }
    let started = b
        .start(&c, Kind::Read, &path)
        .and_then(|p| b.finish(p, SHORT));
    assert!(matches!(started, Err(Error::Closed)));
    assert!(matches!(b.wait_idle(&c), Err(Error::Closed)));
    assert!(matches!(
        b.release(g),
        Err(Error::Closed | Error::Lost(LostReason::Closed))
    ));
    b.close(&c); // idempotent
    assert_eq!(b.session_id(&c), None);
}

/// Requests per uncontended acquire + release, counted by the server
/// (`zk_packets_received` in `mntr`), on a server of its own.
pub fn requests_per_uncontended_cycle(b: &Suite) {
    let server = b.env().fresh();
    let server = &*server;
    let path = unique_path("requests");
    let packets = || {
        server
            .requests_received()
            .expect("an environment with Capability::RequestCount")
    };
    // A long session timeout: no ping falls into the measurement.
    let c = connect_with(b, server, Duration::from_secs(10));
    // Warm up: the lock directory exists afterwards.
    let g = lock(b, &c, Kind::Mutex, &path);
    b.release(g).expect("release");
    b.wait_idle(&c).expect("idle");
    let m0 = packets();
    let overhead = packets() - m0; // mntr's own connection, if any
    let before = packets();
    let g = lock(b, &c, Kind::Mutex, &path);
    b.release(g).expect("release");
    b.wait_idle(&c).expect("idle");
    let requests = packets() - before - overhead;
    assert_eq!(
        requests,
        b.env().requests_per_cycle(),
        "{}: requests per uncontended acquire + release",
        b.name()
    );
    b.close(&c);
}

/// Rounds per lock kind in [`blackhole_loses_before_another_session_holds`]
/// (five kinds, so 20 blackholes per run of the suite).
const BLACKHOLE_ROUNDS: u32 = 4;

/// What a holder cut off by a blackhole saw, in time from the start of the
/// blackhole, beside when another session was granted the lock.
#[derive(Clone, Copy, Debug)]
pub struct BlackholeTimes {
    /// When the holder heard `Suspended`.
    pub suspended: Duration,
    /// When the holder heard `Lost`.
    pub lost: Duration,
    /// When the other session's acquisition returned the lock.
    pub other_granted: Duration,
}

/// The holder's and the other session's lock kinds, for every recipe that
/// excludes: a mutex, one that watches its node, a write lock, a semaphore of one
/// permit, a read lock blocking a writer.
const EXCLUDING: [(Kind, Kind); 5] = [
    (Kind::Mutex, Kind::Mutex),
    (Kind::WatchedMutex, Kind::WatchedMutex),
    (Kind::Write, Kind::Write),
    (Kind::Semaphore(1), Kind::Semaphore(1)),
    (Kind::Read, Kind::Write),
];

/// A partition longer than the session timeout while holding, many times over,
/// for every recipe: the holder hears `Lost` strictly before another session is
/// granted the lock (the core loses it a margin before the server could expire
/// the session, counted from the binding's last contact, not from the suspension).
/// The holder idles for a different time before each blackhole, so the cut falls
/// at different points of the client's ping cycle. Prints every round's times.
pub fn blackhole_loses_before_another_session_holds(b: &Suite) {
    let server = b.env().shared();
    let times: Vec<(Kind, BlackholeTimes)> = thread::scope(|s| {
        let runs: Vec<_> = EXCLUDING
            .iter()
            .map(|&(holder, other)| {
                s.spawn(move || {
                    (0..BLACKHOLE_ROUNDS)
                        .map(|round| {
                            // Spread over one session timeout (idle phases).
                            let idle = SESSION_TIMEOUT * round / BLACKHOLE_ROUNDS;
                            (holder, blackhole_round(b, server, holder, other, idle))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        runs.into_iter()
            .flat_map(|r| r.join().expect("round thread"))
            .collect()
    });
    for (kind, t) in &times {
        println!(
            "{} {kind:?}: suspended {:?}, lost {:?}, other granted {:?}",
            b.name(),
            t.suspended,
            t.lost,
            t.other_granted
        );
    }
    let column = |f: fn(&BlackholeTimes) -> Duration| {
        let mut v: Vec<Duration> = times.iter().map(|(_, t)| f(t)).collect();
        v.sort();
        format!("{:?} / {:?} / {:?}", v[0], v[v.len() / 2], v[v.len() - 1])
    };
    println!(
        "{} over {} blackholes (session timeout {SESSION_TIMEOUT:?}), min / median / max: \
         suspended {}, lost {}, other granted {}, other granted - lost {}",
        b.name(),
        times.len(),
        column(|t| t.suspended),
        column(|t| t.lost),
        column(|t| t.other_granted),
        column(|t| t.other_granted.saturating_sub(t.lost)),
    );
    for (kind, t) in &times {
        assert!(
            t.lost < t.other_granted,
            "{}: {kind:?} holder lost at {:?}, after another session was granted at {:?}",
            b.name(),
            t.lost,
            t.other_granted
        );
    }
}

/// One round: `holder` kind held through a proxy, `other` kind waiting on a direct
/// connection, the holder's network blackholed after `idle`.
fn blackhole_round(
    b: &Suite,
    server: &dyn Deployment,
    holder: Kind,
    other: Kind,
    idle: Duration,
) -> BlackholeTimes {
    let path = unique_path("blackhole-lost");
    let admin = server.admin();
    let (ch, proxy) = connect_with_faults(b, server);
    let co = connect_with(b, server, BYSTANDER_SESSION_TIMEOUT);
    let mut gh = lock(b, &ch, holder, &path);
    let po = b.start(&co, other, &path).expect("start");
    admin.wait_children(&path, SHORT, &|c| c.len() == 2);
    // Idle (nothing of ours on the wire), then the blackhole; a spurious
    // suspension on a loaded machine is resumed before it starts.
    thread::sleep(idle);
    settle(b, &mut gh, holder);
    let start = Instant::now();
    proxy.blackhole();
    let times = thread::scope(|s| {
        let waiter = s.spawn(|| {
            let g = b
                .finish(po, LONG)
                .expect("the other session acquires after the expiry");
            (start.elapsed(), g)
        });
        let mut suspended = None;
        let lost = loop {
            match b.next_event(&mut gh, LONG) {
                Some(LockEvent::Suspended) => suspended = Some(start.elapsed()),
                Some(LockEvent::Resumed) => panic!("{}: resumed in a blackhole", b.name()),
                Some(LockEvent::Lost(reason)) => {
                    assert!(
                        matches!(
                            reason,
                            LostReason::SuspendedTooLong | LostReason::SessionExpired
                        ),
                        "{}: lost for {reason:?}",
                        b.name()
                    );
                    break start.elapsed();
                }
                Some(_) => {}
                None => panic!("{}: the holder heard nothing", b.name()),
            }
        };
        let (other_granted, go) = waiter.join().expect("waiter");
        b.release(go).expect("release");
        BlackholeTimes {
            suspended: suspended.expect("Suspended before Lost"),
            lost,
            other_granted,
        }
    });
    proxy.heal();
    drop(gh);
    b.close(&ch);
    b.wait_idle(&co).expect("idle");
    b.close(&co);
    times
}

/// A short connection cut while holding, for every recipe and at different points
/// of the client's ping cycle (the holder idles a different time before each
/// cut): `Suspended`, then `Resumed` on the same session, never `Lost`. A cut
/// heals within the lost window whenever the client reconnects at once.
pub fn short_cut_resumes_every_recipe(b: &Suite) {
    let server = b.env().shared();
    thread::scope(|s| {
        for &(kind, _) in &EXCLUDING {
            s.spawn(move || {
                for round in 0..BLACKHOLE_ROUNDS {
                    let idle = SESSION_TIMEOUT * round / BLACKHOLE_ROUNDS;
                    short_cut_round(b, server, kind, idle);
                }
            });
        }
    });
}

fn short_cut_round(b: &Suite, server: &dyn Deployment, kind: Kind, idle: Duration) {
    let path = unique_path("short-cut-every");
    let admin = server.admin();
    let (c, proxy) = connect_with_faults(b, server);
    let mut g = lock(b, &c, kind, &path);
    let token = b.token(&g);
    thread::sleep(idle);
    settle(b, &mut g, kind);
    let session = b.session_id(&c);
    let start = Instant::now();
    proxy.cut();
    let suspended = next_event(b, &mut g, SHORT);
    let resumed = next_event(b, &mut g, SHORT);
    assert_eq!(
        (suspended, resumed),
        (LockEvent::Suspended, LockEvent::Resumed),
        "{}: {kind:?} after {idle:?} idle ({:?} after the cut)",
        b.name(),
        start.elapsed()
    );
    assert_eq!(b.session_id(&c), session, "same session");
    assert!(b.is_trusted(&g));
    assert_eq!(b.token(&g), token);
    b.release(g).expect("release");
    b.wait_idle(&c).expect("idle");
    assert!(admin.children(&path).is_empty());
    b.close(&c);
}
