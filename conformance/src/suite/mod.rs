//! The conformance tests. Each takes a [`Suite`] (an environment with the client
//! side); run each in its own `#[test]` (see
//! [`conformance_tests!`](crate::conformance_tests)).

mod availability;
mod connect;
mod connection;
mod deadlock;
mod elections;
mod faults;
mod guarded;
mod load;
mod locks;
#[cfg(target_os = "linux")]
mod nodelay;
mod options;
mod pause;
mod revocation;
mod round_trips;
mod rounds;
mod server_check;

pub use availability::*;
pub use connect::*;
pub use connection::*;
pub use deadlock::*;
pub use elections::*;
pub use faults::*;
pub use guarded::*;
pub use load::*;
pub use locks::*;
#[cfg(target_os = "linux")]
pub use nodelay::*;
pub use options::*;
pub use pause::*;
pub use revocation::*;
pub use round_trips::*;
pub use rounds::*;
pub use server_check::*;

use crate::env::{
    unique_path, wait_until, Admin, Deployment, Faults, LONG, SESSION_TIMEOUT, SHORT,
};
use crate::harness::{Suite, Wait};
use crate::Kind;
use lock_client::{Error, LockClient, LockGuard};
use lock_core::{LockEvent, LostReason};
use lock_testkit::FaultProxy;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// What most tests start from: the environment's shared deployment, a lock path of
/// their own named after `test`, and an administrator's view of the tree.
fn shared<'a>(b: &'a Suite, test: &str) -> (&'a dyn Deployment, String, Box<dyn Admin>) {
    let server = b.env().shared();
    (server, unique_path(test), server.admin())
}

/// The shared server's connect string (one address on real ZooKeeper).
fn cluster(b: &Suite) -> String {
    b.env()
        .shared()
        .connect_string()
        .unwrap_or_else(|| panic!("{}: no Deployment::connect_string", b.name()))
}

/// A proxy of its own in front of the shared server.
fn proxy_to_shared(b: &Suite) -> FaultProxy {
    let to = cluster(b).parse().expect("a socket address");
    FaultProxy::start(to).expect("proxy")
}

fn connect(b: &Suite, on: &dyn Deployment) -> LockClient {
    b.client_on(on, SESSION_TIMEOUT)
}

/// The session timeout of a client whose session must simply survive (a bystander
/// of a test about another session's expiry): long enough for any backend's pings on
/// a loaded machine.
const BYSTANDER_SESSION_TIMEOUT: Duration = Duration::from_secs(10);

fn connect_with_faults(b: &Suite, on: &dyn Deployment) -> (LockClient, Box<dyn Faults>) {
    on.client_with_faults(SESSION_TIMEOUT)
        .unwrap_or_else(|e| panic!("{}: connecting: {e}", b.name()))
}

fn watchers_of(b: &Suite, on: &dyn Deployment, path: &str) -> Vec<i64> {
    on.watchers_of(path)
        .unwrap_or_else(|| panic!("{}: generated without Capability::Watchers", b.name()))
}

/// Releases `g`, taken by `c` on the shared server, and asserts that once `c` is idle
/// nothing is left at `path`.
fn release_clean(b: &Suite, c: &LockClient, g: LockGuard, path: &str) {
    b.release(g).expect("release");
    b.wait_idle(c).expect("idle");
    let left = b.env().shared().admin().children(path);
    assert!(left.is_empty(), "{}: nodes left behind: {left:?}", b.name());
}

fn lock(b: &Suite, c: &LockClient, kind: Kind, path: &str) -> LockGuard {
    b.lock(c, kind, path, Wait::Timeout(SHORT))
        .unwrap_or_else(|e| panic!("{}: {kind:?} on {path}: {e}", b.name()))
}

fn name_of(path: &str) -> String {
    path.rsplit('/').next().unwrap_or_default().to_owned()
}

/// Waits at most [`SHORT`] for the guard's `Lost`, skipping other events, and
/// checks its reason and that the lock is no longer trusted.
fn expect_lost(b: &Suite, guard: &mut LockGuard, reason: LostReason) {
    let deadline = Instant::now() + SHORT;
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match b.next_event(guard, left) {
            Some(LockEvent::Lost(lost)) => {
                assert_eq!(lost, reason, "{}", b.name());
                assert!(!b.is_trusted(guard), "{}: trusted after Lost", b.name());
                return;
            }
            Some(event) => seen.push(event),
            None => panic!("{}: no Lost within {SHORT:?} (saw {seen:?})", b.name()),
        }
    }
}

/// Before a fault: drains what a loaded machine may have reported meanwhile (a
/// spurious suspension, e.g. a ping answered late), waiting for the resumption of
/// one still under way; returns with the lock trusted and no event queued, or
/// panics (with what it saw) if it is not trusted again within [`SHORT`].
fn settle(b: &Suite, guard: &mut LockGuard, kind: Kind) {
    let deadline = Instant::now() + SHORT;
    let mut seen = Vec::new();
    loop {
        while let Some(event) = b.next_event(guard, Duration::ZERO) {
            seen.push(event);
        }
        if b.is_trusted(guard) {
            return;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        match b.next_event(guard, left) {
            Some(event) => seen.push(event),
            None => panic!(
                "{}: {kind:?} not trusted before the fault (saw {seen:?})",
                b.name()
            ),
        }
    }
}

/// The next event, which must come within `within`.
fn next_event(b: &Suite, guard: &mut LockGuard, within: Duration) -> LockEvent {
    b.next_event(guard, within)
        .unwrap_or_else(|| panic!("{}: no event within {within:?}", b.name()))
}

fn assert_strictly_increasing(tokens: &[i64], what: &str) {
    for pair in tokens.windows(2) {
        assert!(
            pair[0] < pair[1],
            "{what}: fencing tokens must strictly increase, got {} then {}",
            pair[0],
            pair[1]
        );
    }
}
