//! This bench binary as a peer (`COMPARE_PEER=zklock|floor|recipe`): the line
//! protocol of `peers/CuratorBench.java` over zklock's `LockClient`, the bare
//! zookeeper-client floor (`lock_testkit::floor`) or zookeeper-client's own
//! `Client::lock`. Tokio with 2 workers, as a service on this machine would run.

use super::peer::Library;
use futures::StreamExt;
use lock_testkit::floor::{bare_client, bare_lock, bare_release, mkdir};
use lock_zookeeper_client::{Connect, LockClient, LockGuard, TokioRuntime};
use std::collections::BTreeSet;
use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};
use zookeeper_client::{Acls, Client, CreateMode, LockOptions, LockPrefix, OwnedLockClient};

/// The floor's lock directories made so far.
static PREPARED: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// `COMPARE_RELEASE=drop`, read once: not an environment lookup in every
/// measured release.
static RELEASE_BY_DROP: LazyLock<bool> =
    LazyLock::new(|| std::env::var("COMPARE_RELEASE").as_deref() == Ok("drop"));

/// The sessions of one peer.
#[derive(Clone)]
enum Sessions {
    Zklock(Arc<Vec<LockClient>>),
    Floor(Arc<Vec<Arc<Client>>>),
    Recipe(Arc<Vec<Arc<Client>>>),
}

/// A held lock.
enum Held {
    Zklock(LockGuard),
    Floor(Arc<Client>, String),
    Recipe(OwnedLockClient),
}

impl Sessions {
    fn len(&self) -> usize {
        match self {
            Sessions::Zklock(c) => c.len(),
            Sessions::Floor(c) | Sessions::Recipe(c) => c.len(),
        }
    }

    async fn acquire(&self, session: usize, path: &str) -> Held {
        match self {
            Sessions::Zklock(c) => Held::Zklock(c[session].mutex(path).lock().await.expect("lock")),
            Sessions::Floor(c) => {
                let node = bare_lock(&c[session], path).await;
                Held::Floor(c[session].clone(), node)
            }
            Sessions::Recipe(c) => {
                let dir = CreateMode::Persistent.with_acls(Acls::anyone_all());
                let options = LockOptions::new(Acls::anyone_all())
                    .with_ancestor_options(dir)
                    .expect("options");
                let prefix = LockPrefix::new_curator(path, "lock-").expect("prefix");
                let lock = c[session]
                    .lock(prefix, b"", options)
                    .await
                    .expect("Client::lock");
                Held::Recipe(lock.into_owned())
            }
        }
    }

    /// Makes the floor's lock directories (zklock and the recipe make their own),
    /// once per path.
    async fn prepare(&self, path: &str) {
        if let Sessions::Floor(c) = self {
            if PREPARED.lock().unwrap().insert(path.to_owned()) {
                mkdir(&c[0], path).await;
            }
        }
    }
}

impl Held {
    async fn release(self) {
        match self {
            // `COMPARE_RELEASE=drop`: released as the recipe is, by dropping the
            // guard (lock-client sends the `delete` in the background).
            Held::Zklock(g) if *RELEASE_BY_DROP => drop(g),
            Held::Zklock(g) => g.release().await.expect("release"),
            Held::Floor(c, node) => bare_release(&c, &node).await,
            // The recipe's release: dropping it deletes the node in the background.
            Held::Recipe(lock) => drop(lock),
        }
    }
}

