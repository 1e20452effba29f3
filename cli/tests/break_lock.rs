//! `zklock break` against a real ZooKeeper (lock-testkit): refused without
//! --force (exit 7, the holder named, its node kept); with --force the holder's
//! node goes, a `zklock exec` holder's CMD is stopped (exit 74), the next waiter
//! is granted with a higher token; bad input gets one line and its documented
//! exit code. (What a broken lock-client holder then sees, its fenced write
//! refused and its release reporting the loss, is the client's: lock-sim's
//! tests/break_lock.rs, on real ZooKeeper the conformance suite's
//! admin_delete_gives_lost and guarded writes.)

mod common;

use common::*;
use std::process::Stdio;
use std::time::Instant;

#[test]
fn an_exec_holder_is_broken_only_with_force_and_the_next_waiter_holds() {
    let (zk, lock, dir) = setup("break-exec");
    let (cmd_pid, token_file, next_token) = (
        dir.join("cmd-pid"),
        dir.join("token"),
        dir.join("next-token"),
    );
    // CMD records its token, then its pid, then hangs (the wedged holder).
    let mut holder = hold(
        &zk,
        &["--owner", "wedged"],
        &lock,
        &format!(
            "echo $ZKLOCK_TOKEN > {}; echo $$ > {}; exec sleep 120",
            token_file.display(),
            cmd_pid.display()
        ),
    );
    let pid = written_pid(&cmd_pid);
    let old_token: i64 = read(&token_file).parse().unwrap();
    let waiter = zklock(&zk)
        .args(["exec", "-w", "120", &lock, "--", "sh", "-c"])
        .arg(format!("echo $ZKLOCK_TOKEN > {}", next_token.display()))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let rows = ls_rows_of(&zk, &lock, 2);
    let node = format!("{lock}/{}", rows[0].last().unwrap());

    // Without --force: refused, the holder named on stdout, what to do on stderr.
    let out = exits(&zk, &["break", &lock], NOT_FORCED);
    let line = stdout(&out);
    assert_eq!(line.lines().count(), 1, "{line}");
    assert!(
        line.starts_with(&format!("would break {node}: held since ")),
        "{line}"
    );
    assert!(line.contains("owner wedged"), "{line}");
    assert!(line.contains(&format!("token {old_token}")), "{line}");
    let said = stderr(&out);
    assert_eq!(said.lines().count(), 1, "{said}");
    assert!(
        said.contains("zklock revoke") && said.contains("--force"),
        "{said}"
    );
    assert_eq!(
        ls_rows(&zk, &lock).len(),
        2,
        "a refused break deleted a node"
    );
    assert!(holder.try_wait().unwrap().is_none(), "the holder ended");

    // With --force (JSON): the node goes; exec stops CMD and exits 74.
    let started = Instant::now();
    let out = exits(&zk, &["break", "--force", "--format", "json", &lock], 0);
    let fields = python(
        "import json,sys; d=json.load(sys.stdin); \
         print(d['node'], d['held'], d['owner'], d['token'], d['outcome'], d['since'] is not None)",
        &[],
        &out.stdout,
    );
    assert_eq!(
        fields.trim(),
        format!("{node} True wedged {old_token} deleted True")
    );
    let held = holder.wait_with_output().unwrap();
    assert_eq!(code(&held), LOST, "{held:?}");
    assert!(!alive(pid), "CMD still runs after the break");
    // A sentence naming the node, not the lock client's `NodeDeleted`.
    let said = stderr(&held);
    let lost = format!("the lock at {node} was lost (its node was deleted by someone else");
    assert!(said.contains(&lost), "{said}");
    assert!(!said.contains("NodeDeleted"), "{said}");
    // Well before CMD's own end (120 s), and a margin under the session's
    // expiry would not explain it (exec's session lives on: it was closed).
    assert!(started.elapsed() < LONG, "{:?}", started.elapsed());

    // The waiter was granted, with a higher token.
    let out = waiter.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let new_token: i64 = read(&next_token).parse().unwrap();
    assert!(new_token > old_token, "{new_token} after {old_token}");

    // `zklock ls` shows the break: which node, its token, who broke it.
    let out = exits(&zk, &["ls", &lock], 0);
    let notes = stderr(&out);
    let name = node.rsplit('/').next().unwrap();
    let note = notes
        .lines()
        .find(|l| l.starts_with("zklock: last broken "))
        .unwrap_or_else(|| panic!("no break shown: {notes}"));
    assert!(
        note.contains(&format!(": {name} (token {old_token}, session 0x")),
        "{note}"
    );
    assert!(note.contains(" ago by "), "{note}");
    let out = run(zklock(&zk).args(["ls", "--format", "json", &lock]));
    let fields = python(
        "import json,sys; b=json.load(sys.stdin)['last_break']; \
         print(b['node'], b['token'], b['by'] is not None, b['at'] > 0)",
        &[],
        &out.stdout,
    );
    assert_eq!(fields.trim(), format!("{name} {old_token} True True"));
}

#[test]
fn several_holders_need_a_node_and_bad_input_gets_one_line() {
    let (zk, lock, dir) = setup("break-readers");
    let mut readers: Vec<_> = (0..2)
        .map(|i| holding(&zk, &["--read"], &lock, &dir.join(format!("r{i}"))))
        .collect();
    let rows = ls_rows_of(&zk, &lock, 2);
    let names: Vec<String> = rows.iter().map(|r| r.last().unwrap().clone()).collect();

    let one_line = |args: &[&str], want: i32, says: &[&str]| {
        let out = run(zklock(&zk).args(args));
        assert_eq!(code(&out), want, "{args:?}: {out:?}");
        let said = stderr(&out);
        assert_eq!(said.lines().count(), 1, "{args:?}: one line: {said}");
        for s in says {
            assert!(said.contains(s), "{args:?}: {said}");
        }
    };
    // Several holders and no --node: a usage error naming them.
    one_line(
        &["break", "--force", &lock],
        USAGE,
        &[&names[0], &names[1], "--node"],
    );
    // A --node that takes no part: named, with the participants.
    one_line(
        &["break", "--force", "--node", "nobody-0000000001", &lock],
        USAGE,
        &["nobody-0000000001", &names[0]],
    );
    // Nobody holds: a path that does not exist says so.
    let missing = unique("break-missing");
    one_line(
        &["break", "--force", &missing],
        NOBODY_HOLDS,
        &["nobody holds", "does not exist"],
    );
    // An invalid path, before connecting.
    one_line(&["break", "relative"], USAGE, &["must be absolute"]);
    // No path at all: clap's usage error.
    let out = exits(&zk, &["break", "--force"], USAGE);
    assert!(stderr(&out).contains("PATH"), "{out:?}");

    // One reader, by name: broken (one line on stdout), that exec stops (74),
    // the other holds on.
    let out = exits(&zk, &["break", "--force", "--node", &names[1], &lock], 0);
    let broke = format!("broke {lock}/{}: held since ", names[1]);
    assert!(stdout(&out).starts_with(&broke), "{out:?}");
    let stopped = until("a reader's exec ends", LONG, || {
        readers
            .iter_mut()
            .position(|r| r.try_wait().unwrap().is_some())
    });
    let status = readers.remove(stopped).wait().unwrap();
    assert_eq!(status.code(), Some(LOST), "{status:?}");
    let rows = ls_rows(&zk, &lock);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].last().unwrap(), &names[0], "the other reader stays");
    for mut r in readers {
        terminate(&mut r);
    }
}
