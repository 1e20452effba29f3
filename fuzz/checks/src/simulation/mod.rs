//! The `simulation` fuzz target's input and checks: an arbitrary schedule of user
//! calls and faults for several clients of one `lock_sim::Sim`.
//!
//! Shared by the cargo-fuzz target (`fuzz/fuzz_targets/simulation.rs`) and
//! the corpus replay test of the workspace (`fuzz/checks/tests/corpus_replay.rs`).
//!
//! The simulator's own invariant checker runs after every
//! step: at most one trusted exclusive holder, no writer beside another holder, at
//! most n semaphore holders, strictly increasing fencing tokens, grants that match
//! the tree, legal event order with exactly one terminal event. Every fault here is
//! one ZooKeeper can produce (resets with requests applied or not, partitions short
//! and long, expiry, lost notifications in flight, administrators deleting nodes or
//! asking holders to let go, the container reaper, counters near the wrap), plus
//! seeded random chaos. At the end the faults stop and holders release until every
//! acquisition has ended ("with faults stopped every acquisition ends"), then the
//! cores must go idle with no orphan node left.
//!
//! The parts, each a child module in a file of its own: the input
//! (`input.rs`) and the steps (`steps.rs`); the driver,
//! the end of a case and the run stay here.

use lock_core::names::parse_name;
use lock_core::{CreateMode, LockId, LockState};
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

struct Task {
    client: ClientId,
    id: LockId,
    lock: bool,
    dir: String,
}

struct Driver {
    sim: Sim,
    n: usize,
    tasks: Vec<Task>,
    closed: Vec<bool>,
    timeouts: Vec<Duration>,
    chaos: bool,
}

impl Driver {
    fn client(&self, c: u8) -> ClientId {
        ClientId(usize::from(c) % self.n)
    }

    fn task(&self, t: u8) -> Option<(ClientId, LockId)> {
        if self.tasks.is_empty() {
            return None;
        }
        let t = &self.tasks[usize::from(t) % self.tasks.len()];
        Some((t.client, t.id))
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
        let p = self.participants();
        (!p.is_empty()).then(|| p[usize::from(i) % p.len()].clone())
    }

    fn ensure_dir(&mut self, dir: &str) {
        let mut ds = Vec::new();
        for (i, c) in dir.char_indices().skip(1) {
            if c == '/' {
                ds.push(&dir[..i]);
            }
        }
        ds.push(dir);
        for d in ds {
            if self.sim.get(d).is_none() {
                let _ = self.sim.admin_create(d, b"", CreateMode::Container);
            }
        }
    }

    fn fail(&self, what: &str) -> ! {
        let trace: Vec<String> = self
            .sim
            .trace_log()
            .iter()
            .rev()
            .take(80)
            .map(|t| t.to_string())
            .collect();
        let trace: Vec<String> = trace.into_iter().rev().collect();
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

    /// Faults stop; holders release (and observers are cancelled) until every
    /// acquisition has ended; then every core must go idle with nothing left behind.
    fn finish(&mut self) {
        self.sim.stop_faults();
        let mut rounds = 0;
        loop {
            if let Err(v) = self.sim.run_for(Duration::from_millis(200)) {
                self.fail(&format!("invariant violated while finishing: {v}"));
            }
            for t in &self.tasks {
                match self.sim.state(t.client, t.id) {
                    Some(LockState::Held | LockState::Suspended) => {
                        let _ = self.sim.release(t.client, t.id);
                    }
                    _ if !t.lock && self.sim.outcome(t.client, t.id).is_none() => {
                        let _ = self.sim.cancel(t.client, t.id);
                    }
                    _ => {}
                }
            }
            let open: Vec<(ClientId, LockId, String)> = self
                .tasks
                .iter()
                .filter(|t| self.sim.outcome(t.client, t.id).is_none())
                .map(|t| (t.client, t.id, t.dir.clone()))
                .collect();
            if open.is_empty() {
                break;
            }
            rounds += 1;
            // Each round lets virtual time pass: deadlines, graces and leases run out,
            // and every waiter gets its turn as the holders release.
            if rounds > 400 {
                let states: Vec<String> = open
                    .iter()
                    .map(|(c, l, d)| {
                        format!(
                            "{c}/{l} on {d}: {:?}, children {:?}",
                            self.sim.state(*c, *l),
                            self.sim.children(d)
                        )
                    })
                    .collect();
                self.fail(&format!(
                    "with faults stopped and holders releasing, acquisitions never ended: {states:?}"
                ));
            }
        }
        if let Err(v) = self.sim.run_until_idle() {
            self.fail(&format!("the cores never went idle: {v}"));
        }
        if let Err(v) = self.sim.check_quiescent() {
            self.fail(&format!("at quiescence: {v}"));
        }
        for c in 0..self.n {
            let c = ClientId(c);
            let s = self.sim.core(c);
            if !s.is_idle() {
                self.fail(&format!("{c} not idle: {} tasks", s.tracked()));
            }
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
    for p in &picks {
        let profile = if p.loses_watches {
            Profile::LosesWatchesNewSession
        } else {
            Profile::KeepsWatches
        };
        let timeout = Duration::from_secs(1 + u64::from(p.timeout_s % 8));
        let mut cc = ClientConfig::new(profile, timeout);
        if let Some(g) = p.grace_ms {
            cc = cc.suspended_grace(Duration::from_millis(u64::from(g)));
        }
        sim.add_client_with(cc);
    }
    let n = picks.len();
    let timeouts = picks
        .iter()
        .map(|p| Duration::from_secs(1 + u64::from(p.timeout_s % 8)))
        .collect();
    let mut d = Driver {
        sim,
        n,
        tasks: Vec::new(),
        closed: vec![false; n],
        timeouts,
        chaos: case.chaos_ms.is_some(),
    };
    for step in case.steps.iter().take(400) {
        d.run_step(step);
        d.check();
    }
    d.finish();
}

/// The fuzz target's entry point: [`crate::decode_and_check`] with [`check_case`].
pub fn run(data: &[u8]) -> bool {
    crate::decode_and_check(data, check_case)
}
