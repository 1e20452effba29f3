//! Revocation, leases and leader election against a real ZooKeeper server.

use lock_conformance::{shared_server, unique_path, ZkAdmin, SHORT};
use lock_core::{LockEvent, LostReason};
use lock_zookeeper::{Connect, Error, LockClient, LockStatus};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};
use zookeeper::{WatchedEvent, ZooKeeper};

const SESSION: Duration = Duration::from_secs(10);

fn client() -> LockClient {
    LockClient::builder(&shared_server().connect_string())
        .session_timeout(SESSION)
        .connect()
        .expect("connect")
}

fn admin() -> ZkAdmin {
    ZkAdmin::connect(&shared_server().connect_string())
}

fn node_name(path: &str) -> String {
    path.rsplit('/').next().unwrap().to_owned()
}

/// The data of `path`, read by a session of its own.
fn data_of(path: &str) -> Vec<u8> {
    let zk = ZooKeeper::connect(
        &shared_server().connect_string(),
        SESSION,
        |_: WatchedEvent| {},
    )
    .expect("raw client");
    let (data, _) = zk.get_data(path, false).expect("get_data");
    let _ = zk.close();
    data
}

/// A revocable holder is asked by another session (`revoke` on the lock path names
/// exactly its node), sees `RevocationRequested`, releases, and the revoker's waiter
/// gets the lock.
#[test]
fn revocation_round_trip() {
    let started = Instant::now();
    let dir = unique_path("revoke");
    let zk = admin();
    let (a, b) = (client(), client());
    let held = a.mutex(dir.clone()).revocable().lock_blocking().unwrap();
    assert!(!held.is_revocation_requested());
    let waiter = {
        let (b, dir) = (b.clone(), dir.clone());
        thread::spawn(move || b.mutex(dir).lock_blocking())
    };
    zk.wait_children(&dir, SHORT, |c| c.len() == 2);

    let asked = b.revoke_blocking(dir.clone()).unwrap();
    assert_eq!(
        asked,
        vec![held.path().to_owned()],
        "only the holder is asked"
    );
    assert_eq!(
        held.next_event_timeout_blocking(SHORT),
        Some(LockEvent::RevocationRequested)
    );
    assert!(held.is_revocation_requested());
    // Already requested: returns at once, the event having been read.
    assert_eq!(held.revocation_requested_blocking(), Ok(()));
    assert_eq!(
        held.revocation_requested_timeout_blocking(Duration::ZERO),
        Some(Ok(()))
    );
    assert_eq!(held.status(), LockStatus::Held, "the holder decides");
    assert_eq!(data_of(held.path()), b"__REVOKE__");

    let token = held.token();
    held.release_blocking().unwrap();
    let guard = waiter
        .join()
        .unwrap()
        .expect("the revoker's waiter acquires");
    assert!(guard.token() > token);
    assert_eq!(zk.children(&dir), vec![node_name(guard.path())]);
    guard.release_blocking().unwrap();
    // Nothing to revoke: an empty answer.
    assert_eq!(b.revoke_blocking(dir).unwrap(), Vec::<String>::new());
    a.close_blocking();
    b.close_blocking();
    eprintln!("revocation_round_trip: {:?}", started.elapsed());
}

/// Revoking a revocable waiter by its node path: its `lock()` fails with the typed
/// `Error::Revoked` and its node is gone; the holder is untouched.
#[test]
fn revoking_a_waiter_fails_it_and_leaves_no_node() {
    let started = Instant::now();
    let dir = unique_path("revoke-waiter");
    let zk = admin();
    let (a, b) = (client(), client());
    let held = a.mutex(dir.clone()).lock_blocking().unwrap();
    let waiter = {
        let (b, dir) = (b.clone(), dir.clone());
        thread::spawn(move || b.mutex(dir).revocable().lock_blocking())
    };
    let children = zk.wait_children(&dir, SHORT, |c| c.len() == 2);
    let holder = node_name(held.path());
    let waiting = children.iter().find(|n| **n != holder).unwrap().clone();
    let target = format!("{dir}/{waiting}");

    let asked = a.revoke_blocking(target.clone()).unwrap();
    assert_eq!(asked, vec![target]);
    assert_eq!(waiter.join().unwrap().unwrap_err(), Error::Revoked);
    b.wait_idle_blocking().unwrap();
    assert_eq!(
        zk.children(&dir),
        vec![holder],
        "the revoked waiter left a node"
    );
    assert_eq!(held.status(), LockStatus::Held);
    assert!(!held.is_revocation_requested());
    held.release_blocking().unwrap();
    a.close_blocking();
    b.close_blocking();
    eprintln!(
        "revoking_a_waiter_fails_it_and_leaves_no_node: {:?}",
        started.elapsed()
    );
}

