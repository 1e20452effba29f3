//! Unit tests: the API against a scripted link (the test plays binding and server).

use crate::*;
use lock_core::{Config, Op, Reply, Request, SessionEvent, Stat};
use std::future::Future;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

mod connection;
mod core_tasks;
mod lifecycle;
mod queued;
mod recorder;
mod reentrancy;
mod schedules;
mod server_check;
mod spans;
mod thread_safety;
mod trust;

pub(super) const SID: i64 = 0x77;

pub(super) const DISCONNECTED: SessionEvent = SessionEvent::Disconnected {
    since_contact: Duration::ZERO,
};

pub(super) fn connected() -> (LockClient, Link) {
    let (locks, mut link) = pair(Config::new(Duration::from_secs(10), 1));
    link.handle_session(SessionEvent::Connected { session_id: SID }, Instant::now());
    (locks, link)
}

/// A connected client on `clock`, with proofs of contact on (as the bindings
/// set them).
pub(super) fn proving_on(clock: std::sync::Arc<dyn Clock>) -> (LockClient, Link) {
    let mut config = Config::new(Duration::from_secs(10), 1);
    config.sync_interval = Some(Config::default_sync_interval(config.session_timeout));
    let now = clock.now();
    let (locks, mut link) = pair_with_clock(config, clock);
    link.handle_session(SessionEvent::Connected { session_id: SID }, now);
    (locks, link)
}

/// A clock that moves only when told.
pub(super) struct ManualClock {
    pub(super) zero: Instant,
    elapsed: std::sync::Mutex<Duration>,
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        self.zero + *self.elapsed.lock().unwrap()
    }
}

impl ManualClock {
    pub(super) fn new() -> std::sync::Arc<ManualClock> {
        std::sync::Arc::new(ManualClock {
            zero: Instant::now(),
            elapsed: std::sync::Mutex::new(Duration::ZERO),
        })
    }

    pub(super) fn set(&self, at: Instant) {
        *self.elapsed.lock().unwrap() = at - self.zero;
    }
}

struct Noop;

impl std::task::Wake for Noop {
    fn wake(self: std::sync::Arc<Self>) {}
}

pub(super) fn poll_once<F: Future>(f: std::pin::Pin<&mut F>) -> Poll<F::Output> {
    let waker = Waker::from(std::sync::Arc::new(Noop));
    f.poll(&mut Context::from_waker(&waker))
}

/// The output of `f`, which must be ready and `Ok` at this poll.
pub(super) fn ready<T, E: std::fmt::Debug>(
    f: std::pin::Pin<&mut impl Future<Output = Result<T, E>>>,
) -> T {
    match poll_once(f) {
        Poll::Ready(result) => result.unwrap(),
        Poll::Pending => panic!("not ready"),
    }
}

pub(super) fn requests(link: &mut Link) -> Vec<Request> {
    let mut requests = Vec::new();
    let _ = link.poll(&mut requests);
    requests
}

/// Plays the server for an uncontended acquisition.
pub(super) fn grant(link: &mut Link, sent: &[Request], czxid: i64) -> String {
    queue_at(link, sent, czxid, vec![], Instant::now())
}

/// Plays the server for an acquisition's create and listing (`sent`), at `now` (on
/// a client's own clock): the node is queued behind the nodes named in `lower`.
pub(super) fn queue_at(
    link: &mut Link,
    sent: &[Request],
    czxid: i64,
    mut lower: Vec<String>,
    now: Instant,
) -> String {
    let Op::Create { path, .. } = &sent[0].op else {
        panic!("{:?}", sent[0].op)
    };
    let node = format!("{path}{:010}", lower.len() + 1);
    let stat = Stat {
        czxid,
        ephemeral_owner: SID,
        ..Stat::default()
    };
    let reply = Reply::Created {
        path: node.clone(),
        stat: Some(stat),
    };
    link.handle_reply(sent[0].id, Ok(reply), now);
    lower.push(node.rsplit('/').next().unwrap().to_owned());
    link.handle_reply(sent[1].id, Ok(Reply::Children(lower)), now);
    node
}

/// A lower participant of another client, in the native scheme.
fn peer(seq: i32) -> String {
    let prefix = lock_core::names::node_prefix(
        NameScheme::Native,
        lock_core::AttemptId(0xabc),
        lock_core::NodeKind::Write,
    );
    format!("{prefix}{seq:010}")
}
