//! `zklock exec --semaphore N --scheme kazoo` and a real kazoo client (kazoo's
//! `Semaphore` recipe, in Debian's `/usr/bin/python3` with python3-kazoo:
//! `tests/kazoo_lock.py`) on one path, against a real ZooKeeper. (kazoo's `Lock`
//! and zklock's mutex excluding each other both ways is the binding's:
//! lock-zookeeper-client's tests/interop_kazoo.rs; `--scheme kazoo` read back by
//! `ls`: inspect.rs::ls_warns_of_mixed_schemes.)

mod common;

use common::*;

/// The peer's one-line answer to `stry N`.
fn kazoo_answer(zk: &str, lock: &str, mode: &[&str]) -> String {
    let out = kazoo(zk, lock, "kazoo-contender", mode).output().unwrap();
    assert!(
        out.status.success(),
        "kazoo peer failed (python3-kazoo?): {out:?}"
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
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
