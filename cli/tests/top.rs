//! `zklock top` and `zklock deadlocks` against a real ZooKeeper (lock-testkit):
//! holders, waiters and a deadlock under one root.

mod common;
mod screen;

use common::*;
use lock_zookeeper_client::LockClient;
use screen::Terminal;
use std::time::Duration;

/// Waits until `path` has `n` waiters.
async fn queued(locks: &LockClient, path: &str, n: usize) {
    let until = std::time::Instant::now() + LONG;
    while locks
        .participants(path.to_owned())
        .await
        .unwrap()
        .waiters
        .len()
        < n
    {
        assert!(
            std::time::Instant::now() < until,
            "{path} never had {n} waiter(s)"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Under ROOT: alice holds /a and waits for /b, bob holds /b and waits for /a (a
/// deadlock); carol holds /c with dave and an owner-less session waiting. Runs
/// `look(zk, root)` (on a thread) while they are there; returns the three
/// holders' tokens and what `look` returned.
fn with_locks<T: Send + 'static>(
    zk: &str,
    root: &str,
    look: impl FnOnce(&str, &str) -> T + Send + 'static,
) -> ([i64; 3], T) {
    let (a, b, c) = (
        format!("{root}/a"),
        format!("{root}/b"),
        format!("{root}/c"),
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let connect = || lock_zookeeper_client::connect(zk);
        let (one, two, three) = (
            connect().await.unwrap(),
            connect().await.unwrap(),
            connect().await.unwrap(),
        );
        let (alice, bob) = (one.with_owner("alice"), two.with_owner("bob"));
        let (carol, dave) = (three.with_owner("carol"), two.with_owner("dave"));
        let ga = alice.mutex(a.clone()).lock().await.unwrap();
        let gb = bob.mutex(b.clone()).lock().await.unwrap();
        let gc = carol.mutex(c.clone()).lock().await.unwrap();
        let wait = |locks: &LockClient, path: &str| {
            let (locks, path) = (locks.clone(), path.to_owned());
            tokio::spawn(async move { locks.mutex(path).lock().await.map(drop) })
        };
        wait(&alice, &b);
        wait(&bob, &a);
        wait(&dave, &c);
        queued(&one, &c, 1).await;
        wait(&one, &c);
        for (path, n) in [(&a, 1), (&b, 1), (&c, 2)] {
            queued(&one, path, n).await;
        }
        let tokens = [ga.token().0, gb.token().0, gc.token().0];
        // The sessions (and guards) live on, served by this runtime, while `look` runs.
        let (zk, root) = (zk.to_owned(), root.to_owned());
        let seen = tokio::task::spawn_blocking(move || look(&zk, &root))
            .await
            .unwrap();
        drop((ga, gb, gc));
        for locks in [one, two, three] {
            locks.close().await;
        }
        (tokens, seen)
    })
}

/// Over the locks of [`with_locks`]: `top --once` lists the three, the
/// deadlocked ones first and marked, with owners, tokens and queue depths;
/// `deadlocks` reports the alice/bob cycle ([`cycle_reported`]); the live view
/// shows them ([`live_view`]). Once the sessions are gone, `deadlocks` finds
/// none (exit 0).
#[test]
fn top_and_deadlocks_over_holders_waiters_and_a_cycle() {
    let zk = server().connect_string();
    let root = unique("top");
    let (a, c) = (format!("{root}/a"), format!("{root}/c"));
    let (tokens, (out, seen)) = with_locks(&zk, &root, |zk, root| {
        let once = run(zklock(zk).args(["top", "--once", root]));
        cycle_reported(zk, root);
        (once, live_view(zk, root))
    });
    println!("{seen}");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    println!("{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        format!("3 lock(s) under {root} held or waited for, 4 waiter(s), 2 on a deadlock")
    );
    let header: Vec<&str> = lines[1]
        .split("  ")
        .filter(|s| !s.is_empty())
        .map(str::trim)
        .collect();
    assert_eq!(
        header,
        [
            "LOCK",
            "RECIPE",
            "HOLDERS",
            "WAITING",
            "LONGEST WAIT",
            "SCHEME"
        ]
    );
    let row = |path: &str| {
        *lines
            .iter()
            .find(|l| l.starts_with(&format!("{path} ")))
            .unwrap_or_else(|| panic!("no row for {path} in:\n{text}"))
    };
    let [ta, tb, tc] = tokens;
    let b = format!("{root}/b");
    for (path, owner, token) in [(&a, "alice", ta), (&b, "bob", tb)] {
        let line = row(path);
        assert!(line.contains(&format!("{owner}(")), "{line}");
        assert!(line.contains(&format!("token {token})")), "{line}");
        assert!(line.ends_with("DEADLOCK"), "{line}");
    }
    let line = row(&c);
    assert!(
        line.contains("carol(") && line.contains(&format!("token {tc})")),
        "{line}"
    );
    assert!(!line.contains("DEADLOCK"), "{line}");
    let cells: Vec<&str> = line
        .split("  ")
        .filter(|s| !s.is_empty())
        .map(str::trim)
        .collect();
    assert_eq!(cells[1], "write");
    assert_eq!(cells[3], "2", "{line}");
    assert_eq!(cells.last(), Some(&"native"), "{line}");
    // Deadlocked locks first.
    assert!(
        lines[2].starts_with(&a) || lines[2].starts_with(&b),
        "{text}"
    );
    assert!(lines[4].starts_with(&c), "{text}");
    let out = exits(&zk, &["deadlocks", &root], 0);
    assert_eq!(stdout(&out), format!("no deadlock under {root}\n"));
    let out = exits(&zk, &["deadlocks", "--json", &root], 0);
    assert_eq!(
        stdout(&out).trim(),
        format!(r#"{{"root":"{root}","cycles":[]}}"#)
    );
}

/// `deadlocks ROOT` on the cycle of [`with_locks`], as text, JSON and DOT.
fn cycle_reported(zk: &str, root: &str) {
    // The nodes as `ls` names them: the holder first, then the waiter.
    let nodes = |lock: &str| -> Vec<String> {
        let path = format!("{root}/{lock}");
        let rows = ls_rows(zk, &path);
        rows.iter().map(|r| format!("{path}/{}", r[9])).collect()
    };
    let (a, b) = (nodes("a"), nodes("b"));
    // Wait order: each node waits for the next, the last for the first.
    let ring = [
        (a[0].as_str(), "alice", "holds"),
        (b[1].as_str(), "alice", "waits"),
        (b[0].as_str(), "bob", "holds"),
        (a[1].as_str(), "bob", "waits"),
    ];
    // The report may start anywhere on the ring.
    let rotated = |first: &str| -> Vec<(&str, &str, &str)> {
        let i = ring.iter().position(|(n, _, _)| *n == first).unwrap();
        (0..4).map(|k| ring[(i + k) % 4]).collect()
    };

    let out = exits(zk, &["deadlocks", root], DEADLOCK);
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("deadlock 1 of 1: "), "{text}");
    assert!(
        ["alice -> bob -> alice", "bob -> alice -> bob"]
            .iter()
            .any(|r| lines[0].ends_with(r)),
        "{text}"
    );
    // STATE OWNER SESSION AGE TOKEN NODE
    let rows: Vec<Vec<&str>> = lines[2..6]
        .iter()
        .map(|l| l.split_whitespace().collect())
        .collect();
    let seen: Vec<(&str, &str, &str)> = rows.iter().map(|r| (r[5], r[1], r[0])).collect();
    assert_eq!(seen, rotated(rows[0][5]), "{text}");
    assert_eq!(lines.len(), 7, "{text}");

    let out = exits(zk, &["deadlocks", "--json", root], DEADLOCK);
    let summary = python(
        r#"
import json, sys
d = json.load(sys.stdin)
assert d["root"] == sys.argv[1]
assert len(d["cycles"]) == 1
c = d["cycles"][0]
print(",".join(sorted(c["owners"])))
for n in c["nodes"]:
    assert n["lock"] == n["node"].rsplit("/", 1)[0]
    assert n["session"].startswith("0x") and n["token"] > 0
    print("\t".join([n["node"], n["owner"], "holds" if n["holds"] else "waits"]))
"#,
        &[root],
        &out.stdout,
    );
    let mut lines = summary.lines();
    assert_eq!(lines.next(), Some("alice,bob"));
    let seen: Vec<(&str, &str, &str)> = lines
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f[0], f[1], f[2])
        })
        .collect();
    assert_eq!(seen, rotated(seen[0].0), "{summary}");

    let out = exits(zk, &["deadlocks", "--dot", root], DEADLOCK);
    let dot = String::from_utf8(out.stdout).unwrap();
    assert!(dot.starts_with("digraph deadlocks {"), "{dot}");
    let edges: Vec<&str> = dot.lines().filter(|l| l.contains(" -> ")).collect();
    assert_eq!(edges.len(), 4, "{dot}");
    for k in 0..4 {
        let (from, _, state) = ring[k];
        let (to, _, _) = ring[(k + 1) % 4];
        let why = if state == "holds" {
            "owner waits at"
        } else {
            "blocked by"
        };
        let edge = format!("\"{from}\" -> \"{to}\" [label=\"{why}\"];");
        assert!(
            edges.iter().any(|e| e.trim() == edge),
            "{edge} not in {dot}"
        );
    }
}

