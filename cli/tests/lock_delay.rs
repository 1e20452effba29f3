//! Lock-delay end to end on a real ZooKeeper and a real PostgreSQL (lock-testkit):
//! a `zklock exec` holder paused (SIGSTOP) past its session timeout, whose
//! *unfenced* write is still on its way when it is continued.
//!
//! Without `--lock-delay` the next holder writes first and the late write lands
//! after it (the hazard: examples/tests/fenced_postgres.rs's unfenced run). With it the next
//! holder (a `zklock exec` too, showing the wait) starts only the delay after it
//! saw the old holder gone: the late write lands first.

mod common;

use common::*;
use lock_testkit::Postgres;
use lock_zookeeper_client::LockClient;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// psql inserting a row for `who` into the write log (no fence: the resource
/// cannot check a token). Shell text.
fn insert(who: &str) -> String {
    format!(
        "\"$PSQL\" -X -q -v ON_ERROR_STOP=1 -d \"$DATABASE_URL\" -c \
         \"INSERT INTO writes (who) VALUES ('{who}')\""
    )
}

/// A client of the test's own, for looking at the lock, and the runtime that
/// drives it (kept as long as the client).
fn client() -> (tokio::runtime::Runtime, LockClient) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let locks = rt
        .block_on(lock_zookeeper_client::connect(&server().connect_string()))
        .expect("connecting");
    (rt, locks)
}

/// Waits for the node `name` to leave `lock` (its session expired). Returns
/// when the last look that still found it was sent: the node went after that
/// (a lower bound) and before the first look that did not find it.
fn gone(locks: &LockClient, lock: &str, name: &str) -> Instant {
    let mut still_there = Instant::now();
    until("A's session to expire", Duration::from_secs(60), || {
        let asked = Instant::now();
        if present(locks, lock, name) {
            still_there = asked;
            None
        } else {
            Some(still_there)
        }
    })
}

/// Whether the node named `name` is among `lock`'s participants.
fn present(locks: &LockClient, lock: &str, name: &str) -> bool {
    let who = locks.participants_blocking(lock).expect("participants");
    who.holders
        .iter()
        .chain(&who.waiters)
        .any(|p| p.node.rsplit('/').next() == Some(name))
}

/// Holder A (paused, its unfenced write in flight) and the next holder B, both
/// `zklock exec --lock-delay 8`: B starts no sooner than 8 s after it saw A
/// gone, and says why it waits; A is continued when B's write has landed or 2 s
/// after A's node went, whichever comes first (a pause that ends a little after
/// the expiry), and its late write lands first.
#[test]
fn with_lock_delay_the_late_write_lands_before_the_next_holder_starts() {
    let (test, extra) = ("delay", ["--lock-delay", "8"]);
    let (_rt, locks) = client();
    let db = Postgres::start().unwrap_or_else(|e| panic!("{e}"));
    db.psql("CREATE TABLE writes (id serial PRIMARY KEY, who text NOT NULL)")
        .unwrap();
    let (zk, lock, dir) = setup(test);
    let start = Instant::now();
    let say = |what: &str| eprintln!("[{test}] {:>6.2} s  {what}", start.elapsed().as_secs_f64());

    let first = "basename $ZKLOCK_NODE > a.node";
    let (holder, group) = paused_late_writer(&zk, &extra, &lock, &dir, &db, (first, &insert("A")));
    let a_node = read(&dir.join("a.node"));
    say(&format!("A holds {a_node} and is paused (SIGSTOP)"));

    // B waits, then writes at once.
    let mut b = zklock(&zk);
    b.args(["exec", "--progress", "-w", "60"])
        .args(extra)
        .args([lock.as_str(), "--", "sh", "-c"])
        .arg(format!("touch b.started; {}", insert("B")))
        .env("PSQL", db.psql_path())
        .env("DATABASE_URL", db.url())
        .current_dir(&dir)
        .stderr(Stdio::piped());
    let b = b.spawn().unwrap();

    // B counts its delay from its own notice, which can come before our
    // poll's: the gap is measured from the lower bound, so it can only be
    // longer than B's own.
    let gone = gone(&locks, &lock, &a_node);
    say("A's node is gone (its session expired)");
    let started = |dir: &Path| dir.join("b.started").exists();
    let b_wrote = || {
        db.psql("SELECT count(*) FROM writes WHERE who = 'B'")
            .unwrap()
            == "1"
    };
    until(
        "B's write, or time to resume A",
        Duration::from_secs(60),
        || (b_wrote() || gone.elapsed() >= Duration::from_secs(2)).then_some(()),
    );
    let b_started_before_resume = started(&dir);
    std::fs::write(dir.join("go"), "").unwrap();
    signal_group(holder.id(), "-CONT");
    say(&format!(
        "A continued (B started before: {b_started_before_resume}): its late write goes out"
    ));
    wait_for(&dir.join("b.started"), Duration::from_secs(60));
    let gap = gone.elapsed();
    let b_out = b.wait_with_output().unwrap();
    assert_eq!(code(&b_out), 0, "B: {b_out:?}");
    let mut holder = holder;
    let _ = holder.wait();
    std::mem::forget(group);
    wait_for(&dir.join("a.result"), Duration::from_secs(60));
    let order: Vec<String> = db
        .psql("SELECT who FROM writes ORDER BY id")
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    say(&format!(
        "writes in order: {order:?}; B started {gap:?} after A's node went"
    ));
    assert_eq!(order, ["A", "B"], "A's late write first");
    assert!(gap >= Duration::from_secs(8), "B started after {gap:?}");
    let waiter_says = stderr(&b_out);
    assert!(
        waiter_says.contains("lock-delay after an unclean end"),
        "B's waiting lines: {waiter_says}"
    );
}

