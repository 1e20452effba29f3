//! Semaphore interop scenarios, run against Curator's `InterProcessSemaphoreV2` and
//! kazoo's `Semaphore`: zklock semaphores with the peer's scheme share the peer's layout
//! (an internal mutex queue and a pool of lease nodes), so a mixed fleet never has more
//! than `n` holders.

use super::peers::{delivered, received, start_fleet, Library, Peer};
use super::Observer;
use crate::common::Runtime;
use futures::channel::oneshot;
use lock_testkit::FaultProxy;
use lock_zookeeper_client::{LockClient, LockGuard, LockStatus};
use std::sync::Arc;
use std::time::{Duration, Instant};
use zookeeper_client::{Acls, CreateMode};

/// How long a zklock participant waits for a permit.
const LOCK_TIMEOUT: Duration = Duration::from_secs(60);

/// What a peer's one look at a semaphore found.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Look {
    /// A lease (its node name).
    Leased(String),
    /// No permit free.
    Busy,
    /// kazoo refused: the path records another permit count.
    Mismatch(String),
}

impl Peer {
    /// Asks `slot` to wait for a lease (see [`Peer::leased`] for the answer).
    pub fn start_lease(&mut self, slot: &str, path: &str, permits: u32) {
        self.send(slot, &format!("sacquire {path} {permits}"));
    }

    /// Waits for `slot` to report its lease; returns the lease node's name.
    pub async fn leased(&mut self, slot: &str) -> String {
        self.expect(slot, "LEASED").await.remove(0)
    }

    /// Takes a lease in `slot`, waiting.
    pub async fn lease(&mut self, slot: &str, path: &str, permits: u32) -> String {
        self.start_lease(slot, path, permits);
        self.leased(slot).await
    }

    /// One look (Curator's `acquire(0 ms)`, kazoo's `acquire(blocking=False)`).
    pub async fn try_lease(&mut self, slot: &str, path: &str, permits: u32) -> Look {
        self.send(slot, &format!("stry {path} {permits}"));
        let mut words = self.reply(slot).await;
        match words.first().map(String::as_str) {
            Some("LEASED") => Look::Leased(words.remove(1)),
            Some("BUSY") => Look::Busy,
            Some("MISMATCH") => Look::Mismatch(words[1..].join(" ")),
            _ => panic!("slot {slot}: expected LEASED, BUSY or MISMATCH, got {words:?}"),
        }
    }

    /// Returns the lease `slot` holds.
    pub async fn return_lease(&mut self, slot: &str) {
        self.send(slot, "srelease");
        self.expect(slot, "RELEASED").await;
    }
}

/// A zklock permit of `path` in `library`'s layout, waiting.
pub async fn zk_permit(
    locks: &LockClient,
    library: Library,
    path: &str,
    permits: u32,
) -> LockGuard {
    locks
        .semaphore(path, permits)
        .with_scheme(library.scheme())
        .lock_until(Instant::now() + LOCK_TIMEOUT)
        .await
        .unwrap_or_else(|e| panic!("zklock permit of {path} ({}): {e}", library.name()))
}

/// Starts waiting for a zklock permit in a task; the receiver gets the guard.
pub fn zk_start_permit(
    rt: &Runtime,
    locks: &LockClient,
    library: Library,
    path: &str,
    permits: u32,
) -> oneshot::Receiver<LockGuard> {
    let (locks, path) = (locks.clone(), path.to_owned());
    super::spawn(rt, async move {
        zk_permit(&locks, library, &path, permits).await
    })
}

/// One zklock look (`try_lock`).
pub async fn zk_try_permit(
    locks: &LockClient,
    library: Library,
    path: &str,
    permits: u32,
) -> Option<LockGuard> {
    locks
        .semaphore(path, permits)
        .with_scheme(library.scheme())
        .try_lock()
        .await
        .unwrap_or_else(|e| panic!("zklock try of {path} ({}): {e}", library.name()))
}

/// The directory the semaphore's waiters queue in (its internal mutex).
pub fn queue_dir(library: Library, path: &str) -> String {
    lock_core::names::semaphore_mutex_dir(library.scheme(), path).expect("a peer layout")
}

/// The directory of the semaphore's lease nodes.
pub fn lease_dir(library: Library, path: &str) -> String {
    lock_core::names::semaphore_lease_dir(library.scheme(), path).expect("a peer layout")
}

