//! Small std-only helpers: temporary directories, free ports, log tails.

use std::collections::BTreeSet;
use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom};
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::error::{Error, Result};

/// Set to a non-empty value to keep every data directory (for debugging).
pub(crate) const KEEP_DIRS_ENV: &str = "ZK_TESTKIT_KEEP_DIRS";

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panicking test must not wedge the cleanup of every other server.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub(crate) fn keep_dirs() -> bool {
    std::env::var_os(KEEP_DIRS_ENV).is_some_and(|v| !v.is_empty())
}

/// A uniquely named directory under the system temp dir, removed on drop.
#[derive(Debug)]
pub(crate) struct TempDir {
    path: PathBuf,
    keep: bool,
}

impl TempDir {
    pub(crate) fn new(prefix: &str) -> io::Result<TempDir> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let base = std::env::temp_dir();
        loop {
            let nanos = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or(0);
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let path = base.join(format!("{prefix}-{}-{n}-{nanos:08x}", std::process::id()));
            match fs::create_dir(&path) {
                Ok(()) => {
                    return Ok(TempDir {
                        path,
                        keep: keep_dirs(),
                    })
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Do not remove the directory on drop.
    pub(crate) fn keep(&mut self) {
        self.keep = true;
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if !self.keep {
            let _ = fs::remove_dir_all(&self.path);
        }
    }
}

/// Ports handed out by this process and not yet released. The kernel may hand
/// a just-released port to the next `bind(0)`, so without this two servers
/// started by parallel tests could pick the same port.
static RESERVED_PORTS: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());

/// A loopback port that was free when picked, reserved within this process
/// until dropped.
#[derive(Debug)]
pub(crate) struct PortGuard(u16);

impl PortGuard {
    pub(crate) fn port(&self) -> u16 {
        self.0
    }
}

impl Drop for PortGuard {
    fn drop(&mut self) {
        lock(&RESERVED_PORTS).remove(&self.0);
    }
}

/// Picks a free port on 127.0.0.1: binds port 0, notes the port and releases it.
pub(crate) fn reserve_port() -> Result<PortGuard> {
    for _ in 0..100 {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .map_err(|e| Error::io("binding 127.0.0.1:0 to find a free port", e))?;
        let port = listener
            .local_addr()
            .map_err(|e| Error::io("reading a listener's port", e))?
            .port();
        if lock(&RESERVED_PORTS).insert(port) {
            return Ok(PortGuard(port));
        }
    }
    Err(Error::io(
        "finding a free loopback port",
        io::Error::new(
            io::ErrorKind::AddrInUse,
            "no unreserved port after 100 tries",
        ),
    ))
}

/// The last `lines` lines of a (possibly large, possibly missing) text file.
pub(crate) fn tail(path: &Path, lines: usize) -> String {
    const MAX_BYTES: u64 = 64 * 1024;
    let read = || -> io::Result<String> {
        let mut file = File::open(path)?;
        let len = file.metadata()?.len();
        file.seek(SeekFrom::Start(len.saturating_sub(MAX_BYTES)))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    };
    match read() {
        Ok(text) => {
            let all: Vec<&str> = text.lines().collect();
            let start = all.len().saturating_sub(lines);
            let mut out = all[start..].join("\n");
            if out.is_empty() {
                out.push_str("(log is empty)");
            }
            out
        }
        Err(e) => format!("(cannot read {}: {e})", path.display()),
    }
}

/// Calls `f` every `step` until it returns `Some`, for up to `timeout` (then `None`).
pub(crate) fn poll<T>(
    timeout: Duration,
    step: Duration,
    mut f: impl FnMut() -> Option<T>,
) -> Option<T> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(done) = f() {
            return Some(done);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(step);
    }
}

/// Whether a server log shows that a port it wanted was taken.
pub(crate) fn log_shows_bind_failure(path: &Path) -> bool {
    let text = tail(path, 400);
    text.contains("Address already in use") || text.contains("BindException")
}

/// Builds `name` once per `source` text: returns `base/<name>-<hash of source>`,
/// made by `build` in a private work directory renamed into place, unless `done`
/// finds it there already. Concurrent builds race harmlessly: the first rename
/// wins, and each build has a work directory of its own (another build finishing
/// removes only its own).
pub(crate) fn build_once(
    base: &Path,
    name: &str,
    source: &str,
    done: impl Fn(&Path) -> bool,
    build: impl FnOnce(&Path) -> Result<()>,
) -> Result<PathBuf> {
    // FNV-1a: stable across Rust versions, unlike `DefaultHasher`.
    let hash = source.bytes().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100000001b3)
    });
    let dir = base.join(format!("{name}-{hash:016x}"));
    if done(&dir) {
        return Ok(dir);
    }
    static BUILDS: AtomicU64 = AtomicU64::new(0);
    let build_id = BUILDS.fetch_add(1, Ordering::Relaxed);
    let work = dir.with_extension(format!("build-{}-{build_id}", std::process::id()));
    fs::create_dir_all(&work).map_err(|e| Error::io(format!("creating {}", work.display()), e))?;
    let built = build(&work).and_then(|()| match fs::rename(&work, &dir) {
        // Another test binary got there first.
        Err(_) if done(&dir) => Ok(()),
        placed => placed.map_err(|e| Error::io(format!("placing {}", dir.display()), e)),
    });
    let _ = fs::remove_dir_all(&work);
    built.map(|()| dir)
}
