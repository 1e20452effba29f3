//! The peer processes: Curator in a JVM, kazoo in Python, go-zookeeper in Go, driven line by line.
use futures::channel::mpsc;
use futures::StreamExt;
use lock_core::NameScheme;
use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How long to wait for any one line from a peer (lock waits in the peers are 60 s;
/// the machine may be busy with other builds).
pub(super) const REPLY_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a zklock participant waits for a lock.
pub(super) const LOCK_TIMEOUT: Duration = Duration::from_secs(60);

const CURATOR_SOURCE: &str = include_str!("../../peers/CuratorPeer.java");
const KAZOO_SOURCE: &str = include_str!("../../peers/kazoo_peer.py");

/// The other library in an interop test.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Library {
    /// Apache Curator 5.4 (Java).
    Curator,
    /// kazoo 2.8 (Python), Debian's.
    Kazoo,
    /// The newest kazoo release from PyPI, in a virtualenv in the target directory
    /// (see [`pypi_kazoo_python`]).
    KazooPypi,
    /// go-zookeeper's `Lock` (Go), Debian's snapshot, built at test time (see
    /// [`go_peer_binary`]).
    Go,
}

impl Library {
    pub fn name(self) -> &'static str {
        match self {
            Library::Curator => "curator",
            Library::Kazoo => "kazoo",
            Library::KazooPypi => "kazoo-pypi",
            Library::Go => "go",
        }
    }

    fn install_hint(self) -> &'static str {
        match self {
            Library::Curator => {
                "the Curator peer needs javac/java 17 and Debian's libcurator-recipes-java \
                 (scripts/test.sh installs them)"
            }
            Library::Kazoo => {
                "the kazoo peer needs /usr/bin/python3 with Debian's python3-kazoo \
                 (scripts/test.sh installs it)"
            }
            Library::KazooPypi => {
                "the PyPI kazoo peer needs the newest kazoo in a virtualenv at \
                 <target dir>/kazoo-venv (scripts/test.sh installs it)"
            }
            Library::Go => {
                "the Go peer needs Debian's golang-go and golang-github-samuel-go-zookeeper-dev \
                 (scripts/test.sh installs them)"
            }
        }
    }

    /// The zklock naming scheme that shares lock paths with this library.
    pub fn scheme(self) -> NameScheme {
        match self {
            Library::Curator => NameScheme::Curator,
            Library::Kazoo | Library::KazooPypi => NameScheme::Kazoo,
            Library::Go => NameScheme::Go,
        }
    }
}

/// The Python of the virtualenv holding the newest kazoo from PyPI:
/// `<target dir>/kazoo-venv/bin/python`, made by `scripts/test.sh` (`python3 -m venv`,
/// then `pip install --upgrade kazoo`). Panics saying so when it is missing: the
/// kazoo interop tests run against that release as well as Debian's, so that a kazoo
/// upgrade cannot silently break interop.
pub fn pypi_kazoo_python() -> PathBuf {
    // CARGO_TARGET_TMPDIR is `<target dir>/tmp`.
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the target directory")
        .to_path_buf();
    let python = target.join("kazoo-venv").join("bin").join("python");
    assert!(
        python.is_file(),
        "the PyPI kazoo interop tests need a virtualenv with the newest kazoo at {}; \
         scripts/test.sh makes it (or: /usr/bin/python3 -m venv {venv} && \
         {venv}/bin/pip install --upgrade kazoo)",
        python.display(),
        venv = target.join("kazoo-venv").display()
    );
    python
}

/// What a participant asks for.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    /// An exclusive lock (Curator `InterProcessMutex`, kazoo `Lock`, zklock `mutex`).
    Mutex,
    /// The shared half of a read/write lock.
    Read,
    /// The exclusive half of a read/write lock.
    Write,
}

impl Kind {
    pub(super) fn word(self) -> &'static str {
        match self {
            Kind::Mutex => "mutex",
            Kind::Read => "read",
            Kind::Write => "write",
        }
    }

    pub fn exclusive(self) -> bool {
        self != Kind::Read
    }
}

// ---------------------------------------------------------------------------------
// Peer processes
// ---------------------------------------------------------------------------------

/// A peer process (one client session of the other library), driven over stdin/stdout.
pub struct Peer {
    pub library: Library,
    pub name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::UnboundedReceiver<String>,
    /// Replies read but not yet asked for, per slot.
    pending: HashMap<String, VecDeque<Vec<String>>>,
    transcript: Arc<Mutex<Vec<String>>>,
    stderr: Arc<Mutex<String>>,
}

