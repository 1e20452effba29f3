//! zklock demo on the embedded simulator: nothing to install.
//!
//! Four workers contend for an exclusive lock, then for a read/write lock, on
//! lock-sim's in-memory ZooKeeper (virtual time, 1-3 ms one-way latency). The
//! timeline shows who waits, who holds and with which fencing token; the summary
//! counts ZooKeeper requests per acquisition and watch notifications per release.
//!
//! ```sh
//! cargo run --example demo
//! ```

use lock_core::{LockEvent, LockId, LockSpec};
use lock_sim::{ClientId, Latency, Profile, Sim, SimConfig};
use std::collections::BTreeMap;
use std::time::Duration;

const NAMES: [&str; 4] = ["alice", "bob", "carol", "dave"];

struct Demo {
    sim: Sim,
    workers: Vec<ClientId>,
    printed: usize,
    releases: u64,
    acquisitions: u64,
}

impl Demo {
    fn name(&self, c: ClientId) -> &'static str {
        NAMES[self.workers.iter().position(|w| *w == c).unwrap()]
    }

    fn say(&self, who: &str, what: &str) {
        println!("  {:>8}  {:<6} {what}", format!("{}", self.sim.now()), who);
    }

    /// Prints the events the simulation produced since the last call.
    fn flush(&mut self) {
        let new: Vec<_> = self.sim.all_events()[self.printed..].to_vec();
        self.printed += new.len();
        for e in new {
            let who = self.name(e.client);
            let what = match &e.event {
                LockEvent::Acquired(g) => {
                    self.acquisitions += 1;
                    format!(
                        "HOLDS    token={} node={}",
                        g.token,
                        g.path.rsplit('/').next().unwrap()
                    )
                }
                LockEvent::Released => {
                    self.releases += 1;
                    "released (its delete confirmed)".to_owned()
                }
                other => format!("{other:?}"),
            };
            println!("  {:>8}  {:<6} {what}", format!("{}", e.at), who);
        }
    }

    fn acquire(&mut self, w: usize, spec: LockSpec) -> LockId {
        let kind = format!("{:?}", spec.recipe()).to_lowercase();
        self.say(NAMES[w], &format!("wants    {kind} {}", spec.path()));
        let id = self
            .sim
            .acquire(self.workers[w], spec)
            .expect("valid lock spec");
        self.sim
            .run_for(Duration::from_millis(1))
            .expect("invariants hold");
        self.flush();
        id
    }

    fn hold_then_release(&mut self, w: usize, id: LockId, hold: Duration) {
        self.sim.run_for(hold).expect("invariants hold");
        self.flush();
        self.say(NAMES[w], "releases (trusts the lock no more)");
        self.sim.release(self.workers[w], id).expect("held");
        self.sim
            .run_for(Duration::from_millis(10))
            .expect("invariants hold");
        self.flush();
    }

    fn wait_until_held(&mut self, w: usize, id: LockId) {
        let c = self.workers[w];
        self.sim
            .run_until(|s| s.holds(c, id))
            .expect("invariants hold");
        self.flush();
    }
}

fn main() {
    let cfg = SimConfig::new(2026).latency(Latency::between(
        Duration::from_millis(1),
        Duration::from_millis(3),
    ));
    let mut sim = Sim::new(cfg);
    let workers = NAMES
        .iter()
        .map(|_| sim.add_client(Profile::KeepsWatches, Duration::from_secs(6)))
        .collect();
    let mut d = Demo {
        sim,
        workers,
        printed: 0,
        releases: 0,
        acquisitions: 0,
    };

    println!(
        "== Exclusive lock /demo/job: every worker takes it twice, FIFO, one wakes per release"
    );
    let mut queue: Vec<(usize, LockId, u32)> = Vec::new();
    for w in 0..NAMES.len() {
        let id = d.acquire(w, LockSpec::write("/demo/job"));
        queue.push((w, id, 2));
    }
    while !queue.is_empty() {
        // The server orders the contenders (by the arrival of their creates); whoever
        // it put first holds.
        let clients: Vec<_> = queue
            .iter()
            .map(|(w, id, _)| (d.workers[*w], *id))
            .collect();
        d.sim
            .run_until(|s| clients.iter().any(|(c, id)| s.holds(*c, *id)))
            .expect("invariants hold");
        d.flush();
        let i = clients
            .iter()
            .position(|(c, id)| d.sim.holds(*c, *id))
            .unwrap();
        let (w, id, left) = queue.remove(i);
        d.hold_then_release(w, id, Duration::from_millis(20));
        if left > 1 {
            let id = d.acquire(w, LockSpec::write("/demo/job"));
            queue.push((w, id, left - 1));
        }
    }

    println!("\n== Read/write lock /demo/table: readers share, the writer waits for them, later readers wait for the writer");
    let r1 = d.acquire(0, LockSpec::read("/demo/table"));
    let r2 = d.acquire(1, LockSpec::read("/demo/table"));
    let w = d.acquire(2, LockSpec::write("/demo/table"));
    let r3 = d.acquire(3, LockSpec::read("/demo/table"));
    d.wait_until_held(0, r1);
    d.wait_until_held(1, r2);
    d.hold_then_release(0, r1, Duration::from_millis(15));
    d.hold_then_release(1, r2, Duration::from_millis(5));
    d.wait_until_held(2, w);
    d.hold_then_release(2, w, Duration::from_millis(20));
    d.wait_until_held(3, r3);
    d.hold_then_release(3, r3, Duration::from_millis(5));
    d.sim.run_until_idle().expect("invariants hold");
    d.flush();

    let total = d.sim.total_counters();
    let mut per_kind = BTreeMap::new();
    per_kind.insert("create", total.create);
    per_kind.insert("getChildren", total.get_children);
    per_kind.insert("getData", total.get_data);
    per_kind.insert("delete", total.delete);
    println!("\n== Summary");
    println!(
        "  acquisitions: {}, releases: {}",
        d.acquisitions, d.releases
    );
    println!("  requests: {} {per_kind:?}", total.requests());
    println!(
        "  requests per acquisition (incl. its release): {:.2}",
        total.requests() as f64 / d.acquisitions.max(1) as f64
    );
    println!(
        "  watch notifications per release: {:.2}   (the next waiter, plus the releaser's own-node watch;\n   a herd would wake every waiter)",
        total.notifications as f64 / d.releases.max(1) as f64
    );
    println!("  (the first acquisitions also created the container directories /demo, /demo/job, /demo/table)");
    println!("  virtual time: {}", d.sim.now());
}
