//! A real standalone server: four-letter words, restart, kill, pause.
//! These need ZooKeeper installed (`scripts/install-zookeeper.sh`); without it
//! they fail with an error that says so.

use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use lock_testkit::{Error, Mode, ZkServer};

mod common;
use common::pid_alive;

fn start() -> ZkServer {
    ZkServer::start().unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn four_letter_words_are_parsed() {
    let server = start();
    assert_eq!(
        server.connect_string(),
        format!("127.0.0.1:{}", server.port())
    );
    assert_eq!(server.addr().port(), server.port());
    assert!(server.is_running());
    assert_eq!(server.srvr().unwrap(), Mode::Standalone);

    let metrics = server.mntr().unwrap();
    assert_eq!(metrics.get("zk_server_state"), Some("standalone"));
    let before = metrics.get_u64("zk_packets_received").unwrap();
    assert!(metrics.get_u64("zk_znode_count").unwrap() >= 1);
    server.srvr().unwrap();
    let after = server
        .mntr()
        .unwrap()
        .get_u64("zk_packets_received")
        .unwrap();
    assert!(after > before, "{before} -> {after}");

    let conf = server.four_letter_word("conf").unwrap();
    assert!(conf.contains("tickTime=100"), "{conf}");
    assert!(conf.contains("minSessionTimeout=200"), "{conf}");
    assert!(conf.contains("maxSessionTimeout=60000"), "{conf}");
    assert!(matches!(
        server.four_letter_word("nope!"),
        Err(Error::FourLetterWord { .. })
    ));

    // Dropping kills the JVM and removes the directory.
    let pid = server.jvm_pid().expect("pid of a running server");
    assert!(pid_alive(pid));
    let data = server.data_dir().to_path_buf();
    assert!(data.join("version-2").is_dir());
    assert!(server.log_path().is_file());
    let addr = server.addr();
    drop(server);
    assert!(!pid_alive(pid), "JVM {pid} survived drop");
    assert!(!data.exists(), "{} survived drop", data.display());
    assert!(TcpStream::connect(addr).is_err());
}

#[test]
fn restart_keeps_port_and_data_dir() {
    let server = start();
    let port = server.port();
    let data = server.data_dir().to_path_buf();
    let marker = data.join("marker");
    std::fs::write(&marker, "kept").unwrap();

    server.stop();
    assert!(!server.is_running());
    assert!(server.jvm_pid().is_none());
    assert!(server.srvr().is_err(), "a stopped server answered");
    server.stop(); // idempotent

    server.restart().unwrap();
    assert_eq!(server.port(), port);
    assert_eq!(server.data_dir(), data);
    assert_eq!(server.srvr().unwrap(), Mode::Standalone);
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "kept");

    server.kill();
    assert!(!server.is_running());
    assert!(server.srvr().is_err(), "a killed server answered");
    server.restart().unwrap();
    assert_eq!(server.port(), port);

    // restart() of a running server stops it first.
    let pid = server.jvm_pid().unwrap();
    server.restart().unwrap();
    assert_ne!(server.jvm_pid().unwrap(), pid);
    assert_eq!(server.srvr().unwrap(), Mode::Standalone);
    let log = std::fs::read_to_string(server.log_path()).unwrap();
    assert_eq!(log.matches("=== lock-testkit: launch").count(), 4);
}

#[test]
fn pause_freezes_the_server() {
    let server = start();
    server.pause().unwrap();
    let err = lock_nodelay::four_letter_word(server.addr(), "ruok", Duration::from_millis(300));
    assert_eq!(err.unwrap_err().kind(), std::io::ErrorKind::TimedOut);
    server.resume().unwrap();
    assert_eq!(server.srvr().unwrap(), Mode::Standalone);
    // A paused server can be killed, and stopped.
    server.pause().unwrap();
    server.kill();
    assert!(!server.is_running());
    assert!(matches!(server.pause(), Err(Error::NotRunning { .. })));
    server.restart().unwrap();
    server.pause().unwrap();
    let t = Instant::now();
    server.stop();
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "stop took {:?}",
        t.elapsed()
    );
    assert!(!server.is_running());
}

#[test]
fn builder_settings_reach_the_server() {
    let server = ZkServer::builder()
        .tick_time(Duration::from_millis(50))
        .min_session_timeout(Duration::from_millis(100))
        .max_session_timeout(Duration::from_secs(5))
        .config("extendedTypesEnabled", "true")
        .max_heap_mb(128)
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    let conf = server.four_letter_word("conf").unwrap();
    assert!(conf.contains("tickTime=50"), "{conf}");
    assert!(conf.contains("minSessionTimeout=100"), "{conf}");
    assert!(conf.contains("maxSessionTimeout=5000"), "{conf}");
    let cfg = std::fs::read_to_string(
        Path::new(server.data_dir())
            .parent()
            .unwrap()
            .join("zoo.cfg"),
    )
    .unwrap();
    assert!(cfg.contains("extendedTypesEnabled=true"), "{cfg}");

    let bad = ZkServer::builder()
        .min_session_timeout(Duration::from_secs(10))
        .max_session_timeout(Duration::from_secs(1))
        .start();
    assert!(matches!(bad, Err(Error::InvalidConfig(_))));
}

#[test]
fn a_server_that_cannot_start_reports_its_log() {
    let err = ZkServer::builder()
        .config("tickTime", "not-a-number")
        .start()
        .unwrap_err();
    let msg = err.to_string();
    let Error::Exited { log, log_tail, .. } = &err else {
        panic!("{err:?}");
    };
    assert!(
        log_tail.contains("NumberFormatException") || log_tail.contains("not-a-number"),
        "{msg}"
    );
    assert!(msg.contains(&*log.to_string_lossy()), "{msg}");
    // The directory is kept for inspection; clean it up here.
    let dir = log.parent().unwrap();
    assert!(log.is_file());
    std::fs::remove_dir_all(dir).unwrap();
}
