//! The server check: a hazardous server is an event and one warning; a refused
//! or safe check is recorded without an event.

use super::connected;
use super::recorder::Recorder;
use crate::*;
use std::time::Duration;

/// ZooKeeper's sample settings (tickTime 2000, syncLimit 5) as `conf` says them.
const SAMPLE_CONF: &str = "clientPort=2181\ntickTime=2000\nminSessionTimeout=4000\n\
    maxSessionTimeout=40000\nserverId=1\ninitLimit=10\nsyncLimit=5\n";

#[test]
fn a_hazardous_server_is_an_event_and_a_warning_once() {
    let recorder = std::sync::Arc::new(Recorder::default());
    tracing::subscriber::with_default(recorder.clone(), || {
        // A 10 s session (`connected()`) on the sample settings.
        let (locks, link) = connected();
        let mut events = locks.connection_events();
        let checker = link.server_checker();
        let server: std::net::SocketAddr = "10.0.0.1:2181".parse().unwrap();
        checker.report(server, Ok(SAMPLE_CONF.to_owned()));
        let Some(ConnectionEvent::ServerHazard { server: at, hazard }) =
            events.next_timeout_blocking(Duration::ZERO)
        else {
            panic!("no hazard event")
        };
        assert_eq!(at, server);
        assert_eq!(hazard.kind, HazardKind::FollowerOutlivesSession);
        assert_eq!(hazard.session_timeout, Duration::from_secs(10));
        // The same hazard again (a reconnect to the same server): no new event.
        checker.report(server, Ok(SAMPLE_CONF.to_owned()));
        assert_eq!(events.next_timeout_blocking(Duration::ZERO), None);
        // A stream made later starts with it.
        let mut late = locks.connection_events();
        assert!(matches!(
            late.next_timeout_blocking(Duration::ZERO),
            Some(ConnectionEvent::ServerHazard { .. })
        ));
        assert_eq!(late.next_timeout_blocking(Duration::ZERO), None);
        let checks = locks.server_checks();
        assert_eq!(checks.len(), 1);
        assert_eq!(checks[0].hazards, [hazard]);
        let warnings: Vec<String> = recorder
            .lines
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.contains("WARN") && l.contains("unsafe ZooKeeper settings"))
            .cloned()
            .collect();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("raise the session timeout above 16.5 s"));
    });
}

#[test]
fn a_refused_or_safe_check_is_recorded_without_an_event() {
    let (locks, link) = connected();
    let mut events = locks.connection_events();
    let checker = link.server_checker();
    let refusing: std::net::SocketAddr = "10.0.0.1:2181".parse().unwrap();
    let refused = "conf is not executed because it is not in the whitelist.\n";
    checker.report(refusing, Ok(refused.to_owned()));
    let safe: std::net::SocketAddr = "10.0.0.2:2181".parse().unwrap();
    checker.report(safe, Ok(SAMPLE_CONF.replace("syncLimit=5", "syncLimit=2")));
    assert_eq!(events.next_timeout_blocking(Duration::ZERO), None);
    let checks = locks.server_checks();
    assert_eq!(checks[0].conf, Err(ConfError::Refused));
    assert!(checks[0].hazards.is_empty());
    assert_eq!(checks[1].conf.as_ref().unwrap().sync_limit, Some(2));
    assert!(checks[1].hazards.is_empty());
}

/// What a probe made for an earlier connection found is dropped: the server
/// the session reconnected to may be another one. The same report made for
/// the current connection counts (a standalone server: the next answered read
/// proves contact at its send time, which moves the lock's trust).
#[test]
fn a_probe_report_for_an_earlier_connection_is_dropped() {
    use super::{grant, requests, SID};
    use lock_core::{Op, Reply, SessionEvent, Stat};
    use std::time::Instant;
    let standalone = || {
        let server: std::net::SocketAddr = "10.0.0.1:2181".parse().unwrap();
        let srvr = "Zookeeper version: 3.9.3\nMode: standalone\n".to_owned();
        let conf = "clientPort=2181\ntickTime=2000\n".to_owned();
        ServerProbe::from_answers(vec![(server, vec![Ok(srvr), Ok(conf)])])
    };
    let answer_all = |link: &mut Link| {
        for r in requests(link) {
            let reply = match r.op {
                Op::GetData { .. } => Reply::Data {
                    data: Vec::new(),
                    stat: Stat {
                        czxid: 5,
                        ephemeral_owner: SID,
                        ..Stat::default()
                    },
                },
                Op::GetChildren { .. } => Reply::Children(Vec::new()),
                Op::Sync { .. } => Reply::Synced,
                ref other => panic!("unexpected {other:?}"),
            };
            link.handle_reply(r.id, Ok(reply), Instant::now());
        }
    };
    for stale in [true, false] {
        let (locks, mut link) = super::proving_on(std::sync::Arc::new(SystemClock));
        let mut pending = locks.mutex("/l").start().unwrap();
        let sent = requests(&mut link);
        grant(&mut link, &sent, 5);
        let guard = pending
            .wait_timeout_blocking(Duration::from_secs(5))
            .expect("granted")
            .unwrap();
        let early = link.server_checker();
        // The connection drops and comes back (same session): the lock checks
        // its node and resumes.
        let now = Instant::now();
        link.handle_session(super::DISCONNECTED, now);
        link.handle_session(SessionEvent::Connected { session_id: SID }, now);
        answer_all(&mut link);
        assert_eq!(guard.status(), LockStatus::Held);
        let before = guard.trusted_until().expect("trusted");
        let checker = if stale { early } else { link.server_checker() };
        std::thread::sleep(Duration::from_millis(20));
        checker.report_probes(standalone());
        // A read, answered on this connection.
        let mut who = Box::pin(locks.participants("/other"));
        assert!(super::poll_once(who.as_mut()).is_pending());
        answer_all(&mut link);
        let after = guard.trusted_until().expect("trusted");
        if stale {
            assert_eq!(after, before, "a report for the old connection counted");
        } else {
            assert!(
                after >= before + Duration::from_millis(20),
                "{before:?} -> {after:?}"
            );
        }
        drop(guard);
    }
}
