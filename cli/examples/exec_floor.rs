//! The floor of `zklock exec`, `zklock ls` and `zklock top --once`: the same ZooKeeper work and the
//! same processes, with nothing of zklock's in between (`scripts/exec-vs-flock.sh`
//! times it beside them).
//!
//! * `exec_floor exec CLUSTER PATH CMD...`: starts a guard (this program again,
//!   `exec_floor guard`, as the leader of a process group of its own, before
//!   connecting, as zklock starts its guard), connects with zookeeper-client
//!   (`TCP_NODELAY` set, as zklock sets it), sends the lock node's `create` and
//!   the directory's `getChildren` in one flight, tells the guard to run CMD in a
//!   process group of its own, waits for it, deletes the node and closes the
//!   session. Exits with CMD's code. An uncontended lock only: a listing with a
//!   lower node is an error.
//! * `exec_floor ls CLUSTER PATH`: connects, lists PATH, reads each child's
//!   data and closes (`zklock ls` on a lock).
//! * `exec_floor top CLUSTER ROOT`: connects, lists ROOT, reads ROOT and each
//!   child as `ls` reads a lock, all in one flight, and closes (`zklock top
//!   --once ROOT`).
//!
//! Build: `cargo build --release -p zklock-cli --example exec_floor`.

use lock_zookeeper_client::zookeeper_client::{Acls, Client, CreateMode, Error, SessionState};
use std::io::{BufRead, Write};
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitCode, Stdio};

/// A node name of zklock's length (`zkl-<hex32>-write-`).
const NAME: &str = "zkl-0123456789abcdef0123456789abcdef-write-";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runtime = || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime")
    };
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["guard", ref cmd @ ..] => guard(cmd),
        ["exec", cluster, path, ref cmd @ ..] if !cmd.is_empty() => {
            runtime().block_on(exec(cluster, path, cmd))
        }
        ["ls", cluster, path] => runtime().block_on(async {
            let client = connect(cluster).await;
            read_lock(&client, path).await;
            close(client).await;
            ExitCode::SUCCESS
        }),
        ["top", cluster, root] => runtime().block_on(top(cluster, root)),
        _ => {
            eprintln!(
                "usage: exec_floor exec CLUSTER PATH CMD... | exec_floor ls|top CLUSTER PATH"
            );
            ExitCode::from(2)
        }
    }
}

/// Waits for a line on stdin, then runs CMD in a process group of its own and
/// exits with its code; stdin ending first ends it without CMD.
fn guard(cmd: &[&str]) -> ExitCode {
    let mut go = String::new();
    if std::io::stdin().lock().read_line(&mut go).unwrap_or(0) == 0 {
        return ExitCode::from(1);
    }
    let status = Command::new(cmd[0])
        .args(&cmd[1..])
        .process_group(0)
        .status()
        .expect("running CMD");
    ExitCode::from(status.code().unwrap_or(128) as u8)
}

async fn connect(cluster: &str) -> Client {
    let client = Client::connect(cluster).await.expect("connecting");
    if let Some(peers) = lock_nodelay::Peers::literal(cluster) {
        let _ = lock_nodelay::apply(&peers);
    }
    client
}

/// Closes the session and waits for the server's answer, as zklock does.
async fn close(client: Client) {
    let mut states = client.state_watcher();
    drop(client);
    while !matches!(
        states.changed().await,
        SessionState::Closed | SessionState::Expired | SessionState::AuthFailed
    ) {}
}

async fn exec(cluster: &str, path: &str, cmd: &[&str]) -> ExitCode {
    let mut guard = Command::new(std::env::current_exe().expect("this program"))
        .arg("guard")
        .args(cmd)
        .stdin(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("starting the guard");
    let client = connect(cluster).await;
    let prefix = format!("{path}/{NAME}");
    let options = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
    let (created, listed) = loop {
        // Both requests are written when called: one flight.
        let create = client.create(&prefix, b"", &options);
        let list = client.list_children(path);
        match tokio::join!(create, list) {
            (Err(Error::NoNode), _) => {
                let parent = CreateMode::Container.with_acls(Acls::anyone_all());
                client
                    .mkdir(path, &parent)
                    .await
                    .expect("the lock's directory");
            }
            (created, listed) => break (created, listed),
        }
    };
    let node = format!("{prefix}{:010}", created.expect("create").1.into_i64());
    let listed = listed.expect("getChildren");
    assert_eq!(
        listed.len(),
        1,
        "exec_floor takes uncontended locks only: {listed:?}"
    );
    let mut stdin = guard.stdin.take().expect("the guard's stdin");
    stdin.write_all(b"go\n").expect("telling the guard");
    drop(stdin);
    let status = tokio::task::spawn_blocking(move || guard.wait())
        .await
        .expect("waiting for the guard")
        .expect("the guard's status");
    client.delete(&node, None).await.expect("delete");
    close(client).await;
    ExitCode::from(status.code().unwrap_or(128) as u8)
}

/// `zklock ls`'s reads of one lock: its children, then each child's data.
async fn read_lock(client: &Client, path: &str) {
    let children = match client.list_children(path).await {
        Ok(children) => children,
        Err(Error::NoNode) => Vec::new(),
        Err(e) => panic!("getChildren: {e}"),
    };
    let reads: Vec<_> = children
        .iter()
        .map(|c| client.get_data(&format!("{path}/{c}")))
        .collect();
    for read in reads {
        let _ = read.await;
    }
}

async fn top(cluster: &str, root: &str) -> ExitCode {
    let client = connect(cluster).await;
    let children = match client.list_children(root).await {
        Ok(children) => children,
        Err(Error::NoNode) => Vec::new(),
        Err(e) => panic!("getChildren: {e}"),
    };
    let dirs = std::iter::once(root.to_owned()).chain(
        children
            .iter()
            .map(|c| format!("{}/{c}", root.trim_end_matches('/'))),
    );
    let mut reads = tokio::task::JoinSet::new();
    for dir in dirs {
        let client = client.clone();
        reads.spawn(async move { read_lock(&client, &dir).await });
    }
    reads.join_all().await;
    close(client).await;
    ExitCode::SUCCESS
}
