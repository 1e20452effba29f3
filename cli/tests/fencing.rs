//! Fencing end to end from the shell: a `zklock exec` holder paused past its
//! session cannot clobber a newer holder's row in a real PostgreSQL when every
//! write carries `ZKLOCK_TOKEN` in its condition. Real ZooKeeper and PostgreSQL
//! (lock-testkit). That it does without the condition is the database's doing,
//! shown once, on the API: examples/tests/fenced_postgres.rs.

mod common;

use common::*;
use lock_testkit::Postgres;
use std::time::Instant;

/// The write each holder makes: the row records the token that wrote it, and
/// the write applies only if no newer token has written it. Shell text:
/// `$ZKLOCK_TOKEN` is expanded by CMD's shell.
fn update(who: &str) -> String {
    format!(
        "\"$PSQL\" -X -v ON_ERROR_STOP=1 -d \"$DATABASE_URL\" -c \
         \"UPDATE account SET owner = '{who}', fence = $ZKLOCK_TOKEN WHERE id = 1 \
         AND fence <= $ZKLOCK_TOKEN\""
    )
}

/// Holder A (`zklock exec`, a short session) is paused (SIGSTOP to zklock's
/// process group) just before its write; B is granted the lock once A's
/// session expires and writes; A is resumed and writes.
///
/// Once resumed, zklock learns the lock is gone and stops CMD (SIGTERM, SIGKILL
/// a tenth of the session timeout later), racing CMD's write, which in life
/// may or may not get out first (measured: a CMD ran on for 0.5 s). Here CMD's
/// write runs in a session of its own, out of zklock's reach, and waits for the
/// test's go (given when A is resumed), so that the late write always reaches
/// the database: with `AND fence <= $ZKLOCK_TOKEN` it changes nothing, the row
/// keeps the newer holder's value and token, and A's zklock exits 74.
#[test]
fn paused_exec_holder_is_fenced_out_by_the_database() {
    let db = Postgres::start().unwrap_or_else(|e| panic!("{e}"));
    db.psql(
        "CREATE TABLE account (id int PRIMARY KEY, owner text NOT NULL, fence bigint NOT NULL); \
         INSERT INTO account VALUES (1, 'nobody', 0)",
    )
    .unwrap();
    let (test, (zk, lock, dir)) = ("fenced", setup("fenced"));
    let start = Instant::now();
    let say = |what: &str| eprintln!("[{test}] {:>6.2} s  {what}", start.elapsed().as_secs_f64());

    // A: holds; its write waits for `go` (A is stopped meanwhile).
    let first = "echo $ZKLOCK_TOKEN > a.token";
    let (holder, group) = paused_late_writer(&zk, &[], &lock, &dir, &db, (first, &update("A")));
    let token_a: i64 = read(&dir.join("a.token")).parse().unwrap();
    say(&format!(
        "A holds the lock, token {token_a}, and is paused (SIGSTOP to zklock)"
    ));

    // B: waits for the lock, writes, exits.
    let b_out = run(zklock(&zk)
        .args(["exec", "-w", "30", &lock, "--", "sh", "-c"])
        .arg(format!(
            "echo $ZKLOCK_TOKEN > b.token; {} > b.result 2>&1",
            update("B")
        ))
        .env("PSQL", db.psql_path())
        .env("DATABASE_URL", db.url())
        .current_dir(&dir));
    assert_eq!(code(&b_out), 0, "B: {b_out:?}");
    let token_b: i64 = read(&dir.join("b.token")).parse().unwrap();
    let b_write = read(&dir.join("b.result"));
    say(&format!(
        "B was granted the lock (A's session expired), token {token_b}: {b_write}; row = {}",
        db.psql("SELECT owner, fence FROM account").unwrap()
    ));
    assert_eq!(b_write, "UPDATE 1");

    std::fs::write(dir.join("go"), "").unwrap();
    signal_group(holder.id(), "-CONT");
    say("A resumed: it writes with its old token");
    let a_out = holder.wait_with_output().unwrap();
    // zklock waited for CMD: the group is empty, and its id free for reuse.
    std::mem::forget(group);
    let late = dir.join("a.result");
    until("A's write", LONG, || late.exists().then_some(()));
    let late_write = read(&late);
    let row = db.psql("SELECT owner, fence FROM account").unwrap();
    say(&format!("A's write: {late_write}"));
    say(&format!("A's zklock: {a_out:?}"));
    say(&format!("row = {row}"));
    assert!(token_b > token_a, "tokens increase");
    assert_eq!(late_write, "UPDATE 0", "the stale write was not refused");
    assert_eq!(row, format!("B|{token_b}"));
    assert_eq!(code(&a_out), LOST, "zklock exec reports the lost lock");
}
