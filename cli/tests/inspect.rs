//! `zklock ls` and the waiting line of `zklock exec`, run as built against a
//! real ZooKeeper (lock-testkit).

mod common;

use common::*;
use std::io::Read;
use std::process::{Child, Stdio};

/// Prints each participant of `zklock ls --json` as the table's row shows it
/// (without AGE; waits_for's node names as the rows' `#N`).
const LS_SUMMARY: &str = r#"
import json, sys
d = json.load(sys.stdin)
assert d["path"] == sys.argv[1], d["path"]
assert d["foreign"] == 0
row = {p["node"]: p["position"] for p in d["holders"] + d["waiters"]}
for state, word in (("holders", "holds"), ("waiters", "waits")):
    for p in d[state]:
        assert p["path"] == d["path"] + "/" + p["node"]
        assert p["age_ms"] is None or p["age_ms"] >= 0
        waits = ",".join('#%d' % row[n] for n in p["waits_for"]) or "-"
        owner = p["owner"] if p["owner"] is not None else "-"
        print(" ".join(str(x) for x in [p["position"], word, p["kind"], owner,
              p["session"], p["token"], p["scheme"], waits, p["node"]]))
"#;

/// A holder and two waiters (one with an owner): `ls` lists them in queue order
/// with kinds, owners, sessions, tokens and what each waits for, as a table and
/// as JSON that parses and says the same.
#[test]
fn ls_lists_holders_and_waiters_in_queue_order() {
    let (zk, lock, dir) = setup("ls");
    let (mut holder, node) = holding_node(&zk, &["--owner", "alice"], &lock, &dir);
    let waiter = |owner: Option<&str>| {
        let mut c = zklock(&zk);
        c.arg("exec");
        if let Some(owner) = owner {
            c.args(["--owner", owner]);
        }
        c.args([&lock, "--", "true"])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let first = waiter(None);
    ls_rows_of(&zk, &lock, 2);
    let second = waiter(Some("bob"));
    let rows = ls_rows_of(&zk, &lock, 3);
    let node = node.rsplit_once('/').unwrap().1.to_owned();

    // # STATE KIND OWNER SESSION AGE TOKEN SCHEME WAITS-FOR NODE
    let col = |r: usize, c: usize| rows[r][c].as_str();
    assert_eq!(rows.iter().map(Vec::len).collect::<Vec<_>>(), [10; 3]);
    assert_eq!(
        [col(0, 0), col(0, 1), col(0, 2), col(0, 3)],
        ["1", "holds", "write", "alice"]
    );
    assert_eq!(
        [col(1, 0), col(1, 1), col(1, 2), col(1, 3)],
        ["2", "waits", "write", "-"]
    );
    assert_eq!(
        [col(2, 0), col(2, 1), col(2, 2), col(2, 3)],
        ["3", "waits", "write", "bob"]
    );
    assert_eq!([col(0, 8), col(1, 8), col(2, 8)], ["-", "#1", "#1,#2"]);
    assert_eq!(col(0, 9), node, "{rows:?}");
    let tokens: Vec<i64> = (0..3).map(|r| col(r, 6).parse().unwrap()).collect();
    assert!(tokens[0] < tokens[1] && tokens[1] < tokens[2], "{rows:?}");
    let sessions: Vec<&str> = (0..3).map(|r| col(r, 4)).collect();
    assert!(sessions.iter().all(|s| s.starts_with("0x")), "{rows:?}");
    assert!(sessions[0] != sessions[1] && sessions[1] != sessions[2]);
    assert!((0..3).all(|r| col(r, 7) == "native"));

    // The JSON says the same (AGE aside).
    let out = exits(&zk, &["ls", "--json", &lock], 0);
    let summary = python(LS_SUMMARY, &[&lock], &out.stdout);
    let expected: Vec<String> = rows
        .iter()
        .map(|r| [&r[..5], &r[6..]].concat().join(" "))
        .collect();
    assert_eq!(summary.lines().collect::<Vec<_>>(), expected);

    terminate(&mut holder);
    for w in [first, second] {
        let out = w.wait_with_output().unwrap();
        assert_eq!(code(&out), 0, "{out:?}");
    }
    assert!(ls_rows(&zk, &lock).is_empty());
}

/// A semaphore of 2 with both permits taken and a third process waiting: `ls`
/// shows the permit count with the kind (zklock's nodes carry it in their name),
/// in the table and as JSON's `permits`. Asked with another count, `exec` says
/// so in one sentence naming the path and the count that fits (exit 2), not the
/// lock client's `PermitsMismatch { .. }`.
#[test]
fn ls_shows_semaphore_permits() {
    let (zk, lock, dir) = setup("ls-sem");
    let holders: Vec<_> = ["a", "b"]
        .iter()
        .map(|name| holding(&zk, &["--semaphore", "2"], &lock, &dir.join(name)))
        .collect();
    let waiter = zklock(&zk)
        .args(["exec", "--semaphore", "2", &lock, "--", "true"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let rows = ls_rows_of(&zk, &lock, 3);
    let states: Vec<[&str; 2]> = rows
        .iter()
        .map(|r| [r[1].as_str(), r[2].as_str()])
        .collect();
    assert_eq!(
        states,
        [
            ["holds", "semaphore(2)"],
            ["holds", "semaphore(2)"],
            ["waits", "semaphore(2)"]
        ],
        "{rows:?}"
    );
    // The waiter needs one of the two holders to go: both block it.
    assert_eq!(rows[2][8], "#1,#2", "{rows:?}");
    let out = exits(&zk, &["ls", "--json", &lock], 0);
    let permits = python(
        "import json, sys\n\
         doc = json.load(sys.stdin)\n\
         print(' '.join(str(p['permits']) for p in doc['holders'] + doc['waiters']))",
        &[],
        &out.stdout,
    );
    assert_eq!(permits.trim(), "2 2 2");
    let out = run(zklock(&zk).args(["exec", "--semaphore", "3", &lock, "--", "true"]));
    let said = stderr(&out);
    assert_eq!(code(&out), 2, "{said}");
    assert_eq!(
        said.trim_end(),
        format!("zklock: {lock} is a semaphore of 2 permits; asked for 3: use --semaphore 2")
    );
    for mut holder in holders {
        terminate(&mut holder);
    }
    let out = waiter.wait_with_output().unwrap();
    assert_eq!(code(&out), 0, "{out:?}");
}

/// A lock directory that does not exist lists nobody (exit 0); JSON escapes an
/// owner's quotes, backslashes and control characters, and keeps its UTF-8.
#[test]
fn ls_of_a_missing_path_and_json_escaping() {
    let zk = server().connect_string();
    let missing = unique("missing");
    let out = exits(&zk, &["ls", &missing], 0);
    assert!(out.stdout.is_empty(), "{out:?}");
    assert!(stderr(&out).contains("nobody"), "{out:?}");
    let out = exits(&zk, &["ls", "--json", &missing], 0);
    assert_eq!(
        String::from_utf8(out.stdout).unwrap().trim(),
        format!(
            r#"{{"path":"{missing}","foreign":0,"holders":[],"waiters":[],"mixed_schemes":false,"holders_by_library":{{"zklock":[]}},"last_break":null}}"#
        )
    );

    let lock = unique("escaping");
    let owner = "o'\"q\\ \n\t\u{1} été →";
    let dir = scratch("escaping");
    let mut holder = holding(&zk, &["--owner", owner], &lock, &dir.join("ready"));
    let out = exits(&zk, &["ls", "--json", &lock], 0);
    let back = python(
        "import json,sys; sys.stdout.write(json.load(sys.stdin)['holders'][0]['owner'])",
        &[],
        &out.stdout,
    );
    assert_eq!(back, owner);
    // The table shows control characters as '?', on one line.
    let out = run(zklock(&zk).args(["ls", &lock]));
    let table = String::from_utf8(out.stdout).unwrap();
    assert_eq!(table.lines().count(), 2, "{table:?}");
    assert!(table.contains("o'\"q\\ ??? été →"), "{table:?}");
    terminate(&mut holder);
}

/// A directory mixing schemes: a native holder, then kazoo- and Curator-named
/// waiters (zklock's own clients, which read every scheme, so they wait). `ls`
/// warns that kazoo and Curator clients each count only their own nodes, and
/// names whom each takes for the holder: the kazoo node for kazoo, the Curator
/// node for Curator; the same in --json.
#[test]
fn ls_warns_of_mixed_schemes() {
    let (zk, lock, dir) = setup("mixed");
    let mut holder = holding(&zk, &[], &lock, &dir.join("ready"));
    let mut waiters = Vec::new();
    for (i, scheme) in ["kazoo", "curator"].into_iter().enumerate() {
        waiters.push(
            zklock(&zk)
                .args(["exec", "--scheme", scheme, &lock, "--", "true"])
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        ls_rows_of(&zk, &lock, i + 2);
    }
    assert_ls_names_each_librarys_holder(
        &zk,
        &lock,
        &[
            "zklock takes for the holder: #1",
            "curator takes for the holder: #3",
            "kazoo takes for the holder: #2",
        ],
    );
    let out = run(zklock(&zk).args(["ls", "--json", &lock]));
    let views = python(
        "import json, sys\n\
         d = json.load(sys.stdin)\n\
         scheme = {p['node']: p['scheme'] for p in d['holders'] + d['waiters']}\n\
         print(d['mixed_schemes'])\n\
         for lib, nodes in sorted(d['holders_by_library'].items()):\n\
         \x20   print(lib, ' '.join(scheme[n] for n in nodes))",
        &[],
        &out.stdout,
    );
    assert_eq!(views, "True\ncurator curator\nkazoo kazoo\nzklock native\n");
    terminate(&mut holder);
    for mut waiter in waiters {
        assert!(waiter.wait().unwrap().success());
    }
}

/// Waiting on a terminal (a pty from script(1)), exec shows its place in the
/// queue and the time waited, rewritten in place, and erases the line once it
/// holds; with stderr not a terminal (a log, cron) it says nothing while it
/// waits unless asked (`--progress`, `-v`: a line per place, here one: next in
/// the queue); with -q nothing. `-n` gives up at once, `-w SECS` no sooner.
#[test]
fn waiting_line_on_a_tty_and_places_only_when_asked_elsewhere() {
    let (zk, lock, dir) = setup("tty");
    let holder = holding(&zk, &[], &lock, &dir.join("ready"));
    let out = exits(&zk, &["exec", "-n", &lock, "--", "true"], BUSY);
    assert_eq!(stderr(&out), format!("zklock: {lock} is busy\n"));

    // Not a terminal, not asked: only the outcome.
    let start = std::time::Instant::now();
    let out = exits(&zk, &["exec", "-w", "1.5", &lock, "--", "true"], BUSY);
    let waited = start.elapsed();
    assert!(waited.as_millis() >= 1500, "gave up after {waited:?}");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr, format!("zklock: timed out waiting for {lock}\n"));
    // Asked: its place, then that it gave up.
    for asked in ["--progress", "-v"] {
        let out = exits(
            &zk,
            &["exec", asked, "-w", "1.5", &lock, "--", "true"],
            BUSY,
        );
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(
            stderr,
            format!(
                "zklock: waiting for {lock}: next in the queue\nzklock: timed out waiting for {lock}\n"
            ),
            "{asked}"
        );
    }
    // Two waiting: the second is told it has two ahead.
    let first = zklock(&zk)
        .args(["exec", "-q", &lock, "--", "true"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    ls_rows_of(&zk, &lock, 2);
    let out = exits(
        &zk,
        &["exec", "--progress", "-w", "1.5", &lock, "--", "true"],
        BUSY,
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.starts_with(&format!(
            "zklock: waiting for {lock}: 2 ahead in the queue\n"
        )),
        "{stderr:?}"
    );
    // Quiet: only the outcome.
    let out = exits(&zk, &["exec", "-q", "-w", "1.5", &lock, "--", "true"], BUSY);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr, format!("zklock: timed out waiting for {lock}\n"));

    waiting_line_until_the_holder_goes(
        &zk,
        &lock,
        &format!("exec -w 60 {lock}"),
        "2 ahead in the queue",
        holder,
    );
    let first = first.wait_with_output().unwrap();
    assert!(first.status.success(), "{first:?}");
}

/// `elect` shows the same line while it waits to lead.
#[test]
fn waiting_line_of_an_election() {
    let (zk, path, dir) = setup("tty-elect");
    let ready = dir.join("ready");
    let script = format!("touch {}; exec sleep 60", ready.display());
    let leader = zklock(&zk)
        .args(["elect", &path, "alpha", "--", "sh", "-c", &script])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&ready, LONG);
    waiting_line_until_the_holder_goes(
        &zk,
        &path,
        &format!("elect {path} beta"),
        "position 2 of 2 in the queue",
        leader,
    );
}

/// Runs `zklock ARGS -- echo ran` on a terminal while `holder` holds `path`: the
/// line shows `place`; once `holder` is stopped, the line is erased and CMD runs.
fn waiting_line_until_the_holder_goes(
    zk: &str,
    path: &str,
    args: &str,
    place: &str,
    mut holder: Child,
) {
    let zklock_cmd = format!("{} {args} -- echo ran", env!("CARGO_BIN_EXE_zklock"));
    let mut script = on_a_terminal(zk, &zklock_cmd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("script(1) from util-linux");
    let mut tty = script.stdout.take().unwrap();
    let mut seen = Vec::new();
    let wanted = format!("\rzklock: waiting for {path}: {place}, ");
    until("the queue position on the terminal", LONG, || {
        let mut buf = [0u8; 256];
        let n = tty.read(&mut buf).unwrap();
        assert!(
            n > 0,
            "the terminal closed: {:?}",
            String::from_utf8_lossy(&seen)
        );
        seen.extend_from_slice(&buf[..n]);
        String::from_utf8_lossy(&seen)
            .contains(&wanted)
            .then_some(())
    });
    terminate(&mut holder);
    tty.read_to_end(&mut seen).unwrap();
    assert!(script.wait().unwrap().success());
    let seen = String::from_utf8_lossy(&seen).into_owned();
    // The line is erased before CMD runs.
    assert!(seen.ends_with("\r\x1b[Kran\r\n"), "{seen:?}");
}
