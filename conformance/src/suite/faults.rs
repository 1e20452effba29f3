//! Faults: a lost create reply, a waiter's connection cut, an administrator
//! deleting nodes, an ensemble losing its leader (a holder's cuts and partitions
//! are `rounds.rs`'s, for every recipe).

use super::*;

/// The connection drops after the server applied our create but before its reply
/// reached us: the node is found again (by the attempt id in its name) and adopted,
/// not created twice; the lock is acquired once; nothing is left behind.
pub fn connection_loss_during_create_adopts_node(b: &Suite) {
    let (server, path, admin) = shared(b, "create-loss");
    // The lock directory exists, so the held request is our node's create.
    let other = connect(b, server);
    let g = lock(b, &other, Kind::Mutex, &path);
    b.release(g).expect("release");
    let (c, proxy) = connect_with_faults(b, server);
    proxy.hold_replies();
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
        name_of(g.path()),
        created[0],
        "the node created before the cut must be adopted"
    );
    assert_eq!(admin.children(&path), created, "exactly one node");
    assert!(b.is_trusted(&g));
    assert_eq!(b.stats(&c).expect("stats").acquired, 1, "acquired once");
    // The token is the adopted node's czxid (read after the adoption).
    assert_eq!(admin.czxid(g.path()), Some(g.token().0));
    release_clean(b, &c, g, &path);
    b.close(&c);
    b.close(&other);
}

/// A waiter whose connection drops gets its watch back (ZooKeeper drops a
/// connection's watches; some clients re-register none): after the reconnect it is
/// still handed the lock when the holder releases.
pub fn waiter_rewatches_after_reconnect(b: &Suite) {
    let (server, path, admin) = shared(b, "rewatch");
    let a = connect(b, server);
    let g = lock(b, &a, Kind::Mutex, &path);
    let holder = g.path().to_owned();
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
    let sid = c.session_id().expect("session");
    wait_until("the server holds the new watch", SHORT, || {
        watchers_of(b, server, &holder).contains(&sid).then_some(())
    });
    b.release(g).expect("release");
    let g = b.finish(p, SHORT).expect("the waiter gets the lock");
    release_clean(b, &c, g, &path);
    b.close(&a);
    b.close(&c);
}

/// An administrator deleting the node of a holder that watches it: the holder
/// hears `Lost(NodeDeleted)` at once, and the waiter on another session gets the
/// lock with a greater token.
pub fn admin_delete_gives_lost(b: &Suite) {
    let (server, path, admin) = shared(b, "admin-delete");
    let (c, other) = (connect(b, server), connect(b, server));
    let mut g = lock(b, &c, Kind::WatchedMutex, &path);
    let waiter = b
        .start(&other, Kind::Mutex, &path)
        .expect("start the waiter");
    admin.wait_children(&path, SHORT, &|c| c.len() == 2);
    assert!(admin.delete(g.path()));
    expect_lost(b, &mut g, LostReason::NodeDeleted);
    assert_eq!(
        g.status(),
        lock_client::LockStatus::Lost(LostReason::NodeDeleted)
    );
    let next = b.finish(waiter, SHORT).expect("the waiter gets the lock");
    assert!(next.token().0 > g.token().0);
    b.release(next).expect("release");
    b.close(&other);
    released_lost_then_relocked(b, &c, g, &path);
}

/// Releasing the lost `g` reports the loss; `c` then takes and releases the lock at
/// `path` again, leaving nothing behind, and closes.
fn released_lost_then_relocked(b: &Suite, c: &LockClient, g: LockGuard, path: &str) {
    assert_eq!(b.release(g), Err(Error::Lost(LostReason::NodeDeleted)));
    let g = lock(b, c, Kind::Mutex, path);
    release_clean(b, c, g, path);
    b.close(c);
}

/// A plain lock costs no watch on a short hold (3 requests a cycle on a client
/// whose `create` returns the stat), but a hold that outlives the session's sync
/// interval watches its node (one read, at most two intervals after the grant):
/// an administrator deleting its node is then heard at once, `Lost(NodeDeleted)`
/// (another holder may have been granted meanwhile); the release reports the loss
/// too, and the next holder gets in.
pub fn admin_delete_of_a_plain_lock_is_heard_within_two_sync_intervals(b: &Suite) {
    let (server, path, admin) = shared(b, "admin-delete-plain");
    let c = connect(b, server);
    let mut g = lock(b, &c, Kind::Mutex, &path);
    let node = g.path().to_owned();
    // Two sync intervals (T/20 each at the default) and a generous margin for a
    // loaded machine: the watch is then set.
    let interval = lock_core::Config::default_sync_interval(SESSION_TIMEOUT);
    let deadline = Instant::now() + 2 * interval + SHORT;
    while watchers_of(b, server, &node).is_empty() {
        assert!(
            Instant::now() < deadline,
            "{}: a plain holder watches its node within two sync intervals",
            b.name()
        );
        std::thread::sleep(interval / 5);
    }
    assert!(admin.delete(&node));
    expect_lost(b, &mut g, LostReason::NodeDeleted);
    released_lost_then_relocked(b, &c, g, &path);
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
        .ensemble(Duration::from_millis(100))
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
                    tokens.lock().unwrap().push(g.token().0);
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
