//! Lock semantics against a real ZooKeeper server (lock-testkit), under every
//! runtime: mutual exclusion, FIFO, read/write, semaphores, timeouts, cancellation,
//! administrator deletion, typed errors.

mod common;

use common::{connect, server, spawn, unique_path, yield_now, Observer};
use futures::FutureExt;
use lock_zookeeper_client::{Error, LockEvent, LockStatus, LostReason, UsageError};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const SESSION: Duration = Duration::from_secs(10);

rt_tests! {
    /// 8 sessions x 50 acquisitions increment a counter with a read-modify-write that
    /// yields in between: any overlap of two holders would lose an update. Fencing
    /// tokens, recorded inside the critical section, must strictly increase.
    async fn mutual_exclusion(rt) {
        const SESSIONS: usize = 8;
        const ROUNDS: u64 = 50;
        let dir = unique_path("mutex", &rt);
        let counter = Arc::new(AtomicU64::new(0));
        let inside = Arc::new(AtomicBool::new(false));
        let tokens = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for _ in 0..SESSIONS {
            let client = connect(&rt, &server().connect_string(), SESSION).await;
            let (dir, counter, inside, tokens) =
                (dir.clone(), counter.clone(), inside.clone(), tokens.clone());
            tasks.push(spawn(&rt, async move {
                let mutex = client.mutex(dir);
                for _ in 0..ROUNDS {
                    let guard = mutex.lock().await.expect("lock");
                    assert!(!inside.swap(true, Ordering::SeqCst), "two holders at once");
                    tokens.lock().unwrap().push(guard.token());
                    let v = counter.load(Ordering::SeqCst);
                    yield_now().await;
                    counter.store(v + 1, Ordering::SeqCst);
                    inside.store(false, Ordering::SeqCst);
                    guard.release().await.expect("release");
                }
                client.close().await;
            }));
        }
        for task in tasks {
            task.await.expect("session task");
        }
        assert_eq!(counter.load(Ordering::SeqCst), SESSIONS as u64 * ROUNDS);
        let tokens = tokens.lock().unwrap().clone();
        assert!(tokens.windows(2).all(|w| w[0] < w[1]), "tokens not increasing");
        let observer = Observer::connect(&server().connect_string()).await;
        assert!(observer.children(&dir).await.is_empty());
    }

    /// Waiters are served in the order they queued.
    async fn fifo_order_of_waiters(rt) {
        const WAITERS: usize = 5;
        let dir = unique_path("fifo", &rt);
        let observer = Observer::connect(&server().connect_string()).await;
        let holder = connect(&rt, &server().connect_string(), SESSION).await;
        let guard = holder.mutex(dir.clone()).lock().await.unwrap();
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for i in 0..WAITERS {
            let client = connect(&rt, &server().connect_string(), SESSION).await;
            let (dir2, order) = (dir.clone(), order.clone());
            tasks.push(spawn(&rt, async move {
                let guard = client.mutex(dir2).lock().await.expect("lock");
                order.lock().unwrap().push(i);
                guard.release().await.expect("release");
                client.close().await;
            }));
            // Queue the next waiter only once this one's node exists.
            observer.wait_children(&dir, i + 2).await;
        }
        guard.release().await.unwrap();
        for task in tasks {
            task.await.unwrap();
        }
        assert_eq!(*order.lock().unwrap(), (0..WAITERS).collect::<Vec<_>>());
        holder.close().await;
    }

    /// Readers share; a writer waits for them and excludes everyone.
    async fn readers_share_writers_exclude(rt) {
        let dir = unique_path("rw", &rt);
        let observer = Observer::connect(&server().connect_string()).await;
        let c1 = connect(&rt, &server().connect_string(), SESSION).await;
        let c2 = connect(&rt, &server().connect_string(), SESSION).await;
        let c3 = connect(&rt, &server().connect_string(), SESSION).await;
        let r1 = c1.rwlock(dir.clone()).read().lock().await.unwrap();
        // A second reader gets in while the first holds.
        let r2 = c2.rwlock(dir.clone()).read().lock().await.unwrap();
        assert_eq!((r1.status(), r2.status()), (LockStatus::Held, LockStatus::Held));
        // A writer does not.
        assert!(c3.rwlock(dir.clone()).write().try_lock().await.unwrap().is_none());
        let readers = Arc::new(AtomicUsize::new(2));
        let writer = {
            let (dir, readers) = (dir.clone(), readers.clone());
            let c3 = c3.clone();
            spawn(&rt, async move {
                let w = c3.rwlock(dir).write().lock().await.expect("write lock");
                assert_eq!(readers.load(Ordering::SeqCst), 0, "writer beside readers");
                w
            })
        };
        observer.wait_children(&dir, 3).await;
        readers.fetch_sub(1, Ordering::SeqCst);
        r1.release().await.unwrap();
        readers.fetch_sub(1, Ordering::SeqCst);
        r2.release().await.unwrap();
        let w = writer.await.unwrap();
        // While the writer holds, neither readers nor writers get in.
        assert!(c1.rwlock(dir.clone()).read().try_lock().await.unwrap().is_none());
        assert!(c2.rwlock(dir.clone()).write().try_lock().await.unwrap().is_none());
        w.release().await.unwrap();
        for c in [&c1, &c2, &c3] {
            c.wait_idle().await.unwrap();
        }
        assert!(observer.children(&dir).await.is_empty());
        for c in [c1, c2, c3] {
            c.close().await;
        }
    }

    /// A waiting writer is not starved by readers that arrive after it: they queue
    /// behind it.
    async fn writer_not_starved_by_later_readers(rt) {
        let dir = unique_path("starve", &rt);
        let observer = Observer::connect(&server().connect_string()).await;
        let c1 = connect(&rt, &server().connect_string(), SESSION).await;
        let c2 = connect(&rt, &server().connect_string(), SESSION).await;
        let c3 = connect(&rt, &server().connect_string(), SESSION).await;
        let r1 = c1.rwlock(dir.clone()).read().lock().await.unwrap();
        let order = Arc::new(Mutex::new(Vec::new()));
        let writer = {
            let (dir, order, c2) = (dir.clone(), order.clone(), c2.clone());
            spawn(&rt, async move {
                let w = c2.rwlock(dir).write().lock().await.expect("write lock");
                order.lock().unwrap().push("writer");
                w.release().await.expect("release");
            })
        };
        observer.wait_children(&dir, 2).await;
        // A reader arriving now, while a reader holds, must not overtake the writer.
        assert!(c3.rwlock(dir.clone()).read().try_lock().await.unwrap().is_none());
        let reader = {
            let (dir, order, c3) = (dir.clone(), order.clone(), c3.clone());
            spawn(&rt, async move {
                let r = c3.rwlock(dir).read().lock().await.expect("read lock");
                order.lock().unwrap().push("late reader");
                r.release().await.expect("release");
            })
        };
        observer.wait_children(&dir, 3).await;
        r1.release().await.unwrap();
        writer.await.unwrap();
        reader.await.unwrap();
        assert_eq!(*order.lock().unwrap(), ["writer", "late reader"]);
        for c in [c1, c2, c3] {
            c.close().await;
        }
    }

    /// semaphore(3): three holders at once, a fourth is refused; under contention
    /// never more than three.
    async fn semaphore_never_exceeds_permits(rt) {
        const PERMITS: u32 = 3;
        const SESSIONS: usize = 6;
        const ROUNDS: usize = 10;
        let dir = unique_path("sem", &rt);
        let mut clients = Vec::new();
        for _ in 0..SESSIONS {
            clients.push(connect(&rt, &server().connect_string(), SESSION).await);
        }
        let mut held = Vec::new();
        for client in &clients[..PERMITS as usize] {
            held.push(client.semaphore(dir.clone(), PERMITS).lock().await.unwrap());
        }
        let extra = clients[PERMITS as usize].semaphore(dir.clone(), PERMITS);
        assert!(extra.try_lock().await.unwrap().is_none());
        for guard in held {
            guard.release().await.unwrap();
        }
        let active = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for client in clients {
            let (dir, active, peak) = (dir.clone(), active.clone(), peak.clone());
            tasks.push(spawn(&rt, async move {
                let sem = client.semaphore(dir, PERMITS);
                for _ in 0..ROUNDS {
                    let permit = sem.lock().await.expect("permit");
                    let now = active.fetch_add(1, Ordering::SeqCst) + 1;
                    peak.fetch_max(now, Ordering::SeqCst);
                    assert!(now <= PERMITS as usize, "{now} holders of a semaphore(3)");
                    yield_now().await;
                    active.fetch_sub(1, Ordering::SeqCst);
                    permit.release().await.expect("release");
                }
                client.close().await;
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        assert!(peak.load(Ordering::SeqCst) <= PERMITS as usize);
    }

    /// A timed-out acquisition fails with `Timeout` and leaves no node behind.
    async fn timeout_leaves_no_node(rt) {
        let dir = unique_path("timeout", &rt);
        let observer = Observer::connect(&server().connect_string()).await;
        let holder = connect(&rt, &server().connect_string(), SESSION).await;
        let waiter = connect(&rt, &server().connect_string(), SESSION).await;
        let guard = holder.mutex(dir.clone()).lock().await.unwrap();
        let result = waiter.mutex(dir.clone()).lock_timeout(Duration::from_millis(300)).await;
        assert_eq!(result.unwrap_err(), Error::Timeout);
        waiter.wait_idle().await.unwrap();
        let holder_node = guard.path().rsplit('/').next().unwrap().to_owned();
        assert_eq!(observer.children(&dir).await, vec![holder_node]);
        // A deadline already past fails at once, without a node.
        let past = std::time::Instant::now();
        assert_eq!(waiter.mutex(dir.clone()).lock_until(past).await.unwrap_err(), Error::Timeout);
        waiter.wait_idle().await.unwrap();
        assert_eq!(observer.children(&dir).await.len(), 1);
        guard.release().await.unwrap();
        assert!(observer.children(&dir).await.is_empty());
        holder.close().await;
        waiter.close().await;
    }

    /// Dropping a `lock()` future cancels it and leaves no node: whether dropped while
    /// waiting, or right after the first poll (the create still in flight).
    async fn cancel_leaves_no_node(rt) {
        let dir = unique_path("cancel", &rt);
        let observer = Observer::connect(&server().connect_string()).await;
        let holder = connect(&rt, &server().connect_string(), SESSION).await;
        let waiter = connect(&rt, &server().connect_string(), SESSION).await;
        let guard = holder.mutex(dir.clone()).lock().await.unwrap();
        let holder_node = guard.path().rsplit('/').next().unwrap().to_owned();
        // Dropped while waiting behind the holder.
        {
            let mutex = waiter.mutex(dir.clone());
            let lock = std::pin::pin!(mutex.lock());
            let queued = std::pin::pin!(observer.wait_children(&dir, 2));
            match futures::future::select(lock, queued).await {
                futures::future::Either::Left((r, _)) => panic!("acquired a held lock: {r:?}"),
                futures::future::Either::Right(_) => {} // the lock future drops here
            }
        }
        waiter.wait_idle().await.unwrap();
        assert_eq!(observer.children(&dir).await, vec![holder_node.clone()]);
        // Dropped right after its first poll.
        for _ in 0..5 {
            let mutex = waiter.mutex(dir.clone());
            assert!(mutex.lock().now_or_never().is_none());
            waiter.wait_idle().await.unwrap();
            assert_eq!(observer.children(&dir).await, vec![holder_node.clone()]);
        }
        // Also for a lock on a directory that does not exist yet (parents created).
        let fresh = format!("{dir}-fresh/deeper");
        assert!(waiter.mutex(fresh.clone()).lock().now_or_never().is_none());
        waiter.wait_idle().await.unwrap();
        assert!(observer.children(&fresh).await.is_empty());
        guard.release().await.unwrap();
        holder.close().await;
        waiter.close().await;
    }

    /// `try_lock` takes a free lock and refuses a busy one without leaving a node; a
    /// dropped guard releases in the background.
    async fn try_lock_and_drop_release(rt) {
        let dir = unique_path("try", &rt);
        let observer = Observer::connect(&server().connect_string()).await;
        let a = connect(&rt, &server().connect_string(), SESSION).await;
        let b = connect(&rt, &server().connect_string(), SESSION).await;
        let guard = a.mutex(dir.clone()).try_lock().await.unwrap().expect("free lock");
        assert!(b.mutex(dir.clone()).try_lock().await.unwrap().is_none());
        b.wait_idle().await.unwrap();
        assert_eq!(observer.children(&dir).await.len(), 1);
        drop(guard);
        a.wait_idle().await.unwrap();
        assert!(observer.children(&dir).await.is_empty());
        let again = b.mutex(dir.clone()).try_lock().await.unwrap().expect("free again");
        again.release().await.unwrap();
        a.close().await;
        b.close().await;
    }

    /// An administrator deleting the node of a holder that watches it: the holder
    /// reports `Lost`, and someone else can take the lock.
    async fn admin_delete_gives_lost(rt) {
        let dir = unique_path("admin", &rt);
        let observer = Observer::connect(&server().connect_string()).await;
        let a = connect(&rt, &server().connect_string(), SESSION).await;
        let b = connect(&rt, &server().connect_string(), SESSION).await;
        let guard = a.mutex(dir.clone()).watch_node().lock().await.unwrap();
        let waiter = {
            let (b, dir) = (b.clone(), dir.clone());
            spawn(&rt, async move { b.mutex(dir).lock().await.expect("lock after deletion") })
        };
        observer.wait_children(&dir, 2).await;
        observer.client.delete(guard.path(), None).await.unwrap();
        assert_eq!(guard.lost().await, LostReason::NodeDeleted);
        assert_eq!(guard.status(), LockStatus::Lost(LostReason::NodeDeleted));
        let next = waiter.await.unwrap();
        assert!(next.token() > guard.token());
        assert_eq!(guard.release().await.unwrap_err(), Error::Lost(LostReason::NodeDeleted));
        next.release().await.unwrap();
        a.close().await;
        b.close().await;
    }

    /// Invalid paths and bad input are typed errors, before anything is sent.
    async fn invalid_input_gives_typed_errors(rt) {
        let client = connect(&rt, &server().connect_string(), SESSION).await;
        for path in ["relative", "/", "/trailing/", "/a//b", "/a/../b", "/zookeeper/x", "/nul\u{0}"] {
            let err = client.mutex(path).lock().await.unwrap_err();
            assert!(err.is_invalid_path(), "{path:?}: {err:?}");
            let err = client.rwlock(path).read().try_lock().await.unwrap_err();
            assert!(err.is_invalid_path(), "{path:?}: {err:?}");
        }
        let err = client.semaphore("/zkc-tests/zero", 0).lock().await.unwrap_err();
        assert_eq!(err, Error::Usage(UsageError::ZeroPermits));
        let big = vec![0u8; 2 * 1024 * 1024];
        let err = client.mutex("/zkc-tests/big").with_data(big).lock().await.unwrap_err();
        assert!(matches!(err, Error::Usage(UsageError::DataTooLarge { .. })), "{err:?}");
        client.wait_idle().await.unwrap();
        assert_eq!(client.stats().await.unwrap().requests, 0);
        client.close().await;
    }

    /// Input that would make a request larger than the server's packet limit
    /// (jute.maxbuffer, 1 MiB - 1) is refused before anything is sent: sent, it made
    /// the server drop the connection, and every reconnect re-sent it. Data up to the
    /// documented room is accepted by a real server, and the client stays healthy.
    async fn oversized_input_is_refused_and_the_client_keeps_working(rt) {
        let dir = unique_path("oversized", &rt);
        let client = connect(&rt, &server().connect_string(), SESSION).await;
        let huge = format!("/{}", "p".repeat(1_100_000));
        let err = client.mutex(huge.clone()).lock().await.unwrap_err();
        assert!(err.is_invalid_path(), "{err:?}");
        let err = client.rwlock(huge).write().try_lock().await.unwrap_err();
        assert!(err.is_invalid_path(), "{err:?}");
        let room = lock_core::Config::default().max_data_len(&dir).unwrap();
        let err = client.mutex(dir.clone()).with_data(vec![0u8; room + 1]).lock().await.unwrap_err();
        assert_eq!(err, Error::Usage(UsageError::DataTooLarge { len: room + 1, max: room }));
        client.wait_idle().await.unwrap();
        assert_eq!(client.stats().await.unwrap().requests, 0, "nothing was sent");
        // The largest data allowed really fits in one request to the server.
        let guard = client
            .mutex(dir.clone())
            .with_data(vec![7u8; room])
            .lock_timeout(Duration::from_secs(20))
            .await
            .expect("data at the limit is accepted");
        guard.release().await.unwrap();
        let next = client.mutex(dir).lock_timeout(Duration::from_secs(20)).await.unwrap();
        next.release().await.unwrap();
        client.wait_idle().await.unwrap();
        let stats = client.stats().await.unwrap();
        assert_eq!(stats.stale_replies, 0, "no request was lost to a dropped connection");
        assert!(client.is_connected());
        client.close().await;
    }

    /// A read lock upgraded to write by its own `RwLock` would wait for itself forever:
    /// refused at once with a typed error (a try finds it busy); another `RwLock` of
    /// the same client contends as usual and gets the write lock once the read goes.
    async fn a_read_lock_upgraded_to_write_is_refused_at_once(rt) {
        let dir = unique_path("upgrade", &rt);
        let client = connect(&rt, &server().connect_string(), SESSION).await;
        let table = client.rwlock(dir.clone());
        let reader = table.read().lock().await.unwrap();
        let upgrade = table.write().lock_timeout(Duration::from_secs(30)).await.unwrap_err();
        assert!(
            matches!(&upgrade, Error::SelfDeadlock { held: lock_core::NodeKind::Read, .. }),
            "{upgrade:?}"
        );
        assert!(table.write().try_lock().await.unwrap().is_none());
        let second_reader = table.read().lock().await.expect("reads share");
        let writer = {
            let other = client.rwlock(dir.clone());
            spawn(&rt, async move { other.write().lock().await.expect("write after the reads") })
        };
        let observer = Observer::connect(&server().connect_string()).await;
        observer.wait_children(&dir, 3).await;
        reader.release().await.unwrap();
        second_reader.release().await.unwrap();
        let writer = writer.await.unwrap();
        writer.release().await.unwrap();
        client.close().await;
    }

    /// Many waiters on ONE session: a release wakes only the waiter queued behind
    /// the released node, so the queue drains with about 2 requests per acquisition
    /// (the predecessor's delete and one listing), as across sessions. Before, every
    /// waiter of the session woke and re-listed: quadratic.
    async fn one_sessions_waiters_drain_without_a_herd(rt) {
        const WAITERS: usize = 200;
        let dir = unique_path("herd", &rt);
        let client = connect(&rt, &server().connect_string(), SESSION).await;
        let observer = Observer::connect(&server().connect_string()).await;
        let holder = client.mutex(dir.clone()).lock().await.unwrap();
        let mut waiters = Vec::new();
        for k in 0..WAITERS {
            let mutex = client.mutex(dir.clone());
            waiters.push(spawn(&rt, async move {
                let guard = mutex.lock().await.expect("lock");
                guard.release().await.expect("release");
            }));
            // Queue order is creation order: wait for each node.
            observer.wait_children(&dir, k + 2).await;
        }
        // Every waiter has set its watch on its predecessor.
        let before = loop {
            let stats = client.stats().await.unwrap();
            if stats.watches_set >= WAITERS as u64 {
                break stats;
            }
            common::sleep(Duration::from_millis(10)).await;
        };
        holder.release().await.unwrap();
        for w in waiters {
            w.await.unwrap();
        }
        client.wait_idle().await.unwrap();
        let after = client.stats().await.unwrap();
        let per_acquisition = (after.requests - before.requests) as f64 / (WAITERS + 1) as f64;
        let wakeups = after.handoff_notifications - before.handoff_notifications;
        assert_eq!(wakeups, WAITERS as u64, "one waiter woken per release");
        assert!(per_acquisition <= 3.0, "{per_acquisition:.2} requests per acquisition");
        client.close().await;
    }

    /// A semaphore records its permit count in its node name: one taken with
    /// another count on the same path is refused (permits=1 and permits=5 both
    /// held before), and its node is removed.
    async fn a_semaphore_with_another_permit_count_is_refused(rt) {
        let dir = unique_path("permits", &rt);
        let client = connect(&rt, &server().connect_string(), SESSION).await;
        let one = client.semaphore(dir.clone(), 1).lock().await.unwrap();
        let err = client.semaphore(dir.clone(), 5).lock_timeout(Duration::from_secs(20)).await.unwrap_err();
        assert_eq!(
            err,
            Error::Failed(lock_core::FailReason::PermitsMismatch { ours: 5, theirs: 1 })
        );
        let observer = Observer::connect(&server().connect_string()).await;
        let left = observer.wait_children(&dir, 1).await;
        assert!(left[0].contains("-sem1-"), "only the holder's node is left: {left:?}");
        one.release().await.unwrap();
        client.close().await;
    }

    /// A closed client: held locks are lost with `Closed`, waiting ones fail, and every
    /// later call returns `Error::Closed`.
    async fn closed_client_gives_typed_errors(rt) {
        let dir = unique_path("closed", &rt);
        let observer = Observer::connect(&server().connect_string()).await;
        let other = connect(&rt, &server().connect_string(), SESSION).await;
        let client = connect(&rt, &server().connect_string(), SESSION).await;
        let held = client.mutex(format!("{dir}-held")).lock().await.unwrap();
        let blocker = other.mutex(dir.clone()).lock().await.unwrap();
        let waiting = {
            let (client, dir) = (client.clone(), dir.clone());
            spawn(&rt, async move { client.mutex(dir).lock().await })
        };
        observer.wait_children(&dir, 2).await;
        let mutex = client.mutex(dir.clone());
        client.close().await;
        assert_eq!(waiting.await.unwrap().unwrap_err(), Error::Closed);
        assert_eq!(held.next_event().await, Some(LockEvent::Lost(LostReason::Closed)));
        assert_eq!(held.status(), LockStatus::Lost(LostReason::Closed));
        assert_eq!(held.release().await.unwrap_err(), Error::Lost(LostReason::Closed));
        assert_eq!(mutex.lock().await.unwrap_err(), Error::Closed);
        assert_eq!(mutex.try_lock().await.unwrap_err(), Error::Closed);
        assert_eq!(client.wait_idle().await.unwrap_err(), Error::Closed);
        assert_eq!(client.stats().await.unwrap_err(), Error::Closed);
        assert_eq!(client.session_id(), None);
        client.close().await; // idempotent
        // The server removed the closed session's nodes.
        assert_eq!(observer.children(&dir).await.len(), 1);
        assert!(observer.children(&format!("{dir}-held")).await.is_empty());
        blocker.release().await.unwrap();
        other.close().await;
    }
}
