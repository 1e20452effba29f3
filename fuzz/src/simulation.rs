//! The `simulation` fuzz target's input and checks: an arbitrary schedule of user
//! calls and faults for several clients of one `lock_sim::Sim`.
//!
//! Shared verbatim by the cargo-fuzz target (`fuzz/fuzz_targets/simulation.rs`) and
//! the corpus replay test of the workspace (`adapters/sim/tests/fuzz_corpus_replay.rs`).
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
#![allow(dead_code)]

use arbitrary::{Arbitrary, Unstructured};
use lock_core::names::parse_name;
use lock_core::{CreateMode, LockId, LockSpec, LockState, MultiOp, NameScheme};
use lock_sim::{ClientConfig, ClientId, FaultConfig, InFlight, Profile, Sim, SimConfig};
use std::time::Duration;

/// Lock directories (`/a` is an ancestor of `/a/b`).
pub const DIRS: [&str; 3] = ["/a", "/a/b", "/locks/job"];

/// One fuzz case.
#[derive(Arbitrary, Debug, Clone)]
pub struct SimCase {
    /// The simulation's seed (latencies, seeded faults, attempt ids).
    pub seed: u64,
    /// The clients (1 to 4 are used).
    pub clients: Vec<ClientPick>,
    /// Random faults on top of the explicit ones: mean interval in ms.
    pub chaos_ms: Option<u16>,
    /// Whether the container reaper runs on its own.
    pub reaper: bool,
    /// The schedule.
    pub steps: Vec<SimStep>,
}

/// One client.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub struct ClientPick {
    /// The blocking crate's profile (new session silently after expiry, watches
    /// lost on reconnect) instead of the async one's.
    pub loses_watches: bool,
    /// Session timeout, 1 to 8 s.
    pub timeout_s: u8,
    /// Suspension grace in ms, if not the session timeout.
    pub grace_ms: Option<u16>,
}

/// One step of the schedule. Bytes run out as zeros: the first variant (`Run`).
#[derive(Arbitrary, Debug, Clone)]
pub enum SimStep {
    /// Virtual time passes (ms).
    Run(u16),
    /// Run until the network is quiet (under chaos: half a second).
    Settle,
    /// A user acquires.
    Acquire {
        /// Which client.
        client: u8,
        /// Which directory.
        dir: u8,
        /// The recipe.
        recipe: SimRecipe,
        /// Naming scheme.
        scheme: u8,
        /// Deadline from now (ms).
        deadline_ms: Option<u16>,
        /// `try_only`.
        try_only: bool,
        /// `revocable`.
        revocable: bool,
        /// `detect_crashes` (exclusive recipes only).
        detect_crashes: bool,
        /// `max_hold` (ms).
        max_hold_ms: Option<u16>,
    },
    /// A user releases one of its acquisitions.
    Release(u8),
    /// A user cancels one of its acquisitions (or observers, revocations).
    Cancel(u8),
    /// A user follows an election.
    Observe {
        /// Which client.
        client: u8,
        /// Which directory.
        dir: u8,
    },
    /// A user asks holders (of a directory, or one node) to let go.
    Revoke {
        /// Which client.
        client: u8,
        /// Which directory, or a node in it.
        dir: u8,
        /// Target one participant node instead of the directory.
        node: Option<u8>,
    },
    /// A holder opens a critical section.
    OpenSection(u8),
    /// A holder closes its critical section.
    CloseSection(u8),
    /// A holder writes under `/data`, fenced by its lock.
    FencedWrite {
        /// Which acquisition.
        lock: u8,
        /// Which data node.
        node: u8,
    },
    /// A connection reset.
    Disconnect {
        /// Which client.
        client: u8,
        /// What happened to requests in flight.
        in_flight: InFlightPick,
    },
    /// A partition of `frac`/64 of the session timeout (longer than it expires the
    /// session).
    Partition {
        /// Which client.
        client: u8,
        /// Length in 64ths of the session timeout.
        frac: u8,
    },
    /// A partition ends.
    Heal(u8),
    /// The next reconnect waits (ms).
    DelayReconnect {
        /// Which client.
        client: u8,
        /// How long.
        ms: u16,
    },
    /// The server expires a session.
    Expire(u8),
    /// Notifications in flight to a client are lost (by resetting its connection).
    LoseNotifications(u8),
    /// An administrator deletes a participant node.
    AdminDelete(u8),
    /// An administrator writes a revocation marker into a participant node.
    AdminRevoke(u8),
    /// An administrator creates a non-participant child (or a stale crash marker).
    AdminForeign {
        /// Which directory.
        dir: u8,
        /// Which name.
        name: u8,
    },
    /// An administrator creates an empty directory whose counter is near the wrap
    /// (or the 10/11-character boundary).
    NearWrap {
        /// Which directory.
        dir: u8,
        /// Where exactly.
        at: u8,
    },
    /// The container reaper runs now.
    Reap,
    /// A client closes for good.
    Close(u8),
}

