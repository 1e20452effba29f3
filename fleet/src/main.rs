//! `zklock-fleet`: the fleet harness's command (see the crate docs).
//!
//! ```text
//! zklock-fleet suite                # what scripts/bench.sh fleet runs
//! zklock-fleet run 1000 [restart]   # one fleet case (idle: sessions holding nothing;
//!                                   # FLEET_LIBRARY=curator|kazoo: a peer library)
//! zklock-fleet yard                 # only the yardstick
//! zklock-fleet worker key=value...  # a worker process (the coordinator starts these)
//! ```
//!
//! Suite knobs: `FLEET_SIZES` (1000,10000), `FLEET_RESTART` (1: each size also
//! with a rolling restart), `FLEET_IDLE` (1: each size also idle, the
//! baseline, for `FLEET_IDLE_SECONDS`, 30), `FLEET_PEERS` (curator,kazoo: the
//! same shape with Curator's `InterProcessMutex` and kazoo's `Lock`, at
//! `FLEET_PEER_SIZE`, 1000; `FLEET_KAZOO_PYTHON`, default
//! `<target>/kazoo-venv/bin/python`), `FLEET_YARD_SESSIONS` (64), `FLEET_YARD_SECONDS`
//! (15), `FLEET_YARD_ROUNDS` (3), `FLEET_WRITE=1` (write BENCHMARKS.md's fleet
//! section and fleet/charts/fleet.svg); the case knobs are listed on
//! `CaseConfig::from_env`.

#![forbid(unsafe_code)]

use lock_fleet::coord::start_ensemble;
use lock_fleet::{report, run_case, run_case_on, CaseConfig, CaseResult, Mode, WorkerSpec};
use lock_testkit::measure::{
    env_list, env_usize, env_words, loadavg, median, splice, thousands, utc,
};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// A case of `sessions` with the environment's knobs, this binary its worker and
/// its records in a directory `name` of its own.
fn case_config(sessions: usize, name: &str) -> CaseConfig {
    let exe = std::env::current_exe().expect("this binary's path");
    let dir = std::env::temp_dir().join(format!("zklock-fleet-{}", std::process::id()));
    CaseConfig::from_env(sessions, exe, dir.join(name))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("worker") => lock_fleet::worker::run(WorkerSpec::from_args(&args[1..])),
        Some("run") => {
            let sessions: usize = args
                .get(1)
                .and_then(|s| s.parse().ok())
                .expect("usage: zklock-fleet run N [restart|idle]");
            let mut config = case_config(sessions, "run");
            config.rolling_restart = args.get(2).is_some_and(|a| a == "restart");
            if args.get(2).is_some_and(|a| a == "idle") {
                config.workload.mode = Mode::Idle;
            }
            if let Ok(library) = std::env::var("FLEET_LIBRARY") {
                config.workload.library = library;
            }
            let result = run_case(&config);
            println!("{}", report::case_text(&result));
            if !result.problems().is_empty() {
                std::process::exit(1);
            }
        }
        Some("yard") => {
            let yard = yardstick();
            println!("{}", yard_table(&yard));
        }
        Some("suite") => suite(),
        _ => {
            eprintln!("usage: zklock-fleet suite | run N [restart] | yard");
            std::process::exit(2);
        }
    }
}

/// Runs a case of the suite; a case that panics is reported and the suite
/// goes on (its workers see their stdin close and exit).
fn attempt(config: &CaseConfig, failed: &mut bool, notes: &mut Vec<String>) -> Option<CaseResult> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_case(config))) {
        Ok(result) => {
            println!("{}", report::case_text(&result));
            *failed |= !result.problems().is_empty();
            Some(result)
        }
        Err(_) => {
            *failed = true;
            notes.push(format!(
                "{}: the run failed (see its panic above)",
                config.label()
            ));
            None
        }
    }
}

