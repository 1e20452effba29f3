//! Fencing end to end on the API, against a real ZooKeeper and a real
//! PostgreSQL (lock-testkit): the `fenced_postgres` example, and a holder whose
//! task stops past its session while the server expires it.

#[path = "../fenced_postgres.rs"]
#[allow(dead_code)] // the example's `main`
mod example;

use example::{connect_db, reset_table, row, write, FENCED};
use lock_testkit::{FaultProxy, Postgres, ZkServer};
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use zklock::LockStatus;

/// One ZooKeeper per test binary (the testkit kills it at exit).
fn zk() -> &'static ZkServer {
    static SERVER: OnceLock<ZkServer> = OnceLock::new();
    SERVER.get_or_init(|| ZkServer::start().unwrap_or_else(|e| panic!("{e}")))
}

fn postgres() -> Postgres {
    Postgres::start().unwrap_or_else(|e| panic!("{e}"))
}

/// `cargo run --example fenced_postgres -- URL [ZK]`, in-process: on a real
/// ZooKeeper and on the in-process one, the stale write is refused and the row
/// ends as worker-2 wrote it.
#[tokio::test]
async fn the_example_fences_out_the_stale_write() {
    let db = postgres();
    for zk in [Some(zk().connect_string()), None] {
        println!(
            "--- lock on {}",
            zk.as_deref().unwrap_or("the in-process server")
        );
        let (owner, fence) = example::run(&db.url(), zk.as_deref()).await.unwrap();
        assert_eq!(owner, "worker-2");
        assert_eq!(
            db.psql("SELECT owner, fence FROM fenced_account").unwrap(),
            format!("worker-2|{fence}")
        );
    }
}

/// The holder's session timeout: its pause is longer.
const SESSION_TIMEOUT: Duration = Duration::from_secs(2);

/// Holder A checks that it holds the lock and is about to write when its task
/// stops (it is not polled again until resumed) and the server stops hearing
/// from its session (a blackholing proxy: to ZooKeeper, a paused process). B is
/// granted the lock once A's session expires, and writes. A resumes and writes
/// with the token it had: the fence condition refuses it, and the row keeps B's
/// value and token. (Without the condition the late write lands: the example's
/// rolled-back unfenced write, checked in `the_example_fences_out_the_stale_write`.)
#[tokio::test]
async fn paused_api_holder_is_fenced_out_by_the_database() {
    let lock = format!("/fencing/{}", std::process::id());
    let start = Instant::now();
    let say = |what: String| println!("{:>6.2} s  {what}", start.elapsed().as_secs_f64());

    let database = postgres();
    let db = connect_db(&database.url()).await.unwrap();
    reset_table(&db).await.unwrap();
    let proxy = FaultProxy::start(zk().addr()).unwrap();
    let a = zklock::builder(&proxy.connect_string())
        .session_timeout(SESSION_TIMEOUT)
        .connect()
        .await
        .unwrap();
    let b = zklock::connect(&zk().connect_string()).await.unwrap();

    let guard_a = a.mutex(lock.clone()).lock().await.unwrap();
    let token_a = guard_a.token();
    let db_a = connect_db(&database.url()).await.unwrap();
    let (resume, paused) = tokio::sync::oneshot::channel::<()>();
    let worker_a = tokio::spawn(async move {
        assert_eq!(
            guard_a.status(),
            LockStatus::Held,
            "A holds when it decides to write"
        );
        paused.await.unwrap();
        let status_at_write = guard_a.status();
        let rows = write(&db_a, FENCED, "A", guard_a.token()).await.unwrap();
        (rows, status_at_write)
    });
    say(format!("A holds the lock, token {token_a}; its task stops before the write, its network goes silent"));
    proxy.blackhole();

    let guard_b = b
        .mutex(lock.clone())
        .lock_timeout(Duration::from_secs(30))
        .await
        .unwrap();
    let token_b = guard_b.token();
    assert!(token_b > token_a, "tokens increase");
    let b_rows = write(&db, FENCED, "B", token_b).await.unwrap();
    say(format!(
        "B was granted the lock (A's session expired), token {token_b}: {b_rows} row; row = {:?}",
        row(&db).await.unwrap()
    ));
    assert_eq!(b_rows, 1);

    proxy.heal();
    resume.send(()).unwrap();
    let (late_rows, status_at_write) = worker_a.await.unwrap();
    let end = row(&db).await.unwrap();
    say(format!("A resumed and wrote with token {token_a}: {late_rows} row(s) (its guard said {status_at_write:?})"));
    assert_eq!(late_rows, 0, "the stale write was not refused");
    assert_eq!(end, ("B".to_owned(), token_b.0));
    guard_b.release().await.unwrap();
    a.close().await;
    b.close().await;
}