/// A recipe.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum SimRecipe {
    /// Exclusive.
    Write,
    /// Shared.
    Read,
    /// Semaphore of `1 + n % 3`.
    Semaphore(u8),
    /// Leader.
    Leader,
}

/// Requests in flight at a reset.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum InFlightPick {
    /// All applied.
    Applied,
    /// None applied.
    Lost,
    /// The first n.
    First(u8),
    /// Seeded.
    Seeded,
}

const FOREIGN: [&str; 3] = ["readme", "zkl-section", "lock-0000000001"];

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

    fn run_step(&mut self, step: &SimStep) {
        match step {
            SimStep::Run(ms) => {
                let _ = self
                    .sim
                    .run_for(Duration::from_millis(u64::from(*ms) % 20_000));
            }
            SimStep::Settle => {
                if self.chaos {
                    // Under random faults the network is never quiet for long: a
                    // settle could legitimately run out of time.
                    let _ = self.sim.run_for(Duration::from_millis(500));
                } else {
                    let _ = self.sim.settle();
                }
            }
            SimStep::Acquire {
                client,
                dir,
                recipe,
                scheme,
                deadline_ms,
                try_only,
                revocable,
                detect_crashes,
                max_hold_ms,
            } => {
                let c = self.client(*client);
                let dir = DIRS[usize::from(*dir) % DIRS.len()];
                let mut spec = match recipe {
                    SimRecipe::Write => LockSpec::write(dir),
                    SimRecipe::Read => LockSpec::read(dir),
                    SimRecipe::Semaphore(n) => LockSpec::semaphore(dir, 1 + u32::from(*n % 3)),
                    SimRecipe::Leader => LockSpec::leader(dir, vec![b'p', *client]),
                };
                spec = spec.scheme(match scheme % 3 {
                    // Semaphores stay native here: Curator's and kazoo's layouts (a
                    // lease pool behind an internal mutex; kazoo's pool is the path
                    // itself) cannot share a directory with the other recipes these
                    // cases mix on it. lock-sim's workloads run them, one per path.
                    _ if matches!(recipe, SimRecipe::Semaphore(_)) => NameScheme::Native,
                    0 => NameScheme::Native,
                    1 => NameScheme::Curator,
                    _ => NameScheme::Kazoo,
                });
                if let Some(ms) = deadline_ms {
                    let d = self.sim.now() + Duration::from_millis(u64::from(*ms));
                    spec = spec.deadline(d);
                }
                if *try_only {
                    spec = spec.try_only();
                }
                if *revocable {
                    spec = spec.revocable();
                }
                if *detect_crashes && matches!(recipe, SimRecipe::Write | SimRecipe::Leader) {
                    spec = spec.detect_crashes();
                }
                if let Some(ms) = max_hold_ms {
                    spec = spec.max_hold(Duration::from_millis(u64::from(*ms)));
                }
                let closed = self.closed[c.0];
                match self.sim.acquire(c, spec) {
                    Ok(id) => self.tasks.push(Task {
                        client: c,
                        id,
                        lock: true,
                        dir: dir.to_owned(),
                    }),
                    Err(e) => {
                        if !closed {
                            self.fail(&format!("acquire refused on an open client: {e:?}"));
                        }
                    }
                }
            }
            SimStep::Release(t) => {
                if let Some((c, l)) = self.task(*t) {
                    let _ = self.sim.release(c, l);
                }
            }
            SimStep::Cancel(t) => {
                if let Some((c, l)) = self.task(*t) {
                    let _ = self.sim.cancel(c, l);
                }
            }
            SimStep::Observe { client, dir } => {
                let c = self.client(*client);
                let dir = DIRS[usize::from(*dir) % DIRS.len()];
                if let Ok(id) = self.sim.observe(c, dir) {
                    self.tasks.push(Task {
                        client: c,
                        id,
                        lock: false,
                        dir: dir.to_owned(),
                    });
                }
            }
            SimStep::Revoke { client, dir, node } => {
                let c = self.client(*client);
                let target = match node {
                    Some(i) => match self.pick_participant(*i) {
                        Some(p) => p,
                        None => return,
                    },
                    None => DIRS[usize::from(*dir) % DIRS.len()].to_owned(),
                };
                if let Ok(id) = self.sim.revoke(c, &target) {
                    self.tasks.push(Task {
                        client: c,
                        id,
                        lock: false,
                        dir: target,
                    });
                }
            }
            SimStep::OpenSection(t) => {
                if let Some((c, l)) = self.task(*t) {
                    let _ = self.sim.open_section(c, l);
                }
            }
            SimStep::CloseSection(t) => {
                if let Some((c, l)) = self.task(*t) {
                    let _ = self.sim.close_section(c, l);
                }
            }
            SimStep::FencedWrite { lock, node } => {
                if let Some((c, l)) = self.task(*lock) {
                    if self.sim.get("/data").is_none() {
                        let _ = self.sim.admin_create("/data", b"", CreateMode::Persistent);
                    }
                    let op = MultiOp::SetData {
                        path: "/data/x".into(),
                        data: vec![*node],
                        version: None,
                    };
                    let op = if self.sim.get("/data/x").is_none() {
                        MultiOp::Create {
                            path: "/data/x".into(),
                            data: vec![*node],
                            mode: CreateMode::Persistent,
                        }
                    } else {
                        op
                    };
                    let _ = self.sim.fenced_write(c, l, vec![op]);
                }
            }
            SimStep::Disconnect { client, in_flight } => {
                let c = self.client(*client);
                let f = match in_flight {
                    InFlightPick::Applied => InFlight::Applied,
                    InFlightPick::Lost => InFlight::Lost,
                    InFlightPick::First(n) => InFlight::First(usize::from(*n % 8)),
                    InFlightPick::Seeded => InFlight::Seeded,
                };
                self.sim.disconnect_with(c, f);
            }
            SimStep::Partition { client, frac } => {
                let c = self.client(*client);
                let d = self.timeouts[c.0] * u32::from(*frac % 160) / 64;
                self.sim.partition(c, d);
            }
            SimStep::Heal(c) => {
                let c = self.client(*c);
                self.sim.heal(c);
            }
            SimStep::DelayReconnect { client, ms } => {
                let c = self.client(*client);
                self.sim
                    .delay_reconnect(c, Duration::from_millis(u64::from(*ms) % 20_000));
            }
            SimStep::Expire(c) => {
                let c = self.client(*c);
                self.sim.expire_session(c);
            }
            SimStep::LoseNotifications(c) => {
                let c = self.client(*c);
                self.sim.lose_notifications(c);
            }
            SimStep::AdminDelete(i) => {
                if let Some(p) = self.pick_participant(*i) {
                    let _ = self.sim.admin_delete(&p);
                }
            }
            SimStep::AdminRevoke(i) => {
                if let Some(p) = self.pick_participant(*i) {
                    let _ = self.sim.admin_set_data(&p, b"__REVOKE__");
                }
            }
            SimStep::AdminForeign { dir, name } => {
                let dir = DIRS[usize::from(*dir) % DIRS.len()];
                self.ensure_dir(dir);
                let name = FOREIGN[usize::from(*name) % FOREIGN.len()];
                let _ =
                    self.sim
                        .admin_create(&format!("{dir}/{name}"), b"", CreateMode::Persistent);
            }
            SimStep::NearWrap { dir, at } => {
                let dir = DIRS[usize::from(*dir) % DIRS.len()];
                self.ensure_dir(dir);
                // Only on an empty directory: a counter set below existing sequence
                // numbers is nothing a server does.
                if self.sim.children(dir).is_empty() {
                    let v = match at % 3 {
                        0 => i32::MAX - 2,
                        1 => -1_000_000_002,
                        _ => -3,
                    };
                    let _ = self.sim.set_cversion(dir, v);
                }
            }
            SimStep::Reap => {
                self.sim.reap_containers();
            }
            SimStep::Close(c) => {
                let c = self.client(*c);
                if !self.closed[c.0] {
                    self.closed[c.0] = true;
                    self.sim.close(c);
                }
            }
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

/// Decodes a case from fuzzer bytes and runs it (the fuzz target's entry point).
/// Returns whether the bytes decoded to a case (the others test nothing).
pub fn run(data: &[u8]) -> bool {
    let u = Unstructured::new(data);
    match SimCase::arbitrary_take_rest(u) {
        Ok(case) => {
            check_case(&case);
            true
        }
        Err(_) => false,
    }
}
