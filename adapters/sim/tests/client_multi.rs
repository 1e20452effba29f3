//! Deadlock prevention through the user API (lock-client's `LockClient`) on the
//! in-process server: multi-locks all-or-nothing and deadlock-free, released on
//! drop and lost with any part; downgrade of a read/write lock. Every wait has a
//! generous bound that turns a hang into a failure; nothing sleeps to synchronise.

use lock_client::{Error, LockClient, LockStatus, LostReason, MultiPart};
use lock_sim::{Server, SimRng};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

const BOUND: Duration = Duration::from_secs(30);

/// The nodes in the lock directory `path` (none if it does not exist).
fn nodes(server: &Server, path: &str) -> Vec<String> {
    server.children(path).unwrap_or_default()
}

#[test]
fn a_multi_lock_that_times_out_on_one_part_holds_none_of_them() {
    let server = Server::new();
    let other = server.client();
    let busy = other.mutex("/m/b").lock_blocking().unwrap();
    let locks = server.client();
    let multi = locks.multi(["/m/c", "/m/b", "/m/a"]);
    assert_eq!(multi.paths(), ["/m/a", "/m/b", "/m/c"], "canonical order");
    let failed = multi.lock_timeout_blocking(Duration::from_millis(300));
    assert!(matches!(failed, Err(Error::Timeout)), "{failed:?}");
    // "/m/a" was taken, then given back before the error returned; "/m/c" was
    // never tried; "/m/b" holds only the other client's node.
    assert!(nodes(&server, "/m/a").is_empty(), "{}", server.dump("/m"));
    assert!(nodes(&server, "/m/c").is_empty(), "{}", server.dump("/m"));
    assert_eq!(nodes(&server, "/m/b").len(), 1, "{}", server.dump("/m"));
    // try_lock: busy, and nothing left behind either.
    assert!(multi.try_lock_blocking().unwrap().is_none());
    assert!(nodes(&server, "/m/a").is_empty(), "{}", server.dump("/m"));
    // Once the part is free, the whole set is taken.
    busy.release_blocking().unwrap();
    let all = multi.lock_timeout_blocking(BOUND).unwrap();
    assert_eq!(all.parts().len(), 3);
    assert_eq!(all.status(), LockStatus::Held);
    all.release_blocking().unwrap();
    for p in ["/m/a", "/m/b", "/m/c"] {
        assert!(nodes(&server, p).is_empty(), "{}", server.dump("/m"));
    }
}

#[test]
fn bad_input_is_refused_with_a_typed_error() {
    let server = Server::new();
    let locks = server.client();
    let twice = locks.multi(["/m/a", "/m/a"]).lock_blocking();
    assert!(
        matches!(&twice, Err(Error::Usage(lock_core::UsageError::DuplicatePath { path })) if path == "/m/a"),
        "{twice:?}"
    );
    let none = locks.multi(Vec::<MultiPart>::new()).lock_blocking();
    assert!(
        matches!(none, Err(Error::Usage(lock_core::UsageError::EmptyMulti))),
        "{none:?}"
    );
    let bad = locks.multi(["/m/a", "relative"]).lock_blocking();
    assert!(matches!(&bad, Err(e) if e.is_invalid_path()), "{bad:?}");
    assert!(nodes(&server, "/m/a").is_empty());
}

#[test]
fn dropping_a_multi_guard_releases_every_part_and_losing_one_part_loses_the_whole() {
    let server = Server::new();
    let locks = server.client();
    let table = locks.rwlock("/m/table");
    let watched = locks.mutex("/m/job").watch_node();
    let multi = locks.multi([
        MultiPart::from(table.read()),
        MultiPart::from(&watched),
        MultiPart::from(locks.semaphore("/m/slots", 2)),
    ]);
    let held = multi.lock_timeout_blocking(BOUND).unwrap();
    assert_eq!(held.tokens().len(), 3);
    drop(held);
    locks.wait_idle_blocking().unwrap();
    for p in ["/m/table", "/m/job", "/m/slots"] {
        assert!(nodes(&server, p).is_empty(), "{}", server.dump("/m"));
    }
    // An administrator deletes one (watched) part's node: the whole is lost.
    let held = multi.lock_timeout_blocking(BOUND).unwrap();
    let job = held
        .parts()
        .iter()
        .find(|g| g.path().starts_with("/m/job/"));
    assert!(server.admin_delete(job.unwrap().path()));
    assert_eq!(held.lost_blocking(), LostReason::NodeDeleted);
    assert_eq!(held.status(), LockStatus::Lost(LostReason::NodeDeleted));
    // Releasing says so, and still lets go of the others.
    assert!(matches!(held.release_blocking(), Err(Error::Lost(_))));
    locks.wait_idle_blocking().unwrap();
    assert!(
        nodes(&server, "/m/table").is_empty(),
        "{}",
        server.dump("/m")
    );
}

