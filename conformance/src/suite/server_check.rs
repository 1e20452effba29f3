//! A binding reads the settings of the server it connects to (its `conf`
//! four-letter word) and reports a session timeout that a majority could
//! outlast while that server still answers: a `ServerHazard` connection event
//! (and a warning) for an unsafe session, a clean check for a safe one
//! ([`Capability::ServerChecks`](crate::Capability::ServerChecks), with
//! [`Capability::Ensemble`](crate::Capability::Ensemble): a server the test
//! starts, reached with [`Env::client_at`](crate::Env::client_at)).
//!
//! The server is a lone quorum peer (`standaloneEnabled=false`): its `conf`
//! has `syncLimit` like every ensemble member's, for the price of one JVM.
//! tickTime 100 ms and syncLimit 30: a member cut off from its leader keeps
//! answering for 3 s. A 2 s session is below that; a 6 s one has the margin
//! (1.5 × (3 s + 50 ms) = 4.575 s).

use super::*;
use lock_client::{ConnectionEvent, HazardKind, ServerCheck};
use lock_testkit::ZkEnsemble;
use std::net::SocketAddr;

const UNSAFE: Duration = Duration::from_secs(2);
const SAFE: Duration = Duration::from_secs(6);

/// The first `ServerHazard` of a new stream: the hazard found by the check.
fn hazard_event(b: &Suite, locks: &LockClient, server: SocketAddr) {
    let mut events = locks.connection_events();
    let deadline = Instant::now() + LONG;
    let hazard = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match events.next_timeout_blocking(left) {
            Some(ConnectionEvent::ServerHazard { server: at, hazard }) => {
                assert_eq!(at, server, "{}", b.name());
                break hazard;
            }
            Some(_) => continue,
            None => panic!("{}: no ServerHazard event within {LONG:?}", b.name()),
        }
    };
    assert_eq!(
        hazard.kind,
        HazardKind::FollowerOutlivesSession,
        "{}",
        b.name()
    );
    assert_eq!(hazard.session_timeout, UNSAFE, "{}", b.name());
    assert_eq!(hazard.conf.sync_limit, Some(30), "{}", b.name());
    let text = hazard.to_string();
    assert!(
        text.contains("syncLimit × tickTime = 30 × 0.1 s = 3 s ≥ the session timeout 2 s"),
        "{}: {text}",
        b.name()
    );
    assert!(
        text.contains("raise the session timeout above 4.575 s"),
        "{}: {text}",
        b.name()
    );
}

/// The check of `server` once made: `conf` read, no hazard, nothing reported.
fn safe_check(b: &Suite, locks: &LockClient, server: SocketAddr) {
    let check: ServerCheck = wait_until("the server's check", LONG, || {
        locks
            .server_checks()
            .into_iter()
            .find(|c| c.server == server)
    });
    let conf = check
        .conf
        .expect("conf is allowed on the testkit's servers");
    assert_eq!(conf.tick_time, Duration::from_millis(100), "{}", b.name());
    assert_eq!(conf.sync_limit, Some(30), "{}", b.name());
    assert!(
        check.hazards.is_empty(),
        "{}: {:?}",
        b.name(),
        check.hazards
    );
    let mut events = locks.connection_events();
    assert_eq!(
        events.next_timeout_blocking(Duration::ZERO),
        None,
        "{}: nothing to report to a stream",
        b.name()
    );
}

/// A session of 2 s on a member whose followers outlast it by syncLimit ×
/// tickTime = 3 s is reported (event, check, message with the timeout to
/// raise to); one of 6 s passes clean.
pub fn server_check_reports_an_unsafe_session_and_passes_a_safe_one(b: &Suite) {
    let ensemble = ZkEnsemble::builder()
        .tick_time(Duration::from_millis(100))
        .sync_limit(30)
        .start_ensemble(1)
        .expect("starting a lone quorum peer");
    let member = ensemble.member(0).expect("the member");
    let (cluster, server) = (member.connect_string(), member.addr());
    let connect = |timeout| b.client_at(&cluster, timeout);
    let locks = connect(UNSAFE);
    hazard_event(b, &locks, server);
    b.close(&locks);
    let locks = connect(SAFE);
    safe_check(b, &locks, server);
    b.close(&locks);
}
