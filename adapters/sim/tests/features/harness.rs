//! The scenario tests' harness: seeds, the simulated world with a reacting user, faults.

use lock_core::{LockEvent, LockId, LockSpec, NameScheme};
use lock_sim::{ClientId, EventRecord, Latency, Profile, Sim, SimConfig, SimRng};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Every client's session timeout.
pub(crate) const T: Duration = Duration::from_secs(1);
pub(crate) const MS: Duration = Duration::from_millis(1);

// ----- harness ------------------------------------------------------------------

#[path = "../support/mod.rs"]
mod support;
pub(crate) use support::{acquired_at, assert_exercised, env_u64, explored, run_schedules};

macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(format!($($fmt)+));
        }
    };
}

/// What a scenario reports about itself, for the summary line.
pub(crate) type Tag = String;

/// One new seed per this many fixed ones: every run also explores schedules no
/// earlier run saw (see [`explored`]).
pub(crate) const EXPLORE_ONE_IN: u64 = 50;

/// Runs `scenario` over the fixed seeds `salt..salt + default` (`FEATURES_SEEDS`
/// overrides the count) and one new seed in [`EXPLORE_ONE_IN`] (see [`explored`]),
/// or only `FEATURES_SEED`'s, with its trace (printed as its world is dropped);
/// fails with the seed and the replay command.
pub(crate) fn for_seeds(
    name: &str,
    salt: u64,
    default: u64,
    scenario: fn(u64, bool) -> Result<Tag, String>,
) {
    let start = Instant::now();
    let only = env_u64("FEATURES_SEED");
    let seeds: Vec<u64> = match only {
        Some(s) => vec![s],
        None => {
            let n = env_u64("FEATURES_SEEDS").unwrap_or(default);
            (salt..salt + n)
                .chain(explored(name, n.div_ceil(EXPLORE_ONE_IN)))
                .collect()
        }
    };
    let trace = only.is_some();
    let mut tags: BTreeMap<Tag, u32> = BTreeMap::new();
    for &seed in &seeds {
        match scenario(seed, trace) {
            Ok(tag) => *tags.entry(tag).or_default() += 1,
            Err(e) if trace => panic!("{name}, seed {seed}: {e} (its trace above)"),
            Err(e) => panic!(
                "{name}, seed {seed}: {e}\nreplay with its trace: FEATURES_SEED={seed} \
                 cargo test -p lock-sim --test features {name} -- --nocapture"
            ),
        }
    }
    println!(
        "{name}: {} seeds in {:.2}s: {tags:?}",
        seeds.len(),
        start.elapsed().as_secs_f64()
    );
}

/// What the user does when an event comes.
pub(crate) type Reaction = Box<dyn FnMut(&mut Sim, &EventRecord)>;

/// A simulation with the seed's latency and client profiles, a user who reacts to
/// events as they come, and a clock-sliced driver.
pub(crate) struct World {
    pub(crate) sim: Sim,
    pub(crate) rng: SimRng,
    cursor: usize,
    pub(crate) react: Reaction,
    trace: bool,
}

impl World {
    pub(crate) fn new(seed: u64, trace: bool) -> World {
        let mut rng = SimRng::new(seed ^ 0x00fe_a7e5);
        let max = Duration::from_micros(500 + rng.below(5_000));
        let latency = Latency::between(Duration::from_micros(200), max);
        let sim = Sim::new(SimConfig::new(seed).latency(latency).trace(trace));
        World {
            sim,
            rng,
            cursor: 0,
            react: Box::new(|_, _| {}),
            trace,
        }
    }

    /// A client of a seeded profile.
    pub(crate) fn client(&mut self) -> ClientId {
        let profile = if self.rng.chance(0.5) {
            Profile::KeepsWatches
        } else {
            Profile::LosesWatchesNewSession
        };
        self.sim.add_client(profile, T)
    }

    pub(crate) fn scheme(&mut self) -> NameScheme {
        [NameScheme::Native, NameScheme::Curator, NameScheme::Kazoo][self.rng.index(3)]
    }

    /// Hands the events since the last call to the user's reaction.
    pub(crate) fn pump(&mut self) {
        while self.cursor < self.sim.all_events().len() {
            let r = self.sim.all_events()[self.cursor].clone();
            self.cursor += 1;
            (self.react)(&mut self.sim, &r);
        }
    }

