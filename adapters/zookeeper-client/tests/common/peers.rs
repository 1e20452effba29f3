//! Interop harness: real peer clients (Apache Curator in a JVM, kazoo in Python) driven
//! line by line, zklock workers, and the scenarios and the counter workload that the
//! interop tests run against both peers.
//!
//! The peers are `tests/peers/CuratorPeer.java` (compiled here with `javac` against
//! Debian's Curator 5.4 jars) and `tests/peers/kazoo_peer.py` (Debian's kazoo 2.8 under
//! `/usr/bin/python3`). Both speak the same protocol (described at the top of each):
//! commands `<slot> <op> [args]` on stdin, replies `<slot> <WORD> [args]` on stdout, one
//! thread per slot, so one process can hold a lock in one slot while it waits or tries
//! in another. A missing installation fails the test with the fix in the message.
//!
//! The counter workload: every participant loops take-lock / register under
//! `<root>/inside` / non-atomic read-sleep-write of `<root>/counter` / leave / release.
//! An exclusive holder registers `w-...` and finds an overlap if anyone else is inside;
//! a reader registers `r-...` and finds one if a `w-...` is inside (or the counter
//! changed while it read). Of two overlapping sections the later one to register
//! always sees the earlier, so no overlap goes unseen; lost updates show in the counter.
//! The read/write workload runs writers only first, then readers and writers (see
//! [`counter_workload`]).

use super::Observer;
use futures::channel::{mpsc, oneshot};
use futures::StreamExt;
use lock_core::names::parse_name;
use lock_core::{NameScheme, NodeKind};
use lock_zookeeper_client::{LockClient, LockGuard, LockSpec, LockStatus, Runtime};
use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use zookeeper_client::{Acls, CreateMode};

/// How long to wait for any one line from a peer (lock waits in the peers are 60 s;
/// the machine may be busy with other builds).
const REPLY_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a zklock participant waits for a lock.
const LOCK_TIMEOUT: Duration = Duration::from_secs(60);