/// Runs every fleet case, then the yardstick; prints the section and, with
/// `FLEET_WRITE=1`, writes it.
fn suite() {
    let sizes = env_list("FLEET_SIZES", "1000,10000");
    let restart = std::env::var("FLEET_RESTART").map_or(true, |v| v != "0");
    let started = std::time::SystemTime::now();
    println!(
        "fleet: sizes {sizes:?}, rolling restart {restart}; load {}",
        loadavg()
    );
    let mut results = Vec::new();
    let mut failed = false;
    let mut notes = Vec::new();
    let idle = std::env::var("FLEET_IDLE").map_or(true, |v| v != "0");
    for &n in &sizes {
        if idle {
            // The baseline: the same sessions holding nothing.
            let mut config = case_config(n, &format!("idle-{n}"));
            config.workload.mode = Mode::Idle;
            config.window = Duration::from_secs(env_usize("FLEET_IDLE_SECONDS", 30) as u64);
            results.extend(attempt(&config, &mut failed, &mut notes));
        }
        for with_restart in [false, true] {
            if with_restart && !restart {
                continue;
            }
            let mut config = case_config(n, &format!("fleet-{n}-{with_restart}"));
            config.rolling_restart = with_restart;
            results.extend(attempt(&config, &mut failed, &mut notes));
        }
    }
    // The peers at the same shape, without a restart.
    for library in env_words("FLEET_PEERS", "curator,kazoo") {
        let n = env_usize("FLEET_PEER_SIZE", 1000);
        let mut config = case_config(n, &format!("{library}-{n}"));
        config.workload.library = library;
        results.extend(attempt(&config, &mut failed, &mut notes));
    }
    let yard = yardstick();
    let text = section(&results, &notes, &yard, started);
    println!("\n{text}");
    if std::env::var("FLEET_WRITE").is_ok_and(|v| v == "1") {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let svg = root.join("charts/fleet.svg");
        std::fs::create_dir_all(svg.parent().unwrap()).expect("charts directory");
        lock_fleet::chart::write(&results, &svg).expect("writing the chart");
        splice(&root.join("../BENCHMARKS.md"), "fleet", &text);
    }
    if failed {
        eprintln!("fleet: a case failed its checks (see the verdicts above)");
        std::process::exit(1);
    }
}

/// The yardstick's rounds: per mode, zklock and the bare client alternate.
struct Yard {
    /// (mode, library) -> per round: cycles/s, packets received per cycle
    /// (whole ensemble), client CPU µs per cycle.
    rounds: Vec<(Mode, &'static str, Vec<[f64; 3]>)>,
    sessions: usize,
    seconds: u64,
    load: Vec<String>,
    faults: Vec<String>,
}

/// The ensemble's own limit: the same harness, every session in a closed loop
/// (no think time, no hold), zklock against bare zookeeper-client sessions
/// doing only a lock cycle's requests, uncontended (a lock per session) and
/// handed off (one lock).
fn yardstick() -> Yard {
    let sessions = env_usize("FLEET_YARD_SESSIONS", 64);
    let seconds = env_usize("FLEET_YARD_SECONDS", 15) as u64;
    let rounds = env_usize("FLEET_YARD_ROUNDS", 3);
    let ensemble = Arc::new(start_ensemble(1024));
    let mut yard = Yard {
        rounds: Vec::new(),
        sessions,
        seconds,
        load: Vec::new(),
        faults: Vec::new(),
    };
    for mode in [Mode::Uncontended, Mode::Handoff] {
        for library in ["zklock", "bare"] {
            yard.rounds.push((mode, library, Vec::new()));
        }
    }
    for round in 0..rounds {
        for entry in &mut yard.rounds {
            let (mode, library) = (entry.0, entry.1);
            let mut config = case_config(sessions, &format!("yard-{round}-{library}-{mode:?}"));
            config.workload.library = library.to_owned();
            config.workload.mode = mode;
            config.workers = 2;
            config.window = Duration::from_secs(seconds);
            config.warmup = Duration::from_secs(2);
            let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                run_case_on(&config, ensemble.clone())
            }));
            let Ok(result) = run else {
                yard.faults.push(format!(
                    "{library} {mode:?} round {round}: the run failed (see its panic above)"
                ));
                continue;
            };
            println!(
                "  yardstick round {round}: {library} {mode:?}: {:.0} cycles/s, load {}",
                result.grants_per_s, result.load.1
            );
            for p in result.problems() {
                yard.faults
                    .push(format!("{library} {mode:?} round {round}: {p}"));
            }
            let cycles = result.grants_per_s.max(1e-9);
            let packets = result.per_session_rps * sessions as f64 / cycles;
            let cpu = result.client_cpu_us_per_session_s * sessions as f64 / cycles;
            entry.2.push([result.grants_per_s, packets, cpu]);
            yard.load.push(
                result
                    .load
                    .1
                    .split_whitespace()
                    .next()
                    .unwrap_or("?")
                    .to_owned(),
            );
        }
    }
    yard
}