#[test]
fn owners_taking_random_overlapping_sets_with_multi_never_deadlock() {
    const OWNERS: usize = 6;
    const LOCKS: usize = 5;
    const ROUNDS: usize = 12;
    let server = Server::new();
    // Who is inside each lock (mutual exclusion checked by the holders).
    let inside: Arc<Vec<AtomicBool>> =
        Arc::new((0..LOCKS).map(|_| AtomicBool::new(false)).collect());
    let meals = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..OWNERS)
        .map(|o| {
            // Each owner: its own session, its own seeded sequence of sets.
            let client: LockClient = server.client().with_owner(format!("owner-{o}"));
            let mut rng = SimRng::new(0x5eed_0000 + o as u64);
            let (inside, meals) = (inside.clone(), meals.clone());
            std::thread::spawn(move || {
                for round in 0..ROUNDS {
                    // 2 to 4 distinct locks, in a random (not canonical) order.
                    let mut set: Vec<usize> = (0..LOCKS).collect();
                    rng.shuffle(&mut set);
                    set.truncate(2 + rng.index(3));
                    let paths: Vec<String> = set.iter().map(|i| format!("/dine/l{i}")).collect();
                    // Without a canonical order these owners would deadlock; with
                    // it, every multi-lock is granted well within the bound.
                    let held = client
                        .multi(paths)
                        .lock_timeout_blocking(BOUND)
                        .unwrap_or_else(|e| panic!("owner-{o} round {round} {set:?}: {e:?}"));
                    for &i in &set {
                        assert!(!inside[i].swap(true, Ordering::SeqCst), "l{i} held twice");
                    }
                    std::thread::yield_now();
                    for &i in &set {
                        inside[i].store(false, Ordering::SeqCst);
                    }
                    held.release_blocking().unwrap();
                    meals.fetch_add(1, Ordering::SeqCst);
                }
                client.close_blocking();
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(meals.load(Ordering::SeqCst), OWNERS * ROUNDS);
}

#[test]
fn a_write_holder_downgrades_to_read_and_writers_queued_behind_wait_for_the_read() {
    let server = Server::new();
    let locks = server.client();
    let table = locks.rwlock("/d/table");
    let write = table.write().lock_timeout_blocking(BOUND).unwrap();
    // Downgrade: the read half is granted at once beside our own write.
    let read = table.read().lock_timeout_blocking(BOUND).unwrap();
    // Inspection applies the same rule: both are holders, nobody waits.
    let seen = locks.participants_blocking("/d/table").unwrap();
    assert_eq!((seen.holders.len(), seen.waiters.len()), (2, 0), "{seen:?}");
    write.release_blocking().unwrap();
    assert_eq!(read.status(), LockStatus::Held);
    // Another client's writer now waits for our read, readers do not.
    let other = server.client();
    assert!(other
        .rwlock("/d/table")
        .write()
        .try_lock_blocking()
        .unwrap()
        .is_none());
    let shared = other.rwlock("/d/table").read().try_lock_blocking().unwrap();
    assert!(shared.is_some());
    drop(shared);
    read.release_blocking().unwrap();
    let w = other
        .rwlock("/d/table")
        .write()
        .lock_timeout_blocking(BOUND)
        .unwrap();
    drop(w);
}

#[test]
fn a_downgrade_behind_a_queued_writer_fails_as_a_self_deadlock() {
    let server = Server::new();
    let locks = server.client();
    let table = locks.rwlock("/d/queued");
    let write = table.write().lock_timeout_blocking(BOUND).unwrap();
    // Another session's writer queues behind our write.
    let other = server.client();
    let queued = other.rwlock("/d/queued").write().start().unwrap();
    // Its session's next request (FIFO) lists the directory after the create.
    let seen = other.participants_blocking("/d/queued").unwrap();
    assert_eq!((seen.holders.len(), seen.waiters.len()), (1, 1));
    let refused = table.read().lock_timeout_blocking(BOUND);
    assert!(
        matches!(&refused, Err(Error::SelfDeadlock { path, .. }) if path == "/d/queued"),
        "{refused:?}"
    );
    // Nothing of the read is left; releasing the write lets the queued writer in.
    write.release_blocking().unwrap();
    let theirs = queued.wait_blocking().unwrap();
    locks.wait_idle_blocking().unwrap();
    assert_eq!(
        nodes(&server, "/d/queued").len(),
        1,
        "{}",
        server.dump("/d")
    );
    drop(theirs);
}

#[test]
fn an_uncontended_multi_lock_costs_a_create_and_a_listing_per_part_and_a_delete_to_release() {
    let server = Server::new();
    let locks = server.client();
    let multi = locks.multi(["/cost/a", "/cost/b", "/cost/c"]);
    // The first time creates the lock directories too.
    multi.lock_blocking().unwrap().release_blocking().unwrap();
    let before = locks.stats_blocking().unwrap().requests;
    let held = multi.lock_blocking().unwrap();
    let taken = locks.stats_blocking().unwrap().requests;
    held.release_blocking().unwrap();
    let released = locks.stats_blocking().unwrap().requests;
    // One pipelined round trip per part (create + getChildren), one after another.
    assert_eq!(taken - before, 6);
    assert_eq!(released - taken, 3);
}
