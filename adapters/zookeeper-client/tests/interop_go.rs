//! Interop with go-zookeeper (Go) against a real ZooKeeper, Go clients in their own
//! processes (lock-testkit's `peers/go_peer.go`, built at test time with Debian's Go in
//! GOPATH mode against Debian's go-zookeeper snapshot). Needs Debian's `golang-go` and
//! `golang-github-samuel-go-zookeeper-dev` (`scripts/test.sh` installs them); a missing
//! piece fails the test saying so.

mod common;

use common::peers::{
    counter_workload, interop_tests, meet, mutex_handoff, node_name, received, zk_refused,
    zk_start_lock, Kind, Library, Peer,
};
use common::{connect, run_tokio, server, unique_path, Observer};
use lock_core::names::parse_name;
use lock_testkit::FaultProxy;
use lock_zookeeper_client::{LockStatus, NameScheme};
use std::sync::Arc;
use std::time::{Duration, Instant};

const SESSION: Duration = Duration::from_secs(10);

interop_tests!(@met
    /// A Go `Lock` and a zklock mutex (Go scheme) exclude each other and hand over in order.
    go_lock_and_zklock_go_scheme_hand_over_in_order, Library::Go, "go-mutex", mutex_handoff
);

/// While a Go `Lock` holds, a zklock mutex of every scheme is refused at one look;
/// and a Go waiter queues behind a zklock holder of every scheme.
#[test]
fn a_go_holder_excludes_every_zklock_scheme_and_waits_for_each() {
    run_tokio(|rt| async move {
        let (path, observer, locks, mut peer) = meet(&rt, Library::Go, "go-excludes", "go1").await;
        let schemes = [
            NameScheme::Native,
            NameScheme::Curator,
            NameScheme::Kazoo,
            NameScheme::Go,
        ];

        let theirs = peer.acquire("h", Kind::Mutex, &path).await;
        assert_eq!(parse_name(&theirs).map(|p| p.scheme), Some(NameScheme::Go));
        for scheme in schemes {
            let why = format!("the Go holder {theirs} held ({scheme:?})");
            zk_refused((&locks, &path, scheme, &observer), &[Kind::Mutex], 1, &why).await;
        }
        peer.release("h").await;
        observer.wait_children(&path, 0).await;

        // The kazoo scheme is left out here: go-zookeeper's Lock reads a sequence
        // after the last `-`, and kazoo's names have none, so a Go Lock errors out
        // on them (kazoo and Go cannot share a path, with or without zklock).
        for scheme in [NameScheme::Native, NameScheme::Curator, NameScheme::Go] {
            let z = zk_start_lock(&rt, &locks, Kind::Mutex, &path, scheme);
            let guard = received(z, "zklock on a free path").await;
            peer.start_acquire("w", "mutex", &path);
            observer.wait_children(&path, 2).await;
            common::sleep(Duration::from_millis(300)).await;
            assert!(
                peer.quiet("w"),
                "the Go waiter got in beside a zklock ({scheme:?}) holder {}",
                guard.path()
            );
            guard.release().await.expect("release");
            peer.held("w").await;
            peer.release("w").await;
            observer.wait_children(&path, 0).await;
        }
        locks.close().await;
    });
}

/// One section in the interval log: who, and which library.
struct Section {
    who: String,
    library: &'static str,
}

/// Reads `<root>/log` in the server's order and checks that sections never overlap:
/// every `E` follows the previous section's `X`, by the same participant. Returns the
/// sections in order and the number of overlaps found.
async fn interval_log(observer: &Observer, root: &str) -> (Vec<Section>, u64, String) {
    let dir = format!("{root}/log");
    let mut names = observer.children(&dir).await;
    names.sort_by_key(|n| {
        n.trim_start_matches("e-")
            .parse::<i64>()
            .unwrap_or(i64::MAX)
    });
    let mut sections = Vec::new();
    let mut overlaps = 0;
    let mut inside: Vec<String> = Vec::new();
    let mut problems = String::new();
    for n in names {
        let (data, _) = observer
            .client
            .get_data(&format!("{dir}/{n}"))
            .await
            .expect("reading the log");
        let line = String::from_utf8(data).expect("log entry");
        let (mark, who) = line.split_once(' ').expect("`E who` or `X who`");
        match mark {
            "E" => {
                if !inside.is_empty() {
                    overlaps += 1;
                    problems += &format!("{n}: {who} entered while {inside:?} inside\n");
                }
                inside.push(who.to_owned());
                let library = if who.starts_with("go-") {
                    "go"
                } else {
                    "zklock"
                };
                sections.push(Section {
                    who: who.to_owned(),
                    library,
                });
            }
            _ => {
                let before = inside.len();
                inside.retain(|w| w != who);
                if before == inside.len() {
                    problems += &format!("{n}: {who} left without entering\n");
                }
            }
        }
    }
    (sections, overlaps, problems)
}

