//! The counter workload: every participant loops take-lock / register under
//! `<root>/inside` / non-atomic read-sleep-write of `<root>/counter` / leave / release.
//! An exclusive holder registers `w-...` and finds an overlap if anyone else is inside;
//! a reader registers `r-...` and finds one if a `w-...` is inside (or the counter
//! changed while it read). Of two overlapping sections the later one to register
//! always sees the earlier, so no overlap goes unseen; lost updates show in the counter.
use crate::common::Observer;
use crate::common::Runtime;
use futures::channel::oneshot;
use lock_core::NameScheme;
use lock_zookeeper_client::LockClient;
use std::fmt::Write as _;

use std::time::{Duration, Instant};
use zookeeper_client::{Acls, CreateMode};

use super::process::{Kind, Library, Peer};
use super::zklock_side::{received, zk_lock};

/// What one participant of the counter workload did.
#[derive(Clone, Debug)]
pub struct Tally {
    pub library: &'static str,
    pub who: String,
    pub kind: Kind,
    /// Critical sections run.
    pub sections: u64,
    /// Sections that found an incompatible holder inside.
    pub overlaps: u64,
    /// From the start of its loop to its first hold, and to its end.
    pub first_held: Duration,
    pub finished: Duration,
}

/// Writes `<mark> <who>` to the interval log `<root>/log` (a persistent sequential
/// node: the server's order is the log's), `E` right after taking the lock, `X`
/// right before releasing it, as the Go peer does.
pub async fn log_section(data: &zookeeper_client::Client, root: &str, mark: char, who: &str) {
    let persistent = CreateMode::PersistentSequential.with_acls(Acls::anyone_all());
    data.create(
        &format!("{root}/log/e-"),
        format!("{mark} {who}").as_bytes(),
        &persistent,
    )
    .await
    .expect("writing the interval log");
}

/// The counter workload on one lock path: see the module documentation.
pub struct Workload {
    pub lock_path: String,
    pub root: String,
    pub iterations: u32,
    pub sleep: Duration,
}

impl Workload {
    /// Creates `<root>`, `<root>/inside`, `<root>/log` (the interval log, see
    /// lock-testkit's `peers/go_peer.go`) and `<root>/counter` = 0.
    pub async fn prepare(
        observer: &Observer,
        lock_path: &str,
        iterations: u32,
        sleep: Duration,
    ) -> Workload {
        let root = format!("{lock_path}-data");
        observer.mkdir(&format!("{root}/inside")).await;
        observer.mkdir(&format!("{root}/log")).await;
        let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
        observer
            .client
            .create(&format!("{root}/counter"), b"0", &persistent)
            .await
            .expect("creating the counter");
        Workload {
            lock_path: lock_path.to_owned(),
            root,
            iterations,
            sleep,
        }
    }

    /// Starts the loop in a peer's `slot`.
    pub fn start_peer(&self, peer: &mut Peer, slot: &str, kind: Kind) {
        peer.send(
            slot,
            &format!(
                "work {} {} {} {} {}",
                kind.word(),
                self.lock_path,
                self.root,
                self.iterations,
                self.sleep.as_millis()
            ),
        );
    }

    /// Waits for the loop in a peer's `slot` to finish.
    pub async fn peer_tally(&self, peer: &mut Peer, slot: &str, kind: Kind) -> Tally {
        let words = peer.expect(slot, "WORKED").await;
        Tally {
            library: peer.library.name(),
            who: format!("{}/{slot}", peer.name),
            kind,
            sections: words[0].parse().expect("sections"),
            overlaps: words[1].parse().expect("overlaps"),
            first_held: Duration::from_millis(words[2].parse().expect("ms")),
            finished: Duration::from_millis(words[3].parse().expect("ms")),
        }
    }

