//! Servers, paths and waiting helpers shared by the suite.

use lock_testkit::ZkServer;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The session timeout of most tests: short, so that expiry tests are quick, and
/// well above the testkit servers' `minSessionTimeout` (200 ms).
pub const SESSION_TIMEOUT: Duration = Duration::from_secs(2);

/// Upper bound for something expected promptly (a lock handed over, an event).
pub const SHORT: Duration = Duration::from_secs(15);

/// Upper bound for something that involves expiries or elections.
pub const LONG: Duration = Duration::from_secs(60);

/// The standalone server shared by the tests of one binary (each test uses its own
/// lock paths). The testkit kills it when the test process exits.
///
/// ```no_run
/// let connect = lock_conformance::shared_server().connect_string();
/// # drop(connect);
/// ```
pub fn shared_server() -> &'static ZkServer {
    static SERVER: OnceLock<ZkServer> = OnceLock::new();
    SERVER.get_or_init(fresh_server)
}

/// A server of its own, for tests that count its packets or stop it.
///
/// ```no_run
/// let server = lock_conformance::fresh_server();
/// # drop(server);
/// ```
pub fn fresh_server() -> ZkServer {
    ZkServer::start().expect("starting ZooKeeper (lock-testkit; see testkit/README.md)")
}

/// A lock path no other test uses.
///
/// ```
/// let a = lock_conformance::unique_path("t");
/// let b = lock_conformance::unique_path("t");
/// assert_ne!(a, b);
/// assert!(a.starts_with("/conformance/t-"));
/// ```
pub fn unique_path(test: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    static RUN: OnceLock<u64> = OnceLock::new();
    let run = RUN.get_or_init(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_micros() as u64 % 1_000_000_000)
            .unwrap_or_default()
            ^ u64::from(std::process::id())
    });
    format!(
        "/conformance/{test}-{run}-{}",
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Polls `condition` until it holds (`Some`), for at most `within`; panics with
/// `what` otherwise. For conditions that only a poll can observe (a server's
/// counters); everything else waits for events.
///
/// ```
/// let mut n = 0;
/// let got = lock_conformance::wait_until("n reaches 3", std::time::Duration::from_secs(1), || {
///     n += 1;
///     (n == 3).then_some(n)
/// });
/// assert_eq!(got, 3);
/// ```
pub fn wait_until<T>(what: &str, within: Duration, mut condition: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + within;
    loop {
        if let Some(value) = condition() {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {within:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Sessions watching `path`, from the server's `wchp` (4-letter word).
///
/// ```no_run
/// let sessions = lock_conformance::watchers_of(lock_conformance::shared_server(), "/locks/a/x");
/// # drop(sessions);
/// ```
pub fn watchers_of(server: &lock_testkit::ZkServer, path: &str) -> Vec<i64> {
    let text = server.four_letter_word("wchp").unwrap_or_default();
    let mut out = Vec::new();
    let mut in_path = false;
    for line in text.lines() {
        if let Some(session) = line.strip_prefix('\t') {
            if in_path {
                if let Ok(id) = u64::from_str_radix(session.trim().trim_start_matches("0x"), 16) {
                    out.push(id as i64);
                }
            }
        } else {
            in_path = line.trim() == path;
        }
    }
    out
}
