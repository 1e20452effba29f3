//! The libraries side by side, each in a process of its own that speaks one line
//! protocol (commands on stdin, one reply line each: `peers/CuratorBench.java`
//! describes it): Curator in a JVM, kazoo in Python, and zklock, the bare-client
//! floor and zookeeper-client's `Client::lock` in this bench binary started again
//! as a peer (`rust_peer.rs`). Every time is measured inside the peer; this side
//! reads the peer's RSS and CPU time from `/proc`.

use lock_testkit::measure::LinePeer;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const CURATOR_SOURCE: &str = include_str!("../peers/CuratorBench.java");
const KAZOO_SOURCE: &str = include_str!("../peers/kazoo_bench.py");

/// One library of the comparison.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Library {
    Zklock,
    /// The bare zookeeper-client doing zklock's requests (`lock_testkit::floor`).
    Floor,
    /// zookeeper-client 0.11's own `Client::lock` (Curator's node names).
    Recipe,
    Curator,
    Kazoo,
}

pub const ALL: [Library; 5] = [
    Library::Zklock,
    Library::Floor,
    Library::Recipe,
    Library::Curator,
    Library::Kazoo,
];

impl Library {
    pub fn key(self) -> &'static str {
        match self {
            Library::Zklock => "zklock",
            Library::Floor => "floor",
            Library::Recipe => "recipe",
            Library::Curator => "curator",
            Library::Kazoo => "kazoo",
        }
    }

    pub fn parse(key: &str) -> Library {
        ALL.into_iter().find(|l| l.key() == key).unwrap_or_else(|| {
            panic!("unknown library {key:?} (zklock, floor, recipe, curator, kazoo)")
        })
    }

    /// The name in tables and charts.
    pub fn label(self) -> &'static str {
        match self {
            Library::Zklock => "zklock",
            Library::Floor => "floor (bare zookeeper-client)",
            Library::Recipe => "zookeeper-client `Client::lock`",
            Library::Curator => "Curator `InterProcessMutex`",
            Library::Kazoo => "kazoo `Lock`",
        }
    }

    /// Whether a waiting acquisition costs a thread (a blocking `acquire()`).
    pub fn thread_per_waiter(self) -> bool {
        matches!(self, Library::Curator | Library::Kazoo)
    }
}

/// Where the peers come from: the compiled Curator class, kazoo's Python, this binary.
pub struct Launcher {
    java: Option<(PathBuf, String)>,
    python: PathBuf,
    kazoo_script: PathBuf,
    pub versions: Vec<(Library, String)>,
}

impl Launcher {
    /// Compiles the Curator peer and writes the kazoo script under `build_dir`.
    /// Panics with the fix when Java, Curator's jars or kazoo are missing.
    pub fn prepare(build_dir: &Path, libraries: &[Library]) -> Launcher {
        std::fs::create_dir_all(build_dir).expect("build dir");
        let java = libraries.contains(&Library::Curator).then(|| {
            lock_testkit::curator_peer(CURATOR_SOURCE, "CuratorBench", build_dir).unwrap_or_else(
                |e| panic!("the Curator peer: {e} (scripts/test.sh installs Java and Curator)"),
            )
        });
        let kazoo_script = build_dir.join("kazoo_bench.py");
        std::fs::write(&kazoo_script, KAZOO_SOURCE).expect("writing kazoo_bench.py");
        let python = kazoo_python(build_dir);
        let mut versions = vec![(
            Library::Zklock,
            format!(
                "zklock {} (lock-core, lock-client)",
                env!("CARGO_PKG_VERSION")
            ),
        )];
        versions.push((Library::Floor, "zookeeper-client 0.11.2".into()));
        versions.push((
            Library::Recipe,
            "zookeeper-client 0.11.2 `Client::lock`".into(),
        ));
        if libraries.contains(&Library::Curator) {
            versions.push((Library::Curator, curator_version()));
        }
        if libraries.contains(&Library::Kazoo) {
            let out = Command::new(&python)
                .args([
                    "-c",
                    "import kazoo.version as v, sys; print(v.__version__, sys.version.split()[0])",
                ])
                .output()
                .unwrap_or_else(|e| panic!("running {}: {e}", python.display()));
            let text = String::from_utf8_lossy(&out.stdout).trim().to_owned();
            assert!(
                out.status.success() && !text.is_empty(),
                "kazoo is missing from {}: scripts/test.sh installs it into <target>/kazoo-venv \
                 (or set COMPARE_KAZOO_PYTHON to a Python with kazoo)",
                python.display()
            );
            let (kazoo, py) = text.split_once(' ').unwrap_or((&text, "?"));
            versions.push((Library::Kazoo, format!("kazoo {kazoo} (Python {py})")));
        }
        Launcher {
            java,
            python,
            kazoo_script,
            versions,
        }
    }

