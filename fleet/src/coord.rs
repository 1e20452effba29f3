//! One case end to end: a fresh 3-node ensemble, the worker processes, the
//! window (optionally with a rolling restart), the samples, the checks.

use crate::case::{CaseConfig, CaseResult};
use crate::check;
use crate::launch::{worker_command, Peers, Worker};
use crate::measure::{expiring_ids, heap_used_mb, sampler};
use crate::record::{Fault, Hold, Record};
use crate::WorkerSpec;
use lock_testkit::exclusion::monotonic_ns;
use lock_testkit::measure::{loadavg, rss_kib, LinePeer};
use lock_testkit::ZkEnsemble;
use std::collections::{BTreeMap, BTreeSet};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// Starts the 3-node ensemble a case runs on. `tickTime` 100 ms (the
/// testkit's), `syncLimit` 5 s and `initLimit` 20 s: ZooKeeper's production
/// defaults in time (2 s ticks x 5 and x 10), so that a follower that rejoins
/// under load (a snapshot of 10,000 sessions) is not cut off by a limit made
/// for idle tests; `maxClientCnxns=0` (the testkit's: every session comes from
/// 127.0.0.1).
pub fn start_ensemble(heap_mb: u32) -> ZkEnsemble {
    ZkEnsemble::builder()
        .max_heap_mb(heap_mb)
        .sync_limit(50)
        .init_limit(200)
        .startup_timeout(Duration::from_secs(120))
        .start_ensemble(3)
        .expect("starting a 3-node ensemble (lock-testkit)")
}

/// Runs one case on a fresh ensemble.
pub fn run_case(config: &CaseConfig) -> CaseResult {
    run_case_on(config, Arc::new(start_ensemble(config.heap_mb)))
}

