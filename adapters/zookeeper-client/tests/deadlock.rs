//! Deadlock detection across libraries against a real ZooKeeper server: a mixed
//! cycle with a real kazoo client, which the zklock member breaks as its victim.
//! (Cycles among zklock owners, self-deadlock and participants: the conformance
//! suite's deadlock tests.)

mod common;

use common::peers::{Library, Peer};
use common::{connect, run_tokio, server, unique_path};
use lock_zookeeper_client::{Error, NameScheme};
use std::time::{Duration, Instant};

const SESSION: Duration = Duration::from_secs(10);
const AFTER: Duration = Duration::from_millis(200);
const BOUND: Duration = Duration::from_secs(60);

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
        let mut kazoo = Peer::start_library(Library::Kazoo, &connect_string, "kazoo-k").await;
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
