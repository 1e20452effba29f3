//! Starting the worker processes: the command for each library (this binary,
//! Curator's compiled worker, kazoo's script) and the coordinator's handle on a
//! running worker (a `LinePeer`: its stdin and stdout, its RSS and CPU time).

use crate::case::CaseConfig;
use lock_testkit::measure::LinePeer;
use std::path::PathBuf;
use std::process::Command;

const CURATOR_SOURCE: &str = include_str!("../peers/CuratorFleet.java");
const KAZOO_SOURCE: &str = include_str!("../peers/kazoo_fleet.py");

/// How to start a worker of a peer library: Curator's compiled class and
/// classpath, kazoo's Python and script.
pub(crate) enum Peers {
    Rust,
    Curator { java: PathBuf, classpath: String },
    Kazoo { python: PathBuf, script: PathBuf },
}

impl Peers {
    /// Compiles the Curator worker or writes the kazoo script, next to the
    /// worker binary (`<target>/<profile>/`). Panics with the fix when Java,
    /// Curator's jars or kazoo are missing.
    pub(crate) fn prepare(config: &CaseConfig) -> Peers {
        let target = config
            .worker_exe
            .parent()
            .and_then(|p| p.parent())
            .expect("the target directory");
        let build = target.join("fleet-peers");
        std::fs::create_dir_all(&build).expect("the peers' build directory");
        match config.workload.library.as_str() {
            "curator" => {
                let (java, classpath) = lock_testkit::curator_peer(CURATOR_SOURCE, "CuratorFleet", &build)
                    .unwrap_or_else(|e| panic!("the Curator worker: {e} (scripts/install-deps.sh installs Java and Curator)"));
                Peers::Curator { java, classpath }
            }
            "kazoo" => {
                let script = build.join("kazoo_fleet.py");
                std::fs::write(&script, KAZOO_SOURCE).expect("writing kazoo_fleet.py");
                let python = std::env::var_os("FLEET_KAZOO_PYTHON")
                    .map_or_else(|| target.join("kazoo-venv/bin/python"), PathBuf::from);
                assert!(
                    python.exists(),
                    "{} is missing: scripts/install-deps.sh makes <target>/kazoo-venv with kazoo \
                     (or set FLEET_KAZOO_PYTHON to a Python with kazoo)",
                    python.display()
                );
                Peers::Kazoo { python, script }
            }
            _ => Peers::Rust,
        }
    }
}

/// The command that starts one worker (its `key=value` words still to add).
pub(crate) fn worker_command(config: &CaseConfig, peers: &Peers) -> Command {
    match peers {
        Peers::Rust => {
            let mut c = Command::new(&config.worker_exe);
            c.arg("worker");
            c
        }
        Peers::Curator { java, classpath } => {
            let mut c = Command::new(java);
            // Thousands of threads (a session's own, ZooKeeper's two, Curator's): small stacks.
            c.args([
                "-Xmx1g",
                "-Xss512k",
                "-XX:+UseSerialGC",
                "-cp",
                classpath,
                "CuratorFleet",
            ]);
            c
        }
        Peers::Kazoo { python, script } => {
            let mut c = Command::new(python);
            c.arg(script);
            c
        }
    }
}

/// A running worker process, as the coordinator drives it.
pub(crate) struct Worker {
    pub(crate) process: LinePeer,
    /// Its record file.
    pub(crate) out: PathBuf,
}

impl Worker {
    /// Sends `line` to the worker.
    pub(crate) fn send(&mut self, line: &str) {
        self.process.send(line).expect("writing to a worker");
    }

    /// The worker's next line, which must start with `word`.
    pub(crate) fn expect(&mut self, word: &str) -> String {
        let pid = self.process.pid();
        let line = (self.process.read_line()).unwrap_or_else(|e| panic!("worker {pid}: {e}"));
        assert!(
            line.starts_with(word),
            "worker {pid}: expected {word:?}, got {line:?}"
        );
        line.trim().to_owned()
    }
}