/// Runs one case on `ensemble` (the yardstick's rounds share one). Its lock
/// paths must be free of an earlier case's nodes (each case's sessions are
/// closed at its end, so their ephemeral nodes are gone).
pub fn run_case_on(config: &CaseConfig, ensemble: Arc<ZkEnsemble>) -> CaseResult {
    std::fs::create_dir_all(&config.dir).expect("record directory");
    let connect = ensemble.connect_string();
    let expired_before: Vec<usize> = ensemble
        .members()
        .iter()
        .map(|m| expiring_ids(m).len())
        .collect();
    let peers = Peers::prepare(config);
    let started = Instant::now();
    let mut workers: Vec<Worker> = (0..config.workers)
        .map(|w| {
            let count = (config.sessions + config.workers - 1 - w) / config.workers;
            let out = config.dir.join(format!("worker-{w}.txt"));
            let spec = WorkerSpec {
                connect: connect.clone(),
                count,
                first: w,
                stride: config.workers,
                out: out.display().to_string(),
                ..config.workload.clone()
            };
            let mut command = worker_command(config, &peers);
            command.args(spec.to_args()).stderr(Stdio::inherit());
            let process = LinePeer::spawn(&mut command, format!("worker {w}"))
                .unwrap_or_else(|e| panic!("{e}"));
            Worker { process, out }
        })
        .collect();
    let connected: usize = workers
        .iter_mut()
        .map(|w| {
            w.expect("ready")
                .split_whitespace()
                .nth(1)
                .and_then(|n| n.parse::<usize>().ok())
                .unwrap_or(0)
        })
        .sum();
    let connect_time = started.elapsed();
    println!(
        "  {}: {connected} sessions connected in {:.1} s over {} workers; load {}",
        config.label(),
        connect_time.as_secs_f64(),
        config.workers,
        loadavg()
    );
    for w in &mut workers {
        w.send("go");
    }
    thread::sleep(config.warmup);

    // The window.
    let load_start = loadavg();
    let stop = Arc::new(AtomicBool::new(false));
    let sampling = {
        let (ensemble, stop) = (ensemble.clone(), stop.clone());
        thread::spawn(move || sampler(ensemble, stop))
    };
    let cpu0: Vec<Duration> = workers.iter().map(|w| w.process.cpu_time()).collect();
    let t0 = monotonic_ns();
    let window_start = Instant::now();
    let mut restarts = Vec::new();
    let mut restart_failures = Vec::new();
    if config.rolling_restart {
        let leader = ensemble
            .wait_ready(Duration::from_secs(60))
            .expect("a leader");
        let mut order: Vec<usize> = (0..3).filter(|&i| i != leader).collect();
        order.push(leader);
        for i in order {
            thread::sleep(config.restart_gap);
            let role = if i == leader { "leader" } else { "follower" };
            let begun = Instant::now();
            let back = ensemble.members()[i]
                .restart()
                .and_then(|()| ensemble.wait_ready(Duration::from_secs(120)).map(drop));
            if let Err(e) = back {
                // What gave out: recorded, and the rest of the run still checked.
                restart_failures.push(format!("restarting member {}: {e}", i + 1));
                continue;
            }
            let took = begun.elapsed();
            println!(
                "  restarted member {} ({role}): serving again after {:.1} s; load {}",
                i + 1,
                took.as_secs_f64(),
                loadavg()
            );
            restarts.push((i, role.to_owned(), took));
        }
        thread::sleep(config.restart_gap);
    }
    if let Some(rest) = config.window.checked_sub(window_start.elapsed()) {
        thread::sleep(rest);
    }
    let t1 = monotonic_ns();
    let window = window_start.elapsed();
    let cpu: Duration = (workers.iter().zip(&cpu0))
        .map(|(w, before)| w.process.cpu_time().saturating_sub(*before))
        .sum();
    let client_rss: u64 = workers.iter().map(|w| w.process.rss_kib()).sum();
    let load_end = loadavg();
    stop.store(true, Ordering::SeqCst);
    let mut members = sampling.join().expect("sampler");
    for (i, member) in ensemble.members().iter().enumerate() {
        if let Some(pid) = member.jvm_pid() {
            members[i].heap_used_mb = heap_used_mb(pid);
            members[i].rss_mb = Some(rss_kib(pid) as f64 / 1024.0);
        }
    }

    for w in &mut workers {
        w.send("stop");
    }
    for w in &mut workers {
        w.expect("done");
    }
    // Expiries are counted before the sessions close (a close is not an expiry,
    // but counting first keeps the two apart for certain).
    let mut server_expired_ids = Vec::new();
    for (i, member) in ensemble.members().iter().enumerate() {
        let ids = expiring_ids(member);
        let new = ids.get(expired_before[i]..).unwrap_or_default();
        members[i].expired = new.len();
        server_expired_ids.extend_from_slice(new);
        // The member's log beside the workers' records: what the servers did
        // (expiries, elections, throttling) is read from it after the run.
        let _ = std::fs::copy(
            member.log_path(),
            config.dir.join(format!("member-{}.log", i + 1)),
        );
    }
    for w in &mut workers {
        w.send("close");
    }
    let mut worker_failures = restart_failures;
    let mut holds: Vec<Hold> = Vec::new();
    let mut faults: Vec<Fault> = Vec::new();
    for w in &mut workers {
        let status = w.process.wait().expect("waiting for a worker");
        if !status.success() {
            worker_failures.push(format!("worker {} exited with {status}", w.process.pid()));
        }
        let text = std::fs::read_to_string(&w.out).expect("reading a worker's records");
        for line in text.lines() {
            match Record::parse(line) {
                Some(Record::Hold(h)) => holds.push(h),
                Some(Record::Fault(f)) => faults.push(f),
                None => panic!("{}: unreadable record {line:?}", w.out.display()),
            }
        }
    }

    // Every session id a fleet session ever had, and whose it was; the rest of
    // the servers' expiries are sessions no client got (a handshake the client
    // gave up on). Both sides count fleet sessions, not ZooKeeper sessions: a
    // fleet session whose replacement sessions expired too counts once.
    let mut owner = std::collections::HashMap::new();
    for f in &faults {
        if f.kind == crate::record::SESSION_OPENED {
            owner.insert(f.detail.clone(), f.session);
        } else if f.kind == "session-changed" {
            for id in f.detail.split(" -> ") {
                owner.insert(id.to_owned(), f.session);
            }
        }
    }
    faults.retain(|f| f.kind != crate::record::SESSION_OPENED);
    let expired_owners: BTreeSet<usize> = server_expired_ids
        .iter()
        .filter_map(|id| owner.get(id).copied())
        .collect();
    let server_expired_unowned = server_expired_ids
        .iter()
        .filter(|id| !owner.contains_key(*id))
        .count();

    let secs = window.as_secs_f64();
    let leading: u64 = members.iter().map(|m| m.received_leading).sum();
    let following: u64 = members.iter().map(|m| m.received_following).sum();
    let figures = check::figures(&holds, t0, t1);
    let expired_sessions: BTreeSet<usize> = faults
        .iter()
        .filter(|f| f.is_expiry())
        .map(|f| f.session)
        .collect();
    let mut by_kind = BTreeMap::new();
    for f in &faults {
        *by_kind.entry(f.kind.clone()).or_insert(0) += 1;
    }
    let first_fault = faults.iter().min_by_key(|f| f.at).cloned();
    CaseResult {
        config: config.clone(),
        connected,
        connect_time,
        window,
        load: (load_start, load_end),
        leader_rps: leading as f64 / secs,
        follower_rps: following as f64 / secs / 2.0,
        leader_pipeline_rps: members.iter().map(|m| m.pipeline_leading).sum::<u64>() as f64 / secs,
        proposals_per_s: members.iter().map(|m| m.proposals).sum::<u64>() as f64 / secs,
        per_session_rps: (leading + following) as f64 / secs / config.sessions as f64,
        grants_per_s: figures.grants as f64 / secs,
        figures,
        members,
        client_rss_kib_per_session: client_rss as f64 / config.sessions as f64,
        client_cpu_us_per_session_s: cpu.as_secs_f64() * 1e6 / config.sessions as f64 / secs,
        client_expired: expired_sessions.len(),
        server_expired_fleet: expired_owners.len(),
        server_expired_unowned,
        overlaps: check::overlaps(&holds),
        faults: by_kind,
        first_fault,
        restarts,
        worker_failures,
    }
}
