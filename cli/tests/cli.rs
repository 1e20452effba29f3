//! The built `zklock` binary against a real ZooKeeper (lock-testkit).

mod common;

use common::*;
use lock_testkit::FaultProxy;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// N concurrent processes, each incrementing a counter file 10 times under
/// `zklock exec`: no lost update, and the tokens seen in the critical section
/// strictly increase.
#[test]
fn mutual_exclusion_of_concurrent_processes() {
    let (zk, lock, dir) = setup("counter");
    let counter = dir.join("counter");
    let tokens = dir.join("tokens");
    std::fs::write(&counter, "0\n").unwrap();
    let script = format!(
        "n=$(cat {c}); sleep 0.01; echo $((n + 1)) > {c}; echo \"$ZKLOCK_TOKEN $ZKLOCK_NODE\" >> {t}",
        c = counter.display(),
        t = tokens.display()
    );
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let (zk, lock, script) = (zk.clone(), lock.clone(), script.clone());
            std::thread::spawn(move || {
                for _ in 0..10 {
                    exits(&zk, &["exec", &lock, "--", "sh", "-c", &script], 0);
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    assert_eq!(read(&counter), "40");
    let seen: Vec<(i64, String)> = std::fs::read_to_string(&tokens)
        .unwrap()
        .lines()
        .map(|l| {
            let (token, node) = l.split_once(' ').unwrap();
            (token.parse().unwrap(), node.to_owned())
        })
        .collect();
    assert_eq!(seen.len(), 40);
    for pair in seen.windows(2) {
        assert!(pair[0].0 < pair[1].0, "tokens not increasing: {pair:?}");
    }
    assert!(seen
        .iter()
        .all(|(_, node)| node.starts_with(&format!("{lock}/"))));
}

/// CMD's exit code is zklock's; a missing CMD is 127, one that cannot be run
/// (a directory) 126. (Usage errors: usage.rs, help.rs and main.rs's tests;
/// ZKLOCK_TOKEN and ZKLOCK_NODE: mutual_exclusion_of_concurrent_processes.)
#[test]
fn exit_codes_of_cmd() {
    let zk = server().connect_string();
    let lock = unique("codes");
    exits(&zk, &["exec", &lock, "--", "sh", "-c", "exit 7"], 7);
    exits(&zk, &["exec", &lock, "--", "zklock-no-such-command"], 127);
    exits(&zk, &["exec", &lock, "--", "/"], 126);
}

/// CMD reads zklock's stdin from where zklock's caller left it (CMD's guard is
/// started before the lock and handed zklock's stdin once it is held), with no
/// stdin at all, and with a closed one.
#[test]
fn cmd_reads_zklocks_stdin_where_it_was_left() {
    let (zk, lock, dir) = setup("stdin");
    let input = dir.join("input");
    std::fs::write(&input, "first\nsecond\nthird\n").unwrap();
    // The shell reads one line, then zklock's CMD reads the rest of the file
    // through the same open file (same offset).
    let script = format!(
        "{{ read first; echo \"shell read $first\"; {zklock} exec {lock} -- cat; }} < {input}",
        zklock = env!("CARGO_BIN_EXE_zklock"),
        input = input.display(),
    );
    let out = run(Command::new("sh")
        .args(["-c", &script])
        .env("ZKLOCK_ZK", &zk));
    assert_eq!(code(&out), 0, "{out:?}");
    assert_eq!(stdout(&out), "shell read first\nsecond\nthird\n");
    // Piped.
    let mut piped = zklock(&zk)
        .args(["exec", &lock, "--", "tr", "a-z", "A-Z"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    piped.stdin.take().unwrap().write_all(b"piped\n").unwrap();
    let out = piped.wait_with_output().unwrap();
    assert_eq!(stdout(&out), "PIPED\n", "{out:?}");
    // /dev/null, and closed (CMD then reads nothing).
    let out = run(zklock(&zk)
        .args(["exec", &lock, "--", "cat"])
        .stdin(Stdio::null()));
    assert_eq!((code(&out), out.stdout.len()), (0, 0), "{out:?}");
    let script = format!(
        "{zklock} exec {lock} -- sh -c 'cat; echo \"cat: $?\"' <&-",
        zklock = env!("CARGO_BIN_EXE_zklock"),
    );
    let out = run(Command::new("sh")
        .args(["-c", &script])
        .env("ZKLOCK_ZK", &zk));
    assert_eq!(code(&out), 0, "{out:?}");
    assert_eq!(stdout(&out), "cat: 0\n", "{out:?}");
}

/// The holder's network is blackholed: CMD is stopped (and zklock exits 74)
/// before another session acquires the lock. zklock stops CMD about 0.87 of the
/// session timeout after the last contact and the server expires the session no
/// sooner than 1.0 of it: a 6 s session leaves ~0.8 s of margin for a loaded machine.
#[test]
fn cmd_stopped_before_another_session_acquires() {
    let zk = server().connect_string();
    let proxy = FaultProxy::start(server().addr()).unwrap();
    let lock = unique("blackhole");
    let dir = scratch("blackhole");
    let pidfile = dir.join("pid");
    let holder = hold(
        &proxy.connect_string(),
        &["--session-timeout", "6"],
        &lock,
        &format!("echo $$ > {}; exec sleep 60", pidfile.display()),
    );
    let pid = written_pid(&pidfile);

    let contender = zklock(&zk)
        .args(["exec", "-w", "30", &lock, "--", "sh", "-c"])
        .arg(format!("if kill -0 {pid} 2>/dev/null; then exit 9; fi"))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    proxy.blackhole();

    let held = holder.wait_with_output().unwrap();
    let said = stderr(&held);
    assert_eq!(code(&held), LOST, "{said}");
    assert!(said.contains("stopping CMD"), "{said}");

    let out = contender.wait_with_output().unwrap();
    assert_eq!(
        code(&out),
        0,
        "the contender's CMD ran while the holder's CMD was alive: {out:?}"
    );
    proxy.heal();
}

/// A short cut that heals within the session: CMD keeps running and its exit
/// code is zklock's.
#[test]
fn cmd_left_running_across_a_short_cut() {
    let proxy = FaultProxy::start(server().addr()).unwrap();
    let lock = unique("cut");
    let dir = scratch("cut");
    let ready = dir.join("ready");
    let holder = hold(
        &proxy.connect_string(),
        &[],
        &lock,
        &format!("touch {}; sleep 3; exit 5", ready.display()),
    );
    wait_for(&ready, LONG);
    proxy.cut();
    let held = holder.wait_with_output().unwrap();
    eprintln!("holder: {}", stderr(&held));
    assert_eq!(code(&held), 5, "{held:?}");
}

/// `zklock elect`: one leader runs CMD at a time; when it stops, the next is
/// elected; `leader` names each in turn (id, node, token), `ls` and `top` by
/// the same ids, and `leader --watch` reports when the last one goes.
#[test]
fn elect_runs_cmd_while_leader() {
    let zk = server().connect_string();
    // A root of its own for `top` (others' under /cli-tests may refuse reads).
    let root = unique("elect");
    let path = format!("{root}/e");
    let dir = scratch("elect");
    let candidate = |id: &str| {
        let ready = dir.join(id);
        let child = zklock(&zk)
            .args(["elect", &path, id, "--", "sh", "-c"])
            .arg(format!(
                "echo \"$ZKLOCK_TOKEN $ZKLOCK_NODE\" > {}; exec sleep 60",
                ready.display()
            ))
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        (child, ready)
    };
    let (mut a, a_ready) = candidate("alpha");
    wait_for(&a_ready, LONG);
    let (mut b, b_ready) = candidate("beta");
    std::thread::sleep(Duration::from_millis(700));
    assert!(!b_ready.exists(), "two leaders");
    let leader = stdout(&exits(&zk, &["leader", &path], 0));
    let fields: Vec<&str> = leader.trim_end().split('\t').collect();
    let a_written = std::fs::read_to_string(&a_ready).unwrap();
    assert_eq!(
        fields[..2],
        ["alpha", a_written.trim().split(' ').nth(1).unwrap()]
    );
    assert!(fields[2].parse::<i64>().unwrap() > 0, "{leader:?}");
    // `ls` and `top` name the candidates by their ids, as `leader` does.
    let rows = ls_rows(&zk, &path);
    let owners: Vec<&str> = rows.iter().map(|row| row[3].as_str()).collect();
    assert_eq!(owners, ["alpha", "beta"], "{rows:?}");
    let top = run(zklock(&zk).args(["top", "--once", &root]));
    let table = stdout(&top);
    let row = table.lines().find(|l| l.starts_with(&format!("{path} ")));
    assert!(row.is_some_and(|r| r.contains(" alpha(")), "{top:?}");
    // `/` is a root like any other (only no lock directory itself).
    exits(&zk, &["top", "--once", "/"], 0);

    kill(&a, "-TERM");
    assert_eq!(a.wait().unwrap().code(), Some(128 + 15));
    wait_for(&b_ready, LONG);
    std::thread::sleep(Duration::from_millis(50));
    let leader = run(zklock(&zk).args(["leader", &path]));
    assert!(stdout(&leader).starts_with("beta\t"), "{leader:?}");
    let token = |p: &Path| -> i64 {
        let text = std::fs::read_to_string(p).unwrap();
        text.split(' ').next().unwrap().parse().unwrap()
    };
    assert!(token(&a_ready) < token(&b_ready));
    // `leader --watch` prints beta, then "-" once beta goes (half a second
    // later, so that it saw beta first), and exits 0 on SIGINT.
    let watch = zklock(&zk)
        .args(["leader", "--watch", &path])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    kill(&b, "-TERM");
    assert_eq!(b.wait().unwrap().code(), Some(128 + 15));
    std::thread::sleep(Duration::from_millis(500));
    kill(&watch, "-INT");
    let out = watch.wait_with_output().unwrap();
    assert_eq!(code(&out), 0, "{out:?}");
    let watched = stdout(&out);
    match watched.lines().collect::<Vec<_>>()[..] {
        [leader, "-"] => assert!(leader.starts_with("beta\t"), "{watched:?}"),
        _ => panic!("not the leader then \"-\": {watched:?}"),
    }
}

/// `--auth` and `--acl creator`: a holder's lock directory and node are its user's
/// only; another user (or none) is refused with a failure (exit 1, "not
/// authorised"), the same user finds the lock busy.
#[test]
fn digest_auth_and_creator_acl() {
    let zk = server().connect_string();
    let lock = format!("{}/job", unique("auth"));
    let dir = scratch("auth");
    let ready = dir.join("ready");
    let alice = ["--auth", "alice:secret", "--acl", "creator"];
    let mut holder = holding(&zk, &alice, &lock, &ready);
    let out = run(zklock(&zk)
        .arg("exec")
        .args(alice)
        .args(["-n", &lock, "--", "true"]));
    assert_eq!(code(&out), BUSY, "same user: {out:?}");
    for other in [
        &["--auth", "bob:secret"][..],
        &[],
        &["--auth", "alice:wrong"],
    ] {
        let out = run(zklock(&zk)
            .args(other)
            .args(["exec", "-n", &lock, "--", "true"]));
        assert_eq!(code(&out), 1, "{other:?}: {out:?}");
        // One sentence naming the lock.
        let stderr = stderr(&out);
        assert!(
            stderr.contains(&format!(
                "zklock: {lock}: ZooKeeper refused: not authorised"
            )),
            "{other:?}: {out:?}"
        );
        assert_eq!(stderr.lines().count(), 1, "{other:?}: {stderr}");
    }
    exits(&zk, &["--auth", "nocolon", "exec", &lock, "--", "true"], 2);
    terminate(&mut holder);
}

/// `exec --revocable` waiting: `zklock revoke` of its node makes it give up its
/// place (exit 75); a plain holder keeps the lock. `leader` names the holder (a
/// `zklock exec` node, with an empty id), `revoke PATH` prints the node it
/// asked. (A revocable holder revoked: lifetime::a_revocation_stops_the_whole_group.)
#[test]
fn revocable_exec_lets_go_when_revoked() {
    let (zk, lock, dir) = setup("revocable");
    let (mut plain, node) = holding_node(&zk, &[], &lock, &dir);
    let leader = stdout(&exits(&zk, &["leader", &lock], 0));
    assert_eq!(leader.trim_end().split('\t').nth(1), Some(node.as_str()));
    let waiter = zklock(&zk)
        .args(["exec", "--revocable", &lock, "--", "true"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let rows = ls_rows_of(&zk, &lock, 2);
    // `revoke PATH` asks the holders; a waiter is revoked by its node.
    let asked = stdout(&exits(&zk, &["revoke", &lock], 0));
    assert_eq!(asked.trim(), node);
    let waiting = format!("{lock}/{}", rows[1].last().unwrap());
    exits(&zk, &["revoke", &waiting], 0);
    let out = waiter.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(BUSY), "{out:?}");
    let out = run(zklock(&zk).args(["exec", "-n", &lock, "--", "true"]));
    assert_eq!(code(&out), BUSY, "the plain holder still holds: {out:?}");
    terminate(&mut plain);
}

/// SIGINT while CMD runs, three ways; CMD gets exactly one each time. CMD (a
/// shell) counts the SIGINTs it gets and ends by itself after about 1.5 s.
///
/// * Ctrl-C on the terminal (a pty from script(1)): CMD's process group is the
///   terminal's foreground while it runs, so the terminal interrupts CMD, not
///   zklock (which would otherwise pass it on a second time).
/// * `kill -INT` of zklock while it runs on the terminal: forwarded to CMD's group.
/// * `kill -INT` of zklock without a terminal (setsid(1), like cron or systemd):
///   forwarded too.
#[test]
fn sigint_reaches_cmd_once() {
    let zk = server().connect_string();
    let zklock_bin = env!("CARGO_BIN_EXE_zklock");
    for case in ["ctrl-c", "kill-on-terminal", "kill-without-terminal"] {
        let lock = unique("sigint");
        let dir = scratch(&format!("sigint-{case}"));
        let (pid, ints, ready, done) = (
            dir.join("zklock.pid"),
            dir.join("ints"),
            dir.join("ready"),
            dir.join("done"),
        );
        let cmd = dir.join("cmd.sh");
        std::fs::write(
            &cmd,
            format!(
                "trap 'echo int >> {ints}' INT\n\
                 touch {ready}\n\
                 i=0; while [ $i -lt 30 ]; do sleep 0.05; i=$((i+1)); done\n\
                 touch {done}\n",
                ints = ints.display(),
                ready = ready.display(),
                done = done.display(),
            ),
        )
        .unwrap();
        let exec = format!(
            "echo $$ > {}; exec env --default-signal {zklock_bin} exec {lock} -- sh {}",
            pid.display(),
            cmd.display()
        );
        let mut child = if case == "kill-without-terminal" {
            Command::new("setsid")
                .args(["-w", "sh", "-c", &exec])
                .env("ZKLOCK_ZK", &zk)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("setsid(1) from util-linux")
        } else {
            on_a_terminal(&zk, &exec)
                .env("SHELL", "/bin/sh")
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .spawn()
                .expect("script(1) from util-linux")
        };
        wait_for(&ready, LONG);
        if case == "ctrl-c" {
            use std::io::Write;
            let tty = child.stdin.as_mut().unwrap();
            tty.write_all(b"\x03").unwrap();
            tty.flush().unwrap();
        } else {
            let zklock_pid = std::fs::read_to_string(&pid).unwrap();
            let ok = Command::new("kill")
                .args(["-INT", zklock_pid.trim()])
                .status()
                .unwrap();
            assert!(ok.success(), "{case}");
        }
        wait_for(&done, LONG);
        drop(child.stdin.take());
        let status = child.wait().unwrap();
        assert!(status.success(), "{case}: {status:?}");
        let count = std::fs::read_to_string(&ints)
            .map(|s| s.lines().count())
            .unwrap_or(0);
        assert_eq!(count, 1, "{case}: SIGINTs CMD got");
    }
}