fn yard_table(yard: &Yard) -> String {
    let mut t = format!(
        "| {} sessions, closed loop | zklock cycles/s | bare client cycles/s | zklock / bare | packets per cycle, zklock / bare | client CPU µs per cycle, zklock / bare |\n|---|---|---|---|---|---|\n",
        yard.sessions
    );
    for mode in [Mode::Uncontended, Mode::Handoff] {
        let get = |lib: &str, i: usize| {
            yard.rounds
                .iter()
                .find(|e| e.0 == mode && e.1 == lib)
                .map_or(0.0, |e| {
                    median(&e.2.iter().map(|r| r[i]).collect::<Vec<_>>())
                })
        };
        let (z, b) = (get("zklock", 0), get("bare", 0));
        let name = match mode {
            Mode::Uncontended => "uncontended, a lock per session",
            _ => "handed off, one lock",
        };
        let _ = writeln!(
            t,
            "| {name} | {z:.0} | {b:.0} | {:.2} | {:.2} / {:.2} | {:.0} / {:.0} |",
            if b > 0.0 { z / b } else { 0.0 },
            get("zklock", 1),
            get("bare", 1),
            get("zklock", 2),
            get("bare", 2),
        );
    }
    let _ = writeln!(
        t,
        "\nMedians of {} alternating rounds of {} s; load (1 min) after each case: {}.",
        yard.rounds.first().map_or(0, |e| e.2.len()),
        yard.seconds,
        yard.load.join(", ")
    );
    if !yard.faults.is_empty() {
        let _ = writeln!(t, "\nChecks that failed: {}", yard.faults.join("; "));
    }
    t
}

fn section(
    results: &[CaseResult],
    notes: &[String],
    yard: &Yard,
    started: std::time::SystemTime,
) -> String {
    let mut t = String::new();
    let date = &utc(started)[..10];
    let _ = writeln!(t, "Measured with `scripts/bench.sh fleet` on {date} (UTC). ZooKeeper 3.8.0, a 3-node ensemble on this machine (each server its own JVM), 2 cores, shared: the load average is given with every row.\n");
    let _ = writeln!(t, "{}", report::table(results));
    for r in results {
        let c = &r.config;
        let _ = writeln!(
            t,
            "- {}: {} workers; {} hot sessions on {} hot locks, {} cold locks; window {:.0} s; connected in {:.0} s; first fault: {}",
            c.label(),
            c.workers,
            c.workload.hot_sessions,
            c.workload.hot_locks,
            thousands(c.workload.cold_locks),
            r.window.as_secs_f64(),
            r.connect_time.as_secs_f64(),
            r.first_fault.as_ref().map_or("none".to_owned(), |f| format!("{} ({})", f.kind, f.detail))
        );
        for (i, role, took) in &r.restarts {
            let _ = writeln!(
                t,
                "  - restarted member {} ({role}): serving again after {:.1} s",
                i + 1,
                took.as_secs_f64()
            );
        }
    }
    for note in notes {
        let _ = writeln!(t, "- {note}");
    }
    let _ = writeln!(
        t,
        "\n![Fleet: latency and server load against sessions](fleet/charts/fleet.svg)\n"
    );
    let _ = writeln!(
        t,
        "The yardstick: the same harness and ensemble, every session in a closed loop.\n"
    );
    t.push_str(&yard_table(yard));
    t
}
