//! Prevention and reentrancy against a real ZooKeeper server (lock-testkit):
//! multi-locks all-or-nothing and deadlock-free across sessions, downgrade of a
//! read/write lock (and its refusal behind a queued writer), reentrant mutexes.
//! Runs under tokio only: what is tested is the protocol on the wire. Waits are on
//! events, bounded by the test timeout; nothing sleeps to synchronise.

mod common;

use common::{connect, run_tokio, server, spawn, unique_path, Observer};
use lock_zookeeper_client::{Error, LockClient, LockStatus};
use std::time::Duration;

const SESSION: Duration = Duration::from_secs(10);
const BOUND: Duration = Duration::from_secs(60);

#[test]
fn a_multi_lock_is_all_or_nothing_and_two_of_them_in_opposite_orders_never_deadlock() {
    run_tokio(|rt| async move {
        let dir = unique_path("multi", &rt);
        let connect_string = server().connect_string();
        let observer = Observer::connect(&connect_string).await;
        let (a, b, c) = (format!("{dir}/a"), format!("{dir}/b"), format!("{dir}/c"));

        // All or nothing: another session holds b; the multi times out on it, and
        // leaves no node in a (taken, then given back) nor in c (never tried).
        let holder = connect(&rt, &connect_string, SESSION).await;
        let busy = holder.mutex(b.clone()).lock().await.unwrap();
        let locks = connect(&rt, &connect_string, SESSION).await;
        let multi = locks.multi([c.clone(), b.clone(), a.clone()]);
        let failed = multi.lock_timeout(Duration::from_millis(500)).await;
        assert!(matches!(failed, Err(Error::Timeout)), "{failed:?}");
        assert!(observer.children(&a).await.is_empty());
        assert!(observer.children(&c).await.is_empty());
        assert_eq!(observer.children(&b).await.len(), 1);
        busy.release().await.unwrap();

        // Two sessions name overlapping sets in opposite orders, many times over:
        // both take them in one canonical order, so neither ever waits holding
        // what the other needs. Each round is bounded; a deadlock would time out.
        let rounds = 15;
        let party = |client: LockClient, parts: Vec<String>| {
            spawn(&rt, async move {
                for _ in 0..rounds {
                    let held = client.multi(parts.clone()).lock_timeout(BOUND).await?;
                    assert_eq!(held.status(), LockStatus::Held);
                    held.release().await?;
                }
                client.close().await;
                Ok::<(), Error>(())
            })
        };
        let other = connect(&rt, &connect_string, SESSION).await;
        let t1 = party(locks, vec![a.clone(), b.clone(), c.clone()]);
        let t2 = party(other, vec![c.clone(), b.clone(), a.clone()]);
        t1.await.unwrap().unwrap();
        t2.await.unwrap().unwrap();
        for p in [&a, &b, &c] {
            assert!(observer.children(p).await.is_empty());
        }
        holder.close().await;
    });
}

#[test]
fn a_write_holder_downgrades_to_read_but_not_behind_a_queued_writer() {
    run_tokio(|rt| async move {
        let dir = unique_path("downgrade", &rt);
        let connect_string = server().connect_string();
        let observer = Observer::connect(&connect_string).await;
        let locks = connect(&rt, &connect_string, SESSION).await;
        let other = connect(&rt, &connect_string, SESSION).await;

        // Downgrade: the read half is granted beside our own write, which then goes.
        let table = locks.rwlock(format!("{dir}/t"));
        let write = table.write().lock().await.unwrap();
        let read = table.read().lock_timeout(BOUND).await.unwrap();
        // Inspection applies the same rule: both are holders, nobody waits.
        let seen = other.participants(format!("{dir}/t")).await.unwrap();
        assert_eq!((seen.holders.len(), seen.waiters.len()), (2, 0), "{seen:?}");
        write.release().await.unwrap();
        assert_eq!(read.status(), LockStatus::Held);
        let theirs = other.rwlock(format!("{dir}/t"));
        assert!(theirs.write().try_lock().await.unwrap().is_none());
        let shared = theirs.read().try_lock().await.unwrap();
        assert!(shared.is_some(), "readers share with the downgraded read");
        drop(shared);
        read.release().await.unwrap();

        // A writer of another session queued behind our write: the read would wait
        // for it, and it for us. Refused at the first listing, node removed.
        let queued_path = format!("{dir}/q");
        let table = locks.rwlock(queued_path.clone());
        let write = table.write().lock().await.unwrap();
        let queued = other.rwlock(queued_path.clone()).write().start().unwrap();
        // Its session's next request (FIFO) lists the directory after the create.
        let seen = other.participants(queued_path.clone()).await.unwrap();
        assert_eq!((seen.holders.len(), seen.waiters.len()), (1, 1));
        let refused = table.read().lock_timeout(BOUND).await;
        assert!(
            matches!(&refused, Err(Error::SelfDeadlock { path, .. }) if *path == queued_path),
            "{refused:?}"
        );
        write.release().await.unwrap();
        let theirs = queued.await.unwrap();
        locks.wait_idle().await.unwrap();
        assert_eq!(observer.children(&queued_path).await.len(), 1);
        theirs.release().await.unwrap();
        locks.close().await;
        other.close().await;
    });
}

#[test]
fn a_reentrant_mutex_holds_one_node_until_its_last_hold_goes() {
    run_tokio(|rt| async move {
        let dir = unique_path("reentrant", &rt);
        let connect_string = server().connect_string();
        let observer = Observer::connect(&connect_string).await;
        let locks = connect(&rt, &connect_string, SESSION)
            .await
            .with_owner("worker");
        let path = format!("{dir}/job");
        let job = locks.mutex(path.clone()).reentrant();
        let outer = job.lock().await.unwrap();
        let inner = job.lock().await.unwrap();
        assert_eq!(observer.children(&path).await.len(), 1);
        assert_eq!((inner.token(), inner.holds()), (outer.token(), 2));
        inner.release().await.unwrap();
        assert_eq!(observer.children(&path).await.len(), 1, "still held");
        outer.release().await.unwrap();
        assert!(observer.children(&path).await.is_empty());
        // Without opt-in, re-entering is refused as before.
        let plain = locks.mutex(path.clone()).lock().await.unwrap();
        let again = locks.mutex(path.clone()).lock().await;
        assert!(
            matches!(again, Err(Error::SelfDeadlock { .. })),
            "{again:?}"
        );
        plain.release().await.unwrap();
        locks.close().await;
    });
}
