//! Leader election against a real ZooKeeper server. Revocation and leases, as
//! every binding must do them, are in the conformance suite (lock-conformance's
//! `suite/revocation.rs`).

use lock_conformance::{shared_server, unique_path, ZkAdmin, SHORT};
use lock_core::LostReason;
use lock_zookeeper::{Connect, Error, LockClient, LockStatus};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

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
