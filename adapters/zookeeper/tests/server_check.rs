//! Both bindings read the settings of the server they connect to (its `conf`
//! four-letter word) and report a session timeout that a majority could
//! outlast while that server still answers: a `ServerHazard` connection event
//! (and a warning) for an unsafe session, a clean check for a safe one.
//!
//! The server is a lone quorum peer (`standaloneEnabled=false`): its `conf`
//! has `syncLimit` like every ensemble member's, for the price of one JVM.
//! tickTime 100 ms and syncLimit 30: a member cut off from its leader keeps
//! answering for 3 s. A 2 s session is below that; a 6 s one has the margin
//! (1.5 × (3 s + 50 ms) = 4.575 s).

use lock_client::{ConnectionEvent, ConnectionState, HazardKind, LockClient, ServerCheck};
use lock_testkit::ZkEnsemble;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

const UNSAFE: Duration = Duration::from_secs(2);
const SAFE: Duration = Duration::from_secs(6);
/// The check runs in the background right after connecting; generous.
const CHECK_WITHIN: Duration = Duration::from_secs(20);

fn lone_member() -> ZkEnsemble {
    ZkEnsemble::builder()
        .tick_time(Duration::from_millis(100))
        .sync_limit(30)
        .config("preAllocSize", "1024")
        .start_ensemble(1)
        .expect("starting a lone quorum peer")
}

/// The first event of a new stream: the hazard found by the check.
fn hazard_event(locks: &LockClient, binding: &str, server: SocketAddr) {
    let mut events = locks.connection_events();
    let deadline = Instant::now() + CHECK_WITHIN;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match events.next_timeout_blocking(left) {
            Some(ConnectionEvent::ServerHazard { server: at, hazard }) => {
                assert_eq!(at, server, "{binding}");
                assert_eq!(
                    hazard.kind,
                    HazardKind::FollowerOutlivesSession,
                    "{binding}"
                );
                assert_eq!(hazard.session_timeout, UNSAFE, "{binding}");
                assert_eq!(hazard.conf.sync_limit, Some(30), "{binding}");
                let text = hazard.to_string();
                assert!(
                    text.contains(
                        "syncLimit × tickTime = 30 × 0.1 s = 3 s ≥ the session timeout 2 s"
                    ),
                    "{binding}: {text}"
                );
                assert!(
                    text.contains("raise the session timeout above 4.575 s"),
                    "{text}"
                );
                return;
            }
            Some(_) => continue,
            None => panic!("{binding}: no ServerHazard event within {CHECK_WITHIN:?}"),
        }
    }
}