/// Two permits: holders of both libraries fill them; a full semaphore refuses a look of
/// either; waiters of both queue in one FIFO line and get in as the other's holders leave.
pub async fn semaphore_exclusion(
    rt: &Runtime,
    peer: &mut Peer,
    locks: &LockClient,
    observer: &Observer,
    path: &str,
) {
    let lib = peer.library;
    let name = lib.name();
    const N: u32 = 2;
    let (queue, leases) = (queue_dir(lib, path), lease_dir(lib, path));

    // A peer holder and a zklock holder fill the two permits.
    peer.lease("a", path, N).await;
    let z1 = zk_permit(locks, lib, path, N).await;
    assert_eq!(observer.children(&leases).await.len(), 2, "two leases");
    // Full: neither library gets a third permit from a look.
    assert!(
        zk_try_permit(locks, lib, path, N).await.is_none(),
        "zklock took a third permit of {N} beside a {name} holder and a zklock holder"
    );
    assert_eq!(
        peer.try_lease("t", path, N).await,
        Look::Busy,
        "{name} took a third permit of {N}"
    );
    observer.wait_children(&queue, 0).await;
    observer.wait_children(&leases, 2).await;

    // A zklock waiter, then a peer waiter: one queue, zklock first.
    let mut zw = zk_start_permit(rt, locks, lib, path, N);
    observer.wait_children(&queue, 1).await;
    peer.start_lease("b", path, N);
    observer.wait_children(&queue, 2).await;
    assert!(
        !delivered(&mut zw) && peer.quiet("b"),
        "a waiter got a permit of a full semaphore"
    );
    // Inspection sees both layouts' holders (lease nodes) and waiters (queued).
    let who = locks.participants(path).await.expect("participants");
    let shown = |v: &[lock_zookeeper_client::Participant]| {
        v.iter()
            .map(|p| format!("{}/{}", p.dir, p.node))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        (who.holders.len(), who.waiters.len()),
        (2, 2),
        "holders {:?}, waiters {:?}",
        shown(&who.holders),
        shown(&who.waiters)
    );
    assert!(who.holders.iter().all(|p| p.dir == leases));

    // The peer holder leaves: the zklock waiter (first in line) gets in, the peer's
    // waiter stays out (zklock's two holders fill the permits).
    peer.return_lease("a").await;
    let zw = received(zw, "the zklock waiter").await;
    assert_eq!(zw.status(), LockStatus::Held);
    assert!(
        peer.quiet("b"),
        "the {name} waiter got in beside two zklock holders"
    );
    assert_eq!(
        peer.try_lease("t", path, N).await,
        Look::Busy,
        "{name} took a third permit of {N} from two zklock holders"
    );

    // A zklock holder leaves: the peer's waiter gets in.
    z1.release().await.expect("release");
    peer.leased("b").await;
    assert!(
        zk_try_permit(locks, lib, path, N).await.is_none(),
        "zklock took a third permit beside a zklock and a {name} holder"
    );
    zw.release().await.expect("release");
    peer.return_lease("b").await;
    observer.wait_children(&leases, 0).await;
    observer.wait_children(&queue, 0).await;
}

/// Two permits; a peer and a zklock session (each behind a fault proxy, 2 s sessions)
/// hold; a zklock waiter and a peer waiter queue. The peer's session expires, then the
/// zklock holder's: each lease goes with its session, the next waiter gets in, and the
/// zklock holder reports the loss before the waiter behind it holds.
pub async fn semaphore_holder_expiry(rt: &Runtime, library: Library, path: &str) {
    const N: u32 = 2;
    let session = Duration::from_secs(2);
    let name = library.name();
    let server = super::server();
    let connect = server.connect_string();
    let observer = Observer::connect(&connect).await;
    let peer_proxy = Arc::new(FaultProxy::start(server.addr()).expect("proxy"));
    let zk_proxy = Arc::new(FaultProxy::start(server.addr()).expect("proxy"));
    let (queue, leases) = (queue_dir(library, path), lease_dir(library, path));

    let mut doomed = Peer::start_with_session(
        library,
        &peer_proxy.connect_string(),
        &format!("{name}-doomed"),
        session,
    )
    .await;
    let mut waiting_peer = Peer::start_library(library, &connect, &format!("{name}-w")).await;
    let z_doomed = super::connect(rt, &zk_proxy.connect_string(), session).await;
    let z_waiting = super::connect(rt, &connect, Duration::from_secs(10)).await;

    doomed.lease("h", path, N).await;
    let held = zk_permit(&z_doomed, library, path, N).await;
    let zw = zk_start_permit(rt, &z_waiting, library, path, N);
    observer.wait_children(&queue, 1).await;
    waiting_peer.start_lease("w", path, N);
    observer.wait_children(&queue, 2).await;

    // The peer holder's session expires: its lease goes, the zklock waiter gets in;
    // the peer waiter still waits (two holders again).
    super::on_proxy(&peer_proxy, FaultProxy::blackhole).await;
    let zw = received(zw, "the zklock waiter behind an expiring peer holder").await;
    // The zklock holder's session is healthy: it still holds. (On a machine busy
    // enough to delay its proof of contact, a 2 s session may be `Suspended` for a
    // moment: that is the lock being careful, not lost; it must come back.)
    let healthy_until = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        match held.status() {
            LockStatus::Held => break,
            LockStatus::Suspended if std::time::Instant::now() < healthy_until => {
                super::sleep(Duration::from_millis(50)).await
            }
            other => panic!("the zklock holder on a healthy session: {other:?}"),
        }
    }
    assert!(
        waiting_peer.quiet("w"),
        "the {name} waiter got in beside two holders"
    );
    assert!(
        observer.children(&leases).await.len() <= N as usize + 1,
        "more lease nodes than permits and one waiter"
    );

    // The zklock holder's session expires: it reports the loss, and only then can
    // the server hand its permit to the peer waiter.
    super::on_proxy(&zk_proxy, FaultProxy::blackhole).await;
    waiting_peer.leased("w").await;
    let status = held.status();
    assert!(
        matches!(status, LockStatus::Lost(_)),
        "the {name} waiter got the permit of a zklock holder that still thinks it holds ({status:?})"
    );
    assert_eq!(zw.status(), LockStatus::Held);
    zw.release().await.expect("release");
    waiting_peer.return_lease("w").await;
    observer.wait_children(&leases, 0).await;
    drop(doomed);
    z_waiting.close().await;
    drop(z_doomed);
}