    /// Starts a peer of `library` with `sessions` sessions to `cluster` and waits
    /// until it has connected them all.
    pub fn start(&self, library: Library, cluster: &str, sessions: usize) -> Peer {
        let timeout_ms = super::SESSION_TIMEOUT.as_millis().to_string();
        let sessions = sessions.to_string();
        let mut command = match library {
            Library::Curator => {
                let (java, classpath) = self.java.as_ref().expect("Curator prepared");
                let mut c = Command::new(java);
                c.arg("-cp").arg(classpath).arg("CuratorBench");
                c
            }
            Library::Kazoo => {
                let mut c = Command::new(&self.python);
                c.arg(&self.kazoo_script);
                c
            }
            _ => {
                let mut c = Command::new(std::env::current_exe().expect("current exe"));
                c.env(super::PEER_ENV, library.key());
                c
            }
        };
        command
            .args([cluster, &sessions, &timeout_ms])
            .stderr(Stdio::inherit());
        let process = LinePeer::spawn(&mut command, format!("the {} peer", library.key()))
            .unwrap_or_else(|e| panic!("{e}"));
        let mut peer = Peer { library, process };
        let ready = peer.read_line();
        assert_eq!(ready, "ready", "the {} peer did not start", library.key());
        peer
    }
}

/// Curator's version, from the versioned jar name Debian installs beside
/// `curator-recipes.jar`, and the JVM's.
fn curator_version() -> String {
    let version = std::fs::read_dir("/usr/share/java")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_prefix("curator-recipes-")?
                .strip_suffix(".jar")
                .map(str::to_owned)
        })
        .next()
        .unwrap_or_else(|| "?".into());
    let java = Command::new("java")
        .arg("-version")
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stderr)
                .lines()
                .next()
                .unwrap_or("")
                .to_owned()
        })
        .unwrap_or_default();
    format!("Curator {version} ({})", java.replace('"', ""))
}

/// `COMPARE_KAZOO_PYTHON`, or the virtualenv scripts/test.sh makes in the target dir.
fn kazoo_python(build_dir: &Path) -> PathBuf {
    if let Some(p) = std::env::var_os("COMPARE_KAZOO_PYTHON") {
        return PathBuf::from(p);
    }
    // build_dir is <target>/compare.
    build_dir
        .parent()
        .expect("target dir")
        .join("kazoo-venv/bin/python")
}

/// A running peer.
pub struct Peer {
    pub library: Library,
    process: LinePeer,
}

impl Peer {
    fn read_line(&mut self) -> String {
        self.process.read_line().unwrap_or_else(|e| panic!("{e}"))
    }

    /// Sends one command and returns the words of its `ok` reply.
    pub fn call(&mut self, command: &str) -> Vec<String> {
        self.process.send(command).expect("writing to a peer");
        let line = self.read_line();
        let mut words = line.split(' ').map(str::to_owned);
        match words.next().as_deref() {
            Some("ok") => words.collect(),
            _ => panic!("the {} peer, on {command:?}: {line}", self.library.key()),
        }
    }

    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// CPU time (user + system) the peer has used so far, in 10 ms ticks
    /// (`/proc/<pid>/stat`), threads that exited included.
    pub fn cpu(&self) -> Duration {
        self.process.cpu_time()
    }

    /// Time on CPU of each of the peer's threads, in ns (`/proc/<pid>/task/*/schedstat`):
    /// precise, but a thread's time is gone once it exits.
    pub fn thread_cpu(&self) -> ThreadCpu {
        let mut by_thread = std::collections::HashMap::new();
        let tasks = std::fs::read_dir(format!("/proc/{}/task", self.pid()));
        for task in tasks.into_iter().flatten().flatten() {
            let stat = std::fs::read_to_string(task.path().join("schedstat")).unwrap_or_default();
            if let Some(ns) = stat
                .split_whitespace()
                .next()
                .and_then(|v| v.parse::<u64>().ok())
            {
                by_thread.insert(task.file_name().to_string_lossy().into_owned(), ns);
            }
        }
        ThreadCpu(by_thread)
    }

    /// Voluntary context switches of the peer's live threads so far
    /// (`/proc/<pid>/task/*/status`): each one a thread that slept until it was
    /// woken, so their growth over a step counts the step's wake-ups.
    pub fn voluntary_switches(&self) -> u64 {
        let tasks = std::fs::read_dir(format!("/proc/{}/task", self.pid()));
        tasks
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|task| std::fs::read_to_string(task.path().join("status")).ok())
            .filter_map(|status| {
                status.lines().find_map(|l| {
                    l.strip_prefix("voluntary_ctxt_switches:")
                        .and_then(|v| v.trim().parse::<u64>().ok())
                })
            })
            .sum()
    }

    /// The peer's resident set, in bytes.
    pub fn rss(&self) -> u64 {
        self.process.rss_kib() * 1024
    }

    /// Closes the peer's sessions and waits for it to exit.
    pub fn quit(mut self) {
        let _ = self.process.send("quit");
        let _ = self.process.wait();
    }
}

/// Parses a comma-separated list of nanoseconds.
pub fn nanos(csv: &str) -> Vec<Duration> {
    csv.split(',')
        .filter(|s| !s.is_empty())
        .map(|s| Duration::from_nanos(s.parse().expect("a peer's number")))
        .collect()
}

/// Per-thread CPU time of a peer at one instant ([`Peer::thread_cpu`]).
pub struct ThreadCpu(std::collections::HashMap<String, u64>);

impl ThreadCpu {
    /// CPU used since `earlier` by the threads alive now (threads started since
    /// count from zero).
    pub fn since(&self, earlier: &ThreadCpu) -> Duration {
        let ns: u64 = self
            .0
            .iter()
            .map(|(tid, ns)| ns.saturating_sub(earlier.0.get(tid).copied().unwrap_or(0)))
            .sum();
        Duration::from_nanos(ns)
    }
}