const CURATOR_SOURCE: &str = include_str!("../peers/CuratorPeer.java");
const KAZOO_SOURCE: &str = include_str!("../peers/kazoo_peer.py");
const GO_SOURCE: &str = include_str!("../peers/go_peer.go");

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
    fn word(self) -> &'static str {
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
    /// Starts a Curator peer (a JVM with one CuratorFramework client) and waits until it
    /// is connected.
    pub async fn curator(connect: &str, name: &str) -> Peer {
        Self::start_library(Library::Curator, connect, name).await
    }

    /// Starts a kazoo peer (`/usr/bin/python3`, one KazooClient) and waits until it is
    /// connected.
    pub async fn kazoo(connect: &str, name: &str) -> Peer {
        Self::start_library(Library::Kazoo, connect, name).await
    }

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
            let next = {
                let line = self.lines.next();
                let timer = smol::Timer::after(wait);
                futures::pin_mut!(line);
                futures::pin_mut!(timer);
                match futures::future::select(line, timer).await {
                    futures::future::Either::Left((line, _)) => Some(line),
                    futures::future::Either::Right(_) => None,
                }
            };
            match next {
                Some(Some(line)) => {
                    let mut words: Vec<String> =
                        line.split_whitespace().map(str::to_owned).collect();
                    if words.is_empty() {
                        continue;
                    }
                    let from = words.remove(0);
                    if from == "_" && words.first().map(String::as_str) == Some("ERROR") {
                        let why = self.what_went_wrong();
                        panic!("{}\n{why}", words.join(" "));
                    }
                    self.pending.entry(from).or_default().push_back(words);
                }
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

    /// Whether `slot` has said nothing yet (that has arrived).
    pub fn quiet(&mut self, slot: &str) -> bool {
        while let Ok(line) = self.lines.try_recv() {
            let mut words: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
            if !words.is_empty() {
                let from = words.remove(0);
                self.pending.entry(from).or_default().push_back(words);
            }
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

/// The Go peer (`tests/peers/go_peer.go`), built the first time with Debian's Go 1.19
/// in GOPATH mode against Debian's go-zookeeper (`/usr/share/gocode`), no module
/// download, and cached under the target directory by the hash of its source. A
/// missing `go` or go-zookeeper fails the test saying which package to install.
pub fn go_peer_binary() -> PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY
        .get_or_init(|| {
            use std::hash::{Hash, Hasher};
            const GOCODE: &str = "/usr/share/gocode";
            let go = ["/usr/bin/go", "/usr/lib/go-1.19/bin/go"]
                .into_iter()
                .map(PathBuf::from)
                .find(|p| p.is_file())
                .unwrap_or_else(|| panic!("no `go` (/usr/bin/go): {}", Library::Go.install_hint()));
            let lock_go = Path::new(GOCODE).join("src/github.com/samuel/go-zookeeper/zk/lock.go");
            assert!(
                lock_go.is_file(),
                "no go-zookeeper at {}: {}",
                lock_go.display(),
                Library::Go.install_hint()
            );
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            GO_SOURCE.hash(&mut hasher);
            let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
                .join(format!("go-peer-{:016x}", hasher.finish()));
            let binary = dir.join("go_peer");
            if binary.is_file() {
                return binary;
            }
            // GOPATH mode: the peer as package `zklockgopeer` in a GOPATH of its own,
            // go-zookeeper from Debian's GOPATH; a per-process directory, renamed into
            // place, so that concurrent test binaries never see half a build.
            let work = dir.with_extension(format!("build-{}", std::process::id()));
            let src = work.join("src/zklockgopeer");
            std::fs::create_dir_all(&src).expect("go peer build directory");
            std::fs::write(src.join("main.go"), GO_SOURCE).expect("go peer source");
            let built = work.join("go_peer");
            let output = Command::new(&go)
                .args(["build", "-o"])
                .arg(&built)
                .arg("zklockgopeer")
                .current_dir(&work)
                .env("GOPATH", format!("{}:{GOCODE}", work.display()))
                .env("GO111MODULE", "off")
                .env("GOFLAGS", "")
                .env("GOCACHE", work.join("cache"))
                .output()
                .unwrap_or_else(|e| panic!("running {}: {e}", go.display()));
            assert!(
                output.status.success(),
                "go build of the Go peer failed ({}): {}\n{}",
                output.status,
                String::from_utf8_lossy(&output.stderr),
                Library::Go.install_hint()
            );
            std::fs::create_dir_all(&dir).expect("go peer directory");
            std::fs::rename(&built, &binary)
                .or_else(|e| if binary.is_file() { Ok(()) } else { Err(e) })
                .expect("go peer binary");
            let _ = std::fs::remove_dir_all(&work);
            binary
        })
        .clone()
}

// ---------------------------------------------------------------------------------
// zklock side
// ---------------------------------------------------------------------------------

/// Last path segment.
pub fn node_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Asserts that `name` is a node of `scheme` asking for `kind`.
pub fn assert_node(name: &str, scheme: NameScheme, kind: NodeKind, who: &str) {
    let parsed =
        parse_name(name).unwrap_or_else(|| panic!("{who}: node {name} parses in no scheme"));
    assert_eq!(
        (parsed.scheme, parsed.kind),
        (scheme, kind),
        "{who}: node {name}"
    );
}

/// Takes a zklock lock, waiting.
pub async fn zk_lock(locks: &LockClient, kind: Kind, path: &str, scheme: NameScheme) -> LockGuard {
    let deadline = Instant::now() + LOCK_TIMEOUT;
    let guard = match kind {
        Kind::Mutex => {
            locks
                .mutex(path)
                .with_scheme(scheme)
                .lock_until(deadline)
                .await
        }
        Kind::Read => {
            locks
                .rwlock(path)
                .with_scheme(scheme)
                .read()
                .lock_until(deadline)
                .await
        }
        Kind::Write => {
            locks
                .rwlock(path)
                .with_scheme(scheme)
                .write()
                .lock_until(deadline)
                .await
        }
    };
    guard.unwrap_or_else(|e| panic!("zklock {kind:?} lock on {path}: {e}"))
}

/// Starts waiting for a zklock lock in a task; the receiver gets the guard.
pub fn zk_start_lock(
    rt: &Runtime,
    locks: &LockClient,
    kind: Kind,
    path: &str,
    scheme: NameScheme,
) -> oneshot::Receiver<LockGuard> {
    let (locks, path) = (locks.clone(), path.to_owned());
    super::spawn(
        rt,
        async move { zk_lock(&locks, kind, &path, scheme).await },
    )
}

/// One look with zklock (`try_lock`). When busy, waits until the attempt's node is
/// gone again (the core deletes it after answering), i.e. until `dir` is back to
/// `before` children, so that the next step counts nodes right.
pub async fn zk_try(
    locks: &LockClient,
    kind: Kind,
    path: &str,
    scheme: NameScheme,
    observer: &Observer,
    before: usize,
) -> Option<LockGuard> {
    let got = match kind {
        Kind::Mutex => locks.mutex(path).with_scheme(scheme).try_lock().await,
        Kind::Read => {
            locks
                .rwlock(path)
                .with_scheme(scheme)
                .read()
                .try_lock()
                .await
        }
        Kind::Write => {
            locks
                .rwlock(path)
                .with_scheme(scheme)
                .write()
                .try_lock()
                .await
        }
    }
    .unwrap_or_else(|e| panic!("zklock {kind:?} try_lock on {path}: {e}"));
    if got.is_none() {
        observer.wait_children(path, before).await;
    }
    got
}

/// Receives what a spawned task sends, within the lock timeout.
pub async fn received<T>(rx: oneshot::Receiver<T>, what: &str) -> T {
    let timer = smol::Timer::after(LOCK_TIMEOUT + Duration::from_secs(5));
    futures::pin_mut!(timer);
    match futures::future::select(rx, timer).await {
        futures::future::Either::Left((Ok(value), _)) => value,
        futures::future::Either::Left((Err(_), _)) => panic!("{what}: the task failed"),
        futures::future::Either::Right(_) => panic!("{what}: nothing within {LOCK_TIMEOUT:?}"),
    }
}

/// Awaits `future`, failing the test with `what` if it takes longer than the lock
/// timeout.
pub async fn within<T>(what: &str, future: impl std::future::Future<Output = T>) -> T {
    let timer = smol::Timer::after(LOCK_TIMEOUT);
    futures::pin_mut!(future);
    futures::pin_mut!(timer);
    match futures::future::select(future, timer).await {
        futures::future::Either::Left((value, _)) => value,
        futures::future::Either::Right(_) => panic!("{what}: nothing within {LOCK_TIMEOUT:?}"),
    }
}

/// Whether a spawned task has delivered yet, without waiting.
pub fn delivered<T>(rx: &mut oneshot::Receiver<T>) -> bool {
    !matches!(rx.try_recv(), Ok(None))
}

// ---------------------------------------------------------------------------------
// Deterministic scenarios, shared by the Curator and kazoo tests
// ---------------------------------------------------------------------------------

/// Exclusive locks of the peer and of zklock (with the peer's scheme) exclude each
/// other and hand over in FIFO order, in both directions.
pub async fn mutex_handoff(
    rt: &Runtime,
    peer: &mut Peer,
    locks: &LockClient,
    observer: &Observer,
    path: &str,
) {
    let lib = peer.library;
    let scheme = lib.scheme();

    // The peer holds; zklock cannot take it, queues, and gets it when the peer lets go.
    let theirs = peer.acquire("h", Kind::Mutex, path).await;
    assert_node(&theirs, scheme, NodeKind::Write, lib.name());
    assert!(
        zk_try(locks, Kind::Mutex, path, scheme, observer, 1)
            .await
            .is_none(),
        "zklock took the mutex while {} held it ({theirs})",
        lib.name()
    );
    let mut waiting = zk_start_lock(rt, locks, Kind::Mutex, path, scheme);
    observer.wait_children(path, 2).await;
    assert!(
        !delivered(&mut waiting),
        "zklock got the mutex while {} held it",
        lib.name()
    );
    peer.release("h").await;
    let ours = received(waiting, "zklock waiting behind the peer").await;
    assert_node(node_name(ours.path()), scheme, NodeKind::Write, "zklock");

    // zklock holds; the peer cannot take it, queues, and gets it when zklock lets go.
    assert_eq!(
        peer.try_acquire("t", Kind::Mutex, path).await,
        None,
        "{} took the mutex while zklock held it ({})",
        lib.name(),
        ours.path()
    );
    peer.start_acquire("h", "mutex", path);
    observer.wait_children(path, 2).await;
    assert!(
        peer.quiet("h"),
        "{} got the mutex while zklock held it",
        lib.name()
    );
    ours.release().await.expect("zklock release");
    peer.held("h").await;
    peer.release("h").await;
    observer.wait_children(path, 0).await;
}

/// Read/write locks of the peer and of zklock (with the peer's scheme): readers of
/// both hold at once (both directions); a writer of either excludes readers and
/// writers of the other (both directions); waiters of either are served in order.
pub async fn rwlock_exclusion(
    rt: &Runtime,
    peer: &mut Peer,
    locks: &LockClient,
    observer: &Observer,
    path: &str,
) {
    let lib = peer.library;
    let name = lib.name();
    let scheme = lib.scheme();
    let held = |g: &LockGuard| g.status() == LockStatus::Held;

    // --- Readers share, both ways. -------------------------------------------------
    let zr = zk_lock(locks, Kind::Read, path, scheme).await;
    let theirs = peer
        .try_acquire("r", Kind::Read, path)
        .await
        .unwrap_or_else(|| panic!("a {name} reader was refused while only a zklock reader held"));
    assert_node(&theirs, scheme, NodeKind::Read, name);
    assert!(
        held(&zr),
        "the zklock reader still holds while the {name} reader holds"
    );
    assert_eq!(observer.children(path).await.len(), 2);
    peer.release("r").await;
    zr.release().await.expect("release");

    peer.acquire("r", Kind::Read, path).await;
    let zr = zk_try(locks, Kind::Read, path, scheme, observer, 1)
        .await
        .unwrap_or_else(|| panic!("a zklock reader was refused while only a {name} reader held"));
    assert!(peer.quiet("r"));
    assert_eq!(observer.children(path).await.len(), 2, "both readers hold");
    zr.release().await.expect("release");
    peer.release("r").await;
    observer.wait_children(path, 0).await;

    // --- A zklock writer excludes the peer's readers and writers; they queue. --------
    let zw = zk_lock(locks, Kind::Write, path, scheme).await;
    let ours = node_name(zw.path()).to_owned();
    if let Some(node) = peer.try_acquire("t", Kind::Read, path).await {
        panic!("a {name} reader ({node}) got in while a zklock writer ({ours}) held");
    }
    if let Some(node) = peer.try_acquire("t", Kind::Write, path).await {
        panic!("a {name} writer ({node}) got in while a zklock writer ({ours}) held");
    }
    peer.start_acquire("a", "read", path);
    observer.wait_children(path, 2).await;
    peer.start_acquire("b", "write", path);
    observer.wait_children(path, 3).await;
    assert!(
        peer.quiet("a") && peer.quiet("b"),
        "{name} waiters got in while a zklock writer ({ours}) held"
    );
    zw.release().await.expect("release");
    // The peer's reader (first in line) gets in; its writer waits behind it.
    peer.held("a").await;
    assert!(
        zk_try(locks, Kind::Write, path, scheme, observer, 2)
            .await
            .is_none(),
        "a zklock writer got in while a {name} reader held"
    );
    assert!(
        zk_try(locks, Kind::Read, path, scheme, observer, 2)
            .await
            .is_none(),
        "a zklock reader got in ahead of a waiting {name} writer"
    );
    peer.release("a").await;
    let theirs = peer.held("b").await;
    assert_node(&theirs, scheme, NodeKind::Write, name);
    assert!(
        zk_try(locks, Kind::Read, path, scheme, observer, 1)
            .await
            .is_none(),
        "a zklock reader got in while a {name} writer held"
    );
    assert!(
        zk_try(locks, Kind::Write, path, scheme, observer, 1)
            .await
            .is_none(),
        "a zklock writer got in while a {name} writer held"
    );

    // --- The peer's writer excludes zklock readers and writers; they queue. ----------
    let mut zr = zk_start_lock(rt, locks, Kind::Read, path, scheme);
    observer.wait_children(path, 2).await;
    let mut zw = zk_start_lock(rt, locks, Kind::Write, path, scheme);
    observer.wait_children(path, 3).await;
    assert!(
        !delivered(&mut zr) && !delivered(&mut zw),
        "zklock waiters got in while a {name} writer held"
    );
    peer.release("b").await;
    let zr = received(zr, "the zklock reader queued behind the peer's writer").await;
    if let Some(node) = peer.try_acquire("t", Kind::Write, path).await {
        panic!("a {name} writer ({node}) got in while a zklock reader held");
    }
    if let Some(node) = peer.try_acquire("t", Kind::Read, path).await {
        panic!("a {name} reader ({node}) got in ahead of a waiting zklock writer");
    }
    assert!(
        !delivered(&mut zw),
        "the zklock writer got in while the zklock reader held"
    );
    zr.release().await.expect("release");
    let zw = received(zw, "the zklock writer queued behind the reader").await;
    let ours = node_name(zw.path()).to_owned();
    if let Some(node) = peer.try_acquire("t", Kind::Read, path).await {
        panic!("a {name} reader ({node}) got in while a zklock writer ({ours}) held");
    }
    if let Some(node) = peer.try_acquire("t", Kind::Write, path).await {
        panic!("a {name} writer ({node}) got in while a zklock writer ({ours}) held");
    }
    zw.release().await.expect("release");
    observer.wait_children(path, 0).await;
}

// ---------------------------------------------------------------------------------
// The counter workload
// ---------------------------------------------------------------------------------

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
    /// `tests/peers/go_peer.go`) and `<root>/counter` = 0.
    pub async fn prepare(
        observer: &Observer,
        lock_path: &str,
        iterations: u32,
        sleep: Duration,
    ) -> Workload {
        let root = format!("{lock_path}-data");
        let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
        observer
            .client
            .mkdir(&format!("{root}/inside"), &persistent)
            .await
            .expect("mkdir");
        observer
            .client
            .mkdir(&format!("{root}/log"), &persistent)
            .await
            .expect("mkdir");
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
        super::spawn(rt, async move {
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
                super::sleep(sleep).await;
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
                super::sleep(think.next(sleep)).await;
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
        libraries.dedup();
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

/// Runs the counter workload on one lock path: `peers` processes of `library` and
/// `zklock_sessions` zklock sessions (with the library's scheme), phase after phase;
/// in each phase every process and session runs one participant per kind of the
/// phase, all at once, then the counter and the overlaps so far are checked.
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
    zklock_sessions: usize,
    iterations: u32,
) {
    let connect = super::server().connect_string();
    let observer = Observer::connect(&connect).await;
    let work = Workload::prepare(&observer, lock_path, iterations, Duration::from_millis(10)).await;
    let (mut running, zklock) = start_fleet(rt, library, &connect, peers, zklock_sessions).await;

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
        for (i, locks) in zklock.iter().enumerate() {
            for kind in kinds.iter() {
                let who = format!("zklock{}-{}", i + 1, slot(*kind));
                ours.push(work.start_zklock(rt, &connect, locks, library.scheme(), *kind, &who));
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
            super::spawn(rt, async move {
                Peer::start_library(library, &connect, &name).await
            })
        })
        .collect();
    let mut sessions = Vec::new();
    for _ in 0..zklock_sessions {
        sessions.push(super::connect(rt, connect, Duration::from_secs(10)).await);
    }
    let mut running = Vec::new();
    for rx in started {
        running.push(received(rx, "starting a peer").await);
    }
    (running, sessions)
}

// ---------------------------------------------------------------------------------
// Leader election
// ---------------------------------------------------------------------------------

/// Two peer participants (two processes of `library`) and two zklock leader
/// participants (two sessions, the library's scheme) on `path`, joined alternately:
/// one leader at a time, in join order, leadership passing zklock -> peer -> zklock
/// -> peer as each resigns.
pub async fn mixed_election_in_turn(rt: &Runtime, library: Library, path: &str) {
    let connect = super::server().connect_string();
    let (mut peers, zklock) = start_fleet(rt, library, &connect, 2, 2).await;
    let name = library.name();
    let mut election = MixedElection::new(rt, path, library.scheme()).await;
    let mut all = vec![election.join_zklock(rt, &zklock[0], "zklock-1", 1).await];
    election.elected(0, &mut all, &mut peers).await;
    all.push(
        election
            .join_peer(&mut peers, 0, "e", &format!("{name}-1"), 2)
            .await,
    );
    all.push(election.join_zklock(rt, &zklock[1], "zklock-2", 3).await);
    all.push(
        election
            .join_peer(&mut peers, 1, "e", &format!("{name}-2"), 4)
            .await,
    );
    election.check(0, &mut all, &mut peers).await;
    for who in 0..all.len() {
        if who > 0 {
            election.elected(who, &mut all, &mut peers).await;
        }
        election.resign(who, &mut all, &mut peers).await;
    }
    election.finish().await;
    for locks in zklock {
        locks.close().await;
    }
}

/// A participant in a mixed election.
pub enum Candidate {
    /// A zklock participant (a leader spec with the peer's scheme): the task delivers
    /// its leadership (and whether another leader was registered) when elected.
    Zklock {
        id: String,
        elected: Option<oneshot::Receiver<(LockGuard, bool)>>,
        leading: Option<LockGuard>,
    },
    /// A slot of a peer process (`peers[peer]`).
    Peer {
        id: String,
        peer: usize,
        slot: String,
    },
}

impl Candidate {
    pub fn id(&self) -> &str {
        match self {
            Candidate::Zklock { id, .. } | Candidate::Peer { id, .. } => id,
        }
    }
}

/// A mixed election on one path: zklock participants and peer participants take turns
/// in join order; at most one leader at any time (every leader registers under
/// `<root>/leaders` when elected and finds no one else there, and leaves before it
/// resigns), exactly one at each step (each participant's own view, and a zklock
/// election observer agrees on who leads).
pub struct MixedElection {
    pub path: String,
    root: String,
    connect: String,
    observer: Observer,
    watcher: lock_zookeeper_client::ElectionObserver,
    watcher_client: LockClient,
    scheme: NameScheme,
    leader_overlaps: u64,
}

impl MixedElection {
    pub async fn new(rt: &Runtime, path: &str, scheme: NameScheme) -> MixedElection {
        let connect = super::server().connect_string();
        let observer = Observer::connect(&connect).await;
        let root = format!("{path}-data");
        observer
            .client
            .mkdir(
                &format!("{root}/leaders"),
                &CreateMode::Persistent.with_acls(Acls::anyone_all()),
            )
            .await
            .expect("mkdir");
        let watcher_client = super::connect(rt, &connect, Duration::from_secs(10)).await;
        let watcher = watcher_client
            .observe_election(path)
            .await
            .expect("observing the election");
        MixedElection {
            path: path.to_owned(),
            root,
            connect,
            observer,
            watcher,
            watcher_client,
            scheme,
            leader_overlaps: 0,
        }
    }

    /// A zklock participant joins (on `locks`); returns once its node is in line
    /// (`position` participants in all). It is a `LockSpec::leader` with the peer's
    /// scheme run by `LockClient::acquire`: `LockClient::election` always names its
    /// nodes natively (`zkl-...-lead-`), which Curator's `LeaderLatch` sorts after its
    /// own and kazoo's `Election` does not see, so it cannot share their paths.
    pub async fn join_zklock(
        &self,
        rt: &Runtime,
        locks: &LockClient,
        id: &str,
        position: usize,
    ) -> Candidate {
        let spec = LockSpec::leader(self.path.as_str(), id).scheme(self.scheme);
        let (locks, root, connect, who) = (
            locks.clone(),
            self.root.clone(),
            self.connect.clone(),
            id.to_owned(),
        );
        let elected = super::spawn(rt, async move {
            let guard = locks.acquire(spec, None).await.expect("zklock participant");
            let data = Observer::connect(&connect).await;
            let overlap = register_leader(&data.client, &root, &who).await;
            (guard, overlap)
        });
        self.observer.wait_children(&self.path, position).await;
        Candidate::Zklock {
            id: id.to_owned(),
            elected: Some(elected),
            leading: None,
        }
    }

    /// A peer participant joins in `slot`; returns once its node is in line.
    pub async fn join_peer(
        &self,
        peers: &mut [Peer],
        peer: usize,
        slot: &str,
        id: &str,
        position: usize,
    ) -> Candidate {
        peers[peer].send(slot, &format!("elect {} {id} {}", self.path, self.root));
        self.observer.wait_children(&self.path, position).await;
        Candidate::Peer {
            id: id.to_owned(),
            peer,
            slot: slot.to_owned(),
        }
    }

    /// Waits until `who` is elected, then [checks](Self::check) that it is the only
    /// leader.
    pub async fn elected(&mut self, who: usize, all: &mut [Candidate], peers: &mut [Peer]) {
        match &mut all[who] {
            Candidate::Zklock {
                id,
                elected,
                leading,
            } => {
                let rx = elected.take().expect("a zklock participant elected once");
                let (guard, overlap) = received(rx, &format!("zklock participant {id}")).await;
                self.leader_overlaps += u64::from(overlap);
                *leading = Some(guard);
            }
            Candidate::Peer { peer, slot, .. } => {
                let words = peers[*peer].expect(slot, "LEADER").await;
                self.leader_overlaps += words[0].parse::<u64>().expect("LEADER <overlaps>");
            }
        }
        self.check(who, all, peers).await;
    }

    /// Checks that `who` is the only leader: in each participant's own view, and for
    /// a zklock observer of the election; and that no two leaders ever registered at
    /// once.
    pub async fn check(&mut self, who: usize, all: &mut [Candidate], peers: &mut [Peer]) {
        let expected = all[who].id().to_owned();
        // Each participant's own view: only `who` leads.
        for (i, candidate) in all.iter_mut().enumerate() {
            let leads = match candidate {
                Candidate::Zklock {
                    elected, leading, ..
                } => {
                    leading
                        .as_ref()
                        .is_some_and(|g| g.status() == LockStatus::Held)
                        || elected.as_mut().is_some_and(delivered)
                }
                Candidate::Peer { peer, slot, .. } => {
                    let peer = &mut peers[*peer];
                    if i != who && !peer.quiet(slot) {
                        let said = peer.reply(slot).await;
                        panic!(
                            "participant {} said {said:?} while {expected} was elected",
                            candidate.id()
                        );
                    }
                    peer.status(slot).await == "leader"
                }
            };
            assert_eq!(
                leads,
                i == who,
                "participant {} {} while {expected} was elected",
                candidate.id(),
                if leads { "leads too" } else { "does not lead" }
            );
        }
        // A zklock observer names the same leader (its node data is the id).
        let deadline = Instant::now() + REPLY_TIMEOUT;
        while self.watcher.leader().map(|l| l.id.as_slice()) != Some(expected.as_bytes()) {
            assert!(
                Instant::now() < deadline,
                "the zklock observer never saw {expected} lead"
            );
            self.watcher.changed().await.expect("observer");
        }
        assert_eq!(self.leader_overlaps, 0, "two leaders registered at once");
    }

    /// The leader `who` resigns (leaves `<root>/leaders` first).
    pub async fn resign(&mut self, who: usize, all: &mut [Candidate], peers: &mut [Peer]) {
        match &mut all[who] {
            Candidate::Zklock { id, leading, .. } => {
                let guard = leading.take().expect("resigning a zklock leader");
                self.observer
                    .client
                    .delete(&format!("{}/leaders/{id}", self.root), None)
                    .await
                    .expect("leaving");
                guard.release().await.expect("zklock resign");
            }
            Candidate::Peer { peer, slot, .. } => {
                peers[*peer].send(slot, "resign");
                peers[*peer].expect(slot, "RESIGNED").await;
            }
        }
    }

    pub async fn finish(self) {
        self.observer.wait_children(&self.path, 0).await;
        assert_eq!(self.leader_overlaps, 0, "two leaders registered at once");
        self.watcher_client.close().await;
    }
}

/// Registers `who` as the leader under `<root>/leaders`; true if another was there.
async fn register_leader(client: &zookeeper_client::Client, root: &str, who: &str) -> bool {
    let leaders = format!("{root}/leaders");
    client
        .create(
            &format!("{leaders}/{who}"),
            b"",
            &CreateMode::Persistent.with_acls(Acls::anyone_all()),
        )
        .await
        .expect("registering the leader");
    client
        .list_children(&leaders)
        .await
        .expect("listing leaders")
        .len()
        > 1
}
