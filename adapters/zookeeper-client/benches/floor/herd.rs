//! Herd drain: one holder, N queued waiters, zklock against the floor and the two herd designs.

use crate::common::{
    mntr_overhead, packets, wait_quiet, wait_watches, watch_count, window, Packets, Sniffer,
};
use crate::{lock_client, TIMEOUT};
use futures::channel::mpsc;
use futures::StreamExt;
use lock_testkit::floor::{
    bare_client, bare_lock, bare_lock_counted, bare_release, mkdir, sequence_of, NAME,
};
use lock_testkit::measure::{env_or, env_usize, loadavg, median, median_duration};
use lock_testkit::ZkServer;
use lock_zookeeper_client::TokioRuntime;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use zookeeper_client::{Acls, Client, CreateMode};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Design {
    Zklock,
    Floor,
    Naive,
    Children,
}

impl Design {
    fn name(self) -> &'static str {
        match self {
            Design::Zklock => "zklock",
            Design::Floor => "floor",
            Design::Naive => "naive (a)",
            Design::Children => "children (b)",
        }
    }
}

pub(crate) struct HerdRound {
    releases: usize,
    elapsed: Duration,
    requests: f64,
    notifications: f64,
}

pub(crate) async fn herd(rt: &TokioRuntime, server: &ZkServer, waiters: usize) {
    let cap = env_usize("HERD_CAP", 50);
    // A round with 1,000 sessions per design takes ~1.5 min on 2 cores.
    let rounds = env_usize("HERD_ROUNDS", if waiters > 200 { 1 } else { 3 });
    let designs: Vec<Design> = env_or("HERD_DESIGNS", "zklock,floor,naive,children")
        .split(',')
        .map(|d| match d.trim() {
            "zklock" => Design::Zklock,
            "floor" => Design::Floor,
            "naive" => Design::Naive,
            "children" => Design::Children,
            other => panic!("HERD_DESIGNS: {other}"),
        })
        .collect();
    // FLOOR_TRACE=1: the herd's sessions go through a frame-decoding proxy that
    // prints what each round's requests and packets are.
    let sniffer = std::env::var_os("FLOOR_TRACE").map(|_| Sniffer::start(server.addr()));
    let mut results: Vec<(Design, Vec<HerdRound>)> =
        designs.iter().map(|&d| (d, Vec::new())).collect();
    for round in 0..rounds {
        for (design, rs) in &mut results {
            let releases = match design {
                Design::Zklock | Design::Floor => waiters,
                Design::Naive | Design::Children => waiters.min(cap),
            };
            let dir = format!("/bench/herd-{waiters}-{round}/{}", design_dir(*design));
            rs.push(
                herd_round(
                    rt,
                    server,
                    sniffer.as_ref(),
                    *design,
                    &dir,
                    waiters,
                    releases,
                )
                .await,
            );
        }
    }
    println!();
    println!(
        "## herd: one holder, {waiters} queued waiters, one session each ({rounds} rounds, medians)"
    );
    println!(
        "{:<13} {:>9} {:>12} {:>14} {:>18} {:>24}",
        "design", "releases", "drain", "per release", "requests/release", "notifications/release"
    );
    for (design, r) in &results {
        let per: Vec<f64> = r
            .iter()
            .map(|x| x.elapsed.as_secs_f64() / x.releases as f64)
            .collect();
        println!(
            "{:<13} {:>9} {:>12.2?} {:>14.1?} {:>18.2} {:>24.2}",
            design.name(),
            r[0].releases,
            median_duration(&r.iter().map(|x| x.elapsed).collect::<Vec<_>>()),
            Duration::from_secs_f64(median(&per)),
            median(&r.iter().map(|x| x.requests).collect::<Vec<_>>()),
            median(&r.iter().map(|x| x.notifications).collect::<Vec<_>>()),
        );
    }
    println!("load: {}", loadavg());
}

pub(crate) fn design_dir(d: Design) -> &'static str {
    match d {
        Design::Zklock => "zklock",
        Design::Floor => "floor",
        Design::Naive => "naive",
        Design::Children => "children",
    }
}

/// Connects `n` sessions, 50 at a time.
pub(crate) async fn connect_many<T, F, Fut>(n: usize, connect: F) -> Vec<T>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = T>,
{
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let batch = (n - out.len()).min(50);
        out.extend(futures::future::join_all((0..batch).map(|_| connect())).await);
    }
    out
}

