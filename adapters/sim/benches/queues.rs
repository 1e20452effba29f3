//! Work per release against queue length, at scale: `QUEUES_CLIENTS` simulated
//! clients (one session each; 100,000 by default) queued on `QUEUES_LOCKS` locks
//! (10,000): one queue each of `QUEUES_DEEP` waiters (10,000, 1,000, 100 and 10),
//! the other clients spread evenly over the other locks. One lock of each queue length
//! is drained (each waiter releases as soon as it
//! holds) and every release is counted: requests by kind, notifications, and the
//! names the directory held when it went (what the next waiter's listing
//! carries). Virtual time, seeded: the counts are the same on every run; the
//! wall time per release is this machine's.
//!
//! ```text
//! cargo bench -p lock-sim --bench queues      # about 5 minutes, 6 GB
//! QUEUES_CLIENTS=20000 QUEUES_LOCKS=2000 cargo bench -p lock-sim --bench queues
//! ```
//!
//! lock-sim's scheduler keeps its clients indexed by their next wake-up, so a step
//! costs the same at 100,000 clients as at 100.

#![forbid(unsafe_code)]

use lock_core::{LockId, LockSpec};
use lock_sim::{ClientId, Counters, Profile, Sim, SimConfig};
use lock_testkit::measure::{env_list, env_usize};
use std::time::{Duration, Instant};

/// Long enough that no session pings or syncs often enough to matter.
const SESSION: Duration = Duration::from_secs(600);

struct Class {
    locks: usize,
    waiters: usize,
}

fn main() {
    let total_clients = env_usize("QUEUES_CLIENTS", 100_000);
    let total_locks = env_usize("QUEUES_LOCKS", 10_000);
    let deep = env_list("QUEUES_DEEP", "10000,1000,100,10");
    assert!(
        total_clients > deep.iter().sum::<usize>() && total_locks > deep.len(),
        "QUEUES_CLIENTS must exceed the QUEUES_DEEP queues' sum, QUEUES_LOCKS their number"
    );
    let rest = total_clients - deep.iter().sum::<usize>();
    let rest_locks = total_locks - deep.len();
    let mut classes: Vec<Class> = deep
        .iter()
        .map(|&w| Class {
            locks: 1,
            waiters: w,
        })
        .collect();
    // The rest, as evenly as whole queues allow.
    let (small, extra) = (rest / rest_locks, rest % rest_locks);
    classes.push(Class {
        locks: extra,
        waiters: small + 1,
    });
    classes.push(Class {
        locks: rest_locks - extra,
        waiters: small,
    });
    let cfg = SimConfig::new(27)
        .check_invariants(false)
        .reap_interval(None)
        .run_limit(Duration::from_secs(24 * 3600));
    let mut sim = Sim::new(cfg);
    let started = Instant::now();
    // Queues in FIFO order: each client's acquisition is queued (or granted)
    // before the next client asks.
    let mut queues: Vec<(String, Vec<(ClientId, LockId)>)> = Vec::new();
    let mut clients = 0usize;
    for (ci, class) in classes.iter().enumerate().filter(|(_, c)| c.locks > 0) {
        for l in 0..class.locks {
            let path = format!("/q{ci}/l{l}");
            let mut queue = Vec::with_capacity(class.waiters);
            for _ in 0..class.waiters {
                let c = sim.add_client(Profile::KeepsWatches, SESSION);
                let id = sim
                    .acquire(c, LockSpec::write(path.as_str()))
                    .expect("acquire");
                sim.run_until(|s| queued(s, c, id)).expect("queued");
                queue.push((c, id));
                clients += 1;
            }
            queues.push((path, queue));
        }
    }
    println!(
        "{clients} clients queued on {} locks in {:.1?} (virtual {:?})",
        queues.len(),
        started.elapsed(),
        sim.now()
    );
    println!();
    println!("| waiters in the queue | releases | requests / release | of which getChildren | getData | removeWatches | sync | notifications / release | names listed / release | wall time / release |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    // The first lock of each class.
    let mut first = 0;
    for class in classes.iter().filter(|c| c.locks > 0) {
        let (path, queue) = &queues[first];
        first += class.locks;
        sim.reset_counters();
        let mut listed = 0u64;
        let t0 = Instant::now();
        for &(c, id) in queue {
            sim.run_until(|s| s.holds(c, id)).expect("holds");
            listed += sim.children(path).len() as u64;
            sim.release(c, id).expect("release");
        }
        // Every request answered (the last release's delete too).
        sim.settle().expect("drained");
        let wall = t0.elapsed();
        let d = sum(&sim, queue);
        let n = queue.len() as f64;
        println!(
            "| {} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.0} | {:.1?} |",
            class.waiters,
            queue.len(),
            (d.requests() - d.sync) as f64 / n,
            d.get_children as f64 / n,
            d.get_data as f64 / n,
            d.remove_watch as f64 / n,
            d.sync as f64 / n,
            d.notifications as f64 / n,
            listed as f64 / n,
            wall / queue.len() as u32,
        );
    }
    println!();
    println!("total wall time {:.1?}", started.elapsed());
}

/// The acquisition is granted, or every request it sent so far is answered and
/// it has set its watch (it waits).
fn queued(sim: &Sim, c: ClientId, id: LockId) -> bool {
    let n = sim.counters(c);
    sim.holds(c, id) || (n.get_data >= 1 && n.replies >= n.requests())
}

fn sum(sim: &Sim, queue: &[(ClientId, LockId)]) -> Counters {
    let mut total = Counters::default();
    for &(c, _) in queue {
        total += sim.counters(c);
    }
    total
}
