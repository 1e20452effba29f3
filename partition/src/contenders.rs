//! Contender processes on the lab's nodes: zklock over either binding (this
//! crate's `contender` program), Curator (`contenders/CuratorContender.java`,
//! compiled here) and kazoo (`contenders/kazoo_contender.py`), their histories
//! merged as they come. The partition tests and the tolerance bench start them.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use crate::history::{Event, EventKind, Nanos};
use lock_testkit::{NetEnsemble, NetLab, NodeId, ZkEnsemble};

const CURATOR_SOURCE: &str = include_str!("../contenders/CuratorContender.java");
const KAZOO_SOURCE: &str = include_str!("../contenders/kazoo_contender.py");

/// How long one step may take (a contender starting, a grant, a server
/// serving again) before a test or bench gives up.
pub const STEP: Duration = Duration::from_secs(40);

/// A lab and an ensemble of `size` servers in it (tickTime `tick`, syncLimit 4,
/// initLimit 10), each server in a network namespace of its own.
pub fn start_ensemble(tick: Duration, size: usize) -> (NetLab, NetEnsemble) {
    let mut lab = NetLab::new().unwrap_or_else(|e| panic!("{e}"));
    let builder = ZkEnsemble::builder()
        .tick_time(tick)
        .sync_limit(4)
        .init_limit(10);
    let zk = lab
        .start_ensemble(builder, size)
        .unwrap_or_else(|e| panic!("{e}"));
    (lab, zk)
}

/// Where the contenders' programs are: Cargo tells a test or bench of this
/// crate (`CARGO_BIN_EXE_contender`, `CARGO_TARGET_TMPDIR`), not the library.
pub struct Programs {
    /// The `contender` program of this crate (zklock over either binding).
    pub contender: PathBuf,
    /// Where the Curator contender is compiled.
    pub build_dir: PathBuf,
}

/// Which client library a contender runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// zklock over lock-zookeeper-client.
    Async,
    /// zklock over lock-zookeeper.
    Blocking,
    /// Apache Curator 5.4.
    Curator,
    /// kazoo 2.8.
    Kazoo,
}

impl Kind {
    /// The first word of the contender's name (what `binding_of` reads back).
    pub fn word(self) -> &'static str {
        match self {
            Kind::Async => "async",
            Kind::Blocking => "blocking",
            Kind::Curator => "curator",
            Kind::Kazoo => "kazoo",
        }
    }
}

/// Every contender's events, merged as they arrive.
#[derive(Default)]
pub struct Histories {
    events: Mutex<Vec<Event>>,
    arrived: Condvar,
}

impl Histories {
    fn push(&self, event: Event) {
        self.events.lock().unwrap().push(event);
        self.arrived.notify_all();
    }