/// What one participant of the semaphore workload saw.
#[derive(Clone, Debug)]
pub struct SemaphoreTally {
    pub who: String,
    pub sections: u64,
    pub overlaps: u64,
    pub most_inside: u64,
}

/// Loops peer processes and zklock sessions over a semaphore of `permits`, each holder
/// registering under `<root>/inside` and counting who is in (more than `permits` is an
/// overlap), with `peers` peer processes and `zklock_sessions` zklock sessions, each
/// running `iterations` sections; asserts no overlap and returns the most holders
/// seen at once.
pub async fn semaphore_workload(
    rt: &Runtime,
    library: Library,
    path: &str,
    permits: u32,
    peers: usize,
    zklock_sessions: usize,
    iterations: u32,
) -> u64 {
    let connect = super::server().connect_string();
    let observer = Observer::connect(&connect).await;
    let root = format!("{path}-data");
    observer.mkdir(&format!("{root}/inside")).await;
    // Long enough inside that holders overlap whenever the permits allow.
    let sleep = Duration::from_millis(40);

    let (mut running, sessions) = start_fleet(rt, library, &connect, peers, zklock_sessions).await;
    let begin = Instant::now();
    for peer in &mut running {
        peer.send(
            "s",
            &format!(
                "swork {path} {permits} {root} {iterations} {}",
                sleep.as_millis()
            ),
        );
    }
    let mut ours = Vec::new();
    for (i, locks) in sessions.iter().enumerate() {
        let (locks, connect, root, path) = (
            locks.clone(),
            connect.clone(),
            root.clone(),
            path.to_owned(),
        );
        let who = format!("zklock{}", i + 1);
        ours.push(super::spawn(rt, async move {
            let data = Observer::connect(&connect).await.client;
            let inside = format!("{root}/inside");
            let ephemeral = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
            let (mut overlaps, mut most) = (0, 0);
            for i in 0..iterations {
                let guard = zk_permit(&locks, library, &path, permits).await;
                let mark = format!("{inside}/s-zklock-{who}-{i}");
                data.create(&mark, b"", &ephemeral)
                    .await
                    .expect("registering inside");
                let count = data.list_children(&inside).await.expect("listing").len() as u64;
                most = most.max(count);
                overlaps += u64::from(count > u64::from(permits));
                super::sleep(sleep).await;
                data.delete(&mark, None).await.expect("leaving");
                guard.release().await.expect("zklock release");
                super::sleep(sleep / 2).await;
            }
            SemaphoreTally {
                who,
                sections: u64::from(iterations),
                overlaps,
                most_inside: most,
            }
        }));
    }
    let mut tallies = Vec::new();
    for peer in &mut running {
        let words = peer.expect("s", "SWORKED").await;
        tallies.push(SemaphoreTally {
            who: peer.name.clone(),
            sections: words[0].parse().expect("sections"),
            overlaps: words[1].parse().expect("overlaps"),
            most_inside: words[2].parse().expect("most"),
        });
    }
    for rx in ours {
        tallies.push(received(rx, "a zklock worker").await);
    }
    let overlaps: u64 = tallies.iter().map(|t| t.overlaps).sum();
    let most = tallies.iter().map(|t| t.most_inside).max().unwrap_or(0);
    let sections: u64 = tallies.iter().map(|t| t.sections).sum();
    let report = format!(
        "{} semaphore of {permits}: {sections} sections by {peers} {} processes and \
         {zklock_sessions} zklock sessions in {:.1?}: {overlaps} with more than {permits} \
         holders inside; most holders at once: {most} [{}]",
        library.name(),
        library.name(),
        begin.elapsed(),
        tallies
            .iter()
            .map(|t| format!(
                "{} {}/{} most {}",
                t.who, t.overlaps, t.sections, t.most_inside
            ))
            .collect::<Vec<_>>()
            .join(", ")
    );
    eprintln!("{report}");
    assert_eq!(overlaps, 0, "{report}");
    for locks in sessions {
        locks.close().await;
    }
    drop(running);
    let leases = lease_dir(library, path);
    observer.wait_children(&queue_dir(library, path), 0).await;
    let left = observer.children(&leases).await;
    assert!(left.is_empty(), "lease nodes left behind: {left:?}");
    most
}