/// A lease: the holder loses the lock after `max_hold` (`Lost(LeaseExpired)`), its
/// node is deleted, and the next waiter acquires.
#[test]
fn lease_expires_and_next_waiter_acquires() {
    let started = Instant::now();
    let max_hold = Duration::from_secs(1);
    let dir = unique_path("lease");
    let zk = admin();
    let (a, b) = (client(), client());
    let guard = a
        .mutex(dir.clone())
        .max_hold(max_hold)
        .lock_blocking()
        .unwrap();
    let granted = Instant::now();
    let waiter = {
        let (b, dir) = (b.clone(), dir.clone());
        thread::spawn(move || b.mutex(dir).lock_blocking().map(|g| (Instant::now(), g)))
    };
    zk.wait_children(&dir, SHORT, |c| c.len() == 2);
    assert_eq!(guard.lost_blocking(), LostReason::LeaseExpired);
    let lost_at = Instant::now();
    assert!(
        lost_at - granted >= max_hold - Duration::from_millis(50),
        "lease ended early"
    );
    let (acquired_at, b_guard) = waiter.join().unwrap().unwrap();
    assert!(acquired_at - granted >= max_hold - Duration::from_millis(50));
    eprintln!(
        "lease lost {:?} and the waiter acquired {:?} after the grant",
        lost_at - granted,
        acquired_at - granted
    );
    assert!(b_guard.token() > guard.token());
    assert_eq!(guard.status(), LockStatus::Lost(LostReason::LeaseExpired));
    assert_eq!(
        guard.release_blocking(),
        Err(Error::Lost(LostReason::LeaseExpired))
    );
    assert_eq!(zk.children(&dir), vec![node_name(b_guard.path())]);
    b_guard.release_blocking().unwrap();
    a.close_blocking();
    b.close_blocking();
    eprintln!(
        "lease_expires_and_next_waiter_acquires: {:?}",
        started.elapsed()
    );
}

/// Two participants on two sessions and an observer on a third. The leader resigns:
/// the other is elected and the observer follows; a participant whose term ended
/// rejoins (a timed-out wait keeps its candidacy); resigning through the participant
/// releases its Leadership; the observer follows every change down to "nobody".
#[test]
fn election_hands_over_on_resign_with_an_observer_following() {
    let started = Instant::now();
    let dir = unique_path("election");
    let zk = admin();
    let (a, b, d) = (client(), client(), client());

    let mut alpha = a.election(dir.clone(), "alpha");
    let a_lead = alpha.leadership_blocking().unwrap();
    assert!(alpha.is_leader());
    assert_eq!(a_lead.status(), LockStatus::Held);
    assert!(a_lead.path().starts_with(&dir));
    assert!(matches!(alpha.leadership_blocking(), Err(Error::Usage(_))));
    let mut beta = b.election(dir.clone(), "beta");
    zk.wait_children(&dir, SHORT, |c| c.len() == 2);
    assert!(!beta.is_leader());

    let mut observer = d.observe_election_blocking(dir.clone()).unwrap();
    let leader = observer.leader().cloned().expect("a leader");
    assert_eq!(
        (leader.id.as_slice(), leader.token),
        (&b"alpha"[..], a_lead.token())
    );
    assert_eq!(leader.path, a_lead.path());
    assert_eq!(observer.participants(), 2);

    // alpha resigns: beta leads.
    let b_wait = thread::spawn(move || {
        let lead = beta.leadership_blocking();
        (beta, lead)
    });
    a_lead.resign_blocking().unwrap();
    assert!(!alpha.is_leader());
    let (mut beta, b_lead) = b_wait.join().unwrap();
    let b_lead = b_lead.unwrap();
    assert!(beta.is_leader());
    assert!(b_lead.token() > leader.token);
    let seen = observer
        .changed_timeout_blocking(SHORT)
        .unwrap()
        .expect("a leader");
    assert_eq!(
        (seen.id.as_slice(), seen.token),
        (&b"beta"[..], b_lead.token())
    );
    assert_eq!(observer.leader(), Some(&seen));
    assert!(matches!(beta.leadership_blocking(), Err(Error::Usage(_))));

    // alpha's term ended: it rejoins, behind beta (the wait times out, the
    // candidacy stays).
    assert_eq!(
        alpha
            .leadership_timeout_blocking(Duration::from_millis(100))
            .unwrap_err(),
        Error::Timeout
    );
    zk.wait_children(&dir, SHORT, |c| c.len() == 2);
    assert!(!alpha.is_leader());

    // beta resigns through its participant, while holding its Leadership.
    beta.resign_blocking();
    assert_eq!(b_lead.status(), LockStatus::Released);
    let a_lead = alpha.leadership_timeout_blocking(SHORT).unwrap();
    assert!(alpha.is_leader());
    assert!(a_lead.token() > b_lead.token());
    let seen = observer
        .changed_timeout_blocking(SHORT)
        .unwrap()
        .expect("a leader");
    assert_eq!(
        (seen.id.as_slice(), seen.token),
        (&b"alpha"[..], a_lead.token())
    );

    // Dropping the Leadership resigns.
    drop(a_lead);
    assert_eq!(observer.changed_timeout_blocking(SHORT).unwrap(), None);
    assert_eq!(observer.participants(), 0);
    assert!(!alpha.is_leader());
    a.wait_idle_blocking().unwrap();
    assert!(zk.children(&dir).is_empty());
    drop(observer);
    d.wait_idle_blocking().unwrap();
    for client in [a, b, d] {
        client.close_blocking();
    }
    eprintln!(
        "election_hands_over_on_resign_with_an_observer_following: {:?}",
        started.elapsed()
    );
}