    /// Runs (reacting to events) until `done`, failing after `limit` of virtual time.
    pub(crate) fn until(
        &mut self,
        limit: Duration,
        mut done: impl FnMut(&Sim) -> bool,
    ) -> Result<(), String> {
        let deadline = self.sim.now() + limit;
        loop {
            self.pump();
            if let Some(v) = self.sim.violation() {
                return Err(v.to_string());
            }
            if done(&self.sim) {
                return Ok(());
            }
            if self.sim.now() >= deadline {
                return Err(format!("condition not met within {limit:?}"));
            }
            if let Err(v) = self.sim.step_until(deadline) {
                return Err(v.to_string());
            }
        }
    }

    pub(crate) fn run_for(&mut self, d: Duration) -> Result<(), String> {
        let t = self.sim.now() + d;
        self.until(d, |s| s.now() >= t)
    }

    pub(crate) fn settle(&mut self) -> Result<(), String> {
        self.until(60 * T, |s| s.is_quiet())
    }

    pub(crate) fn acquire(&mut self, c: ClientId, spec: LockSpec) -> Result<LockId, String> {
        self.sim.acquire(c, spec).map_err(|e| e.to_string())
    }

    pub(crate) fn held(&mut self, c: ClientId, spec: LockSpec) -> Result<LockId, String> {
        let l = self.acquire(c, spec)?;
        self.until(10 * T, |s| s.holds(c, l))?;
        Ok(l)
    }

    /// Ends every acquisition without reacting any more ([`Sim::wind_down`]): nothing
    /// may be left behind.
    pub(crate) fn finish(&mut self, locks: &[(ClientId, LockId)]) -> Result<(), String> {
        self.react = Box::new(|_, _| {});
        self.sim.wind_down(locks).map_err(|v| v.to_string())
    }

    pub(crate) fn grant_token(&self, c: ClientId, l: LockId) -> i64 {
        self.sim.grant(c, l).expect("granted").token.0
    }
}

impl Drop for World {
    /// Prints the last `FEATURES_TRACE_TAIL` lines of the trace (default 300), to
    /// show how the run got to whichever check failed.
    fn drop(&mut self) {
        if self.trace {
            let log = self.sim.trace_log();
            let keep = env_u64("FEATURES_TRACE_TAIL").unwrap_or(300) as usize;
            log[log.len().saturating_sub(keep)..]
                .iter()
                .for_each(|l| println!("{l}"));
        }
    }
}

/// The faults a scenario can inject into one client.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Fault {
    None,
    /// A connection reset; requests in flight applied or not (seeded).
    Disconnect,
    /// A reset while a watch notification is on its way: the notification is lost.
    LoseNotification,
    /// A silent partition shorter than the session timeout: the session survives.
    ShortPartition,
    /// A partition past the session timeout: the server expires the session.
    LongPartition,
    /// The session expires (the client is told when it reconnects).
    Expire,
}

impl Fault {
    /// Whether the client's session survives this fault.
    pub(crate) fn keeps_session(self) -> bool {
        !matches!(self, Fault::LongPartition | Fault::Expire)
    }
}

pub(crate) const ALL_FAULTS: [Fault; 6] = [
    Fault::None,
    Fault::Disconnect,
    Fault::LoseNotification,
    Fault::ShortPartition,
    Fault::LongPartition,
    Fault::Expire,
];

pub(crate) fn inject(w: &mut World, c: ClientId, f: Fault) -> Result<(), String> {
    match f {
        Fault::None => {}
        Fault::Disconnect => {
            w.sim.disconnect(c);
        }
        Fault::LoseNotification => {
            // Wait (briefly) for a notification on its way to `c`, then lose it.
            let _ = w.until(T / 4, |s| s.notifications_in_flight(c) > 0);
            if let Some(v) = w.sim.violation() {
                return Err(v.to_string());
            }
            w.sim.lose_notifications(c);
        }
        Fault::ShortPartition => {
            let d = w.rng.duration(T / 10, T / 2);
            w.sim.partition(c, d);
        }
        Fault::LongPartition => {
            let d = w.rng.duration(T * 3 / 2, T * 3);
            w.sim.partition(c, d);
        }
        Fault::Expire => {
            w.sim.expire_session(c);
        }
    }
    Ok(())
}

/// Runs a seeded few milliseconds, then injects `f` into `c`.
pub(crate) fn inject_soon(w: &mut World, c: ClientId, f: Fault) -> Result<(), String> {
    let d = w.rng.duration(Duration::ZERO, 8 * MS);
    w.run_for(d)?;
    inject(w, c, f)
}

pub(crate) fn count(events: &[LockEvent], want: &LockEvent) -> usize {
    events.iter().filter(|e| *e == want).count()
}
