//! `NetLab`: partitions really cut TCP between namespaces (silently, both ways),
//! healing restores it, and nothing is left behind after a drop, a panic, or a
//! killed test process (an ensemble in a lab is lock-partition's tests' ground).
//! Needs root, iproute2 and nftables (scripts/test.sh installs them).

use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::process::Command;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use lock_testkit::{Error, NetLab, NodeId};

mod common;
use common::{pid_alive, ready_child, rerun_as_child_under};

const PORT: u16 = 7000;
const CHILD_ENV: &str = "LOCK_TESTKIT_NETNS_CHILD";

/// An echo server on `node`, port [`PORT`], for the rest of the test.
fn echo_server(lab: &NetLab, node: NodeId) {
    let listener = lab
        .run_in(node, || TcpListener::bind((Ipv4Addr::UNSPECIFIED, PORT)))
        .unwrap()
        .unwrap();
    common::echo(listener);
}

/// Opens a connection from `from` to `to`'s echo server, waiting up to `patience`.
fn connect(
    lab: &NetLab,
    from: NodeId,
    to: NodeId,
    patience: Duration,
) -> std::io::Result<TcpStream> {
    let addr = SocketAddr::from((lab.ip(to), PORT));
    lab.run_in(from, || TcpStream::connect_timeout(&addr, patience))
        .unwrap()
}

/// Whether `from` gets an echo from `to`; a cut must look like silence (a
/// timeout), never like a refusal. A pair expected to connect gets 5 s (a
/// lost first SYN is sent again after 1 s, and a loaded machine may be slow
/// to echo); a pair expected to be cut shows its silence in 0.7 s.
fn reaches(lab: &NetLab, from: NodeId, to: NodeId, expected: bool) -> bool {
    let patience = if expected {
        Duration::from_secs(5)
    } else {
        Duration::from_millis(700)
    };
    match connect(lab, from, to, patience) {
        Ok(mut stream) => {
            stream
                .set_read_timeout(Some(patience.max(Duration::from_secs(2))))
                .unwrap();
            stream.write_all(b"?").unwrap();
            let mut byte = [0u8];
            stream.read_exact(&mut byte).is_ok()
        }
        Err(e) if e.kind() == ErrorKind::TimedOut => false,
        Err(e) => panic!(
            "{} -> {}: {e} (a cut must drop silently)",
            lab.label(from),
            lab.label(to)
        ),
    }
}

/// Asserts which of the pairs among `nodes` reach each other, both ways.
fn assert_reach(lab: &NetLab, nodes: &[NodeId], cut: &[(NodeId, NodeId)], when: &str) {
    for &a in nodes {
        for &b in nodes {
            if a == b {
                continue;
            }
            let expected = !cut.contains(&(a, b)) && !cut.contains(&(b, a));
            assert_eq!(
                reaches(lab, a, b, expected),
                expected,
                "{when}: {} -> {} should {}",
                lab.label(a),
                lab.label(b),
                if expected { "connect" } else { "be cut" }
            );
        }
    }
}

#[test]
fn partitions_cut_tcp_both_ways_silently_and_heal_restores_it() {
    let mut lab = NetLab::new().unwrap();
    let [a, b, c] = ["a", "b", "c"].map(|label| lab.add_node(label).unwrap());
    for node in [a, b, c] {
        echo_server(&lab, node);
    }
    let all = [a, b, c];
    assert_reach(&lab, &all, &[], "before any cut");

    // An established connection across the cut stalls (no reset) and carries on after.
    let mut across = connect(&lab, a, b, Duration::from_secs(5)).unwrap();
    across
        .set_read_timeout(Some(Duration::from_secs(1)))
        .unwrap();

    lab.bridge(a, b).unwrap();
    assert_reach(&lab, &all, &[(a, b)], "bridge(a, b)");
    across.write_all(b"x").unwrap();
    let mut byte = [0u8];
    let stalled = across.read_exact(&mut byte).unwrap_err();
    assert!(
        matches!(stalled.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
        "the connection across the cut should stall, got {stalled}"
    );

    lab.heal().unwrap();
    assert_reach(&lab, &all, &[], "after heal");
    across
        .set_read_timeout(Some(Duration::from_secs(15)))
        .unwrap();
    across.read_exact(&mut byte).unwrap();
    assert_eq!(&byte, b"x", "the stalled byte arrives once healed");

    lab.isolate(&[a, b]).unwrap();
    assert_reach(&lab, &all, &[(a, c), (b, c)], "isolate(a, b)");
    lab.partition(&[a], &[b]).unwrap();
    assert_reach(
        &lab,
        &all,
        &[(a, c), (b, c), (a, b)],
        "isolate then partition",
    );
    lab.heal().unwrap();
    assert_reach(&lab, &all, &[], "after the second heal");
}

fn lab_namespaces(prefix: &str) -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| name.starts_with(prefix))
        .map(str::to_string)
        .collect()
}

