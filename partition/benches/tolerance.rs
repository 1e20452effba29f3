//! How long a held lock survives what operators do, side by side: zklock (both
//! bindings), Apache Curator 5.4 and kazoo 2.8 holding a lock each while the
//! server they talk to is restarted (standalone, a follower, the leader) or their
//! network is cut, for outages shorter and longer than the session timeout.
//!
//! ```text
//! cargo bench -p lock-partition --bench tolerance
//! scripts/bench.sh tolerance
//! TOLERANCE_OUTAGES=0.5,0.8,1.5 TOLERANCE_TOPOLOGIES=standalone,leader cargo bench -p lock-partition --bench tolerance
//! ```
//!
//! Each scenario starts a fresh ensemble (3 servers; 1 for `standalone`; tickTime
//! 500 ms unless `TOLERANCE_TICK_MS` says otherwise, syncLimit 4) in network namespaces, and per library two contenders on
//! a lock of their own: the *holder*, talking to the target server only (so the
//! outage is the whole silence it sees: no fail-over), and a *rival* talking to
//! another server (the same one for `standalone`), which takes the lock whenever
//! it can. Half a session timeout after every holder holds (a hold that lasts
//! until it is lost), the fault starts:
//!
//! * `standalone`: the standalone server is stopped, and started again after the
//!   outage;
//! * `follower`, `leader`: that member of the ensemble is stopped and started again
//!   (stopping the leader makes the other two elect a new one meanwhile);
//! * `client-cut`: the holders' network namespaces are cut off from everything,
//!   then healed.
//!
//! Per holder it prints when it stopped trusting the lock, was resumed or told
//! `Lost`, when the rival was granted, and whether the rival was granted while the
//! holder still trusted it (`OVERLAP`): the table and its reading are in
//! BENCHMARKS.md ("Holding a lock through restarts and cuts").
//!
//! Knobs: `TOLERANCE_SESSION_MS` (4000), `TOLERANCE_TICK_MS` (500), `TOLERANCE_OUTAGES` (fractions of T:
//! 0.5,0.8,1.5), `TOLERANCE_TOPOLOGIES` (standalone,follower,leader,client-cut),
//! `TOLERANCE_LIBRARIES` (async,blocking,curator,kazoo). Needs root, iproute2,
//! nftables, ZooKeeper, a JDK with Curator and python3-kazoo (scripts/test.sh
//! installs them).

#![forbid(unsafe_code)]

use std::fmt::Write as _;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use lock_partition::contenders::{
    start_ensemble, Contender, Histories, Kind, Programs, Spec, STEP,
};
use lock_partition::history::{EventKind, Nanos};
use lock_testkit::exclusion::monotonic_ns;
use lock_testkit::measure::{env_usize, env_words, loadavg};
use lock_testkit::Mode;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Topology {
    Standalone,
    Follower,
    Leader,
    ClientCut,
}

impl Topology {
    const ALL: [Topology; 4] = [
        Topology::Standalone,
        Topology::Follower,
        Topology::Leader,
        Topology::ClientCut,
    ];

    fn name(self) -> &'static str {
        match self {
            Topology::Standalone => "standalone",
            Topology::Follower => "follower",
            Topology::Leader => "leader",
            Topology::ClientCut => "client-cut",
        }
    }
}

/// What one holder went through in one scenario (seconds from the fault's start).
struct Outcome {
    topology: Topology,
    kind: Kind,
    /// The measured outage.
    outage: f64,
    suspended: Option<f64>,
    resumed: Option<f64>,
    lost: Option<f64>,
    rival_granted: Option<f64>,
}

