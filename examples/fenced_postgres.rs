//! Fencing a real database: a stale lock holder's write is refused by PostgreSQL.
//!
//! Two workers update one row under the lock `/locks/account-1`. The row carries
//! the fencing token of the holder that last wrote it, and every write is
//! conditional on it, so a write with an older token than the row's changes
//! nothing:
//!
//! ```sql
//! UPDATE fenced_account SET owner = $1, fence = $2 WHERE id = 1 AND fence <= $2
//! ```
//!
//! worker-1 holds the lock and writes; then it stops (a GC pause, SIGSTOP, a VM
//! migration) while its session ends, and worker-2 is granted the lock and writes.
//! worker-1 wakes up and writes with the token it still has: 0 rows, fenced out.
//! The same write without the condition, run in a transaction that is rolled
//! back, shows what the lock alone would have let through: worker-2's update lost.
//!
//! ```sh
//! cargo run --example fenced_postgres -- postgresql://postgres@127.0.0.1:5432/postgres
//! DATABASE_URL=postgresql://... ZKLOCK_ZK=127.0.0.1:2181 cargo run --example fenced_postgres
//! ```
//!
//! The database: the first argument, else `DATABASE_URL` (the example creates or
//! resets the table `fenced_account`). The lock: the ZooKeeper named by the second
//! argument, else `ZKLOCK_ZK`, else lock-sim's in-process server. On the
//! in-process server worker-1's session is expired, as a long pause would; on a
//! real ZooKeeper the example cannot pause itself that long, so it closes
//! worker-1's session, which ends the lock the same way (the server deletes the
//! node and grants the next waiter) while worker-1 keeps its guard and token.

use std::error::Error;
use std::process::ExitCode;
use std::time::Instant;
use tokio_postgres::{Client, NoTls};
use zklock::{FencingToken, LockClient};

const LOCK: &str = "/locks/account-1";

/// Connects to `url`; the connection is driven by a task of its own.
pub async fn connect_db(url: &str) -> Result<Client, tokio_postgres::Error> {
    let (db, connection) = tokio_postgres::connect(url, NoTls).await?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            eprintln!("database connection: {e}");
        }
    });
    Ok(db)
}

/// Creates the table (or resets its row): owner `nobody`, fence 0.
pub async fn reset_table(db: &Client) -> Result<(), tokio_postgres::Error> {
    db.batch_execute(
        "CREATE TABLE IF NOT EXISTS fenced_account \
           (id int PRIMARY KEY, owner text NOT NULL, fence bigint NOT NULL); \
         INSERT INTO fenced_account VALUES (1, 'nobody', 0) \
           ON CONFLICT (id) DO UPDATE SET owner = 'nobody', fence = 0",
    )
    .await
}

/// The fenced write: applies only if no newer token has written the row, and
/// records the writer's token.
pub const FENCED: &str =
    "UPDATE fenced_account SET owner = $1, fence = $2 WHERE id = 1 AND fence <= $2";
/// The same write without the condition: what the lock alone protects.
pub const UNFENCED: &str = "UPDATE fenced_account SET owner = $1, fence = $2 WHERE id = 1";

/// Runs `update` ([`FENCED`] or [`UNFENCED`]) for `owner` holding `token`.
/// Returns the rows written: 0 means fenced out.
pub async fn write(
    db: &Client,
    update: &str,
    owner: &str,
    token: FencingToken,
) -> Result<u64, tokio_postgres::Error> {
    db.execute(update, &[&owner, &token.0]).await
}

/// The row: its owner and the token that wrote it.
pub async fn row(db: &Client) -> Result<(String, i64), tokio_postgres::Error> {
    let row = db
        .query_one("SELECT owner, fence FROM fenced_account WHERE id = 1", &[])
        .await?;
    Ok((row.get(0), row.get(1)))
}

/// Prints one line of the timeline.
fn say(start: Instant, who: &str, what: impl std::fmt::Display) {
    let ms = start.elapsed().as_secs_f64() * 1e3;
    println!("  {ms:>7.1} ms  {who:<8} {what}");
}

/// Runs the story against the database at `database_url`, the lock on the
/// ZooKeeper at `zk` (or on an in-process one); returns the row at the end.
pub async fn run(database_url: &str, zk: Option<&str>) -> Result<(String, i64), Box<dyn Error>> {
    let start = Instant::now();
    let db = connect_db(database_url).await?;
    reset_table(&db).await?;
    let mut embedded = None;
    let [w1, w2]: [LockClient; 2] = match zk {
        Some(zk) => [zklock::connect(zk).await?, zklock::connect(zk).await?],
        None => {
            let server = embedded.insert(zklock::sim::Server::new());
            [server.client(), server.client()]
        }
    };

    println!("== worker-1 holds {LOCK} and writes");
    let g1 = w1.mutex(LOCK).lock().await?;
    let t1 = g1.token();
    let written = write(&db, FENCED, "worker-1", t1).await?;
    say(
        start,
        "worker-1",
        format!("token {t1}: UPDATE ... AND fence <= {t1} -> {written} row"),
    );
    say(start, "", format!("    row = {:?}", row(&db).await?));

    println!("\n== worker-1 stops; its session ends; worker-2 takes over");
    match &embedded {
        Some(server) => server.expire_session(&w1),
        None => w1.close().await,
    }
    say(
        start,
        "worker-1",
        "stopped (its session is gone; it does not know)",
    );
    let g2 = w2.mutex(LOCK).lock().await?;
    let t2 = g2.token();
    assert!(t2 > t1, "tokens increase");
    let written = write(&db, FENCED, "worker-2", t2).await?;
    say(
        start,
        "worker-2",
        format!("token {t2}: UPDATE ... AND fence <= {t2} -> {written} row"),
    );
    say(start, "", format!("    row = {:?}", row(&db).await?));

    println!("\n== worker-1 wakes up and writes with its old token");
    let stale = write(&db, FENCED, "worker-1", t1).await?;
    say(
        start,
        "worker-1",
        format!("token {t1}: UPDATE ... AND fence <= {t1} -> {stale} rows: fenced out"),
    );
    say(
        start,
        "",
        format!(
            "    (its guard says {:?}; it wrote without looking)",
            g1.status()
        ),
    );
    assert_eq!(stale, 0, "the stale write applied");

    db.batch_execute("BEGIN").await?;
    let clobbered = write(&db, UNFENCED, "worker-1", t1).await?;
    let lost = row(&db).await?;
    db.batch_execute("ROLLBACK").await?;
    say(start, "", format!("    without the fence: {clobbered} row, row = {lost:?}: worker-2's update lost (rolled back)"));
    assert_eq!(lost, ("worker-1".to_owned(), t1.0));

    g2.release().await?;
    for client in [&w1, &w2] {
        client.close().await;
    }
    let end = row(&db).await?;
    assert_eq!(end, ("worker-2".to_owned(), t2.0));
    println!("\n  row = {end:?}\nok: the stale holder's write never applied");
    Ok(end)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let database_url = args.next().or_else(|| std::env::var("DATABASE_URL").ok());
    let zk = args.next().or_else(|| std::env::var("ZKLOCK_ZK").ok());
    let Some(database_url) = database_url else {
        eprintln!(
            "usage: fenced_postgres DATABASE_URL [ZOOKEEPER]\n\
             (or DATABASE_URL and ZKLOCK_ZK in the environment; without ZooKeeper the lock is in-process)"
        );
        return ExitCode::from(2);
    };
    match run(&database_url, zk.as_deref()).await {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fenced_postgres: {e}");
            ExitCode::FAILURE
        }
    }
}
