//! Revocation of shared readers, leader election, crash-detecting sections and
//! fenced writes against a real ZooKeeper server, under every runtime. What every
//! binding must do (fenced writes, crashes in sections, lock-delay, the break's
//! record, revocation and leases) is in the conformance suite (lock-conformance's
//! `suite/guarded.rs` and `suite/revocation.rs`; an election handing over on
//! resign and on close, with an observer following, in `suite/elections.rs`);
//! here, what needs this binding's proxies (a reply held back) or is this
//! binding's own.

mod common;

use common::peers::node_name;
use common::{connect, server, spawn, unique_path, Observer};
use lock_testkit::FaultProxy;
use lock_testkit::{Direction, HoldProxy};
use lock_zookeeper_client::{
    ElectionEvent, FencedError, LockEvent, LockStatus, LostReason, Writes,
};
use std::sync::Arc;
use std::time::{Duration, Instant};
use zookeeper_client::{Acls, CreateMode};

const SESSION: Duration = Duration::from_secs(10);
const MARKER: &str = "zkl-section";

/// Whether `intervals` (start, end) are pairwise disjoint.
fn disjoint(mut intervals: Vec<(Instant, Instant)>) -> bool {
    intervals.sort();
    intervals.windows(2).all(|w| w[0].1 <= w[1].0)
}

