//! Owners, inspection and distributed deadlock detection against a real ZooKeeper
//! server (lock-testkit), under every runtime: two- and three-party cycles across
//! sessions broken with exactly one victim, participants listing owners in queue
//! order, and a self-deadlock refused at once. Under tokio only (the protocol on
//! the wire is the subject): a mixed cycle with a real kazoo client, which the
//! zklock member breaks as its victim.
//! Waits are on events, bounded by the test timeout; nothing sleeps to synchronise.

mod common;

use common::peers::Peer;
use common::{connect, run_tokio, server, spawn, unique_path, Observer};
use lock_zookeeper_client::{Error, NameScheme, NodeKind};
use std::time::{Duration, Instant};

const SESSION: Duration = Duration::from_secs(10);
const AFTER: Duration = Duration::from_millis(200);
const BOUND: Duration = Duration::from_secs(60);

rt_tests! {
    /// Two, then three owners on as many sessions and locks in a ring, each holding
    /// one lock and waiting for the next: exactly one victim fails with `Deadlock`
    /// (the cycle starting at its wait, naming every owner), releases what it holds,
    /// and the others acquire in turn.
    async fn a_cycle_across_sessions_is_broken_by_one_victim(rt) {
        for n in [2, 3] {
            let dir = unique_path(&format!("deadlock{n}"), &rt);
            let mut tasks = Vec::new();
            let mut parties = Vec::new();
            for i in 0..n {
                let client = connect(&rt, &server().connect_string(), SESSION)
                    .await
                    .with_owner(format!("P{i}"));
                let held = client.mutex(format!("{dir}/l{i}")).lock().await.unwrap();
                parties.push((client, held));
            }
            for (i, (client, held)) in parties.into_iter().enumerate() {
                let want = format!("{dir}/l{}", (i + 1) % n);
                tasks.push(spawn(&rt, async move {
                    let start = Instant::now();
                    let result = client.mutex(want).detect_deadlocks(AFTER).lock_timeout(BOUND).await;
                    let waited = start.elapsed();
                    let outcome = match result {
                        Ok(guard) => {
                            guard.release().await.unwrap();
                            None
                        }
                        Err(Error::Deadlock { cycle }) => Some((format!("P{i}"), cycle, waited)),
                        Err(e) => panic!("{e:?}"),
                    };
                    held.release().await.unwrap();
                    client.close().await;
                    outcome
                }));
            }
            let mut victims = Vec::new();
            for task in tasks {
                victims.extend(task.await.unwrap());
            }
            assert_eq!(victims.len(), 1, "{n} parties: not exactly one victim: {victims:?}");
            let (victim, cycle, waited) = &victims[0];
            assert_eq!(cycle.len(), 2 * n, "{n} parties: {cycle:?}");
            assert_eq!(cycle[0].owner.as_ref(), Some(victim), "{cycle:?}");
            assert!(!cycle[0].holds, "the cycle starts at the victim's wait: {cycle:?}");
            let mut owners: Vec<_> = cycle.iter().filter_map(|p| p.owner.clone()).collect();
            owners.sort();
            owners.dedup();
            assert_eq!(owners, (0..n).map(|i| format!("P{i}")).collect::<Vec<_>>());
            assert!(*waited >= AFTER);
            println!("real server: {n}-party cycle broken {waited:?} after the victim began to wait (detect_after {AFTER:?})");
            let observer = Observer::connect(&server().connect_string()).await;
            for i in 0..n {
                assert!(observer.children(&format!("{dir}/l{i}")).await.is_empty());
            }
        }
    }

    /// Holders and waiters with their owners, sessions and tokens, in queue order;
    /// a self-deadlock is refused at once.
    async fn participants_in_queue_order_and_self_deadlock(rt) {
        let dir = unique_path("participants", &rt);
        let holder = connect(&rt, &server().connect_string(), SESSION).await.with_owner("H");
        let waiters = connect(&rt, &server().connect_string(), SESSION).await;
        let guard = holder.mutex(dir.clone()).with_data("payload").lock().await.unwrap();
        let err = holder.mutex(dir.clone()).lock_timeout(BOUND).await.unwrap_err();
        assert!(
            matches!(&err, Error::SelfDeadlock { held: NodeKind::Write, owner, .. } if owner == "H"),
            "{err:?}"
        );
        let pending: Vec<_> = ["W1", "W2"]
            .iter()
            .map(|w| waiters.mutex(dir.clone()).owner(*w).start().unwrap())
            .collect();
        let observer = Observer::connect(&server().connect_string()).await;
        observer.wait_children(&dir, 3).await;
        let found = waiters.participants(dir.clone()).await.unwrap();
        assert_eq!(found.holders.len(), 1);
        let h = &found.holders[0];
        assert_eq!(h.owner.as_deref(), Some("H"));
        assert_eq!(h.session, holder.session_id().unwrap());
        assert_eq!(h.token, guard.token());
        assert_eq!(h.data, b"payload");
        assert!(h.ctime > 0, "the real server gives ctime");
        let owners: Vec<_> = found.waiters.iter().map(|w| w.owner.clone().unwrap()).collect();
        assert_eq!(owners, ["W1", "W2"]);
        assert!(found.waiters[0].token > h.token && found.waiters[1].token > found.waiters[0].token);
        assert_eq!(found.waiters[0].waits_for, std::slice::from_ref(&h.node));
        assert!(holder.deadlocks(dir.clone()).await.unwrap().is_empty());
        for p in pending {
            p.cancel();
        }
        guard.release().await.unwrap();
        holder.close().await;
        waiters.close().await;
    }
}