#[test]
fn a_lab_dropped_while_a_panic_unwinds_leaves_nothing() {
    let (tx, rx) = mpsc::channel();
    let outcome = std::panic::catch_unwind(move || {
        let mut lab = NetLab::new().unwrap();
        let node = lab.add_node("sleeper").unwrap();
        lab.add_node("other").unwrap();
        lab.isolate(&[node]).unwrap();
        let sleeper = lab.command(node, "sleep").arg("600").spawn().unwrap();
        tx.send((lab.prefix().to_string(), sleeper)).unwrap();
        assert_eq!(
            lab_namespaces(lab.prefix()).len(),
            3,
            "switch and two nodes"
        );
        panic!("a test failing while its lab is up");
    });
    assert!(outcome.is_err());
    let (prefix, mut sleeper) = rx.recv().unwrap();
    assert_eq!(lab_namespaces(&prefix), Vec::<String>::new());
    let status = sleeper.wait().unwrap();
    assert!(
        !status.success(),
        "the process in the lab was killed: {status}"
    );
}

/// The child half of `a_killed_test_process_leaves_nothing`.
fn doomed_child() {
    let mut lab = NetLab::new().unwrap();
    let node = lab.add_node("doomed").unwrap();
    let mut sleeper = lab.command(node, "sleep").arg("600").spawn().unwrap();
    // `ip netns exec` enters the namespace before it execs `sleep`: until then a
    // kill of this process could leave a sleeper that no sweep finds there.
    let comm = format!("/proc/{}/comm", sleeper.id());
    while std::fs::read_to_string(&comm).unwrap().trim() != "sleep" {
        thread::sleep(Duration::from_millis(5));
    }
    println!("READY {} {}", lab.prefix(), sleeper.id());
    thread::sleep(Duration::from_secs(120));
    let _ = sleeper.kill();
    let _ = sleeper.wait();
}

#[test]
fn a_killed_test_process_leaves_nothing() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return doomed_child();
    }
    let (mut child, words) = ready_child("a_killed_test_process_leaves_nothing", CHILD_ENV);
    child.kill().unwrap();
    child.wait().unwrap();
    let (prefix, sleeper) = (words[0].as_str(), words[1].parse::<u32>().unwrap());
    let deadline = Instant::now() + Duration::from_secs(20);
    while !lab_namespaces(prefix).is_empty() || pid_alive(sleeper) {
        assert!(
            Instant::now() < deadline,
            "20 s after the kill: namespaces {:?}, process alive: {}",
            lab_namespaces(prefix),
            pid_alive(sleeper)
        );
        thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn leftovers_of_dead_processes_are_swept_and_live_ones_kept() {
    let mut gone = Command::new("true").spawn().unwrap();
    let dead_pid = gone.id();
    gone.wait().unwrap();
    let live_pid = std::os::unix::process::parent_id();
    let dead = format!("zkt-{dead_pid}-0-switch");
    let live = format!("zkt-{live_pid}-0-leftover-test");
    for name in [&dead, &live] {
        let made = Command::new("ip")
            .args(["netns", "add", name])
            .status()
            .unwrap();
        assert!(made.success());
    }
    let lab = NetLab::new().unwrap();
    let left = lab_namespaces("zkt-");
    let _ = Command::new("ip").args(["netns", "delete", &live]).status();
    assert!(
        !left.contains(&dead),
        "{dead} (pid gone) should be swept: {left:?}"
    );
    assert!(
        left.contains(&live),
        "{live} (pid alive) should be kept: {left:?}"
    );
    drop(lab);
}

#[test]
fn without_privileges_it_says_what_is_needed() {
    if std::env::var_os(CHILD_ENV).is_some() {
        match NetLab::new() {
            Err(e @ Error::NamespacesUnavailable { .. }) => {
                println!("REFUSED {}", e.to_string().replace('\n', " "))
            }
            other => println!("UNEXPECTED {other:?}"),
        }
        return;
    }
    // Root without CAP_NET_ADMIN and CAP_SYS_ADMIN (setpriv is util-linux's).
    let wrapper = [
        "setpriv",
        "--bounding-set=-net_admin,-sys_admin",
        "--inh-caps=-net_admin,-sys_admin",
    ];
    let out = rerun_as_child_under(
        &wrapper,
        "without_privileges_it_says_what_is_needed",
        CHILD_ENV,
    )
    .output()
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find(|l| l.starts_with("REFUSED") || l.starts_with("UNEXPECTED"));
    let line = line.unwrap_or_else(|| panic!("the child said nothing useful:\n{stdout}"));
    assert!(line.contains("CAP_NET_ADMIN"), "{line}");
    assert!(line.contains("run the tests as root"), "{line}");
    assert!(line.contains("scripts/test.sh"), "{line}");
}