    /// Waits until an event matches `wanted`; its time, or `None` after `timeout`.
    pub fn wait_for(&self, timeout: Duration, wanted: impl Fn(&Event) -> bool) -> Option<Nanos> {
        let deadline = Instant::now() + timeout;
        let mut events = self.events.lock().unwrap();
        loop {
            if let Some(event) = events.iter().find(|e| wanted(e)) {
                return Some(event.at);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            events = self.arrived.wait_timeout(events, left).unwrap().0;
        }
    }

    /// Everything so far, in time order.
    pub fn snapshot(&self) -> Vec<Event> {
        let mut events = self.events.lock().unwrap().clone();
        events.sort_by_key(|e| e.at);
        events
    }
}

/// What a contender does.
pub struct Spec {
    /// Its library.
    pub kind: Kind,
    /// Its name, `<kind word>-...`.
    pub name: String,
    /// The lock path it contends for.
    pub lock: String,
    /// The zklock naming scheme (`curator` or `kazoo`) for zklock contenders.
    pub scheme: &'static str,
    /// The session timeout it asks for.
    pub session_timeout: Duration,
    /// zklock contenders: `--busy reads|writes` while holding, or idle (`None`).
    pub busy: Option<&'static str>,
}

/// A running contender process on its own node.
pub struct Contender {
    /// Its name ([`Spec::name`]).
    pub name: String,
    /// Its library.
    pub kind: Kind,
    /// The lab's node it runs on.
    pub node: NodeId,
    child: Child,
    stdin: Option<ChildStdin>,
    stderr: Arc<Mutex<String>>,
}

impl Contender {
    /// Starts the contender of `spec` on a new node of the lab (named after it),
    /// connected to `connect`.
    pub fn start(
        programs: &Programs,
        lab: &mut NetLab,
        connect: &str,
        spec: &Spec,
        histories: &Arc<Histories>,
    ) -> Contender {
        let node = lab.add_node(&spec.name).unwrap();
        let timeout_ms = spec.session_timeout.as_millis().to_string();
        // Curator's and kazoo's: their connection, then hold ms and pause ms.
        let peer_args = [connect, &spec.lock, &spec.name, &timeout_ms, "300", "100"];
        let mut command = match spec.kind {
            Kind::Async | Kind::Blocking => {
                let mut command = lab.command(node, &programs.contender);
                command
                    .args([spec.kind.word(), connect, &spec.lock, &spec.name])
                    .args(["--scheme", spec.scheme, "--session-timeout-ms", &timeout_ms]);
                if let Some(work) = spec.busy {
                    command.args(["--busy", work]);
                }
                command
            }
            Kind::Curator => {
                let (java, classpath) = curator_classpath(&programs.build_dir);
                let mut command = lab.command(node, java);
                command
                    .args(["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx128m"])
                    .arg("-cp")
                    .arg(classpath)
                    .arg("CuratorContender")
                    .args(peer_args);
                command
            }
            Kind::Kazoo => {
                let mut command = lab.command(node, "/usr/bin/python3");
                command.args(["-c", KAZOO_SOURCE]).args(peer_args);
                command
            }
        };
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("starting contender {}: {e}", spec.name));
        let stdout = child.stdout.take().unwrap();
        thread::spawn({
            let histories = histories.clone();
            let name = spec.name.clone();
            move || {
                for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                    match Event::parse(&line) {
                        Ok(event) => histories.push(event),
                        Err(e) => eprintln!("[{name}] {e}"),
                    }
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut err = child.stderr.take().unwrap();
        thread::spawn({
            let stderr = stderr.clone();
            move || {
                let mut buf = [0u8; 4096];
                while let Ok(n @ 1..) = err.read(&mut buf) {
                    let mut text = stderr.lock().unwrap();
                    if text.len() < 64 * 1024 {
                        text.push_str(&String::from_utf8_lossy(&buf[..n]));
                    }
                }
            }
        });
        Contender {
            name: spec.name.clone(),
            kind: spec.kind,
            node,
            stdin: child.stdin.take(),
            child,
            stderr,
        }
    }

    /// Waits up to `within` for its `ready` line; panics, with its stderr, if
    /// it does not come.
    pub fn wait_ready(&mut self, histories: &Histories, within: Duration) {
        let ready = EventKind::Other("ready".into());
        if histories
            .wait_for(within, |e| e.client == self.name && e.kind == ready)
            .is_none()
        {
            panic!("not ready: {}", self.what_went_wrong());
        }
    }

    /// Makes the next hold last until the lock is lost.
    pub fn stick(&mut self) {
        let stdin = self.stdin.as_mut().expect("running");
        if stdin
            .write_all(b"stick\n")
            .and_then(|()| stdin.flush())
            .is_err()
        {
            let why = self.what_went_wrong();
            panic!("contender is gone: {why}");
        }
    }

    /// Its status and stderr, for a failure message.
    fn what_went_wrong(&mut self) -> String {
        let status = match self.child.try_wait() {
            Ok(Some(status)) => format!("exited ({status})"),
            _ => "running".to_string(),
        };
        format!(
            "{} {status}; stderr:\n{}",
            self.name,
            self.stderr.lock().unwrap()
        )
    }

    /// Ends its input (it releases, closes its session and exits) and waits up
    /// to `grace` before killing it.
    pub fn stop(&mut self, grace: Duration) {
        drop(self.stdin.take());
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Contender {
    fn drop(&mut self) {
        if self.stdin.is_some() {
            self.stop(Duration::from_secs(5));
        }
    }
}

/// The `java` executable and the classpath (compiled contender + Curator jars),
/// compiling the contender in `build_dir` the first time.
fn curator_classpath(build_dir: &Path) -> (PathBuf, String) {
    static CLASSPATH: OnceLock<(PathBuf, String)> = OnceLock::new();
    CLASSPATH
        .get_or_init(|| {
            lock_testkit::curator_peer(CURATOR_SOURCE, "CuratorContender", build_dir)
                .unwrap_or_else(|e| panic!("{e}"))
        })
        .clone()
}
