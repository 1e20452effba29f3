//! Leader election with observers, through chaos (expiries and partitions among it).

use crate::harness::{for_seeds, Tag, World, MS, T};
use lock_core::{Leader, LockEvent, LockId, LockSpec};
use lock_sim::{ClientId, FaultConfig, Sim};
use std::time::Duration;

const ELECTION: &str = "/services/election";

/// The leader the tree says: the lowest participant node, its data and czxid.
fn actual_leader(sim: &Sim) -> Option<Leader> {
    let mut parts: Vec<(i32, String)> = sim
        .children(ELECTION)
        .into_iter()
        .filter_map(|n| lock_core::names::parse_name(&n).map(|p| (p.seq, n)))
        .collect();
    let reference = parts.first()?.0;
    parts.sort_by_key(|(s, _)| lock_core::names::relative_sequence(*s, reference));
    let path = format!("{ELECTION}/{}", parts[0].1);
    let info = sim.get(&path)?;
    Some(Leader {
        path,
        id: info.data,
        token: lock_core::FencingToken(info.stat.czxid),
    })
}

/// The last leader an observer reported.
fn last_report(sim: &Sim, c: ClientId, l: LockId) -> Option<Option<Leader>> {
    sim.events(c).iter().rev().find_map(|r| match &r.event {
        LockEvent::LeaderChanged { leader, .. } if r.lock == l => Some(leader.clone()),
        _ => None,
    })
}

struct Election {
    parts: Vec<ClientId>,
    /// Each participant's current acquisition.
    current: Vec<Option<LockId>>,
    observers: Vec<(ClientId, LockId)>,
}

impl Election {
    fn leader(&self, sim: &Sim) -> Vec<usize> {
        (0..self.parts.len())
            .filter(|&i| self.current[i].is_some_and(|l| sim.holds(self.parts[i], l)))
            .collect()
    }

    /// Every participant takes part, one holds and is the tree's leader, and every
    /// observer last reported that leader.
    fn converged(&self, sim: &Sim) -> bool {
        if !sim.is_quiet() {
            return false;
        }
        let leaders = self.leader(sim);
        let Some(actual) = actual_leader(sim) else {
            return false;
        };
        leaders.len() == 1
            && sim
                .grant(self.parts[leaders[0]], self.current[leaders[0]].unwrap())
                .is_some_and(|g| *g.path == *actual.path)
            && self
                .observers
                .iter()
                .all(|&(c, l)| last_report(sim, c, l) == Some(Some(actual.clone())))
    }

    fn join(&mut self, w: &mut World, i: usize) -> Result<(), String> {
        let scheme = w.scheme();
        let spec = LockSpec::leader(ELECTION, format!("p{i}")).scheme(scheme);
        self.current[i] = Some(w.acquire(self.parts[i], spec)?);
        Ok(())
    }
}

/// Participants come and go (leaders resign, sessions expire, connections drop,
/// partitions strike) while observers follow: at most one trusted leader at any
/// instant (the checker's exclusive invariant), every observer's last report
/// converges to the actual leader once faults stop, a leader change wakes exactly
/// one participant (and each observer once), and a participant joining behind the
/// leader wakes nobody.
#[test]
fn election_with_observers() {
    for_seeds("election_with_observers", 400_000, 500, observed_election);
}

