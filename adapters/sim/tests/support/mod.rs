//! What the seeded test targets share: their environment knobs, and the workloads
//! by the names `LOCK_SIM_WORKLOAD` takes.
#![allow(dead_code, unused_macros)] // each target uses a part

/// One `#[test]` per entry, each calling the target's `run` with the entry's
/// arguments (a workload, the first seed, the default count).
macro_rules! schedules {
    ($($(#[$doc:meta])* $test:ident: $($arg:expr),+;)*) => {$(
        $(#[$doc])*
        #[test]
        fn $test() {
            run($($arg),+);
        }
    )*};
}

use lock_core::{LockId, LockSpec, LockState};
use lock_sim::{
    ClientId, Coverage, DeadlockReport, DeadlockWorkload, FaultConfig, Latency, Profile, Sim,
    SimConfig, TraceEntry, Workload,
};
use std::ops::Range;
use std::time::{Duration, Instant};

/// The number environment variable `name` holds, if set.
pub fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

/// `count` seeds that change from run to run, for test `name`: from a base taken
/// from `SIM_SEED_BASE` (CI sets it from the commit) or else from today's date
/// (UTC), mixed with the test's name. They lie at and above 2^40, apart from the
/// fixed ranges. The base is printed, and a failure names its seed, so any run
/// replays (each target says how).
pub fn explored(name: &str, count: u64) -> Range<u64> {
    let base = env_u64("SIM_SEED_BASE").unwrap_or_else(|| {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
        now.map_or(0, |d| d.as_secs() / 86_400)
    });
    // FNV-1a of the name, then splitmix64's finalizer: each test gets its own range.
    let mut x = name.bytes().fold(0xcbf2_9ce4_8422_2325_u64 ^ base, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    let first = (1 << 40) + ((x ^ (x >> 31)) >> 24);
    println!(
        "{name}: exploring seeds {first}..{} (SIM_SEED_BASE={base})",
        first + count
    );
    first..first + count
}

/// Runs schedules `fixed` of `w` and `explore` changing ones ([`explored`] for
/// `label`), failing on the first violation (the failure says how to replay it,
/// with its trace); prints a summary and returns what the feature checks exercised.
pub fn run_schedules(w: &Workload, label: &str, fixed: Range<u64>, explore: u64) -> Coverage {
    let start = Instant::now();
    println!("{label}: seeds {}..{}", fixed.start, fixed.end);
    let (mut steps, mut acquired) = (0u64, 0usize);
    let mut total = Coverage::default();
    for seed in fixed.chain(explored(label, explore)) {
        match w.run(seed) {
            Ok(r) => {
                steps += r.steps;
                acquired += r.acquired;
                total += r.coverage;
            }
            Err(failure) => {
                let (clients, acquisitions) = shrink(w, seed);
                panic!(
                    "{failure}\nshrunk: it fails with {clients} clients and {acquisitions} \
                     acquisitions (keep ({seed}, {clients}, {acquisitions}) as a regression)"
                )
            }
        }
    }
    println!(
        "{label}: {steps} steps, {acquired} acquisitions granted in {:.2}s; {total:?}",
        start.elapsed().as_secs_f64()
    );
    total
}

/// Fails unless `n` schedules of the feature workload `name` exercised the checks
/// it exists for: crash flags checked and crashes reported (`sections`), fenced
/// writes audited and leases expired (`fenced`), every feature (`features`).
pub fn assert_exercised(name: &str, n: u64, c: &Coverage) {
    let enough = match name {
        "sections" => c.crash_flags_checked > 4 * n && c.crashes_reported > n / 10,
        "fenced" => c.fenced_applied > 10 * n && c.leases_expired > n / 4,
        "features" => {
            c.crash_flags_checked > n
                && c.fenced_applied > 5 * n
                && c.revocations_requested > n / 10
        }
        other => panic!("no coverage expected of {other}"),
    };
    assert!(enough, "{name}: too little exercised: {c:?}");
}

/// The same seed of `w`, failing with as few clients and acquisitions as it
/// still fails with (one fewer at a time, while it fails): the smallest form
/// of a failure to keep as a regression.
fn shrink(w: &Workload, seed: u64) -> (usize, usize) {
    let sized = |clients: usize, acquisitions: usize| {
        let mut small = w.clone();
        small.clients = (clients, clients);
        small.acquisitions = (acquisitions, acquisitions);
        small
    };
    let (mut clients, mut acquisitions) = (w.clients.1, w.acquisitions.1);
    if sized(clients, acquisitions).run(seed).is_ok() {
        return (clients, acquisitions); // fails only at another size: keep the range
    }
    loop {
        if clients > 1 && sized(clients - 1, acquisitions).run(seed).is_err() {
            clients -= 1;
        } else if acquisitions > 1 && sized(clients, acquisitions - 1).run(seed).is_err() {
            acquisitions -= 1;
        } else {
            return (clients, acquisitions);
        }
    }
}

/// The workload named `name`: a preset of [`Workload`], or `connection_faults`.
pub fn workload(name: &str) -> Workload {
    match name {
        "exclusive" => Workload::exclusive(),
        "read_write" => Workload::read_write(),
        "semaphore" => Workload::semaphore(),
        "leader" => Workload::leader(),
        "mixed" => Workload::mixed(),
        "connection_faults" => connection_faults(),
        "harsh" => Workload::harsh(),
        "sections" => Workload::sections(),
        "fenced" => Workload::fenced(),
        "features" => Workload::features(),
        "liveness" => Workload::liveness(),
        other => panic!("unknown workload {other:?}"),
    }
}

/// Faults that never take a lock from a correct holder (no admin deletes, no
/// expiry): no holder is ever exempt from the checks.
pub fn connection_faults() -> Workload {
    let mut w =
        Workload::mixed().with_faults(FaultConfig::connection_only(Duration::from_millis(150)));
    w.name = "connection_faults";
    w
}

/// With environment variable `var` set to a seed, replays that schedule of
/// `LOCK_SIM_WORKLOAD` (default `mixed`, made by `adapt`), prints its trace and
/// returns true (a failure panics); otherwise returns false.
pub fn replayed_from_env(var: &str, adapt: fn(Workload) -> Workload) -> bool {
    let Some(seed) = env_u64(var) else {
        return false;
    };
    let name = std::env::var("LOCK_SIM_WORKLOAD").unwrap_or_else(|_| "mixed".into());
    let (result, sim) = adapt(workload(&name)).simulate(seed, true);
    for e in sim.trace_log() {
        println!("{e}");
    }
    match result {
        Ok(r) => println!("schedule {seed} of {name}: ok: {r:?}"),
        Err(v) => panic!("schedule {seed} of {name}: {v}"),
    }
    true
}

/// Checks that schedule `seed` of `w` replays exactly (the same report from
/// [`Sim::replay`], the same trace twice); returns the trace.
#[track_caller]
pub fn replays_exactly(w: &Workload, seed: u64) -> Vec<TraceEntry> {
    let name = w.name;
    let plain = w.run(seed).expect("passes");
    let replayed = Sim::replay(seed, w).expect("passes");
    assert_eq!(plain, replayed, "{name} {seed}");
    let (_, a) = w.simulate(seed, true);
    let (_, b) = w.simulate(seed, true);
    assert_eq!(a.trace_log(), b.trace_log(), "{name} {seed}: same trace");
    a.trace_log().to_vec()
}

/// Two clients of `profile`, with session timeout `t`, on `spec`: the first holds
/// it, the second waits behind it (both settled).
pub fn holder_and_waiter(
    sim: &mut Sim,
    profile: Profile,
    spec: LockSpec,
    t: Duration,
) -> ((ClientId, LockId), (ClientId, LockId)) {
    let a = sim.add_client(profile, t);
    let b = sim.add_client(profile, t);
    let la = sim.acquire(a, spec.clone()).unwrap();
    sim.settle().unwrap();
    let lb = sim.acquire(b, spec).unwrap();
    sim.settle().unwrap();
    assert!(sim.holds(a, la), "one holder");
    assert_eq!(sim.state(b, lb), Some(LockState::Waiting), "one waiter");
    ((a, la), (b, lb))
}

/// When `client`'s acquisition `lock` was granted.
pub fn acquired_at(sim: &Sim, client: ClientId, lock: LockId) -> lock_core::Timestamp {
    sim.events(client)
        .iter()
        .find(|r| r.lock == lock && matches!(r.event, lock_core::LockEvent::Acquired(_)))
        .expect("granted")
        .at
}

/// A simulation of `seed` with a fixed one-way latency of 1 ms and no container
/// reaper: times in round trips, exactly.
pub fn sim_1ms(seed: u64) -> Sim {
    let config = SimConfig::new(seed).latency(Latency::fixed(Duration::from_millis(1)));
    Sim::new(config.reap_interval(None))
}

/// Runs the deadlock schedules `seeds` of `w` (`LOCK_SIM_DEADLOCK_SEED` alone if
/// set), spread over the cores, failing with the replay command of test `name` of
/// test target `target`; prints the latencies. From 500 schedules on, too few
/// deadlocks to prove anything fail too.
pub fn run_deadlock_schedules(target: &str, name: &str, w: &DeadlockWorkload, seeds: Vec<u64>) {
    let seeds = env_u64("LOCK_SIM_DEADLOCK_SEED").map_or(seeds, |s| vec![s]);
    let start = std::time::Instant::now();
    // The schedules are independent: spread them over the cores.
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(4);
    let reports: Vec<DeadlockReport> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let seeds = &seeds;
                s.spawn(move || {
                    let mine = seeds.iter().skip(t).step_by(threads);
                    mine.map(|&seed| {
                        w.run(seed).unwrap_or_else(|f| {
                            panic!(
                                "{f}\nreplay: LOCK_SIM_DEADLOCK_SEED={seed} \
                                 cargo test -p lock-sim --test {target} {name} -- --nocapture"
                            )
                        })
                    })
                    .collect::<Vec<_>>()
                })
            })
            .collect();
        let joined = handles
            .into_iter()
            .map(|h| h.join().expect("a schedule failed"));
        joined.flatten().collect()
    });
    let victims: usize = reports.iter().map(|r| r.victims).sum();
    let acquisitions: usize = reports.iter().map(|r| r.acquisitions).sum();
    let steps: u64 = reports.iter().map(|r| r.steps).sum();
    let mut latencies: Vec<Duration> = reports.iter().flat_map(|r| r.latencies.clone()).collect();
    latencies.sort();
    let median = latencies
        .get(latencies.len() / 2)
        .copied()
        .unwrap_or_default();
    let worst = latencies.last().copied().unwrap_or_default();
    println!(
        "{name}: {} schedules in {:.1}s: {steps} steps, {acquisitions} acquisitions, {victims} deadlocks broken; \
         latency from the cycle's completion to the victim's failure: median {median:?}, worst {worst:?} \
         (detect_after {:?}, bound {:?})",
        seeds.len(),
        start.elapsed().as_secs_f64(),
        w.detect_after,
        w.bound,
    );
    if seeds.len() >= 500 {
        assert!(
            victims > seeds.len() / 20,
            "too few deadlocks to prove anything: {victims}"
        );
    }
}