    /// Starts the loop for zklock (`locks`, naming with `scheme`) in a task, with its
    /// own plain session for the data operations.
    pub fn start_zklock(
        &self,
        rt: &Runtime,
        connect: &str,
        locks: &LockClient,
        scheme: NameScheme,
        kind: Kind,
        who: &str,
    ) -> oneshot::Receiver<Tally> {
        let (locks, connect, who) = (locks.clone(), connect.to_owned(), who.to_owned());
        let (path, root, iterations, sleep) = (
            self.lock_path.clone(),
            self.root.clone(),
            self.iterations,
            self.sleep,
        );
        crate::common::spawn(rt, async move {
            let data = Observer::connect(&connect).await.client;
            let (counter, inside) = (format!("{root}/counter"), format!("{root}/inside"));
            let ephemeral = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
            let mut overlaps = 0;
            let mut think = Think::new(&who);
            let start = Instant::now();
            let mut first_held = None;
            for i in 0..iterations {
                let guard = zk_lock(&locks, kind, &path, scheme).await;
                first_held.get_or_insert_with(|| start.elapsed());
                log_section(&data, &root, 'E', &who).await;
                let mark = format!(
                    "{}-zklock-{who}-{i}",
                    if kind.exclusive() { "w" } else { "r" }
                );
                let marker = format!("{inside}/{mark}");
                data.create(&marker, b"", &ephemeral)
                    .await
                    .expect("registering inside");
                let others = data.list_children(&inside).await.expect("listing inside");
                let mut overlap = others
                    .iter()
                    .any(|o| *o != mark && (kind.exclusive() || o.starts_with("w-")));
                let value = read_counter(&data, &counter).await;
                crate::common::sleep(sleep).await;
                if kind.exclusive() {
                    data.set_data(&counter, (value + 1).to_string().as_bytes(), None)
                        .await
                        .expect("writing the counter");
                } else if read_counter(&data, &counter).await != value {
                    overlap = true;
                }
                overlaps += u64::from(overlap);
                data.delete(&marker, None).await.expect("leaving");
                log_section(&data, &root, 'X', &who).await;
                guard.release().await.expect("zklock release");
                // Think time, so that queues drain and refill instead of marching in step.
                crate::common::sleep(think.next(sleep)).await;
            }
            Tally {
                library: "zklock",
                who,
                kind,
                sections: u64::from(iterations),
                overlaps,
                first_held: first_held.unwrap_or_default(),
                finished: start.elapsed(),
            }
        })
    }

    /// Asserts: the counter equals the number of exclusive sections (no lost update)
    /// and no section overlapped an incompatible one; the report, per library, is in
    /// the failure message (and printed either way).
    pub async fn check(
        &self,
        observer: &Observer,
        label: &str,
        tallies: &[Tally],
        elapsed: Duration,
    ) {
        let counter = read_counter(&observer.client, &format!("{}/counter", self.root)).await;
        let expected: u64 = tallies
            .iter()
            .filter(|t| t.kind.exclusive())
            .map(|t| t.sections)
            .sum();
        let overlaps: u64 = tallies.iter().map(|t| t.overlaps).sum();
        let mut report = format!(
            "{label}: counter {counter} after {expected} increments: {} lost updates; \
             {overlaps} overlapping sections ({elapsed:.1?})\n",
            expected.saturating_sub(counter)
        );
        let mut libraries: Vec<&str> = tallies.iter().map(|t| t.library).collect();
        libraries.sort();
        libraries.dedup();
        for library in libraries {
            let of = || tallies.iter().filter(move |t| t.library == library);
            let sum = |f: fn(&Tally) -> u64| of().map(f).sum::<u64>();
            let _ = writeln!(
                report,
                "  {library}: {} participants, {} sections ({} writing), {} overlaps [{}]",
                of().count(),
                sum(|t| t.sections),
                of().filter(|t| t.kind.exclusive())
                    .map(|t| t.sections)
                    .sum::<u64>(),
                sum(|t| t.overlaps),
                of().map(|t| format!(
                    "{} {:?} {}/{} in {}..{} ms",
                    t.who,
                    t.kind,
                    t.overlaps,
                    t.sections,
                    t.first_held.as_millis(),
                    t.finished.as_millis()
                ))
                .collect::<Vec<_>>()
                .join(", ")
            );
        }
        eprintln!("{report}");
        assert!(overlaps == 0 && counter == expected, "{report}");
        assert!(
            observer.children(&self.lock_path).await.is_empty(),
            "lock nodes left behind"
        );
    }
}

