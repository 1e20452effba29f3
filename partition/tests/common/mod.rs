//! The partition tests' setup: a 3-server ensemble and eight contenders, each in a
//! network namespace of its own, and the end of a run (stop, check, report).
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use lock_partition::check::{check, Fault, Report};
use lock_testkit::{NetEnsemble, NetLab};

pub use lock_partition::contenders::STEP;
use lock_partition::contenders::{start_ensemble, Contender, Histories, Kind, Programs, Spec};

/// Short enough that a fault takes seconds.
pub const SESSION_TIMEOUT: Duration = Duration::from_secs(4);
/// Locks shared with Curator (zklock's Curator scheme) and with kazoo (its kazoo scheme).
pub const CURATOR_LOCK: &str = "/partition/with-curator";
pub const KAZOO_LOCK: &str = "/partition/with-kazoo";

/// Server i (0-based) gets zklock over both bindings (on different locks), plus
/// Curator on server 0 and kazoo on server 1: every lock has contenders on every
/// server, and every server has a contender of each binding.
pub const LAYOUT: [(usize, Kind, &str); 8] = [
    (0, Kind::Async, CURATOR_LOCK),
    (0, Kind::Blocking, KAZOO_LOCK),
    (0, Kind::Curator, CURATOR_LOCK),
    (1, Kind::Async, KAZOO_LOCK),
    (1, Kind::Blocking, CURATOR_LOCK),
    (1, Kind::Kazoo, KAZOO_LOCK),
    (2, Kind::Async, CURATOR_LOCK),
    (2, Kind::Blocking, KAZOO_LOCK),
];

/// The lab, the ensemble (tickTime 500 ms, syncLimit 4: a follower gives up on
/// a silent leader after 2 s) and the contenders, `(server, contender)` in
/// [`LAYOUT`] order.
pub struct Cluster {
    pub contenders: Vec<(usize, Contender)>,
    pub histories: Arc<Histories>,
    pub zk: NetEnsemble,
    pub lab: NetLab,
}

impl Cluster {
    /// Starts everything and waits until every contender is connected. `busy`:
    /// what zklock holders do while holding (`--busy reads|writes`, or idle).
    pub fn start(busy: Option<&'static str>) -> Cluster {
        let (mut lab, zk) = start_ensemble(Duration::from_millis(500), 3);
        let histories = Arc::new(Histories::default());
        let programs = Programs {
            contender: env!("CARGO_BIN_EXE_contender").into(),
            build_dir: env!("CARGO_TARGET_TMPDIR").into(),
        };
        let mut contenders = Vec::new();
        for (server, kind, lock) in LAYOUT {
            let spec = Spec {
                kind,
                name: format!("{}-zk{}", kind.word(), server + 1),
                lock: lock.to_string(),
                scheme: if lock == CURATOR_LOCK {
                    "curator"
                } else {
                    "kazoo"
                },
                session_timeout: SESSION_TIMEOUT,
                busy,
            };
            let connect = zk.ensemble().member(server).unwrap().connect_string();
            let contender = Contender::start(&programs, &mut lab, &connect, &spec, &histories);
            contenders.push((server, contender));
        }
        for (_, contender) in &mut contenders {
            contender.wait_ready(&histories, STEP);
        }
        Cluster {
            contenders,
            histories,
            zk,
            lab,
        }
    }

    /// Stops the contenders, writes the merged history to `<target tmp>/<file>`,
    /// checks it against `faults`, prints the margins, and fails on any violation.
    pub fn finish(mut self, faults: &[Fault], file: &str) -> Report {
        for (_, contender) in &mut self.contenders {
            contender.stop(Duration::from_secs(15));
        }
        let events = self.histories.snapshot();
        let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(file);
        let text: String = events.iter().map(|e| format!("{e}\n")).collect();
        std::fs::write(&path, text).unwrap();
        let report = check(&events, faults);
        let summary = report.summary();
        eprintln!(
            "{} faults, {} grants; history in {}\n{summary}",
            faults.len(),
            report.grants,
            path.display()
        );
        let violations: Vec<String> = report.violations.iter().map(|v| format!("  {v}")).collect();
        assert!(
            violations.is_empty(),
            "{} violations (history in {}):\n{}\n{summary}",
            violations.len(),
            path.display(),
            violations.join("\n")
        );
        report
    }
}
