//! The `simulation` fuzz target's input and checks (listed in `fuzz/README.md`): an
//! arbitrary schedule of user calls and faults, each one ZooKeeper can produce, for
//! several clients of one `lock_sim::Sim`, with [`lock_sim::check`] after every
//! step and [`Sim::wind_down`] at the end.

use lock_core::names::parse_name;
use lock_core::{CreateMode, LockId};
use lock_sim::{ClientConfig, ClientId, FaultConfig, Profile, Sim, SimConfig};
use std::time::Duration;

/// Lock directories (`/a` is an ancestor of `/a/b`).
pub const DIRS: [&str; 3] = ["/a", "/a/b", "/locks/job"];

mod input;
pub use input::*;

mod steps;

/// Children that are no participants (names::parse_participant): a plain node,
/// zklock's own marker, a name that only looks sequential. (A sequential name of no
/// known scheme is an exclusive participant: an admin-made one would block forever.)
const FOREIGN: [&str; 3] = ["readme", "zkl-section", "lock-000000001x"];

struct Driver {
    sim: Sim,
    /// Every acquisition, observer and revocation started.
    tasks: Vec<(ClientId, LockId)>,
    closed: Vec<bool>,
    timeouts: Vec<Duration>,
    chaos: bool,
}

impl Driver {
    fn client(&self, c: u8) -> ClientId {
        ClientId(usize::from(c) % self.timeouts.len())
    }

    fn task(&self, t: u8) -> Option<(ClientId, LockId)> {
        crate::pick(&self.tasks, t).copied()
    }

    fn participants(&self) -> Vec<String> {
        let mut out = Vec::new();
        for d in DIRS {
            for c in self.sim.children(d) {
                if parse_name(&c).is_some() {
                    out.push(format!("{d}/{c}"));
                }
            }
        }
        out
    }

    fn pick_participant(&self, i: u8) -> Option<String> {
        crate::pick(&self.participants(), i).cloned()
    }

    fn ensure_dir(&mut self, dir: &str) {
        for d in crate::dir_and_ancestors(dir) {
            if self.sim.get(d).is_none() {
                let _ = self.sim.admin_create(d, b"", CreateMode::Container);
            }
        }
    }

    fn fail(&self, what: &str) -> ! {
        let log = self.sim.trace_log();
        let trace: Vec<String> = log[log.len().saturating_sub(80)..]
            .iter()
            .map(|t| t.to_string())
            .collect();
        panic!(
            "simulation (seed {}): {what}\nlast trace lines:\n{}",
            self.sim.seed(),
            trace.join("\n")
        );
    }

    fn check(&self) {
        if let Some(v) = self.sim.violation() {
            self.fail(&format!("invariant violated: {v}"));
        }
    }

    /// Faults stop, then [`Sim::wind_down`]: every task ends, the cores go idle,
    /// nothing is left behind.
    fn finish(&mut self) {
        self.sim.stop_faults();
        if let Err(v) = self.sim.wind_down(&self.tasks) {
            self.fail(&format!("with faults stopped and holders releasing: {v}"));
        }
    }
}

/// Runs one case; panics on a violation.
pub fn check_case(case: &SimCase) {
    let mut cfg = SimConfig::new(case.seed)
        .run_limit(Duration::from_secs(600))
        .reap_interval(case.reaper.then_some(Duration::from_secs(1)))
        .trace(std::env::var_os("ZKLOCK_FUZZ_TRACE").is_some());
    if let Some(ms) = case.chaos_ms {
        cfg = cfg.faults(FaultConfig::chaos(Duration::from_millis(
            50 + u64::from(ms) % 5000,
        )));
    }
    let mut sim = Sim::new(cfg);
    let picks: Vec<ClientPick> = if case.clients.is_empty() {
        vec![ClientPick {
            loses_watches: false,
            timeout_s: 3,
            grace_ms: None,
        }]
    } else {
        case.clients.iter().take(4).copied().collect()
    };
    let mut timeouts = Vec::new();
    for p in &picks {
        let profile = if p.loses_watches {
            Profile::LosesWatchesNewSession
        } else {
            Profile::KeepsWatches
        };
        let timeout = Duration::from_secs(1 + u64::from(p.timeout_s % 8));
        timeouts.push(timeout);
        let mut cc = ClientConfig::new(profile, timeout);
        if let Some(g) = p.grace_ms {
            cc = cc.suspended_grace(Duration::from_millis(u64::from(g)));
        }
        sim.add_client_with(cc);
    }
    let mut d = Driver {
        sim,
        tasks: Vec::new(),
        closed: vec![false; picks.len()],
        timeouts,
        chaos: case.chaos_ms.is_some(),
    };
    for step in case.steps.iter().take(400) {
        d.run_step(step);
        d.check();
    }
    d.finish();
}
