//! Bad input and unreachable servers, with the built `zklock`: usage errors are
//! found before connecting (exit 2, one line), connect failures name each server
//! and what it did (69), a missing chroot says so.

mod common;

use common::*;
use lock_testkit::FaultProxy;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Every usage error exits 2 with one line naming the problem, and is found
/// before connecting: the server given refuses connections, which would be 69.
/// CMD does not run (`touch RAN` would leave a file).
#[test]
fn usage_errors_before_connecting() {
    let refusing = format!("127.0.0.1:{}", closed_port());
    let too_long = format!("/{}", "a".repeat(131_010));
    let ran = scratch("usage").join("ran");
    let not_utf8 = r#""/a\xFFb" is not valid UTF-8"#;
    // `ARGS | MESSAGE`, ARGS split at spaces (`''` an empty argument, LONG the
    // path above, RAN a file CMD creates, BAD the bytes `/a\xffb`); `ZKLOCK_ZK=`
    // first: that environment instead of --zk.
    let cases: &[&str] = &[
        "exec relative -- true | must be absolute",
        "exec /a/ -- true | must not end with '/'",
        "exec /zookeeper/x -- true | reserved",
        "exec --lock-delay 5 --read /a -- true | --lock-delay needs a mutex",
        "exec --lock-delay 5 --semaphore 2 /a -- true | --lock-delay needs a mutex",
        "exec --semaphore 0 /a -- true | at least 1 permit",
        "exec --owner me --scheme curator /a -- true | Curator",
        "exec LONG -- true | ZKLOCK_NODE",
        "exec --read LONG -- true | ZKLOCK_NODE",
        "elect relative id -- true | must be absolute",
        "ls relative | must be absolute",
        "revoke /a//b | empty segment",
        "leader x | must be absolute",
        "ZKLOCK_ZK= ls /a | empty ZooKeeper connect string",
        "--zk '' exec /a -- true | empty ZooKeeper connect string",
        "--zk host:notaport ls /a | malformed server \"host:notaport\"",
        "--zk host:0 ls /a | malformed server \"host:0\"",
        "--zk h:1,,g:2 ls /a | empty server entry",
        "--zk :1 ls /a | malformed server \":1\"",
        "--zk 127.0.0.1:http doctor | malformed server \"127.0.0.1:http\"",
        "--zk h:1/chroot/ ls /a | invalid chroot",
        "deadlocks / | the root cannot be a lock directory",
        "exec --scheme go --read /a -- true | --scheme go has only a mutex",
        "exec --scheme go --semaphore 2 /a -- true | --scheme go has only a mutex",
        // go-zookeeper's `Lock` fails on a marker node in the lock directory.
        "exec --scheme go --lock-delay 1 /a -- touch RAN | zklock: --lock-delay cannot be used \
         with --scheme go: go-zookeeper's Lock fails on the marker node it keeps",
        "elect /a '' -- true | participant ID must not be empty",
        // Not UTF-8: a path, the connect string, a value.
        &format!("exec BAD -- true | {not_utf8}"),
        &format!("ls BAD | {not_utf8}"),
        &format!("--zk BAD ls /a | {not_utf8}"),
        &format!("exec --owner BAD /a -- true | {not_utf8}"),
    ];
    for case in cases {
        let (line, message) = case.split_once(" | ").unwrap();
        let (env_zk, line) = match line.strip_prefix("ZKLOCK_ZK= ") {
            Some(line) => ("", line),
            None => (refusing.as_str(), line),
        };
        let args = line.split(' ').map(|a| match a {
            "''" => OsString::new(),
            "LONG" => too_long.clone().into(),
            "RAN" => ran.clone().into(),
            "BAD" => OsStr::from_bytes(b"/a\xffb").into(),
            a => a.into(),
        });
        let out = run(zklock(env_zk).args(args));
        assert_eq!(out.status.code(), Some(2), "{line}: {out:?}");
        let stderr = stderr(&out);
        assert_eq!(stderr.lines().count(), 1, "{line}: one line: {stderr}");
        assert!(stderr.contains(message), "{line}: {stderr}");
    }
    assert!(!ran.exists(), "CMD ran");
}