impl Peer {
    /// Starts a peer of `library`.
    pub async fn start_library(library: Library, connect: &str, name: &str) -> Peer {
        Self::start_with_session(library, connect, name, Duration::from_secs(10)).await
    }

    /// Starts a peer of `library` whose session has the given timeout.
    pub async fn start_with_session(
        library: Library,
        connect: &str,
        name: &str,
        session: Duration,
    ) -> Peer {
        let session_ms = session.as_millis().to_string();
        let command = match library {
            Library::Curator => {
                let (java, classpath) = curator_classpath();
                let mut command = Command::new(java);
                command
                    // Start fast: the peer runs for seconds, not hours.
                    .args(["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xss512k"])
                    .arg("-cp")
                    .arg(classpath)
                    .args(["CuratorPeer", connect, name, &session_ms]);
                command
            }
            Library::Kazoo | Library::KazooPypi => {
                let python = match library {
                    Library::KazooPypi => pypi_kazoo_python(),
                    _ => PathBuf::from("/usr/bin/python3"),
                };
                let mut command = Command::new(python);
                command.args(["-c", KAZOO_SOURCE, connect, name, &session_ms]);
                command
            }
            Library::Go => {
                let mut command = Command::new(go_peer_binary());
                command.args([connect, name, &session_ms]);
                command
            }
        };
        Self::start(library, name, command).await
    }