rt_tests! {
    /// The seeds' revocable shared locks: revoking the lock path asks every reader
    /// holding it (not the waiting writer); each releases, and the writer gets in.
    async fn revoking_shared_readers(rt) {
        let dir = unique_path("revoke-readers", &rt);
        let zk = Observer::connect(&server().connect_string()).await;
        let a = connect(&rt, &server().connect_string(), SESSION).await;
        let b = connect(&rt, &server().connect_string(), SESSION).await;
        let table = a.rwlock(dir.clone()).revocable();
        let r1 = table.read().lock().await.unwrap();
        let r2 = table.read().lock().await.unwrap();
        let writer = {
            let (b, dir) = (b.clone(), dir.clone());
            spawn(&rt, async move { b.rwlock(dir).write().lock().await })
        };
        zk.wait_children(&dir, 3).await;
        let mut asked = b.revoke(dir.clone()).await.unwrap();
        asked.sort();
        let mut readers = vec![r1.path().to_owned(), r2.path().to_owned()];
        readers.sort();
        assert_eq!(asked, readers);
        assert_eq!(r1.revocation_requested().await, Ok(()));
        assert_eq!(r2.revocation_requested().await, Ok(()));
        r1.release().await.unwrap();
        r2.release().await.unwrap();
        let w = writer.await.unwrap().unwrap();
        assert_eq!(zk.children(&dir).await, vec![node_name(w.path())]);
        w.release().await.unwrap();
        a.close().await;
        b.close().await;
    }

    /// The leader's session expires (its network blackholed past the 2 s session
    /// timeout). The old leader reports `Suspended` before the other participant is
    /// elected, then `Lost`; at no instant are both trusted (checked at the moment of
    /// election, and over the recorded intervals); an observer sees the change; the
    /// old participant rejoins on a new session and leads again after a resignation.
    async fn leader_failover_on_session_expiry(rt) {
        let session_timeout = Duration::from_secs(2);
        let dir = unique_path("failover", &rt);
        let cluster = server().connect_string();
        let proxy = Arc::new(FaultProxy::start(server().addr()).unwrap());
        let a = connect(&rt, &proxy.connect_string(), session_timeout).await;
        assert_eq!(a.session_timeout(), session_timeout);
        let b = connect(&rt, &cluster, SESSION).await;
        let c = connect(&rt, &cluster, SESSION).await;
        let zk = Observer::connect(&cluster).await;

        let mut alpha = a.election(dir.clone(), "alpha");
        let a_lead = Arc::new(alpha.leadership().await.unwrap());
        let a_start = Instant::now();
        assert!(matches!(alpha.next_event().await, Some(ElectionEvent::Elected { .. })));
        let b_elected = {
            let (b, dir, a_lead) = (b.clone(), dir.clone(), a_lead.clone());
            spawn(&rt, async move {
                let mut beta = b.election(dir, "beta");
                let lead = beta.leadership().await.expect("beta elected");
                // The moment beta is told it leads, alpha must not be trusted.
                let alpha_trusted = a_lead.is_trusted();
                (Instant::now(), alpha_trusted, beta, lead)
            })
        };
        zk.wait_children(&dir, 2).await;
        let mut observer = c.observe_election(dir.clone()).await.unwrap();
        assert_eq!(observer.leader().unwrap().id, b"alpha");
        assert_eq!(observer.participants(), 2);

        let cut_at = Instant::now();
        { let p = proxy.clone(); common::blocking(move || p.blackhole()).await; }
        assert_eq!(alpha.next_event().await, Some(ElectionEvent::Suspended));
        let a_end = Instant::now();
        assert!(!alpha.is_leader() && !a_lead.is_trusted());
        let (b_start, alpha_trusted, beta, b_lead) = b_elected.await.unwrap();
        eprintln!(
            "{}: alpha suspended {:?}, beta elected {:?} after the blackhole",
            common::runtime_name(&rt), a_end - cut_at, b_start - cut_at
        );
        assert!(!alpha_trusted, "two trusted leaders");
        assert!(a_end < b_start, "beta elected before alpha suspended");
        assert!(b_lead.token() > a_lead.token());
        match alpha.next_event().await {
            Some(ElectionEvent::Lost(LostReason::SuspendedTooLong | LostReason::SessionExpired)) => {}
            other => panic!("expected Lost, got {other:?}"),
        }
        assert!(matches!(a_lead.status(), LockStatus::Lost(_)));
        loop {
            let leader = observer.changed().await.unwrap();
            match leader.as_ref().map(|l| l.id.as_slice()) {
                Some(b"beta") => break,
                None => {}
                other => panic!("observer saw {other:?} after the failover"),
            }
        }
        assert_eq!(observer.leader().unwrap().token, b_lead.token());
        assert_eq!(observer.participants(), 1);
        drop(a_lead);

        // Healed: alpha's handle opens a new session and rejoins behind beta.
        { let p = proxy.clone(); common::blocking(move || p.heal()).await; }
        let a_again = spawn(&rt, async move {
            let lead = alpha.leadership().await.expect("alpha rejoins");
            (Instant::now(), alpha, lead)
        });
        zk.wait_children(&dir, 2).await;
        let b_token = b_lead.token();
        let b_end = Instant::now();
        b_lead.resign().await.unwrap();
        assert!(!beta.is_leader());
        let (a2_start, alpha, a2_lead) = a_again.await.unwrap();
        assert!(alpha.is_leader());
        assert_eq!(a2_lead.grant().session_id, a.session_id().unwrap());
        assert!(a2_lead.token() > b_token);
        let seen = observer.changed().await.unwrap().expect("a leader");
        assert_eq!((seen.id.as_slice(), seen.token), (&b"alpha"[..], a2_lead.token()));
        assert!(disjoint(vec![(a_start, a_end), (b_start, b_end), (a2_start, Instant::now())]));
        a2_lead.resign().await.unwrap();
        drop((alpha, beta));
        for client in [a, b, c] {
            client.close().await;
        }
    }

    /// A section call whose request dies with the connection goes on after the
    /// reconnect: `open_section` returns once the marker is written, the guard having
    /// been suspended and resumed meanwhile; a clean release then removes it.
    async fn section_call_survives_a_connection_loss(rt) {
        let dir = unique_path("section-cut", &rt);
        let zk = Observer::connect(&server().connect_string()).await;
        let proxy = Arc::new(HoldProxy::start(server().addr()).expect("proxy"));
        let a = connect(&rt, &proxy.connect_string(), SESSION).await;
        let guard = a.mutex(dir.clone()).detect_crashes().lock().await.unwrap();
        proxy.hold(Direction::Upstream);
        let result = {
            let mut open = std::pin::pin!(guard.open_section());
            // The first poll hands the call to the driver; `stats` is answered after
            // it (one command queue), so by then the request went to the client.
            assert!(futures::poll!(open.as_mut()).is_pending());
            a.stats().await.unwrap();
            { let p = proxy.clone(); common::blocking(move || p.wait_holding(Direction::Upstream)).await; }
            proxy.cut();
            open.await
        };
        assert_eq!(result, Ok(()));
        assert_eq!(guard.next_event().await, Some(LockEvent::Suspended));
        assert_eq!(guard.next_event().await, Some(LockEvent::Resumed));
        assert!(zk.children(&dir).await.contains(&MARKER.to_owned()));
        guard.release().await.unwrap();
        assert!(zk.children(&dir).await.is_empty());
        a.close().await;
    }

    /// The server itself refuses a fenced write sent after an administrator deleted
    /// the lock node but before the holder heard of it (the notification and the
    /// reply are held back in a proxy until the write has reached the server): the
    /// write fails with `NotHeld`, nothing is written, and the lock is lost.
    async fn fenced_write_refused_by_the_server_after_deletion(rt) {
        let dir = unique_path("fenced-server", &rt);
        let data = format!("{dir}-data");
        let zk = Observer::connect(&server().connect_string()).await;
        let proxy = Arc::new(HoldProxy::start(server().addr()).expect("proxy"));
        let a = connect(&rt, &proxy.connect_string(), SESSION).await;
        let guard = a.mutex(dir.clone()).lock().await.unwrap();
        // After the lock: it made the parent, whichever test of the binary runs first.
        zk.client
            .create(&data, b"v0", &CreateMode::Persistent.with_acls(Acls::anyone_all()))
            .await
            .unwrap();

        proxy.hold(Direction::Downstream);
        zk.client.delete(guard.path(), None).await.unwrap();
        let sent = proxy.forwarded(Direction::Upstream);
        let write = {
            let data = data.clone();
            spawn(&rt, async move {
                let result = guard.fenced_write(Writes::new().set_data(&data, b"late")).await;
                (guard, result)
            })
        };
        // The multi (check + setData, well over 100 bytes; a ping is 12) is through.
        { let p = proxy.clone(); common::blocking(move || p.wait_forwarded(Direction::Upstream, sent + 100)).await; }
        proxy.release(Direction::Downstream);
        let (guard, result) = write.await.unwrap();
        assert_eq!(result, Err(FencedError::NotHeld));
        assert_eq!(guard.lost().await, LostReason::NodeDeleted);
        let (value, stat) = zk.client.get_data(&data).await.unwrap();
        assert_eq!((value.as_slice(), stat.version), (&b"v0"[..], 0), "written without the lock");
        a.close().await;
    }
}