/// `zklock top ROOT` on a terminal (a pty from script(1), 160x40), its screen
/// read back: the locks with holders and DEADLOCK; a lock taken meanwhile under
/// ROOT shows up, and goes when released (a watch refreshes the view); a
/// selected lock is followed into its `ls` view and back; `q` quits with 0.
fn live_view(zk: &str, root: &str) -> String {
    let mut terminal = Terminal::top(env!("CARGO_BIN_EXE_zklock"), zk, root);
    let screen = terminal.screen.clone();
    let screen_now = || screen.lock().unwrap().text();
    // The screen is read while zklock writes it: a frame arrives in pieces (the
    // title line before the rows below it), so whatever is checked is waited
    // for, all of it on one screen, never assumed to be there because something
    // drawn before it is.
    let shows_all = |what: &[&str]| {
        let until = std::time::Instant::now() + LONG;
        loop {
            let seen = screen_now();
            if what.iter().all(|w| seen.contains(w)) {
                return seen;
            }
            assert!(
                std::time::Instant::now() < until,
                "{what:?} not on the screen:\n{seen}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let shows = |what: &str| {
        shows_all(&[what]);
    };
    let (lock_a, lock_b) = (format!("{root}/a"), format!("{root}/b"));
    shows_all(&[
        &format!("3 lock(s) under {root} held or waited for, 4 waiter(s), 2 on a deadlock"),
        "alice(",
        "carol(",
        "DEADLOCK",
        &lock_a,
        &lock_b,
    ]);
    // Deadlocked rows in bold red; the selected (first) row in reverse video.
    let look = |what: &str| {
        screen
            .lock()
            .unwrap()
            .look_of(what)
            .unwrap_or_else(|| panic!("{what:?} left the screen"))
    };
    let (alice, carol) = (look("alice("), look("carol("));
    assert!(
        alice.red && alice.bold,
        "{}",
        screen.lock().unwrap().marked()
    );
    assert!(
        !carol.red && !carol.reversed,
        "{}",
        screen.lock().unwrap().marked()
    );
    assert!(
        look(&lock_a).reversed || look(&lock_b).reversed,
        "{}",
        screen.lock().unwrap().marked()
    );
    // A new lock under ROOT: the watch refreshes the view.
    let marker = scratch("top-live").join("held");
    let mut holder = holding(zk, &["--owner", "erin"], &format!("{root}/e"), &marker);
    shows(&format!("4 lock(s) under {root}"));
    shows("erin(");
    terminate(&mut holder);
    // Its node gone: the lock leaves the view.
    shows(&format!("3 lock(s) under {root}"));
    let mut press = |keys: &[u8]| terminal.press(keys);
    // Sorted by path (deadlocked first): /a, /b, /c. Enter follows the selected
    // (first) lock into its `ls` view, Backspace goes back.
    press(b"p");
    shows("sort: Path");
    press(b"\r");
    shows(&format!("zklock ls {root}/a | Esc back"));
    shows("STATE");
    shows("DEADLOCK: in a deadlock");
    press(b"\x7f");
    shows(&format!("3 lock(s) under {root}"));
    // Two rows down (j, then the down arrow) is /c: carol holds, dave and an
    // owner-less session wait; Esc goes back.
    press(b"j\x1b[B");
    press(b"\r");
    // The whole lock view: its title and its three rows (written after it, each
    // left to right): carol holds, dave waits, then the owner-less session.
    let title = format!("zklock ls {root}/c | Esc back");
    let row_of = |view: &str, n: &str| {
        view.lines()
            .find(|l| {
                l.trim_start_matches('│')
                    .trim_start()
                    .starts_with(&format!("{n} "))
            })
            .map(str::to_owned)
    };
    let expected = [
        ("1", "holds", "carol"),
        ("2", "waits", "dave"),
        ("3", "waits", " - "),
    ];
    let until = std::time::Instant::now() + LONG;
    let lock_view = loop {
        let seen = screen_now();
        let complete = seen.contains(&title)
            && expected.iter().all(|(n, state, owner)| {
                row_of(&seen, n).is_some_and(|r| r.contains(state) && r.contains(owner))
            });
        if complete {
            break seen;
        }
        assert!(
            std::time::Instant::now() < until,
            "not the lock view of {root}/c ({expected:?}):\n{seen}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    println!("{}", screen.lock().unwrap().marked());
    assert!(!lock_view.contains("DEADLOCK"), "{lock_view}");
    press(b"\x1b");
    shows(&format!("3 lock(s) under {root}"));
    press(b"q");
    let status = terminal.wait();
    let seen = screen.lock().unwrap().marked();
    assert!(status.success(), "{status:?}: {seen}");
    seen
}
