//! No JVM outlives its test process, even one killed with SIGKILL.
//! Needs ZooKeeper installed (`scripts/install-zookeeper.sh`).

use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::thread;
use std::time::{Duration, Instant};

use lock_testkit::{ZkEnsemble, ZkServer};

mod common;
use common::{pid_alive, ready_child};

const CHILD_ENV: &str = "LOCK_TESTKIT_ORPHAN_CHILD";

/// The child half of `jvms_die_with_a_killed_test_process` (the same test, re-run
/// in a child process with `CHILD_ENV` set): starts a server and an ensemble,
/// reports them, then waits to be killed.
fn orphan_child() {
    // A `static`-like server that is never dropped, and a normal one.
    let server: &'static ZkServer = Box::leak(Box::new(ZkServer::start().unwrap()));
    let ensemble = ZkEnsemble::start(3).unwrap();
    let mut line = format!(
        "READY {} {} {}",
        server.jvm_pid().unwrap(),
        server.addr(),
        server.data_dir().display()
    );
    for member in ensemble.members() {
        line += &format!(" {} {}", member.jvm_pid().unwrap(), member.addr());
    }
    line += &format!(" {}", ensemble.root_dir().display());
    println!("{line}");
    thread::sleep(Duration::from_secs(120));
}

#[test]
fn jvms_die_with_a_killed_test_process() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return orphan_child();
    }
    let (mut child, words) = ready_child("jvms_die_with_a_killed_test_process", CHILD_ENV);
    // pid addr dir, 3 x (pid addr), root
    assert_eq!(words.len(), 10, "{words:?}");
    let pids: Vec<u32> = [0, 3, 5, 7]
        .iter()
        .map(|i| words[*i].parse().unwrap())
        .collect();
    let addrs: Vec<SocketAddr> = [1, 4, 6, 8]
        .iter()
        .map(|i| words[*i].parse().unwrap())
        .collect();
    let dirs = [PathBuf::from(&words[2]), PathBuf::from(&words[9])];
    for pid in &pids {
        assert!(pid_alive(*pid), "JVM {pid} not running before the kill");
    }

    // SIGKILL: no destructor, no panic handler, nothing runs in the child.
    child.kill().unwrap();
    child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let alive: Vec<u32> = pids.iter().copied().filter(|p| pid_alive(*p)).collect();
        let listening: Vec<SocketAddr> = addrs
            .iter()
            .copied()
            .filter(|a| TcpStream::connect_timeout(a, Duration::from_millis(100)).is_ok())
            .collect();
        let dirs_left: Vec<&PathBuf> = dirs.iter().filter(|d| d.exists()).collect();
        if alive.is_empty() && listening.is_empty() && dirs_left.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "after the test process died: JVMs alive {alive:?}, ports open {listening:?}, dirs left {dirs_left:?}"
        );
        thread::sleep(Duration::from_millis(20));
    }
}