impl Outcome {
    /// The rival was granted while the holder still trusted the lock: before its
    /// `Lost`, or at all if it was resumed.
    fn overlap(&self) -> bool {
        match (self.rival_granted, self.lost) {
            (Some(rival), Some(lost)) => rival < lost,
            (Some(_), None) => true,
            (None, _) => false,
        }
    }
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is taken.
    let millis = |key, default| Duration::from_millis(env_usize(key, default) as u64);
    let (session, tick) = (
        millis("TOLERANCE_SESSION_MS", 4000),
        millis("TOLERANCE_TICK_MS", 500),
    );
    let outages: Vec<f64> = env_words("TOLERANCE_OUTAGES", "0.5,0.8,1.5")
        .iter()
        .map(|v| v.parse().expect("TOLERANCE_OUTAGES: fractions of T"))
        .collect();
    let topologies = named("TOLERANCE_TOPOLOGIES", &Topology::ALL, Topology::name);
    let kinds = named(
        "TOLERANCE_LIBRARIES",
        &[Kind::Async, Kind::Blocking, Kind::Curator, Kind::Kazoo],
        Kind::word,
    );
    println!(
        "tolerance: T = {session:?}, tickTime {tick:?}, outages {outages:?} x T, load {}",
        loadavg()
    );
    let mut outcomes = Vec::new();
    for &topology in &topologies {
        for &fraction in &outages {
            let outage = session.mul_f64(fraction);
            println!("scenario: {} for {outage:?}", topology.name());
            outcomes.extend(scenario(topology, outage, session, tick, &kinds));
        }
    }
    println!();
    println!("{}", table(&outcomes, session));
    println!("load at end: {}", loadavg());
    let overlaps: Vec<String> = outcomes
        .iter()
        .filter(|o| o.overlap() && matches!(o.kind, Kind::Async | Kind::Blocking))
        .map(|o| {
            format!(
                "{} {} ({:.2} s)",
                o.topology.name(),
                o.kind.word(),
                o.outage
            )
        })
        .collect();
    assert!(
        overlaps.is_empty(),
        "zklock holders overlapped with a rival: {overlaps:?}"
    );
}

/// The ones of `all` that `key` names (comma-separated; all of them by default).
fn named<T: Copy>(key: &str, all: &[T], name: fn(T) -> &'static str) -> Vec<T> {
    let every: Vec<&str> = all.iter().map(|&t| name(t)).collect();
    env_words(key, &every.join(","))
        .iter()
        .map(|word| {
            *all.iter()
                .find(|&&t| name(t) == word)
                .unwrap_or_else(|| panic!("{key}: unknown {word:?}"))
        })
        .collect()
}