fn csv(values: &[Duration]) -> String {
    values
        .iter()
        .map(|d| d.as_nanos().to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// Runs the peer: arguments `<connect string> <sessions> <session timeout ms>`.
pub fn run(library: Library) {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (cluster, sessions) = (args[0].clone(), args[1].parse::<usize>().expect("sessions"));
    let timeout = Duration::from_millis(args[2].parse().expect("timeout"));
    let rt = super::common::runtime();
    let handle = TokioRuntime(rt.handle().clone());
    let sessions = rt.block_on(async {
        let connects = (0..sessions).map(|_| async {
            match library {
                Library::Zklock => Err(LockClient::builder(&cluster)
                    .session_timeout(timeout)
                    .runtime(handle.clone())
                    .connect()
                    .await
                    .expect("connecting")),
                _ => Ok(Arc::new(bare_client(&cluster, timeout).await)),
            }
        });
        let all: Vec<_> = futures::stream::iter(connects).buffered(50).collect().await;
        match library {
            Library::Zklock => Sessions::Zklock(Arc::new(
                all.into_iter().map(|c| c.err().unwrap()).collect(),
            )),
            Library::Floor => {
                Sessions::Floor(Arc::new(all.into_iter().map(|c| c.unwrap()).collect()))
            }
            _ => Sessions::Recipe(Arc::new(all.into_iter().map(|c| c.unwrap()).collect())),
        }
    });
    let mut out = std::io::stdout().lock();
    writeln!(out, "ready").unwrap();
    out.flush().unwrap();
    let mut state = State::default();
    for line in std::io::stdin().lock().lines() {
        let line = line.expect("stdin");
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.first() == Some(&"quit") {
            break;
        }
        let reply = rt.block_on(command(&sessions, &mut state, &words));
        writeln!(out, "{reply}").unwrap();
        out.flush().unwrap();
    }
    rt.block_on(async {
        // Waiting acquisitions end here, not with an error when the sessions close.
        for t in state.waiting.drain(..) {
            t.abort();
        }
        drop(state);
        if let Sessions::Zklock(c) = &sessions {
            for c in c.iter() {
                c.close().await;
            }
        }
    });
    writeln!(out, "ok").unwrap();
}

/// What outlives one command: held locks, waiting acquisitions, the herd.
#[derive(Default)]
struct State {
    held: Arc<Mutex<Vec<Held>>>,
    waiting: Vec<tokio::task::JoinHandle<()>>,
    herd_holder: Option<Held>,
    herd: Vec<tokio::task::JoinHandle<()>>,
    herd_start: Arc<Mutex<Option<Instant>>>,
    herd_done: Arc<Mutex<Vec<Duration>>>,
}

async fn command(sessions: &Sessions, state: &mut State, w: &[&str]) -> String {
    let num = |i: usize| -> usize { w[i].parse().expect("a number") };
    match w[0] {
        "cycles" => {
            sessions.prepare(w[1]).await;
            let (mut acquire, mut release) = (Vec::new(), Vec::new());
            for _ in 0..num(2) {
                let t0 = Instant::now();
                let held = sessions.acquire(0, w[1]).await;
                let t1 = Instant::now();
                held.release().await;
                acquire.push(t1 - t0);
                release.push(t1.elapsed());
            }
            format!("ok {} {}", csv(&acquire), csv(&release))
        }
        "contend" => {
            sessions.prepare(w[1]).await;
            let end = Instant::now() + Duration::from_millis(num(2) as u64);
            let count = Arc::new(AtomicU64::new(0));
            let started = Instant::now();
            let tasks: Vec<_> = (0..sessions.len())
                .map(|i| {
                    let (s, count, path) = (sessions.clone(), count.clone(), w[1].to_owned());
                    tokio::spawn(async move {
                        while Instant::now() < end {
                            let held = s.acquire(i, &path).await;
                            count.fetch_add(1, Ordering::Relaxed);
                            held.release().await;
                        }
                    })
                })
                .collect();
            for t in tasks {
                t.await.unwrap();
            }
            format!(
                "ok {} {}",
                count.load(Ordering::Relaxed),
                started.elapsed().as_nanos()
            )
        }
        "many" => {
            let (locks, cycles) = (num(2), num(3));
            for i in 0..locks {
                sessions.prepare(&format!("{}/l{i}", w[1])).await;
            }
            let started = Instant::now();
            let tasks: Vec<_> = (0..locks)
                .map(|i| {
                    let (s, path) = (sessions.clone(), format!("{}/l{i}", w[1]));
                    tokio::spawn(async move {
                        for _ in 0..cycles {
                            s.acquire(0, &path).await.release().await;
                        }
                    })
                })
                .collect();
            for t in tasks {
                t.await.unwrap();
            }
            format!("ok {}", started.elapsed().as_nanos())
        }
        "hold" => {
            let n = num(2);
            let started = Instant::now();
            // 256 acquisitions in flight at a time.
            let held: Vec<Held> = futures::stream::iter(0..n)
                .map(|i| {
                    let (s, path) = (sessions.clone(), format!("{}/l{i}", w[1]));
                    async move {
                        s.prepare(&path).await;
                        s.acquire(i % s.len(), &path).await
                    }
                })
                .buffer_unordered(256)
                .collect()
                .await;
            state.held.lock().unwrap().extend(held);
            format!("ok {}", started.elapsed().as_nanos())
        }
        "wait" => {
            for i in 0..num(2) {
                let (s, path, held) = (
                    sessions.clone(),
                    format!("{}/l{i}", w[1]),
                    state.held.clone(),
                );
                state.waiting.push(tokio::spawn(async move {
                    s.prepare(&path).await;
                    let h = s.acquire(i % s.len(), &path).await;
                    held.lock().unwrap().push(h);
                }));
            }
            "ok".into()
        }
        "herd" => {
            sessions.prepare(w[1]).await;
            state.herd_holder = Some(sessions.acquire(0, w[1]).await);
            state.herd_done.lock().unwrap().clear();
            for i in 1..sessions.len() {
                let (s, path) = (sessions.clone(), w[1].to_owned());
                let (start, done) = (state.herd_start.clone(), state.herd_done.clone());
                state.herd.push(tokio::spawn(async move {
                    let held = s.acquire(i, &path).await;
                    let at = start.lock().unwrap().expect("go").elapsed();
                    done.lock().unwrap().push(at);
                    held.release().await;
                }));
            }
            "ok".into()
        }
        "go" => {
            let started = Instant::now();
            *state.herd_start.lock().unwrap() = Some(started);
            state.herd_holder.take().expect("herd").release().await;
            for t in state.herd.drain(..) {
                t.await.unwrap();
            }
            let elapsed = started.elapsed();
            let mut done = state.herd_done.lock().unwrap().clone();
            done.sort();
            format!("ok {} {}", elapsed.as_nanos(), csv(&done))
        }
        other => format!("err unknown command {other}"),
    }
}
