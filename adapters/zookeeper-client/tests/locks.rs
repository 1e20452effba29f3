//! Lock semantics of this binding's own against a real ZooKeeper server
//! (lock-testkit), under every runtime: oversized input, a refused upgrade, one
//! session's waiters without a herd. What every binding must do (exclusion, FIFO,
//! read/write, semaphores, timeouts, cancellation, administrator deletion, typed
//! errors) is in the conformance suite (lock-conformance's `suite/locks.rs`,
//! `suite/faults.rs`); a semaphore refusing another permit count is lock-core's
//! (`core/tests/recipes.rs`), on a real server `zklock exec`'s (`cli/tests/inspect.rs`)
//! and the kazoo interop's.

mod common;

use common::{connect, server, spawn, unique_path, Observer};
use lock_zookeeper_client::{Error, UsageError};
use std::time::Duration;

const SESSION: Duration = Duration::from_secs(10);

rt_tests! {
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
    /// the released node (not every waiter of the session, which would re-list:
    /// quadratic), so the queue drains with about 2 requests per acquisition (the
    /// predecessor's delete and one listing), as across sessions.
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
}