/// The leader's client is closed: its Leadership reports `Lost(Closed)`, the waiting
/// participant is elected only once the old leader's node is gone (never two trusted
/// leaders), and an observer sees the change.
#[test]
fn leader_fails_over_when_its_client_is_closed() {
    let started = Instant::now();
    let dir = unique_path("failover");
    let zk = admin();
    let (a, b, c) = (client(), client(), client());

    let mut alpha = a.election(dir.clone(), "alpha");
    let a_lead = Arc::new(alpha.leadership_blocking().unwrap());
    let b_elected = {
        let (b, dir, a_lead) = (b.clone(), dir.clone(), a_lead.clone());
        thread::spawn(move || {
            let mut beta = b.election(dir, "beta");
            let lead = beta.leadership_blocking().expect("beta elected");
            // The moment beta is told it leads, alpha must not be trusted.
            let alpha_trusted = a_lead.is_trusted();
            (alpha_trusted, beta, lead)
        })
    };
    zk.wait_children(&dir, SHORT, |c| c.len() == 2);
    let mut observer = c.observe_election_blocking(dir.clone()).unwrap();
    assert_eq!(observer.leader().unwrap().id, b"alpha");
    assert_eq!(observer.participants(), 2);

    a.close_blocking();
    assert_eq!(a_lead.lost_blocking(), LostReason::Closed);
    assert!(!alpha.is_leader() && !a_lead.is_trusted());
    let (alpha_trusted, beta, b_lead) = b_elected.join().unwrap();
    assert!(!alpha_trusted, "two trusted leaders");
    assert!(beta.is_leader());
    assert!(b_lead.token() > a_lead.token());
    loop {
        let leader = observer.changed_timeout_blocking(SHORT).unwrap();
        match leader.as_ref().map(|l| l.id.as_slice()) {
            Some(b"beta") => break,
            None => {}
            other => panic!("observer saw {other:?} after the failover"),
        }
    }
    assert_eq!(observer.leader().unwrap().token, b_lead.token());
    assert_eq!(observer.participants(), 1);
    // The closed client's participant cannot rejoin.
    assert_eq!(alpha.leadership_blocking().unwrap_err(), Error::Closed);

    b_lead.resign_blocking().unwrap();
    assert_eq!(observer.changed_timeout_blocking(SHORT).unwrap(), None);
    drop((beta, observer));
    b.close_blocking();
    c.close_blocking();
    eprintln!(
        "leader_fails_over_when_its_client_is_closed: {:?}",
        started.elapsed()
    );
}
