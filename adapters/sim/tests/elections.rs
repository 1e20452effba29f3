//! Elections a service can run forever, through the real API on the in-process
//! server: a waiting candidate rejoins by itself after its session is gone (a
//! leader: the conformance suite's `election_rejoins_after_the_leader_is_cut_off`),
//! `leadership()` ends with an error only once the client is closed, and a leader
//! that leaves in any way hands over at once (no session-timeout gap; on close: the
//! suite's `election_hands_over_at_once_on_close`). Every wait
//! has a generous bound that turns a hang into a failure; nothing sleeps.

use lock_client::{Election, Error, LockClient};
use lock_sim::Server;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// Upper bound for anything expected to happen: a hang becomes a failure, and a
/// loaded machine has room.
const BOUND: Duration = Duration::from_secs(30);

/// A session timeout whose gap would be obvious: handovers must come well before it.
const LONG_T: Duration = Duration::from_secs(20);

/// Runs `election.leadership_blocking()` on a thread and hands back the outcome
/// (with the election, for the next term) and when it came.
fn elect_in_background(
    mut election: Election,
) -> mpsc::Receiver<(Election, Result<lock_client::Leadership, Error>, Instant)> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let outcome = election.leadership_blocking();
        let _ = tx.send((election, outcome, Instant::now()));
    });
    rx
}

fn wait_for_children(server: &Server, path: &str, n: usize) {
    let started = Instant::now();
    while server.children(path).map_or(0, |c| c.len()) != n {
        assert!(
            started.elapsed() < BOUND,
            "{path}: never {n} children: {:?}",
            server.children(path)
        );
        thread::sleep(Duration::from_millis(5));
    }
}

fn wait_for_new_session(client: &LockClient, old: Option<i64>) {
    let started = Instant::now();
    while client.session_id().is_none() || client.session_id() == old {
        assert!(started.elapsed() < BOUND, "no new session");
        thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_waiting_candidate_rejoins_after_its_session_expires() {
    let server = Server::new();
    let (a, b) = (server.client(), server.client());
    let path = "/svc/waiting";
    let mut leader = a.election(path, "a");
    let term = leader.leadership_blocking().unwrap();
    let waiting = elect_in_background(b.election(path, "b"));
    wait_for_children(&server, path, 2);
    // Read once b's node exists: its client connects on a thread of its own.
    let before = b.session_id();
    assert!(before.is_some());
    // The candidate's node goes with its session; it must not give up.
    server.expire_session(&b);
    wait_for_new_session(&b, before);
    // Back in the queue on the new session, behind the leader.
    wait_for_children(&server, path, 2);
    assert!(
        waiting.try_recv().is_err(),
        "elected while the leader leads"
    );
    term.resign_blocking().unwrap();
    let (_election, elected, _) = waiting.recv_timeout(BOUND).expect("b is elected");
    let elected = elected.expect("rejoined, not failed");
    assert_eq!(elected.grant().session_id, b.session_id().unwrap());
    assert!(elected.is_trusted());
    elected.resign_blocking().unwrap();
}

#[test]
fn leadership_fails_only_once_the_client_is_closed() {
    let server = Server::new();
    let (a, b) = (server.client(), server.client());
    let path = "/svc/closed";
    let term = a.election(path, "a").leadership_blocking().unwrap();
    let waiting = elect_in_background(b.election(path, "b"));
    wait_for_children(&server, path, 2);
    server.expire_session(&b);
    b.close_blocking();
    let (mut election, outcome, _) = waiting.recv_timeout(BOUND).expect("an answer");
    assert!(matches!(outcome, Err(Error::Closed)), "{outcome:?}");
    assert!(matches!(election.leadership_blocking(), Err(Error::Closed)));
    term.resign_blocking().unwrap();
}

/// How a leader leaves, for [`handover`].
#[derive(Clone, Copy, Debug)]
enum Leave {
    Resign,
    DropLeadership,
    ResignElection,
    DropElectionAndLeadership,
}

/// The next candidate leads right after the leader leaves: far sooner than the
/// session timeout a crash would cost.
fn handover(leave: Leave) {
    let server = Server::new();
    let (a, b) = (
        server.client_with_timeout(LONG_T),
        server.client_with_timeout(LONG_T),
    );
    let path = "/svc/handover";
    let mut election = a.election(path, "a");
    let term = election.leadership_blocking().unwrap();
    let waiting = elect_in_background(b.election(path, "b"));
    wait_for_children(&server, path, 2);
    let left = Instant::now();
    match leave {
        Leave::Resign => term.resign_blocking().unwrap(),
        Leave::DropLeadership => drop(term),
        Leave::ResignElection => {
            drop(term);
            election.resign_blocking();
        }
        Leave::DropElectionAndLeadership => drop((election, term)),
    }
    let (_, elected, at) = waiting.recv_timeout(BOUND).expect("b is elected");
    let elected = elected.unwrap();
    let window = at - left;
    assert!(
        window < LONG_T / 4,
        "{leave:?}: b led {window:?} after a left (a session-timeout gap)"
    );
    elected.resign_blocking().unwrap();
}

#[test]
fn handover_is_at_once_whichever_way_the_leader_leaves() {
    for leave in [
        Leave::Resign,
        Leave::DropLeadership,
        Leave::ResignElection,
        Leave::DropElectionAndLeadership,
    ] {
        handover(leave);
    }
}

#[test]
fn a_dropped_candidate_leaves_the_queue_at_once() {
    let server = Server::new();
    let (a, b) = (server.client(), server.client());
    let path = "/svc/dropped-candidate";
    let term = a.election(path, "a").leadership_blocking().unwrap();
    let candidate = b.election(path, "b");
    wait_for_children(&server, path, 2);
    drop(candidate);
    wait_for_children(&server, path, 1);
    term.resign_blocking().unwrap();
    wait_for_children(&server, path, 0);
}