/// The checks refuse no more than the kernel would: a lock path just short of
/// the environment limit still runs CMD, and CMD's arguments (after `--`) may
/// hold any bytes, passed on as they are.
#[test]
fn what_the_checks_let_through_runs_cmd() {
    let zk = server().connect_string();
    // ZKLOCK_NODE=<path>/zkl-<32 hex>-write-<10> and the NUL: 68 bytes besides the
    // path, one of them kept for a negative sequence number.
    let path = format!("/cli-tests/{}", "b".repeat(131_072 - 68 - 11));
    let out = run(zklock(&zk).args([
        "exec",
        &path,
        "--",
        "sh",
        "-c",
        "test ${#ZKLOCK_NODE} -gt 131000",
    ]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let bad = OsStr::from_bytes(b"/a\xffb");
    let out = run(zklock(&zk)
        .args(["exec", &unique("not-utf8-cmd"), "--", "test"])
        .args([bad, OsStr::new("="), bad]));
    assert_eq!(code(&out), 0, "{out:?}");
}

/// Every server refusing: 69 well before the connect timeout (30 s asked),
/// naming each server and the refusal, for `ls` as for `exec`. A server that accepts TCP but gives no
/// session: 69 naming that; SIGINT while connecting to it: 130 at once.
#[test]
fn connect_failures_say_why() {
    let (a, b) = (closed_port(), closed_port());
    for command in [&["ls", "/x"][..], &["exec", "/x", "--", "true"]] {
        let start = Instant::now();
        let out = run(zklock(&format!("127.0.0.1:{a},localhost:{b}"))
            .args(["--session-timeout", "30"])
            .args(command));
        let took = start.elapsed();
        assert_eq!(code(&out), CONNECT, "{command:?}: {out:?}");
        let stderr = stderr(&out);
        for server in [format!("127.0.0.1:{a}"), format!("localhost:{b}")] {
            let refused = format!("{server}: connection refused");
            assert!(stderr.contains(&refused), "{command:?}: {stderr}");
        }
        assert!(
            took < Duration::from_secs(15),
            "{command:?}: waited {took:?} for refusing servers"
        );
    }

    let proxy = FaultProxy::start(server().addr()).unwrap();
    proxy.blackhole();
    let out = run(zklock(&proxy.connect_string()).args(["--session-timeout", "1", "ls", "/x"]));
    assert_eq!(code(&out), CONNECT, "{out:?}");
    let stderr = stderr(&out);
    // A signal while connecting ends zklock as it would have (128+N), at once.
    let connecting = zklock(&proxy.connect_string())
        .args(["--session-timeout", "30", "ls", "/x"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    kill(&connecting, "-INT");
    let interrupted = connecting.wait_with_output().unwrap();
    assert_eq!(interrupted.status.code(), Some(128 + 2), "{interrupted:?}");
    assert!(
        stderr.contains(&format!(
            "{}: accepts TCP connections but gave no ZooKeeper session",
            proxy.connect_string()
        )),
        "{stderr}"
    );
}

/// A chroot missing on the server: every subcommand that reads the tree under
/// it says so in one line and exits 2 (not an empty tree and 0, which would let
/// `zklock deadlocks /locks || alert` pass on a typo in `--zk`); none claims
/// that nobody holds or prints anything on stdout. `doctor` reports the servers
/// as usual, its verdict naming the chroot (`--json`: "no-chroot"). With the
/// chroot there, each finds nobody as before, and doctor's verdict is the
/// servers' again.
#[test]
fn missing_chroot_is_named() {
    let zk = server().connect_string();
    let chroot = unique("no-such-chroot").replace("/cli-tests/", "/");
    let rooted = format!("{zk}{chroot}");
    let line = format!("the chroot {chroot} of the connect string does not exist");
    for args in [
        &["exec", "/l", "--", "true"][..],
        &["elect", "/e", "me", "--", "true"],
        &["ls", "/l"],
        &["ls", "--json", "/l"],
        &["top", "--once", "/locks"],
        // The live view checks before taking the screen (no terminal needed).
        &["top", "/locks"],
        &["deadlocks", "/locks"],
        &["deadlocks", "--json", "/locks"],
        &["deadlocks", "--dot", "/locks"],
        &["leader", "/e"],
        &["leader", "--watch", "/e"],
        &["revoke", "/l"],
        &words("revoke /l/zkl-0123456789abcdef0123456789abcdef-write-0000000001"),
    ] {
        let out = zklock(&rooted)
            .args(args)
            .stdout(Stdio::piped())
            .output()
            .unwrap();
        let stderr = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(&line), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: one line: {stderr}");
        assert!(!stderr.contains("nobody"), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}: {out:?}");
    }
    let out = run(zklock(&rooted).args(["doctor"]));
    let (report, said) = (stdout(&out), stderr(&out));
    assert_eq!(code(&out), 2, "{report}{said}");
    assert_eq!(said.lines().count(), 1, "{said}");
    assert!(said.contains(&line), "{said}");
    assert!(
        report.contains(&format!("verdict: no-chroot (exit 2): {line}")),
        "{report}"
    );
    let out = run(zklock(&rooted).args(["doctor", "--json"]));
    let json = stdout(&out);
    assert_eq!(code(&out), 2, "{json}");
    assert!(
        json.contains(r#""verdict":"no-chroot","exit_code":2"#)
            || json.contains(r#""verdict": "no-chroot", "exit_code": 2"#),
        "{json}"
    );

    exits(&zk, &["exec", &format!("{chroot}/l"), "--", "true"], 0);
    for (args, expected) in [
        (&["ls", "/l"][..], 0),
        (&["top", "--once", "/locks"], 0),
        (&["deadlocks", "/locks"], 0),
        (&["leader", "/l"], 3),
        (&["revoke", "/l"], 0),
    ] {
        let out = run(zklock(&rooted).args(args));
        assert_eq!(code(&out), expected, "{args:?}: {out:?}");
        assert!(!stderr(&out).contains("chroot"), "{args:?}: {out:?}");
    }
    let out = run(zklock(&rooted).args(["doctor"]));
    assert_ne!(code(&out), 2, "{out:?}");
    assert!(!stdout(&out).contains("verdict: no-chroot"), "{out:?}");
}

/// A path that does not exist, where that matters: `ls`, `revoke`, `leader`,
/// `deadlocks` and `top --once` find nobody there, and say that the path does
/// not exist and where it went wrong (its parent exists, is missing, or which
/// ancestor is the first missing one), with the exit codes of the table: 0 for
/// `ls`, `deadlocks`, `top`, `revoke` (nobody to ask), 3 for `leader`.
#[test]
fn missing_paths_name_the_missing_ancestor() {
    let zk = server().connect_string();
    let base = unique("missing-paths");
    // base/held exists (a lock was taken there); base/held/x does not.
    exits(&zk, &["exec", &format!("{base}/held"), "--", "true"], 0);
    let parent_there = format!("{base}/held/x");
    let parent_missing = format!("{base}/none/x");
    let ancestor_missing = format!("{base}/none/deeper/x");
    let cases = [
        (
            parent_there.clone(),
            format!("{parent_there} does not exist (its parent {base}/held does)"),
        ),
        (
            parent_missing.clone(),
            format!("{parent_missing} does not exist, nor does its parent {base}/none"),
        ),
        (
            ancestor_missing.clone(),
            format!("{ancestor_missing} does not exist: its ancestor {base}/none is missing"),
        ),
    ];
    for (path, said) in &cases {
        for (args, expected, prefix) in [
            (
                &["ls", path.as_str()][..],
                0,
                Some("nobody holds or waits for"),
            ),
            (&["ls", "--json", path.as_str()], 0, None),
            (&["revoke", path.as_str()], 0, Some("nobody to revoke at")),
            (&["leader", path.as_str()], 3, Some("no leader at")),
            (&["deadlocks", path.as_str()], 0, None),
            (&["top", "--once", path.as_str()], 0, None),
        ] {
            let out = run(zklock(&zk).args(args));
            let stderr = stderr(&out);
            assert_eq!(code(&out), expected, "{args:?}: {stderr}");
            assert_eq!(stderr.lines().count(), 1, "{args:?}: one line: {stderr}");
            assert!(stderr.contains(said.as_str()), "{args:?}: {stderr}");
            if let Some(prefix) = prefix {
                assert!(
                    stderr.starts_with(&format!("zklock: {prefix} {path}: ")),
                    "{args:?}: {stderr}"
                );
            }
        }
    }
    // A path that exists gets no such line.
    for args in [&["ls", &format!("{base}/held")][..], &["deadlocks", &base]] {
        let out = run(zklock(&zk).args(args));
        assert_eq!(code(&out), 0, "{args:?}: {out:?}");
        assert!(
            !stderr(&out).contains("does not exist"),
            "{args:?}: {out:?}"
        );
    }
}
