//! What the next-in-line waiter's watch on its own node buys, on a real server:
//! a waiter that holds as soon as its predecessor goes (from its cached listing,
//! no new round trip) must first know that its own node still exists. zklock
//! sends a `getData` + watch on its own node with the predecessor's watch (and a
//! `removeWatches` once granted: 2 of its requests per contended acquisition
//! that Curator, which lists again after every notification, does not send).
//! ZooKeeper delivers one session's notifications in the order of the changes,
//! so a deletion of our node is known before the predecessor's.
//!
//! The scene: A holds, B waits next in line, an administrator deletes B's node,
//! C queues (behind A: B's node is gone), A releases. zklock: B fails with
//! `NodeDeleted`, C alone holds. The same grant-from-cache rule without the own
//! watch (the bare client below): B and C both hold.

mod common;

use common::{connect, server, spawn, unique_path, Observer};
use lock_zookeeper_client::Error;
use std::time::{Duration, Instant};
use zookeeper_client::{Acls, CreateMode};

const SESSION: Duration = Duration::from_secs(10);

/// Waits until the server holds a data watch on each of `paths` (`wchp`).
fn wait_watched(paths: &[&str]) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let watched = server().four_letter_word("wchp").expect("wchp");
        if paths
            .iter()
            .all(|p| watched.lines().any(|l| l.trim() == *p))
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "never watched: {paths:?}\n{watched}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

rt_tests! {
    /// zklock: the waiter whose node an administrator deleted never holds; the
    /// session queued after the deletion holds alone.
    async fn a_deleted_next_in_line_waiter_fails_and_the_next_holds_alone(rt) {
        let dir = unique_path("admin-waiter", &rt);
        let observer = Observer::connect(&server().connect_string()).await;
        let (a, b, c) = (
            connect(&rt, &server().connect_string(), SESSION).await,
            connect(&rt, &server().connect_string(), SESSION).await,
            connect(&rt, &server().connect_string(), SESSION).await,
        );
        let held = a.mutex(dir.clone()).lock().await.unwrap();
        let waiter = {
            let (b, dir) = (b.clone(), dir.clone());
            spawn(&rt, async move { b.mutex(dir).lock().await })
        };
        let names = observer.wait_children(&dir, 2).await;
        let b_node = format!("{dir}/{}", names.iter().find(|n| **n != held.path().rsplit('/').next().unwrap()).unwrap());
        // B watches A's node (its predecessor) and its own.
        wait_watched(&[held.path(), &b_node]);
        observer.client.delete(&b_node, None).await.unwrap();
        let third = {
            let (c, dir) = (c.clone(), dir.clone());
            spawn(&rt, async move { c.mutex(dir).lock().await.expect("C's lock") })
        };
        observer.wait_children(&dir, 2).await;
        held.release().await.unwrap();
        let c_guard = third.await.unwrap();
        assert_eq!(waiter.await.unwrap().unwrap_err(), Error::NodeDeleted);
        assert_eq!(observer.children(&dir).await, vec![c_guard.path().rsplit('/').next().unwrap().to_owned()]);
        c_guard.release().await.unwrap();
        for client in [a, b, c] {
            client.close().await;
        }
    }
}

/// The bare client with the same rule and no own-node watch: held when the
/// predecessor's watch fires if the listing showed nothing else lower. Returns
/// whether it "holds" (always, once the predecessor goes).
async fn cached_grant(
    client: &zookeeper_client::Client,
    dir: &str,
    queued: &std::sync::Barrier,
) -> String {
    let options = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
    let (_, seq) = client
        .create(&format!("{dir}/n-"), b"", &options)
        .await
        .unwrap();
    let ours = format!("n-{seq}");
    let mut children = client.list_children(dir).await.unwrap();
    children.sort();
    let lower: Vec<&String> = children.iter().filter(|n| **n < ours).collect();
    assert_eq!(lower.len(), 1, "queued right behind the holder");
    let (_, _, watcher) = client
        .get_and_watch_data(&format!("{dir}/{}", lower[0]))
        .await
        .unwrap();
    queued.wait();
    watcher.changed().await;
    format!("{dir}/{ours}")
}

/// Without the own-node watch the same scene ends with two holders: B, whose
/// node is gone, and C.
#[test]
fn without_the_own_watch_a_deleted_waiter_holds_beside_the_next() {
    // Tokio (multi-threaded: the barriers block a worker), with the suite's timeout.
    common::run_tokio(|_| async {
        let dir = "/zkc-tests/admin-waiter-bare";
        let connect = || async {
            zookeeper_client::Client::connector()
                .with_session_timeout(SESSION)
                .connect(&server().connect_string())
                .await
                .unwrap()
        };
        let (admin, a, b, c) = (
            connect().await,
            connect().await,
            connect().await,
            connect().await,
        );
        admin
            .mkdir(dir, &CreateMode::Persistent.with_acls(Acls::anyone_all()))
            .await
            .unwrap();
        let options = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
        let (_, seq) = a.create(&format!("{dir}/n-"), b"", &options).await.unwrap();
        let a_node = format!("{dir}/n-{seq}");
        let queued = std::sync::Arc::new(std::sync::Barrier::new(2));
        let b_task = {
            let (dir, queued) = (dir.to_owned(), queued.clone());
            tokio::spawn(async move { cached_grant(&b, &dir, &queued).await })
        };
        tokio::task::block_in_place(|| queued.wait());
        let b_node = admin
            .list_children(dir)
            .await
            .unwrap()
            .into_iter()
            .map(|n| format!("{dir}/{n}"))
            .find(|n| *n != a_node)
            .unwrap();
        admin.delete(&b_node, None).await.unwrap();
        let c_task = {
            let (dir, queued) = (
                dir.to_owned(),
                std::sync::Arc::new(std::sync::Barrier::new(2)),
            );
            let (q, c) = (queued.clone(), c.clone());
            let task = tokio::spawn(async move { cached_grant(&c, &dir, &q).await });
            tokio::task::block_in_place(|| queued.wait());
            task
        };
        a.delete(&a_node, None).await.unwrap();
        let (b_holds, c_holds) = (b_task.await.unwrap(), c_task.await.unwrap());
        assert_eq!(b_holds, b_node, "B believes it holds");
        assert!(
            admin.check_stat(&b_holds).await.unwrap().is_none(),
            "with a node that is gone"
        );
        assert!(
            admin.check_stat(&c_holds).await.unwrap().is_some(),
            "and C holds too"
        );
        drop(c);
    });
}
