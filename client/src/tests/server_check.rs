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