/// The check of `server` once made.
fn check_of(locks: &LockClient, binding: &str, server: SocketAddr) -> ServerCheck {
    let deadline = Instant::now() + CHECK_WITHIN;
    loop {
        if let Some(check) = locks
            .server_checks()
            .into_iter()
            .find(|c| c.server == server)
        {
            return check;
        }
        assert!(
            Instant::now() < deadline,
            "{binding}: no check within {CHECK_WITHIN:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn safe_check(locks: &LockClient, binding: &str, server: SocketAddr) {
    let check = check_of(locks, binding, server);
    let conf = check
        .conf
        .expect("conf is allowed on the testkit's servers");
    assert_eq!(conf.tick_time, Duration::from_millis(100), "{binding}");
    assert_eq!(conf.sync_limit, Some(30), "{binding}");
    assert!(check.hazards.is_empty(), "{binding}: {:?}", check.hazards);
    // Nothing to report to a stream either.
    let mut events = locks.connection_events();
    assert_eq!(
        events.next_timeout_blocking(Duration::ZERO),
        None,
        "{binding}"
    );
}

#[test]
fn both_bindings_report_an_unsafe_session_and_pass_a_safe_one() {
    let ensemble = lone_member();
    let member = ensemble.member(0).expect("the member");
    let (cluster, server) = (member.connect_string(), member.addr());

    let blocking = |timeout| {
        lock_zookeeper::builder(&cluster)
            .session_timeout(timeout)
            .connect()
            .expect("blocking client connects")
    };
    let locks = blocking(UNSAFE);
    hazard_event(&locks, "lock-zookeeper", server);
    locks.close_blocking();
    let locks = blocking(SAFE);
    safe_check(&locks, "lock-zookeeper", server);
    locks.close_blocking();

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let connect = |timeout| {
        rt.block_on(
            lock_zookeeper_client::builder(&cluster)
                .session_timeout(timeout)
                .connect(),
        )
        .expect("async client connects")
    };
    let locks = connect(UNSAFE);
    hazard_event(&locks, "lock-zookeeper-client", server);
    rt.block_on(locks.close());
    let locks = connect(SAFE);
    safe_check(&locks, "lock-zookeeper-client", server);
    rt.block_on(locks.close());
}

/// How long a held lock is trusted from now, in session timeouts.
fn window(guard: &lock_client::LockGuard, timeout: Duration) -> f64 {
    let until = guard.trusted_until().expect("a held lock has a deadline");
    until
        .saturating_duration_since(Instant::now())
        .as_secs_f64()
        / timeout.as_secs_f64()
}

/// The trust window of `guard` once settled (in session timeouts): the widest
/// over half a timeout, from one timeout on (when the contact a connect itself
/// proves has aged out, and the proofs renewed every T/10 decide).
fn settled_window(guard: &lock_client::LockGuard, timeout: Duration) -> f64 {
    std::thread::sleep(timeout);
    let until = Instant::now() + timeout / 2;
    let mut widest: f64 = 0.0;
    while Instant::now() < until {
        widest = widest.max(window(guard, timeout));
        std::thread::sleep(Duration::from_millis(10));
    }
    widest
}

/// Waits until the connection state satisfies `condition`.
fn wait_state(locks: &LockClient, what: &str, condition: impl Fn(&ConnectionState) -> bool) {
    let deadline = Instant::now() + CHECK_WITHIN;
    while !condition(&locks.connection_state()) {
        assert!(
            Instant::now() < deadline,
            "not {what} within {CHECK_WITHIN:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The blocking binding learns its server again after a reconnect, as the
/// async one does: silenced until it suspends the session (the core then
/// forgets its server), then back on the same connection to the same
/// standalone server, a held lock's trust window settles in the known-server
/// regime again (every answer a proof: about 0.9 T here) rather than in the
/// unknown-server one (proofs a third of T older: about 0.55 T).
#[test]
fn blocking_binding_relearns_its_server_after_a_reconnect() {
    const T: Duration = Duration::from_secs(4);
    const KNOWN: f64 = 0.7;
    let server = lock_testkit::ZkServer::start().expect("a server");
    let proxy = lock_testkit::FaultProxy::start(server.addr()).expect("a proxy");
    let locks = lock_zookeeper::builder(&proxy.connect_string())
        .session_timeout(T)
        .connect()
        .expect("connects");
    let session = locks.session_id();
    let guard = locks.mutex("/relearn").lock_blocking().expect("locked");
    let first = settled_window(&guard, T);
    assert!(first >= KNOWN, "the server learned at first: {first:.2} T");
    // A silence the driver notices (a pause of the network) until it suspends
    // the session, then the same connection back.
    proxy.blackhole();
    wait_state(&locks, "suspended", |s| {
        matches!(s, ConnectionState::Suspended { .. })
    });
    proxy.heal();
    wait_state(&locks, "connected", |s| {
        matches!(s, ConnectionState::Connected { .. })
    });
    assert_eq!(locks.session_id(), session, "the same session");
    let again = settled_window(&guard, T);
    assert!(again >= KNOWN, "the server learned again: {again:.2} T");
    guard.release_blocking().expect("released");
    locks.close_blocking();
}