/// Random think times (xorshift, seeded by the participant's name and the clock).
struct Think(u64);

impl Think {
    fn new(who: &str) -> Think {
        let seed = who.bytes().fold(0x9e3779b97f4a7c15u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
        });
        let clock = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        Think((seed ^ clock) | 1)
    }

    /// Uniform in `0..=max`, in milliseconds.
    fn next(&mut self, max: Duration) -> Duration {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        Duration::from_millis(self.0 % (max.as_millis() as u64 + 1))
    }
}

async fn read_counter(client: &zookeeper_client::Client, path: &str) -> u64 {
    let (data, _) = client.get_data(path).await.expect("reading the counter");
    std::str::from_utf8(&data)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("counter {path} holds {data:?}"))
}

/// The phases of the read/write counter workload: writers only, then readers and
/// writers together.
pub const RW_PHASES: &[&[Kind]] = &[&[Kind::Write], &[Kind::Write, Kind::Read]];

/// Runs the counter workload on one lock path: `peers` processes of `library` and a
/// zklock session per scheme of `schemes`, phase after phase; in each phase every
/// process and session runs one participant per kind of the phase, all at once,
/// then the counter and the overlaps so far are checked. Returns the workload (its
/// interval log is under its `root`).
///
/// (A phase of writers only is the sharpest test of writer exclusion: with readers
/// of both libraries in the queue, a writer that ignores the other library's
/// writers is often held back anyway, transitively, by a reader queued behind them.)
pub async fn counter_workload(
    rt: &Runtime,
    library: Library,
    lock_path: &str,
    phases: &[&[Kind]],
    peers: usize,
    schemes: &[NameScheme],
    iterations: u32,
) -> Workload {
    let connect = crate::common::server().connect_string();
    let observer = Observer::connect(&connect).await;
    let work = Workload::prepare(&observer, lock_path, iterations, Duration::from_millis(10)).await;
    let (mut running, zklock) = start_fleet(rt, library, &connect, peers, schemes.len()).await;

    let mut tallies = Vec::new();
    for (phase, kinds) in phases.iter().enumerate() {
        let slot = |kind: Kind| format!("{}{}", kind.word(), phase + 1);
        let begin = Instant::now();
        for peer in &mut running {
            for kind in kinds.iter() {
                work.start_peer(peer, &slot(*kind), *kind);
            }
        }
        let mut ours = Vec::new();
        for (i, (locks, &scheme)) in zklock.iter().zip(schemes).enumerate() {
            for kind in kinds.iter() {
                let who = format!("zklock{}-{}", i + 1, slot(*kind));
                ours.push(work.start_zklock(rt, &connect, locks, scheme, *kind, &who));
            }
        }
        for peer in &mut running {
            for kind in kinds.iter() {
                tallies.push(work.peer_tally(peer, &slot(*kind), *kind).await);
            }
        }
        for rx in ours {
            tallies.push(received(rx, "a zklock worker").await);
        }
        let label = format!("phase {} of {} ({kinds:?})", phase + 1, phases.len());
        work.check(&observer, &label, &tallies, begin.elapsed())
            .await;
    }
    for locks in zklock {
        locks.close().await;
    }
    work
}

/// Starts `peers` peer processes of `library` (named `<library><i>`, in parallel: a
/// JVM takes a second or more to come up) and connects `zklock_sessions` zklock
/// sessions, all to `connect`.
pub async fn start_fleet(
    rt: &Runtime,
    library: Library,
    connect: &str,
    peers: usize,
    zklock_sessions: usize,
) -> (Vec<Peer>, Vec<LockClient>) {
    let started: Vec<_> = (0..peers)
        .map(|i| {
            let connect = connect.to_owned();
            let name = format!("{}{}", library.name(), i + 1);
            crate::common::spawn(rt, async move {
                Peer::start_library(library, &connect, &name).await
            })
        })
        .collect();
    let mut sessions = Vec::new();
    for _ in 0..zklock_sessions {
        sessions.push(crate::common::connect(rt, connect, Duration::from_secs(10)).await);
    }
    let mut running = Vec::new();
    for rx in started {
        running.push(received(rx, "starting a peer").await);
    }
    (running, sessions)
}
