//! Fencing end to end on the API, against a real ZooKeeper and a real
//! PostgreSQL (lock-testkit): the `fenced_postgres` example, and a holder whose
//! task stops past its session while the server expires it.

#[path = "../fenced_postgres.rs"]
#[allow(dead_code)] // the example's `main`
mod example;

use example::{connect_db, reset_table, row, FENCED, UNFENCED};
use lock_testkit::{FaultProxy, Postgres, ZkServer};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use tokio_postgres::Client;
use zklock::{FencingToken, LockStatus};

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

/// What one run of the scenario ended with.
struct Outcome {
    /// Rows A's late write changed.
    late_rows: u64,
    /// The row at the end: owner and token.
    row: (String, i64),
    token_a: FencingToken,
    token_b: FencingToken,
}

async fn write(db: &Client, who: &str, token: FencingToken, fenced: bool) -> u64 {
    let update = if fenced { FENCED } else { UNFENCED };
    example::write(db, update, who, token).await.unwrap()
}

/// Holder A checks that it holds the lock and is about to write when its task
/// stops (it is not polled again until resumed) and the server stops hearing
/// from its session (a blackholing proxy: to ZooKeeper, a paused process). B is
/// granted the lock once A's session expires, and writes. A resumes and writes
/// with the token it had.
async fn paused_api_holder_writes_late(fenced: bool) -> Outcome {
    static N: AtomicU64 = AtomicU64::new(0);
    let lock = format!(
        "/fencing/{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    );
    let test = if fenced { "fenced" } else { "unfenced" };
    let start = Instant::now();
    let say = |what: String| println!("[{test}] {:>6.2} s  {what}", start.elapsed().as_secs_f64());

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
        let rows = write(&db_a, "A", guard_a.token(), fenced).await;
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
    let b_rows = write(&db, "B", token_b, fenced).await;
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
    say(format!("row = {end:?}"));
    guard_b.release().await.unwrap();
    a.close().await;
    b.close().await;
    Outcome {
        late_rows,
        row: end,
        token_a,
        token_b,
    }
}

/// With the fence condition, the late write of a holder paused past its
/// session changes nothing: the row keeps the newer holder's value and token.
#[tokio::test]
async fn paused_api_holder_is_fenced_out_by_the_database() {
    let run = paused_api_holder_writes_late(true).await;
    assert!(run.token_b > run.token_a, "tokens increase");
    assert_eq!(run.late_rows, 0, "the stale write was not refused");
    assert_eq!(run.row, ("B".to_owned(), run.token_b.0));
}

/// The same pause without the condition: the late write lands on the newer
/// holder's row, a lost update (the row's token goes backwards).
#[tokio::test]
async fn paused_api_holder_clobbers_the_row_without_the_fence() {
    let run = paused_api_holder_writes_late(false).await;
    assert!(run.token_b > run.token_a, "tokens increase");
    assert_eq!(run.late_rows, 1);
    assert_eq!(
        run.row,
        ("A".to_owned(), run.token_a.0),
        "B's update was lost"
    );
}