/// A holder killed (SIGKILL to zklock: it cannot release) ends uncleanly: once
/// its session expired, `exec -n --lock-delay` finds the lock busy (exit 75)
/// while a plain `exec -n` takes it (a holder without lock-delay does not look
/// at the marker, and leaves it).
#[test]
fn a_try_lock_finds_a_lock_in_its_delay_busy() {
    let (_rt, locks) = client();
    let (zk, lock, dir) = setup("try");
    let extra = ["--session-timeout", SESSION_TIMEOUT, "--lock-delay", "60"];
    let (mut a, a_node) = holding_node(&zk, &extra, &lock, &dir);
    let a_node = a_node.rsplit('/').next().unwrap();
    kill(&a, "-KILL");
    let _ = a.wait();
    gone(&locks, &lock, a_node);
    let try_delayed =
        run(zklock(&zk).args(["exec", "-n", "--lock-delay", "60", &lock, "--", "true"]));
    assert_eq!(code(&try_delayed), BUSY, "{try_delayed:?}");
    exits(&zk, &["exec", "-n", &lock, "--", "true"], 0);
    let again = run(zklock(&zk).args(["exec", "-n", "--lock-delay", "60", &lock, "--", "true"]));
    assert_eq!(code(&again), BUSY, "the marker stays: {again:?}");
}

/// `zklock elect --lock-delay 3`: the leader (paused by SIGSTOP past its
/// session timeout) ends uncleanly, and the next candidate leads no sooner than
/// 3 s after the leader's node went (measured from the last look that still saw
/// it, a lower bound on its deletion).
#[test]
fn elect_with_lock_delay_leads_the_delay_after_an_expired_leader() {
    const DELAY: Duration = Duration::from_secs(3);
    let (_rt, locks) = client();
    let (zk, path, dir) = setup("elect-delay");
    let elect = |id: &str, script: &str| {
        let mut c = zklock(&zk);
        c.args(words(&format!(
            "--session-timeout {SESSION_TIMEOUT} elect --lock-delay 3"
        )))
        .args([path.as_str(), id, "--", "sh", "-c", script])
        .current_dir(&dir)
        .stderr(Stdio::null())
        .process_group(0);
        c.spawn().unwrap()
    };
    let leader = elect(
        "a",
        "basename $ZKLOCK_NODE > a.node; touch a.ready; sleep 300",
    );
    let group = KillOnDrop(leader.id());
    wait_for(&dir.join("a.ready"), LONG);
    let a_node = read(&dir.join("a.node"));
    pause(&leader);
    let next = elect("b", "touch b.leads");
    let gone = gone(&locks, &path, &a_node);
    wait_for(&dir.join("b.leads"), Duration::from_secs(60));
    let gap = gone.elapsed();
    assert!(gap >= DELAY, "B led {gap:?} after A's node went");
    let out = next.wait_with_output().unwrap();
    assert_eq!(code(&out), 0, "B: {out:?}");
    drop(group);
    let mut leader = leader;
    let _ = leader.wait();
}