fn observed_election(seed: u64, trace: bool) -> Result<Tag, String> {
    let mut w = World::new(seed, trace);
    let np = 3 + w.rng.index(2);
    let no = 1 + w.rng.index(2);
    let parts: Vec<ClientId> = (0..np).map(|_| w.client()).collect();
    let obs: Vec<ClientId> = (0..no).map(|_| w.client()).collect();
    let mut e = Election {
        parts,
        current: vec![None; np],
        observers: Vec::new(),
    };
    for &o in &obs {
        let l = w.sim.observe(o, ELECTION).map_err(|e| e.to_string())?;
        e.observers.push((o, l));
    }
    for i in 0..np {
        e.join(&mut w, i)?;
    }
    // Chaos: every fault but admin meddling (deleted nodes and forged revocation
    // data would leave stale watches and foreign ids behind, by design).
    let mut faults = FaultConfig::chaos(Duration::from_millis(150));
    faults.admin_delete = 0;
    faults.revoke = 0;
    w.sim.set_faults(faults);
    let chaos_end = w.sim.now() + 4 * T;
    let mut tenure_end: Option<(usize, lock_core::Timestamp)> = None;
    while w.sim.now() < chaos_end {
        w.run_for(10 * MS)?;
        for i in 0..np {
            let ended = e.current[i].is_some_and(|l| w.sim.outcome(e.parts[i], l).is_some());
            if ended && w.rng.chance(0.3) {
                e.join(&mut w, i)?;
            }
        }
        // The leader resigns after its tenure.
        let leaders = e.leader(&w.sim);
        match (leaders.first(), tenure_end) {
            (Some(&i), Some((j, t))) if i == j && w.sim.now() >= t => {
                w.sim
                    .release(e.parts[i], e.current[i].unwrap())
                    .map_err(|e| e.to_string())?;
                tenure_end = None;
            }
            (Some(&i), Some((j, _))) if i == j => {}
            (Some(&i), _) => {
                let tenure = w.rng.duration(20 * MS, 600 * MS);
                tenure_end = Some((i, w.sim.now() + tenure));
            }
            (None, _) => tenure_end = None,
        }
    }
    let changes_seen: usize = obs
        .iter()
        .map(|&o| {
            w.sim
                .events(o)
                .iter()
                .filter(|r| matches!(r.event, LockEvent::LeaderChanged { .. }))
                .count()
        })
        .sum();
    // Faults stop: everyone takes part again, and everything converges.
    w.sim.stop_faults();
    let limit = w.sim.now() + 30 * T;
    loop {
        // (Sessions that expired during the chaos end their acquisitions only now,
        // as their clients reconnect.)
        for i in 0..np {
            if e.current[i].is_some_and(|l| w.sim.outcome(e.parts[i], l).is_some()) {
                e.join(&mut w, i)?;
            }
        }
        if e.converged(&w.sim) {
            break;
        }
        ensure!(
            w.sim.now() < limit,
            "no convergence within 30 s after the faults stopped"
        );
        w.run_for(10 * MS)?;
    }
    // ... and stays converged.
    let reports = |w: &World| -> usize { obs.iter().map(|&o| w.sim.events(o).len()).sum() };
    let before = reports(&w);
    w.run_for(2 * T)?;
    ensure!(e.converged(&w.sim), "converged, then drifted");
    ensure!(
        reports(&w) == before,
        "observers reported with nothing changing"
    );

    // A leader change wakes one participant, and each observer once.
    let old = e.leader(&w.sim)[0];
    w.sim.reset_counters();
    w.sim
        .release(e.parts[old], e.current[old].unwrap())
        .map_err(|e| e.to_string())?;
    w.until(10 * T, |s| {
        s.outcome(e.parts[old], e.current[old].unwrap()).is_some() && e.converged(s)
    })?;
    let woken: u64 = (0..np)
        .filter(|&i| i != old)
        .map(|i| w.sim.counters(e.parts[i]).notifications)
        .sum();
    ensure!(woken == 1, "a leader change woke {woken} participants");
    for &o in &obs {
        let n = w.sim.counters(o).notifications;
        ensure!(n == 1, "observer {o} woken {n} times by one leader change");
    }
    // A participant joining behind the leader wakes nobody.
    w.sim.reset_counters();
    e.join(&mut w, old)?;
    w.until(10 * T, |s| s.is_quiet())?;
    let woken: u64 = w
        .sim
        .clients()
        .map(|c| w.sim.counters(c).notifications)
        .sum();
    ensure!(woken == 0, "a participant joining woke {woken}");
    ensure!(e.converged(&w.sim), "still converged");
    // Earlier acquisitions have all ended (checked by the invariants); the
    // observers are cancelled as the test winds down.
    let mut all: Vec<(ClientId, LockId)> = (0..np)
        .filter_map(|i| e.current[i].map(|l| (e.parts[i], l)))
        .chain(e.observers.iter().copied())
        .collect();
    all.sort();
    w.finish(&all)?;
    Ok(format!(
        "{np} participants, {no} observers, {} leader changes reported in the chaos",
        match changes_seen {
            0..=9 => "<10",
            10..=29 => "10-29",
            _ => "30+",
        }
    ))
}
