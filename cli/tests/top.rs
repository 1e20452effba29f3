//! `zklock top --once` against a real ZooKeeper (lock-testkit): holders, waiters
//! and a deadlock under one root, printed as one table.

mod common;

use common::*;
use lock_zookeeper_client::LockClient;
use std::time::Duration;

const LONG: Duration = Duration::from_secs(30);

/// Waits until `path` has `n` waiters.
async fn queued(locks: &LockClient, path: &str, n: usize) {
    let until = std::time::Instant::now() + LONG;
    while locks.participants(path.to_owned()).await.unwrap().waiters.len() < n {
        assert!(std::time::Instant::now() < until, "{path} never had {n} waiter(s)");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Under ROOT: alice holds /a and waits for /b, bob holds /b and waits for /a (a
/// deadlock); carol holds /c with dave and an owner-less session waiting. `top
/// --once` lists the three locks, the deadlocked ones first and marked, with
/// owners, tokens and queue depths.
#[test]
fn once_prints_holders_waiters_and_deadlocks() {
    let zk = server().connect_string();
    let root = unique("top");
    let (a, b, c) = (format!("{root}/a"), format!("{root}/b"), format!("{root}/c"));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (tokens, out) = rt.block_on(async {
        let connect = || lock_zookeeper_client::connect(&zk);
        let (one, two, three) = (connect().await.unwrap(), connect().await.unwrap(), connect().await.unwrap());
        let (alice, bob) = (one.with_owner("alice"), two.with_owner("bob"));
        let (carol, dave) = (three.with_owner("carol"), two.with_owner("dave"));
        let ga = alice.mutex(a.clone()).lock().await.unwrap();
        let gb = bob.mutex(b.clone()).lock().await.unwrap();
        let gc = carol.mutex(c.clone()).lock().await.unwrap();
        let wait = |locks: &LockClient, path: &str| {
            let (locks, path) = (locks.clone(), path.to_owned());
            tokio::spawn(async move { locks.mutex(path).lock().await.map(drop) })
        };
        wait(&alice, &b);
        wait(&bob, &a);
        wait(&dave, &c);
        queued(&one, &c, 1).await;
        wait(&one, &c);
        for (path, n) in [(&a, 1), (&b, 1), (&c, 2)] {
            queued(&one, path, n).await;
        }
        let tokens = [ga.token().0, gb.token().0, gc.token().0];
        // The sessions (and guards) live on, served by this runtime, while `top` runs.
        let (zk, root) = (zk.clone(), root.clone());
        let out = tokio::task::spawn_blocking(move || run(zklock(&zk).args(["top", "--once", &root])))
            .await
            .unwrap();
        drop((ga, gb, gc));
        for locks in [one, two, three] {
            locks.close().await;
        }
        (tokens, out)
    });
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    println!("{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        format!("3 lock(s) under {root} held or waited for, 4 waiter(s), 2 on a deadlock")
    );
    let header: Vec<&str> = lines[1].split("  ").filter(|s| !s.is_empty()).map(str::trim).collect();
    assert_eq!(header, ["LOCK", "RECIPE", "HOLDERS", "WAITING", "LONGEST WAIT", "SCHEME"]);
    let row = |path: &str| {
        *lines
            .iter()
            .find(|l| l.starts_with(&format!("{path} ")))
            .unwrap_or_else(|| panic!("no row for {path} in:\n{text}"))
    };
    let [ta, tb, tc] = tokens;
    for (path, owner, token) in [(&a, "alice", ta), (&b, "bob", tb)] {
        let line = row(path);
        assert!(line.contains(&format!("{owner}(")), "{line}");
        assert!(line.contains(&format!("token {token})")), "{line}");
        assert!(line.ends_with("DEADLOCK"), "{line}");
    }
    let line = row(&c);
    assert!(line.contains("carol(") && line.contains(&format!("token {tc})")), "{line}");
    assert!(!line.contains("DEADLOCK"), "{line}");
    let cells: Vec<&str> = line.split("  ").filter(|s| !s.is_empty()).map(str::trim).collect();
    assert_eq!(cells[1], "write");
    assert_eq!(cells[3], "2", "{line}");
    assert_eq!(cells.last(), Some(&"native"), "{line}");
    // Deadlocked locks first.
    assert!(lines[2].starts_with(&a) || lines[2].starts_with(&b), "{text}");
    assert!(lines[4].starts_with(&c), "{text}");
}
