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

use lock_client::{ConnectionEvent, HazardKind, LockClient, ServerCheck};
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