/// kazoo client K (its own process and session, `Lock` with identifier "K") holds a
/// and waits for b; zklock owner Z holds b and waits for a, both with kazoo names so
/// that they share kazoo's queues. K publishes nothing, yet Z's chase infers K's
/// wait (its waiting node on the same session, under the same identifier) and
/// confirms the cycle; Z is the victim (K cannot be), releases b, and K gets it.
#[test]
fn a_mixed_cycle_with_a_kazoo_client_is_broken_by_the_zklock_member() {
    run_tokio(|rt| async move {
        let dir = unique_path("deadlock-kazoo", &rt);
        let (a, b) = (format!("{dir}/a"), format!("{dir}/b"));
        let connect_string = server().connect_string();
        let mut kazoo = Peer::kazoo(&connect_string, "kazoo-k").await;
        kazoo.send("s1", &format!("acquire mutex {a} K"));
        let ka = kazoo.held("s1").await;
        let z = connect(&rt, &connect_string, SESSION).await.with_owner("Z");
        let zb = z
            .mutex(b.clone())
            .with_scheme(NameScheme::Kazoo)
            .lock()
            .await
            .unwrap();
        // K queues for b behind Z's node (kazoo's own Lock, its own thread).
        kazoo.send("s2", &format!("acquire mutex {b} K"));
        let start = Instant::now();
        let result = z
            .mutex(a.clone())
            .with_scheme(NameScheme::Kazoo)
            .detect_deadlocks(AFTER)
            .lock_timeout(BOUND)
            .await;
        let waited = start.elapsed();
        let Err(Error::Deadlock { cycle }) = result else {
            panic!("the zklock member is not the victim: {result:?}")
        };
        let owners: Vec<_> = cycle.iter().map(|n| n.owner.as_deref()).collect();
        assert_eq!(
            owners,
            [Some("Z"), Some("K"), Some("K"), Some("Z")],
            "{cycle:?}"
        );
        assert!(!cycle[0].holds && cycle[1].holds && !cycle[2].holds && cycle[3].holds);
        assert!(cycle[1].node.ends_with(&ka), "{cycle:?}");
        assert_eq!(cycle[3].node, zb.path());
        // The victim's node is gone (its delete went out with the failure, before
        // this listing on the same session); K still holds a.
        let left = z.participants(a.clone()).await.unwrap();
        let nodes: Vec<_> = left
            .holders
            .iter()
            .chain(&left.waiters)
            .map(|p| p.node.clone())
            .collect();
        assert_eq!(nodes, std::slice::from_ref(&ka));
        assert_eq!(left.holders[0].owner.as_deref(), Some("K"));
        println!("real server: kazoo mixed cycle broken {waited:?} after zklock began to wait (detect_after {AFTER:?})");
        // Z lets go of b: kazoo gets it.
        zb.release().await.unwrap();
        let kb = kazoo.held("s2").await;
        assert!(kb.contains("__lock__"), "{kb}");
        kazoo.release("s2").await;
        kazoo.release("s1").await;
        z.close().await;
    });
}