pub(crate) async fn herd_round(
    rt: &TokioRuntime,
    server: &ZkServer,
    sniffer: Option<&Sniffer>,
    design: Design,
    dir: &str,
    waiters: usize,
    releases: usize,
) -> HerdRound {
    let cluster = sniffer.map_or_else(|| server.connect_string(), Sniffer::connect_string);
    let snap = || sniffer.map(Sniffer::snapshot);
    let trace = |before: &Option<std::collections::BTreeMap<String, u64>>| {
        if let (Some(s), Some(b)) = (sniffer, before) {
            println!(
                "  trace {:<13} {}",
                design.name(),
                Sniffer::diff(b, &s.snapshot())
            );
        }
    };
    let queued = Arc::new(AtomicUsize::new(0));
    let (done_tx, mut done_rx) = mpsc::unbounded::<()>();
    let mut tasks = Vec::new();
    let overhead = mntr_overhead(server);
    let admin = bare_client(&cluster, TIMEOUT).await;
    mkdir(&admin, dir).await;
    let (before, started, elapsed, traced);
    // The sessions live until the window closes (the last handle of a bare
    // session sends closeSession when dropped).
    let sessions: Vec<Arc<Client>>;
    match design {
        Design::Zklock => {
            let clients = connect_many(waiters + 1, || lock_client(rt, &cluster)).await;
            let holder = clients[0].mutex(dir).lock().await.unwrap();
            let base = watch_count(server);
            for c in &clients[1..] {
                let (m, done) = (c.mutex(dir), done_tx.clone());
                tasks.push(tokio::spawn(async move {
                    m.lock().await.unwrap().release().await.unwrap();
                    let _ = done.unbounded_send(());
                }));
            }
            // Queued: every waiter has its predecessor watch set, on the server.
            wait_watches(server, base + waiters as u64).await;
            wait_quiet(server).await;
            traced = snap();
            before = packets(server);
            started = Instant::now();
            holder.release().await.unwrap();
            for _ in 0..releases {
                done_rx.next().await;
            }
            elapsed = started.elapsed();
            let after = packets(server);
            trace(&traced);
            for c in &clients {
                c.close().await;
            }
            return herd_result(before, after, overhead, elapsed, releases + 1);
        }
        Design::Floor | Design::Children | Design::Naive => {
            let clients = connect_many(waiters + 1, || bare_client(&cluster, TIMEOUT)).await;
            let clients: Vec<Arc<Client>> = clients.into_iter().map(Arc::new).collect();
            // Design (a)'s one node, which every loser watches.
            let lock = format!("{dir}/lock");
            let holder_node = if design == Design::Naive {
                let options = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
                clients[0].create(&lock, b"", &options).await.unwrap();
                lock.clone()
            } else {
                bare_lock(&clients[0], dir).await
            };
            let base = watch_count(server);
            for c in &clients[1..] {
                let (c, done, queued, dir, lock) = (
                    c.clone(),
                    done_tx.clone(),
                    queued.clone(),
                    dir.to_owned(),
                    lock.clone(),
                );
                tasks.push(tokio::spawn(async move {
                    match design {
                        Design::Floor => {
                            let node = bare_lock_counted(&c, &dir, Some(&queued)).await;
                            bare_release(&c, &node).await;
                        }
                        Design::Children => {
                            let (node, watcher) = children_lock(&c, &dir, &queued).await;
                            bare_release(&c, &node).await;
                            drop(watcher);
                        }
                        _ => {
                            naive_lock(&c, &lock, &queued).await;
                            bare_release(&c, &lock).await;
                        }
                    }
                    let _ = done.unbounded_send(());
                }));
            }
            wait_queued(&queued, waiters).await;
            wait_watches(server, base + waiters as u64).await;
            wait_quiet(server).await;
            traced = snap();
            before = packets(server);
            started = Instant::now();
            bare_release(&clients[0], &holder_node).await;
            sessions = clients;
        }
    }
    for _ in 0..releases {
        done_rx.next().await;
    }
    elapsed = started.elapsed();
    let after = packets(server);
    trace(&traced);
    for t in &tasks {
        t.abort();
    }
    drop(sessions);
    herd_result(before, after, overhead, elapsed, releases + 1)
}

/// Counted over `releases` (the holder's and those of the waiters measured).
pub(crate) fn herd_result(
    before: Packets,
    after: Packets,
    overhead: Packets,
    elapsed: Duration,
    releases: usize,
) -> HerdRound {
    let w = window(before, after, overhead);
    HerdRound {
        releases: releases - 1,
        elapsed,
        requests: w.received as f64 / releases as f64,
        notifications: w.notifications() as f64 / releases as f64,
    }
}

pub(crate) async fn wait_queued(queued: &AtomicUsize, waiters: usize) {
    while queued.load(Ordering::Relaxed) < waiters {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Design (a): `create /lock`; on `NodeExists`, `exists` + watch and, when it
/// fires, race again.
pub(crate) async fn naive_lock(client: &Client, lock: &str, queued: &AtomicUsize) {
    let options = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
    let mut first = true;
    // Watches set on a missing node are kept (as the articles' clients would),
    // not removed: dropping one would send a `removeWatches`.
    let mut kept = Vec::new();
    loop {
        match client.create(lock, b"", &options).await {
            Ok(_) => return,
            Err(zookeeper_client::Error::NodeExists) => {}
            Err(e) => panic!("create: {e}"),
        }
        let (stat, watcher) = client.check_and_watch_stat(lock).await.expect("exists");
        if first {
            first = false;
            queued.fetch_add(1, Ordering::Relaxed);
        }
        if stat.is_some() {
            watcher.changed().await;
        } else {
            kept.push(watcher);
        }
    }
}

/// Design (b): an ephemeral-sequential node, then `getChildren` + watch on the
/// parent until ours is the lowest.
pub(crate) async fn children_lock(
    client: &Client,
    dir: &str,
    queued: &AtomicUsize,
) -> (String, zookeeper_client::OneshotWatcher) {
    let prefix = format!("{dir}/{NAME}");
    let options = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
    let seq = client
        .create(&prefix, b"", &options)
        .await
        .expect("create")
        .1
        .into_i64();
    let mut first = true;
    loop {
        let (children, watcher) = client.list_and_watch_children(dir).await.expect("list");
        let lowest = children
            .iter()
            .filter_map(|n| sequence_of(n))
            .all(|s| s >= seq);
        if lowest {
            // The watch stays set, as in the article (the caller drops it after
            // its release, which fires it).
            return (format!("{prefix}{seq:010}"), watcher);
        }
        if first {
            first = false;
            queued.fetch_add(1, Ordering::Relaxed);
        }
        watcher.changed().await;
    }
}
