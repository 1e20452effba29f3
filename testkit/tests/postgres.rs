//! A real PostgreSQL cluster: serves SQL on loopback, and leaves nothing behind
//! when dropped or when its test process is killed. Needs PostgreSQL installed
//! (`scripts/test.sh` installs Debian's `postgresql` when missing).

use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use lock_testkit::{Error, Postgres};

mod common;
use common::{pid_alive, ready_child};

const CHILD_ENV: &str = "LOCK_TESTKIT_POSTGRES_ORPHAN_CHILD";

/// The postmaster's pid, from its lock file.
fn postmaster_pid(db: &Postgres) -> u32 {
    let text = std::fs::read_to_string(db.dir().join("data/postmaster.pid")).unwrap();
    text.lines().next().unwrap().trim().parse().unwrap()
}

/// Waits up to `within` for the server to be gone: process, port and directory.
fn assert_gone(dir: &Path, pid: u32, addr: SocketAddr, within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        let alive = pid_alive(pid);
        let listening = TcpStream::connect_timeout(&addr, Duration::from_millis(100)).is_ok();
        let dir_left = dir.exists();
        if !alive && !listening && !dir_left {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "postmaster {pid} alive: {alive}, {addr} accepting: {listening}, {} left: {dir_left}",
            dir.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn serves_sql_on_loopback_and_stops_with_its_sessions_on_drop() {
    let db = Postgres::start().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        db.url(),
        format!("postgresql://postgres@127.0.0.1:{}/postgres", db.port())
    );

    db.psql("CREATE TABLE t (id int PRIMARY KEY, v text); INSERT INTO t VALUES (1, 'a'), (2, 'b')")
        .unwrap();
    assert_eq!(
        db.psql("SELECT id, v FROM t ORDER BY id").unwrap(),
        "1|a\n2|b"
    );
    let refused = db.psql("SELEC 1").unwrap_err();
    assert!(matches!(refused, Error::Postgres { .. }), "{refused}");
    assert!(refused.to_string().contains("syntax error"), "{refused}");
    assert_eq!(
        db.psql("SHOW listen_addresses").unwrap(),
        "127.0.0.1",
        "loopback only"
    );

    // A session still open when the server is dropped is ended with it.
    let mut session = Command::new(db.psql_path())
        .args(["--no-psqlrc", "--dbname", &db.url(), "--command"])
        .arg("SELECT pg_sleep(60)")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let wait = Instant::now();
    while db
        .psql("SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep%'")
        .unwrap()
        != "1"
    {
        assert!(
            wait.elapsed() < Duration::from_secs(10),
            "the session never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }

    let (dir, pid, addr) = (db.dir().to_path_buf(), postmaster_pid(&db), db.addr());
    drop(db);
    assert_gone(&dir, pid, addr, Duration::ZERO);
    let status = session.wait().unwrap();
    assert!(
        !status.success(),
        "the session outlived its server: {status}"
    );
}

/// The child half of `a_killed_test_process_leaves_no_server_behind`: starts a
/// server it never drops, reports it, and waits to be killed.
fn orphan_child() {
    let db: &'static Postgres = Box::leak(Box::new(Postgres::start().unwrap()));
    println!(
        "READY {} {} {}",
        postmaster_pid(db),
        db.addr(),
        db.dir().display()
    );
    std::thread::sleep(Duration::from_secs(120));
}

#[test]
fn a_killed_test_process_leaves_no_server_behind() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return orphan_child();
    }
    let (mut child, words) =
        ready_child("a_killed_test_process_leaves_no_server_behind", CHILD_ENV);
    let (pid, addr, dir) = (
        words[0].parse().unwrap(),
        words[1].parse().unwrap(),
        PathBuf::from(&words[2]),
    );
    assert!(
        pid_alive(pid),
        "the postmaster {pid} is not running before the kill"
    );

    // SIGKILL: no destructor runs in the child; the watchdog does the rest.
    child.kill().unwrap();
    child.wait().unwrap();
    assert_gone(&dir, pid, addr, Duration::from_secs(15));
}
