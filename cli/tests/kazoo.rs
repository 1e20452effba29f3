//! `zklock exec --scheme kazoo` and a real kazoo client (kazoo's `Lock` recipe, in
//! Debian's `/usr/bin/python3` with python3-kazoo: `tests/kazoo_lock.py`) on one
//! path, against a real ZooKeeper: each excludes the other.

mod common;

use common::*;
use std::io::Write;

/// The peer's one-line answer to `try` or `wait S`.
fn kazoo_answer(zk: &str, lock: &str, mode: &[&str]) -> String {
    let out = kazoo(zk, lock, "kazoo-contender", mode).output().unwrap();
    assert!(
        out.status.success(),
        "kazoo peer failed (python3-kazoo?): {out:?}"
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// kazoo holds: `zklock exec -n --scheme kazoo` is busy (75) and `ls` shows the
/// kazoo holder with its identifier as owner; once kazoo releases, zklock takes it.
#[test]
fn a_kazoo_holder_excludes_zklock() {
    let zk = server().connect_string();
    let lock = unique("kazoo-holds");
    let (mut holder, node) = kazoo_holder(&zk, &lock, "kazoo-holder", &["hold"]);

    exits(
        &zk,
        &["exec", "-n", "--scheme", "kazoo", &lock, "--", "true"],
        BUSY,
    );
    exits(
        &zk,
        &words(&format!("exec -w 0.5 --scheme kazoo {lock} -- true")),
        BUSY,
    );

    let rows = ls_rows(&zk, &lock);
    assert_eq!(rows.len(), 1, "{rows:?}");
    // # STATE KIND OWNER SESSION AGE TOKEN SCHEME WAITS-FOR NODE
    let row: Vec<&str> = rows[0].iter().map(String::as_str).collect();
    assert_eq!(
        [row[1], row[2], row[3], row[7], row[9]],
        ["holds", "write", "kazoo-holder", "kazoo", node.as_str()]
    );

    drop(holder.stdin.take()); // kazoo releases and exits
    assert!(holder.wait().unwrap().success());
    exits(
        &zk,
        &["exec", "-n", "--scheme", "kazoo", &lock, "--", "true"],
        0,
    );
}

/// zklock holds (with --owner): kazoo's `acquire(blocking=False)` and
/// `acquire(timeout=1)` fail; once zklock's CMD ends, kazoo gets the lock.
#[test]
fn a_zklock_holder_excludes_kazoo() {
    let (zk, lock, dir) = setup("zklock-holds");
    let (mut holder, release) = holding_until_released(
        &zk,
        &["--scheme", "kazoo", "--owner", "zklock-holder"],
        &lock,
        &dir,
    );

    assert_eq!(kazoo_answer(&zk, &lock, &["try"]), "BUSY");
    assert_eq!(kazoo_answer(&zk, &lock, &["wait", "1"]), "TIMEOUT");
    let rows = ls_rows(&zk, &lock);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(
        [rows[0][3].as_str(), rows[0][7].as_str()],
        ["zklock-holder", "kazoo"]
    );

    std::fs::File::create(&release).unwrap().flush().unwrap();
    assert_eq!(holder.wait().unwrap().code(), Some(0));
    let answer = kazoo_answer(&zk, &lock, &["try"]);
    assert!(answer.starts_with("HELD "), "{answer}");
}

/// `zklock exec --semaphore 2 --scheme kazoo` and kazoo's `Semaphore` share two
/// permits: a kazoo holder and a zklock holder fill them, a third of either is
/// refused, and `zklock ls` shows both leases (the count from the path's data).
/// Another count than the pool's is one line naming the path, the pool's count
/// and the flag that fits, exit 2 (the command line is what to change), no Rust
/// value; CMD does not run.
#[test]
fn exec_semaphore_shares_permits_with_kazoo() {
    let (zk, lock, dir) = setup("kazoo-semaphore");
    let (mut theirs, node) = kazoo_holder(&zk, &lock, "kazoo-holder", &["shold", "2"]);
    let sem = [
        "--semaphore",
        "2",
        "--scheme",
        "kazoo",
        "--owner",
        "zklock-holder",
    ];
    let mut ours = holding(&zk, &sem, &lock, &dir.join("ready"));

    let out = run(zklock(&zk).args(words(&format!(
        "exec -n --semaphore 2 --scheme kazoo {lock} -- true"
    ))));
    assert_eq!(code(&out), BUSY, "a third permit of 2: {out:?}");
    assert_eq!(kazoo_answer(&zk, &lock, &["stry", "2"]), "BUSY");

    let rows = ls_rows(&zk, &lock);
    assert_eq!(rows.len(), 2, "{rows:?}");
    for row in &rows {
        assert_eq!(
            [row[1].as_str(), row[2].as_str(), row[7].as_str()],
            ["holds", "semaphore(2)", "kazoo"],
            "{rows:?}"
        );
    }
    let owners: Vec<&str> = rows.iter().map(|r| r[3].as_str()).collect();
    assert_eq!(owners, ["kazoo-holder", "zklock-holder"], "{rows:?}");
    assert_eq!(rows[0][9], node);
    let ran = dir.join("ran");
    let touch = format!("exec --semaphore 3 --scheme kazoo {lock} -- touch");
    let out = run(zklock(&zk).args(words(&touch)).arg(&ran));
    let said = stderr(&out);
    assert_eq!(code(&out), 2, "{said}");
    assert_eq!(
        said.trim_end(),
        format!(
            "zklock: {lock} is a semaphore of 2 permits (kazoo); asked for 3: use --semaphore 2"
        )
    );
    assert!(!ran.exists(), "CMD ran");

    drop(theirs.stdin.take());
    assert!(theirs.wait().unwrap().success());
    let answer = kazoo_answer(&zk, &lock, &["stry", "2"]);
    assert!(answer.starts_with("HELD "), "{answer}");
    terminate(&mut ours);
}