/// One fault of `outage` on `topology`, every library's holder and rival.
fn scenario(
    topology: Topology,
    outage: Duration,
    session: Duration,
    tick: Duration,
    kinds: &[Kind],
) -> Vec<Outcome> {
    let size = if topology == Topology::Standalone {
        1
    } else {
        3
    };
    let (mut lab, zk) = start_ensemble(tick, size);
    let ensemble = zk.ensemble();
    // The server's own restart time counts in the outage: measure it once (a stop
    // and a start of one member, before anyone connects) and start the server that
    // much early in the fault.
    let startup = match topology {
        Topology::ClientCut => Duration::ZERO,
        _ => {
            let begun = Instant::now();
            ensemble.members()[size - 1].stop();
            ensemble.members()[size - 1]
                .restart()
                .unwrap_or_else(|e| panic!("restarting a server: {e}"));
            begun.elapsed()
        }
    };
    let (target, rival_server) = if topology == Topology::Standalone {
        // The lab starts a one-server ensemble as a standalone server.
        let mode = ensemble.member(0).unwrap().srvr();
        assert!(matches!(mode, Ok(Mode::Standalone)), "{mode:?}");
        (0, 0)
    } else {
        let leader = ensemble
            .wait_for_leader(STEP)
            .unwrap_or_else(|e| panic!("{e}"));
        let follower = (leader + 1) % 3;
        let target = if topology == Topology::Leader {
            leader
        } else {
            follower
        };
        // The rival talks to a server that stays up: the third one.
        (target, 3 - leader - follower)
    };
    let histories = Arc::new(Histories::default());
    let programs = Programs {
        contender: env!("CARGO_BIN_EXE_contender").into(),
        build_dir: env!("CARGO_TARGET_TMPDIR").into(),
    };
    let mut holders = Vec::new();
    let mut rivals = Vec::new();
    for &kind in kinds {
        let lock = format!("/tolerance/{}", kind.word());
        let scheme = if kind == Kind::Kazoo {
            "kazoo"
        } else {
            "curator"
        };
        for (role, server, list) in [
            ("holder", target, &mut holders),
            ("rival", rival_server, &mut rivals),
        ] {
            let spec = Spec {
                kind,
                name: format!("{}-{role}", kind.word()),
                lock: lock.clone(),
                scheme,
                session_timeout: session,
                busy: None,
            };
            let connect = ensemble.member(server).unwrap().connect_string();
            list.push(Contender::start(
                &programs, &mut lab, &connect, &spec, &histories,
            ));
        }
    }
    for contender in holders.iter_mut().chain(rivals.iter_mut()) {
        contender.wait_ready(&histories, STEP);
    }
    // Every holder into a hold that lasts until it is lost.
    let asked = monotonic_ns();
    for holder in &mut holders {
        holder.stick();
    }
    for holder in &mut holders {
        let name = holder.name.clone();
        let granted = histories.wait_for(STEP, |e| {
            e.client == name && e.at > asked && matches!(e.kind, EventKind::Granted(_))
        });
        assert!(granted.is_some(), "{name} was never granted its lock");
    }
    // A rival granted before the fault must have let go again; and zklock
    // learns its server's role (`srvr`, `conf`) after each connect, which counts
    // once a later request is answered (well under a second): until then the
    // unknown-server tolerance applies. A lock that operators restart servers
    // under has been held longer than that, so the fault comes half a session
    // timeout after the grants.
    thread::sleep(session / 2);

    let start = monotonic_ns();
    let fault_started = Instant::now();
    let holder_nodes: Vec<_> = holders.iter().map(|h| h.node).collect();
    let measured_outage = match topology {
        Topology::ClientCut => {
            lab.isolate(&holder_nodes).unwrap();
            thread::sleep(outage);
            lab.heal().unwrap();
            fault_started.elapsed()
        }
        _ => {
            ensemble.members()[target].stop();
            thread::sleep(outage.saturating_sub(startup));
            ensemble.members()[target]
                .restart()
                .unwrap_or_else(|e| panic!("restarting the {}: {e}", topology.name()));
            fault_started.elapsed()
        }
    };
    // Long enough for every session to have expired (or been resumed) and the
    // rival to have been granted: two session timeouts and slack after the fault.
    thread::sleep(session * 2 + Duration::from_secs(3));
    let mut outcomes = Vec::new();
    for (holder, rival) in holders.iter().zip(&rivals) {
        let first = |who: &str, wanted: fn(&EventKind) -> bool| {
            histories.wait_for(Duration::ZERO, |e| {
                e.client == who && e.at > start && wanted(&e.kind)
            })
        };
        let since = |at: Option<Nanos>| at.map(|at| (at as f64 - start as f64) / 1e9);
        outcomes.push(Outcome {
            topology,
            kind: holder.kind,
            outage: measured_outage.as_secs_f64(),
            suspended: since(first(&holder.name, |k| matches!(k, EventKind::Suspended))),
            resumed: since(first(&holder.name, |k| matches!(k, EventKind::Resumed))),
            lost: since(first(&holder.name, |k| matches!(k, EventKind::Lost(_)))),
            rival_granted: since(first(&rival.name, |k| matches!(k, EventKind::Granted(_)))),
        });
    }
    for contender in holders.iter_mut().chain(rivals.iter_mut()) {
        contender.stop(Duration::from_secs(10));
    }
    outcomes
}

/// The table, one row per scenario and library.
fn table(outcomes: &[Outcome], session: Duration) -> String {
    let t = session.as_secs_f64();
    let cell = |at: Option<f64>| match at {
        Some(s) => format!("{s:.2} s ({:.2} T)", s / t),
        None => "-".to_string(),
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| topology | outage | library | stops trusting (suspended) | resumed | lost | rival granted | overlap |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|");
    for o in outcomes {
        let library = match o.kind {
            Kind::Async => "zklock (async)",
            Kind::Blocking => "zklock (blocking)",
            Kind::Curator => "Curator 5.4",
            Kind::Kazoo => "kazoo 2.8",
        };
        let _ = writeln!(
            out,
            "| {} | {:.2} s ({:.2} T) | {library} | {} | {} | {} | {} | {} |",
            o.topology.name(),
            o.outage,
            o.outage / t,
            cell(o.suspended),
            cell(o.resumed),
            cell(o.lost),
            cell(o.rival_granted),
            if o.overlap() { "OVERLAP" } else { "no" }
        );
    }
    out
}