    async fn start(library: Library, name: &str, mut command: Command) -> Peer {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "starting the {} peer {command:?}: {e}; {}",
                    library.name(),
                    library.install_hint()
                )
            });
        let (tx, lines) = mpsc::unbounded();
        let transcript = Arc::new(Mutex::new(Vec::new()));
        let stdout = child.stdout.take().expect("stdout");
        let tag = format!("{}:{name}", library.name());
        std::thread::spawn({
            let transcript = transcript.clone();
            let tag = tag.clone();
            move || {
                for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                    eprintln!("[{tag}] {line}");
                    transcript.lock().unwrap().push(line.clone());
                    if tx.unbounded_send(line).is_err() {
                        break;
                    }
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut err = child.stderr.take().expect("stderr");
        std::thread::spawn({
            let stderr = stderr.clone();
            move || {
                let mut buf = [0u8; 4096];
                while let Ok(n @ 1..) = err.read(&mut buf) {
                    let mut s = stderr.lock().unwrap();
                    // Keep the beginning (the cause of a failed start) within bounds.
                    if s.len() < 64 * 1024 {
                        s.push_str(&String::from_utf8_lossy(&buf[..n]));
                    }
                }
            }
        });
        let stdin = child.stdin.take();
        let mut peer = Peer {
            library,
            name: name.to_owned(),
            child,
            stdin,
            lines,
            pending: HashMap::new(),
            transcript,
            stderr,
        };
        peer.expect("_", "READY").await;
        peer
    }

    fn what_went_wrong(&mut self) -> String {
        let status = match self.child.try_wait() {
            Ok(Some(status)) => format!("exited ({status})"),
            _ => "running".to_owned(),
        };
        let install = self.library.install_hint();
        format!(
            "{} peer {} {status}; {install}\n--- its stdout ---\n{}\n--- its stderr ---\n{}",
            self.library.name(),
            self.name,
            self.transcript.lock().unwrap().join("\n"),
            self.stderr.lock().unwrap()
        )
    }

    /// Sends `<slot> <op>`.
    pub fn send(&mut self, slot: &str, op: &str) {
        let line = format!("{slot} {op}\n");
        let ok = self.stdin.as_mut().is_some_and(|stdin| {
            stdin
                .write_all(line.as_bytes())
                .and_then(|_| stdin.flush())
                .is_ok()
        });
        if !ok {
            let why = self.what_went_wrong();
            panic!("sending {line:?}: {why}");
        }
    }

    /// The next reply of `slot` (its words after the slot); panics on `ERROR`, on a
    /// timeout, or if the peer exits.
    pub async fn reply(&mut self, slot: &str) -> Vec<String> {
        let deadline = Instant::now() + REPLY_TIMEOUT;
        loop {
            if let Some(words) = self.pending.get_mut(slot).and_then(VecDeque::pop_front) {
                if words.first().map(String::as_str) == Some("ERROR") {
                    let why = self.what_went_wrong();
                    panic!("slot {slot}: {}\n{why}", words.join(" "));
                }
                return words;
            }
            let wait = deadline.saturating_duration_since(Instant::now());
            match crate::common::bounded(wait, self.lines.next()).await {
                Some(Some(line)) => self.file(&line),
                Some(None) => {
                    let why = self.what_went_wrong();
                    panic!("waiting for slot {slot}: the peer closed its output\n{why}");
                }
                None => {
                    let why = self.what_went_wrong();
                    panic!("slot {slot} said nothing for {REPLY_TIMEOUT:?}\n{why}");
                }
            }
        }
    }

    /// The next reply of `slot`, which must be `word`; returns its arguments.
    pub async fn expect(&mut self, slot: &str, word: &str) -> Vec<String> {
        let mut words = self.reply(slot).await;
        assert_eq!(
            words.first().map(String::as_str),
            Some(word),
            "{} peer {} slot {slot}: expected {word}, got {words:?}",
            self.library.name(),
            self.name
        );
        words.remove(0);
        words
    }

    /// Files a line from the peer under its slot; panics on an `ERROR` of no slot (`_`).
    fn file(&mut self, line: &str) {
        let mut words: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
        if words.is_empty() {
            return;
        }
        let from = words.remove(0);
        if from == "_" && words.first().map(String::as_str) == Some("ERROR") {
            let why = self.what_went_wrong();
            panic!("{}\n{why}", words.join(" "));
        }
        self.pending.entry(from).or_default().push_back(words);
    }

    /// Whether `slot` has said nothing yet (that has arrived).
    pub fn quiet(&mut self, slot: &str) -> bool {
        while let Ok(line) = self.lines.try_recv() {
            self.file(&line);
        }
        self.pending.get(slot).is_none_or(|q| q.is_empty())
    }

    /// Asks `slot` to wait for the lock (see [`Peer::held`] for the answer).
    pub fn start_acquire(&mut self, slot: &str, kind: &str, path: &str) {
        self.send(slot, &format!("acquire {kind} {path}"));
    }

    /// Waits for `slot` to report holding; returns its node name.
    pub async fn held(&mut self, slot: &str) -> String {
        self.expect(slot, "HELD").await.remove(0)
    }

    /// Takes the lock in `slot`, waiting; returns the node name.
    pub async fn acquire(&mut self, slot: &str, kind: Kind, path: &str) -> String {
        self.start_acquire(slot, kind.word(), path);
        self.held(slot).await
    }

    /// One look (Curator's `acquire(0)`, kazoo's `acquire(blocking=False)`): the node
    /// name if the lock was free. The peer removes its node before answering busy.
    pub async fn try_acquire(&mut self, slot: &str, kind: Kind, path: &str) -> Option<String> {
        self.send(slot, &format!("try {} {path}", kind.word()));
        let mut words = self.reply(slot).await;
        match words.first().map(String::as_str) {
            Some("HELD") => Some(words.remove(1)),
            Some("BUSY") => None,
            _ => panic!("slot {slot}: expected HELD or BUSY, got {words:?}"),
        }
    }

    /// Asserts that a look of each of `kinds` (in slot `t`) finds the lock busy
    /// while `why`.
    pub async fn refused(&mut self, kinds: &[Kind], path: &str, why: &str) {
        for &kind in kinds {
            if let Some(node) = self.try_acquire("t", kind, path).await {
                panic!(
                    "a {} {kind:?} ({node}) got in while {why}",
                    self.library.name()
                );
            }
        }
    }

    /// Releases the lock `slot` holds.
    pub async fn release(&mut self, slot: &str) {
        self.send(slot, "release");
        self.expect(slot, "RELEASED").await;
    }

    /// Kills the peer process with SIGKILL (no goodbye to the server: its session
    /// lives on until the server expires it) and reaps it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// `<slot> status`: the slot's own view of its leadership.
    pub async fn status(&mut self, slot: &str) -> String {
        self.send(slot, "status");
        self.expect(slot, "STATUS").await.remove(0)
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        // End of input: the peer closes its session (its ephemeral nodes go at once) and
        // exits; kill it if it does not.
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `java` executable and the classpath (compiled peer + Curator jars) for the
/// Curator peer, compiling it the first time.
fn curator_classpath() -> (PathBuf, String) {
    static CLASSPATH: OnceLock<(PathBuf, String)> = OnceLock::new();
    CLASSPATH
        .get_or_init(|| {
            let build_dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
            lock_testkit::curator_peer(CURATOR_SOURCE, "CuratorPeer", build_dir)
                .unwrap_or_else(|e| panic!("{e}"))
        })
        .clone()
}

/// The Go peer, built once per test binary into the target's scratch directory
/// (lock-testkit's [`go_peer`](lock_testkit::go_peer)).
pub fn go_peer_binary() -> PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY
        .get_or_init(|| {
            lock_testkit::go_peer(Path::new(env!("CARGO_TARGET_TMPDIR")))
                .unwrap_or_else(|e| panic!("{e}"))
        })
        .clone()
}