/// 2 Go processes and 3 zklock sessions (native, Curator and Go schemes) on one
/// mutex: no lost update, no overlapping section in the interval log, handoffs
/// between Go and zklock.
#[test]
fn go_and_zklock_mixed_fleet_counter_and_intervals() {
    run_tokio(|rt| async move {
        const ITERATIONS: u32 = 8;
        const PEERS: usize = 2;
        let path = unique_path("go-fleet", &rt);
        let observer = Observer::connect(&server().connect_string()).await;
        let schemes = [NameScheme::Native, NameScheme::Curator, NameScheme::Go];
        let start = Instant::now();
        let work = counter_workload(
            &rt,
            Library::Go,
            &path,
            &[&[Kind::Mutex]],
            PEERS,
            &schemes,
            ITERATIONS,
        )
        .await;
        let elapsed = start.elapsed();
        let (sections, overlaps, problems) = interval_log(&observer, &work.root).await;
        let count = |lib: &str| sections.iter().filter(|s| s.library == lib).count();
        let handoffs = |from: &str, to: &str| {
            sections
                .windows(2)
                .filter(|w| w[0].library == from && w[1].library == to)
                .count()
        };
        let mut by_who: Vec<(String, usize)> = Vec::new();
        for s in &sections {
            match by_who.iter_mut().find(|(w, _)| *w == s.who) {
                Some((_, n)) => *n += 1,
                None => by_who.push((s.who.clone(), 1)),
            }
        }
        let report = format!(
            "go mixed fleet interval log ({elapsed:.1?}): {} sections (go {}, zklock {}), \
             overlaps {overlaps}, handoffs go->zklock {}, zklock->go {}; per participant {by_who:?}\n{problems}",
            sections.len(),
            count("go"),
            count("zklock"),
            handoffs("go", "zklock"),
            handoffs("zklock", "go"),
        );
        eprintln!("{report}");
        let expected = (ITERATIONS as usize) * (PEERS + schemes.len());
        assert_eq!(sections.len(), expected, "{report}");
        assert_eq!(overlaps, 0, "{report}");
        assert!(problems.is_empty(), "{report}");
        assert!(
            handoffs("go", "zklock") > 0 && handoffs("zklock", "go") > 0,
            "no handoff between Go and zklock: {report}"
        );
    });
}

/// A Go holder killed with SIGKILL: its node lives until the server expires its
/// session (2 s), and then the zklock waiter (Go scheme) holds; a Go waiter queued
/// behind the zklock waiter keeps waiting.
#[test]
fn a_killed_go_holder_expires_and_zklock_takes_over() {
    run_tokio(|rt| async move {
        let path = unique_path("go-killed", &rt);
        let connect_string = server().connect_string();
        let observer = Observer::connect(&connect_string).await;
        let locks = connect(&rt, &connect_string, SESSION).await;
        let mut doomed = Peer::start_with_session(
            Library::Go,
            &connect_string,
            "go-doomed",
            Duration::from_secs(2),
        )
        .await;
        let mut waiter = Peer::start_library(Library::Go, &connect_string, "go-w").await;

        let theirs = doomed.acquire("h", Kind::Mutex, &path).await;
        let z = zk_start_lock(&rt, &locks, Kind::Mutex, &path, NameScheme::Go);
        observer.wait_children(&path, 2).await;
        waiter.start_acquire("w", "mutex", &path);
        observer.wait_children(&path, 3).await;

        let killed = Instant::now();
        doomed.kill();
        let guard = received(z, "the zklock waiter behind a killed Go holder").await;
        let after = killed.elapsed();
        eprintln!("a killed Go holder ({theirs}): zklock held {after:.2?} after SIGKILL");
        assert!(
            !observer.children(&path).await.contains(&theirs),
            "zklock held while the killed holder's node {theirs} was still there"
        );
        assert_eq!(guard.status(), LockStatus::Held);
        assert!(
            waiter.quiet("w"),
            "the Go waiter got in beside the zklock holder"
        );
        guard.release().await.expect("release");
        waiter.held("w").await;
        waiter.release("w").await;
        observer.wait_children(&path, 0).await;
        locks.close().await;
    });
}

/// A zklock holder (native scheme) whose session expires behind a blackholed proxy:
/// it reports `Lost`, and the Go waiter gets the lock.
#[test]
fn an_expired_zklock_holder_loses_and_go_takes_over() {
    run_tokio(|rt| async move {
        let path = unique_path("go-after-zklock", &rt);
        let server = server();
        let connect_string = server.connect_string();
        let observer = Observer::connect(&connect_string).await;
        let proxy = Arc::new(FaultProxy::start(server.addr()).expect("proxy"));
        let doomed = connect(&rt, &proxy.connect_string(), Duration::from_secs(2)).await;
        let mut peer = Peer::start_library(Library::Go, &connect_string, "go-w").await;

        let z = zk_start_lock(&rt, &doomed, Kind::Mutex, &path, NameScheme::Native);
        let guard = received(z, "the zklock holder").await;
        let ours = node_name(guard.path()).to_owned();
        peer.start_acquire("w", "mutex", &path);
        observer.wait_children(&path, 2).await;
        common::sleep(Duration::from_millis(300)).await;
        assert!(
            peer.quiet("w"),
            "the Go waiter got in beside zklock's {ours}"
        );

        let cut = Instant::now();
        common::on_proxy(&proxy, FaultProxy::blackhole).await;
        let theirs = peer.held("w").await;
        let after = cut.elapsed();
        let status = guard.status();
        eprintln!("an expired zklock holder ({ours}): Go held {theirs} {after:.2?} after the cut; zklock: {status:?}");
        assert!(
            matches!(status, LockStatus::Lost(_)),
            "the Go waiter got the lock of a zklock holder that still thinks it holds ({status:?})"
        );
        peer.release("w").await;
        observer.wait_children(&path, 0).await;
        drop(guard);
        drop(doomed);
    });
}
