//! Unit tests: the API against a scripted link (the test plays binding and server).

use crate::blocking::block_on_until;
use crate::*;
use lock_core::{Config, Op, Reply, Request, SessionEvent, Stat};
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

mod reentrancy;

fn send_sync<T: Send + Sync>() {}

#[test]
fn handles_are_send_and_sync() {
    send_sync::<LockClient>();
    send_sync::<Mutex>();
    send_sync::<RwLock>();
    send_sync::<Semaphore>();
    send_sync::<LockGuard>();
    send_sync::<Error>();
    send_sync::<Election>();
    send_sync::<Leadership>();
    send_sync::<ElectionObserver>();
    send_sync::<Writes>();
    send_sync::<MultiLock>();
    send_sync::<MultiGuard>();
    send_sync::<Link>();
    send_sync::<Notifier>();
}

/// The futures can be spawned on multi-threaded runtimes (compile-time check).
#[allow(dead_code)]
fn futures_are_send(client: &LockClient, guard: LockGuard) {
    fn send<T: Send>(_: &T) {}
    let mutex = client.mutex("/a");
    send(&mutex.lock());
    send(&mutex.try_lock());
    send(&mutex.lock_timeout(Duration::ZERO));
    send(&client.wait_idle());
    send(&client.close());
    send(&guard.next_event());
    send(&guard.lost());
    send(&guard.revocation_requested());
    send(&guard.open_section());
    send(&guard.close_section());
    send(&guard.fenced_write(Writes::new()));
    send(&guard.release());
    send(&client.revoke("/a"));
    send(&client.observe_election("/a"));
    send(&client.participants("/a"));
    send(&client.deadlocks("/a"));
    let multi = client.multi(["/a", "/b"]);
    send(&multi.lock());
    send(&multi.try_lock());
}

pub(super) const SID: i64 = 0x77;

pub(super) fn connected() -> (LockClient, Link) {
    let (locks, mut link) = pair(Config::new(Duration::from_secs(10), 1));
    link.handle_session(SessionEvent::Connected { session_id: SID }, Instant::now());
    (locks, link)
}

struct Noop;

impl std::task::Wake for Noop {
    fn wake(self: std::sync::Arc<Self>) {}
}

pub(super) fn poll_once<F: Future>(f: std::pin::Pin<&mut F>) -> Poll<F::Output> {
    let waker = Waker::from(std::sync::Arc::new(Noop));
    f.poll(&mut Context::from_waker(&waker))
}

pub(super) fn requests(link: &mut Link) -> Vec<Request> {
    std::iter::from_fn(|| link.poll_request()).collect()
}

/// Plays the server for an uncontended acquisition.
pub(super) fn grant(link: &mut Link, sent: &[Request], czxid: i64) -> String {
    let Op::Create { path, .. } = &sent[0].op else {
        panic!("{:?}", sent[0].op)
    };
    let node = format!("{path}0000000001");
    let stat = Stat {
        czxid,
        ephemeral_owner: SID,
        ..Stat::default()
    };
    let now = Instant::now();
    let reply = Reply::Created {
        path: node.clone(),
        stat: Some(stat),
    };
    link.handle_reply(sent[0].id, Ok(reply), now);
    let name = node.rsplit('/').next().unwrap().to_owned();
    link.handle_reply(sent[1].id, Ok(Reply::Children(vec![name])), now);
    node
}

#[test]
fn a_lock_wakes_the_link_and_its_grant_wakes_the_future() {
    let (locks, mut link) = connected();
    let mutex = locks.mutex("/locks/a");
    let mut lock = pin!(mutex.lock());
    assert!(poll_once(lock.as_mut()).is_pending());
    // The handle called the core and woke the link: create + list, pipelined.
    assert!(poll_once(std::pin::pin!(
        std::future::poll_fn(|cx| link.poll_wake(cx))
    ))
    .is_ready());
    let sent = requests(&mut link);
    assert_eq!(sent.len(), 2);
    let node = grant(&mut link, &sent, 42);
    let Poll::Ready(Ok(guard)) = poll_once(lock.as_mut()) else {
        panic!("not granted")
    };
    assert_eq!(guard.token(), FencingToken(42));
    assert_eq!(guard.path(), node);
    assert_eq!(guard.status(), LockStatus::Held);
    // Dropping the guard releases in the background.
    drop(guard);
    let sent = requests(&mut link);
    assert!(sent
        .iter()
        .any(|r| matches!(&r.op, Op::Delete { path, .. } if *path == node)));
}

#[test]
fn a_dropped_lock_future_cancels() {
    let (locks, mut link) = connected();
    let mutex = locks.mutex("/locks/b");
    {
        let mut lock = pin!(mutex.lock());
        assert!(poll_once(lock.as_mut()).is_pending());
    }
    assert!(!requests(&mut link).is_empty());
    assert!(locks.shared().read(|s| s.slots.is_empty()));
}

#[test]
fn blocking_twins_wait_for_the_binding() {
    let (locks, mut link) = connected();
    let driver = std::thread::spawn(move || {
        // A threaded binding: wait, drain, answer.
        loop {
            assert!(link.wait(Some(Instant::now() + Duration::from_secs(10))));
            let sent = requests(&mut link);
            if let Some(create) = sent.iter().position(|r| matches!(r.op, Op::Create { .. })) {
                grant(&mut link, &sent[create..], 7);
                return link;
            }
        }
    });
    let guard = locks.mutex("/locks/c").lock_blocking().unwrap();
    assert_eq!(guard.token(), FencingToken(7));
    let link = driver.join().unwrap();
    drop(guard);
    // The binding goes: the session ends for every handle.
    drop(link);
    assert!(matches!(
        locks.mutex("/locks/c").try_lock_blocking(),
        Err(Error::Closed)
    ));
    assert_eq!(
        block_on_until(locks.wait_idle(), Some(Instant::now())),
        Some(Err(Error::Closed))
    );
    locks.close_blocking();
}

#[test]
fn closing_ends_waiting_locks_through_the_core() {
    let (locks, mut link) = connected();
    let mutex = locks.mutex("/locks/d");
    let mut lock = pin!(mutex.lock());
    assert!(poll_once(lock.as_mut()).is_pending());
    let mut close = pin!(locks.close());
    assert!(poll_once(close.as_mut()).is_pending());
    assert!(link.is_closed());
    link.handle_session(SessionEvent::Closed, Instant::now());
    assert!(matches!(
        poll_once(lock.as_mut()),
        Poll::Ready(Err(Error::Closed))
    ));
    assert!(
        poll_once(close.as_mut()).is_pending(),
        "until the link goes"
    );
    drop(link);
    assert!(poll_once(close.as_mut()).is_ready());
}

#[test]
fn the_last_handle_closes_the_link() {
    let (locks, link) = connected();
    let mutex = locks.mutex("/locks/e");
    drop(locks);
    assert!(!link.is_closed(), "a lock object is a handle");
    drop(mutex);
    assert!(link.is_closed());
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

#[test]
fn slots_go_with_their_handles_whatever_ends_them() {
    let (locks, mut link) = connected();
    let now = Instant::now();
    // A try-only lock that finds the lock busy: refused, and forgotten.
    let mutex = locks.mutex("/locks/g");
    let mut attempt = pin!(mutex.try_lock());
    assert!(poll_once(attempt.as_mut()).is_pending());
    let sent = requests(&mut link);
    let Op::Create { path, .. } = &sent[0].op else {
        panic!()
    };
    let node = format!("{path}0000000002");
    let reply = Reply::Created {
        path: node.clone(),
        stat: Some(Stat {
            czxid: 9,
            ephemeral_owner: SID,
            ..Stat::default()
        }),
    };
    link.handle_reply(sent[0].id, Ok(reply), now);
    let name = node.rsplit('/').next().unwrap().to_owned();
    link.handle_reply(sent[1].id, Ok(Reply::Children(vec![peer(1), name])), now);
    assert!(matches!(poll_once(attempt.as_mut()), Poll::Ready(Ok(None))));
    assert!(locks.shared().read(|s| s.slots.is_empty()));
    // A guard whose loss was read, then released through `release` (it watches
    // its node, to hear of the deletion).
    let watched = mutex.clone().watch_node();
    let mut lock = pin!(watched.lock());
    assert!(poll_once(lock.as_mut()).is_pending());
    // The try-only node's delete, then the new create and listing.
    let sent = requests(&mut link);
    let create = sent
        .iter()
        .position(|r| matches!(r.op, Op::Create { .. }))
        .expect("a create");
    let node = grant(&mut link, &sent[create..], 10);
    let Poll::Ready(Ok(guard)) = poll_once(lock.as_mut()) else {
        panic!("not granted")
    };
    link.handle_watch(node, lock_core::WatchKind::NodeDeleted, now);
    assert_eq!(
        guard.next_event_timeout_blocking(Duration::from_secs(5)),
        Some(LockEvent::Lost(LostReason::NodeDeleted))
    );
    assert_eq!(guard.status(), LockStatus::Lost(LostReason::NodeDeleted));
    assert_eq!(
        guard.release_blocking(),
        Err(Error::Lost(LostReason::NodeDeleted))
    );
    assert!(locks.shared().read(|s| s.slots.is_empty()));
}

#[test]
fn a_pending_lock_is_waited_for_with_a_timeout_or_cancelled_from_elsewhere() {
    let (locks, mut link) = connected();
    let mut pending = locks.mutex("/locks/h").start().unwrap();
    let sent = requests(&mut link);
    assert_eq!(sent.len(), 2, "started at once: create + list");
    assert!(pending.wait_timeout_blocking(Duration::ZERO).is_none());
    grant(&mut link, &sent, 11);
    let guard = pending
        .wait_timeout_blocking(Duration::from_secs(5))
        .expect("granted")
        .unwrap();
    assert_eq!(guard.token(), FencingToken(11));
    assert!(matches!(
        pending.wait_timeout_blocking(Duration::ZERO),
        Some(Err(Error::Cancelled))
    ));
    // Another waits behind it, and is cancelled from another thread.
    let waiter = locks.mutex("/locks/h").start().unwrap();
    let stop = waiter.canceller();
    std::thread::spawn(move || stop.cancel()).join().unwrap();
    assert!(matches!(waiter.wait_blocking(), Err(Error::Cancelled)));
    drop(guard);
}

#[test]
fn owners_reach_the_node_and_a_self_deadlock_is_refused_without_a_request() {
    let (locks, mut link) = connected();
    let worker = locks.with_owner("worker-1");
    assert_eq!(worker.owner(), Some("worker-1"));
    assert_eq!(locks.owner(), None);
    let mutex = worker
        .mutex("/locks/o")
        .detect_deadlocks(Duration::from_secs(1));
    let mut lock = pin!(mutex.lock());
    assert!(poll_once(lock.as_mut()).is_pending());
    let sent = requests(&mut link);
    let Op::Create { data, .. } = &sent[0].op else {
        panic!("{:?}", sent[0].op)
    };
    assert!(
        data.windows(8).any(|w| w == b"worker-1"),
        "the owner is written into the node: {data:?}"
    );
    grant(&mut link, &sent, 7);
    let Poll::Ready(Ok(guard)) = poll_once(lock.as_mut()) else {
        panic!("not granted")
    };
    // The same owner waiting behind itself: refused at once, nothing sent.
    let again = block_on_until(
        worker.mutex("/locks/o").lock(),
        Some(Instant::now() + Duration::from_secs(5)),
    );
    let Some(Err(Error::SelfDeadlock { path, owner, held })) = again else {
        panic!("{again:?}")
    };
    assert_eq!((path.as_str(), owner.as_str()), ("/locks/o", "worker-1"));
    assert_eq!(held, NodeKind::Write);
    assert!(requests(&mut link).is_empty());
    // An explicit owner on the lock object overrides the client's: no refusal.
    let other = worker.mutex("/locks/o").owner("worker-2");
    let mut wait = pin!(other.lock());
    assert!(poll_once(wait.as_mut()).is_pending());
    assert!(!requests(&mut link).is_empty());
    drop(guard);
}

#[test]
fn participants_and_deadlocks_run_a_core_task_and_return_its_event() {
    let (locks, mut link) = connected();
    let mut inspect = pin!(locks.participants("/locks/none"));
    assert!(poll_once(inspect.as_mut()).is_pending());
    let sent = requests(&mut link);
    assert!(matches!(&sent[0].op, Op::GetChildren { path, .. } if path == "/locks/none"));
    // The lock directory and the semaphore layouts' directories beside it: none exists.
    assert_eq!(sent.len(), 4, "{sent:?}");
    for r in &sent {
        link.handle_reply(r.id, Err(ZkError::NoNode), Instant::now());
    }
    let Poll::Ready(Ok(found)) = poll_once(inspect.as_mut()) else {
        panic!("no participants")
    };
    assert!(found.holders.is_empty() && found.waiters.is_empty());
    assert!(locks.shared().read(|s| s.slots.is_empty()));

    let mut scan = pin!(locks.deadlocks("/locks"));
    assert!(poll_once(scan.as_mut()).is_pending());
    // An empty root: every listing answers nothing.
    let mut rounds = 0;
    let cycles = loop {
        if let Poll::Ready(result) = poll_once(scan.as_mut()) {
            break result.unwrap();
        }
        let sent = requests(&mut link);
        assert!(!sent.is_empty() && rounds < 10, "the scan stalled");
        for r in &sent {
            let reply = match &r.op {
                Op::GetChildren { .. } => Ok(Reply::Children(vec![])),
                _ => Err(ZkError::NoNode),
            };
            link.handle_reply(r.id, reply, Instant::now());
        }
        rounds += 1;
    };
    assert!(cycles.is_empty());
    assert!(matches!(
        block_on_until(locks.participants("relative"), Some(Instant::now())),
        Some(Err(e)) if e.is_invalid_path()
    ));
}

#[test]
fn connection_events_follow_the_session() {
    let (locks, mut link) = pair(Config::new(Duration::from_secs(10), 1));
    let mut events = locks.connection_events();
    let mut late = None;
    let now = Instant::now();
    let disconnected = SessionEvent::Disconnected {
        since_contact: Duration::ZERO,
    };
    let script = [
        (
            SessionEvent::Connected { session_id: 1 },
            ConnectionState::Connected { session_id: 1 },
        ),
        (disconnected, ConnectionState::Suspended { session_id: 1 }),
        (disconnected, ConnectionState::Suspended { session_id: 1 }),
        (
            SessionEvent::Connected { session_id: 1 },
            ConnectionState::Connected { session_id: 1 },
        ),
        (
            SessionEvent::Connected { session_id: 1 },
            ConnectionState::Connected { session_id: 1 },
        ),
        (disconnected, ConnectionState::Suspended { session_id: 1 }),
        (SessionEvent::Expired, ConnectionState::Connecting),
        (
            SessionEvent::Connected { session_id: 2 },
            ConnectionState::Connected { session_id: 2 },
        ),
        // A new id without an expiry first (a client that moved on by itself).
        (
            SessionEvent::Connected { session_id: 3 },
            ConnectionState::Connected { session_id: 3 },
        ),
        (SessionEvent::Abandoned, ConnectionState::Connecting),
        (
            SessionEvent::Connected { session_id: 4 },
            ConnectionState::Connected { session_id: 4 },
        ),
    ];
    for (i, (event, state)) in script.into_iter().enumerate() {
        link.handle_session(event, now);
        assert_eq!(locks.connection_state(), state, "after step {i}: {event:?}");
        if i == 5 {
            late = Some(locks.connection_events());
        }
    }
    let mut seen = Vec::new();
    while let Some(e) = events.next_timeout_blocking(Duration::ZERO) {
        seen.push(e);
    }
    use ConnectionEvent::*;
    assert_eq!(
        seen,
        vec![
            Connected { session_id: 1 },
            Suspended,
            Reconnected { session_id: 1 },
            Suspended,
            SessionLost { session_id: 1 },
            Connected { session_id: 2 },
            SessionLost { session_id: 2 },
            Connected { session_id: 3 },
            SessionLost { session_id: 3 },
            Connected { session_id: 4 },
        ]
    );
    // A stream sees what happens after it was made.
    let mut late = late.unwrap();
    assert_eq!(late.next_blocking(), Some(SessionLost { session_id: 1 }));
    drop(link); // the binding is gone: closed, then the end of the streams
    assert_eq!(locks.connection_state(), ConnectionState::Closed);
    assert_eq!(events.next_blocking(), Some(Closed));
    assert_eq!(events.next_blocking(), None);
    let rest: Vec<_> = std::iter::from_fn(|| late.next_blocking()).collect();
    assert_eq!(rest.len(), 6, "{rest:?}");
    assert_eq!(rest.last(), Some(&Closed));
}

#[test]
fn a_waiting_connection_stream_is_woken() {
    let (locks, mut link) = connected();
    let mut events = locks.connection_events();
    let waiter = std::thread::spawn(move || events.next_blocking());
    std::thread::sleep(Duration::from_millis(20));
    let disconnected = SessionEvent::Disconnected {
        since_contact: Duration::ZERO,
    };
    link.handle_session(disconnected, Instant::now());
    assert_eq!(waiter.join().unwrap(), Some(ConnectionEvent::Suspended));
}

#[test]
fn a_connection_stream_does_not_keep_the_client_open() {
    let (locks, link) = connected();
    let mut events = locks.connection_events();
    drop(locks);
    assert!(link.is_closed(), "the stream is not a user handle");
    drop(link);
    assert_eq!(events.next_blocking(), Some(ConnectionEvent::Closed));
}

/// A `tracing` subscriber that keeps what it sees, as text: spans with their
/// fields, events with their fields and the span they belong to.
#[derive(Default)]
struct Recorder {
    lines: std::sync::Mutex<Vec<String>>,
    next: std::sync::atomic::AtomicU64,
}

struct Fields(String);

impl tracing::field::Visit for Fields {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.push_str(&format!(" {}={value}", field.name()));
    }
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.push_str(&format!(" {}={value:?}", field.name()));
    }
}

impl tracing::Subscriber for Recorder {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        let id = 1 + self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut fields = Fields(String::new());
        span.record(&mut fields);
        let line = format!("span#{id} {}{}", span.metadata().name(), fields.0);
        self.lines.lock().unwrap().push(line);
        tracing::span::Id::from_u64(id)
    }
    fn record(&self, span: &tracing::span::Id, values: &tracing::span::Record<'_>) {
        let mut fields = Fields(String::new());
        values.record(&mut fields);
        let line = format!("record#{}{}", span.into_u64(), fields.0);
        self.lines.lock().unwrap().push(line);
    }
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut fields = Fields(String::new());
        event.record(&mut fields);
        let parent = event.parent().map_or(0, |p| p.into_u64());
        let line = format!("event#{parent} {}{}", event.metadata().level(), fields.0);
        self.lines.lock().unwrap().push(line);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[test]
fn an_acquisition_is_traced_in_its_own_span() {
    let recorder = std::sync::Arc::new(Recorder::default());
    tracing::subscriber::with_default(recorder.clone(), || {
        let (locks, mut link) = connected();
        let worker = locks.with_owner("worker-7");
        // Queued behind a participant of another session, then granted.
        let mutex = worker.mutex("/locks/traced");
        let mut lock = pin!(mutex.lock());
        assert!(poll_once(lock.as_mut()).is_pending());
        let sent = requests(&mut link);
        let Op::Create { path, .. } = &sent[0].op else {
            panic!("{:?}", sent[0].op)
        };
        let node = format!("{path}0000000002");
        let stat = Stat {
            czxid: 42,
            ephemeral_owner: SID,
            ..Stat::default()
        };
        let now = Instant::now();
        let reply = Reply::Created {
            path: node.clone(),
            stat: Some(stat),
        };
        link.handle_reply(sent[0].id, Ok(reply), now);
        let other = "zkl-00000000000000000000000000000001-write-0000000001";
        let mine = node.rsplit('/').next().unwrap().to_owned();
        let list = Reply::Children(vec![other.to_owned(), mine]);
        link.handle_reply(sent[1].id, Ok(list), now);
        let peer = format!("/locks/traced/{other}");
        let answer = |link: &mut Link, peer_gone: bool| {
            for r in requests(link) {
                let reply = match &r.op {
                    Op::GetData { path, .. } if *path == peer && peer_gone => {
                        Err(lock_core::ZkError::NoNode)
                    }
                    Op::GetData { path, .. } => {
                        let owner = if *path == node { SID } else { 0x99 };
                        Ok(Reply::Data {
                            data: Vec::new(),
                            stat: Stat {
                                czxid: 42,
                                ephemeral_owner: owner,
                                ..Stat::default()
                            },
                        })
                    }
                    Op::GetChildren { .. } => Ok(Reply::Children(vec![node
                        .rsplit('/')
                        .next()
                        .unwrap()
                        .to_owned()])),
                    Op::RemoveWatch { .. } => Ok(Reply::WatchRemoved),
                    Op::Sync { .. } => Ok(Reply::Synced),
                    other => panic!("unexpected {other:?}"),
                };
                link.handle_reply(r.id, reply, now);
            }
        };
        answer(&mut link, false);
        link.handle_watch(peer.clone(), lock_core::WatchKind::NodeDeleted, now);
        answer(&mut link, true);
        let Poll::Ready(Ok(guard)) = poll_once(lock.as_mut()) else {
            panic!("not granted")
        };
        link.handle_session(
            SessionEvent::Disconnected {
                since_contact: Duration::ZERO,
            },
            now,
        );
        assert_eq!(guard.status(), LockStatus::Suspended);
    });
    let lines = recorder.lines.lock().unwrap().clone();
    let text = lines.join("\n");
    let span = lines
        .iter()
        .find(|l| l.contains("zklock.lock"))
        .unwrap_or_else(|| panic!("no acquisition span:\n{text}"));
    assert!(span.contains("path=/locks/traced"), "{span}");
    assert!(span.contains("recipe=Write"), "{span}");
    assert!(span.contains("owner=worker-7"), "{span}");
    let id: u64 = span["span#".len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with(&format!("record#{id} lock="))),
        "{text}"
    );
    let mine = |what: &str| {
        lines
            .iter()
            .any(|l| l.starts_with(&format!("event#{id} ")) && l.contains(what))
    };
    for what in [
        "message=created node=/locks/traced/",
        "message=queued behind=/locks/traced/zkl-00000000000000000000000000000001-write-0000000001",
        "message=acquired",
        "token=42",
        "message=suspended",
    ] {
        assert!(mine(what), "no {what:?} in the span's events:\n{text}");
    }
    assert!(
        lines
            .iter()
            .any(|l| l.contains("Suspended") && l.starts_with("event#0")),
        "the connection change is logged too:\n{text}"
    );
}

/// ZooKeeper's sample settings (tickTime 2000, syncLimit 5) as `conf` says them.
const SAMPLE_CONF: &str = "clientPort=2181\ntickTime=2000\nminSessionTimeout=4000\n\
    maxSessionTimeout=40000\nserverId=1\ninitLimit=10\nsyncLimit=5\n";

#[test]
fn a_hazardous_server_is_an_event_and_a_warning_once() {
    let recorder = std::sync::Arc::new(Recorder::default());
    tracing::subscriber::with_default(recorder.clone(), || {
        // A 10 s session (`connected()`) on the sample settings.
        let (locks, link) = connected();
        let mut events = locks.connection_events();
        let checker = link.server_checker();
        let server: std::net::SocketAddr = "10.0.0.1:2181".parse().unwrap();
        checker.report(server, Ok(SAMPLE_CONF.to_owned()));
        let Some(ConnectionEvent::ServerHazard { server: at, hazard }) =
            events.next_timeout_blocking(Duration::ZERO)
        else {
            panic!("no hazard event")
        };
        assert_eq!(at, server);
        assert_eq!(hazard.kind, HazardKind::FollowerOutlivesSession);
        assert_eq!(hazard.session_timeout, Duration::from_secs(10));
        // The same hazard again (a reconnect to the same server): no new event.
        checker.report(server, Ok(SAMPLE_CONF.to_owned()));
        assert_eq!(events.next_timeout_blocking(Duration::ZERO), None);
        // A stream made later starts with it.
        let mut late = locks.connection_events();
        assert!(matches!(
            late.next_timeout_blocking(Duration::ZERO),
            Some(ConnectionEvent::ServerHazard { .. })
        ));
        assert_eq!(late.next_timeout_blocking(Duration::ZERO), None);
        let checks = locks.server_checks();
        assert_eq!(checks.len(), 1);
        assert_eq!(checks[0].hazards, [hazard]);
        let warnings: Vec<String> = recorder
            .lines
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.contains("WARN") && l.contains("unsafe ZooKeeper settings"))
            .cloned()
            .collect();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("raise the session timeout above 16.5 s"));
    });
}

#[test]
fn a_refused_or_safe_check_is_recorded_without_an_event() {
    let (locks, link) = connected();
    let mut events = locks.connection_events();
    let checker = link.server_checker();
    let refusing: std::net::SocketAddr = "10.0.0.1:2181".parse().unwrap();
    let refused = "conf is not executed because it is not in the whitelist.\n";
    checker.report(refusing, Ok(refused.to_owned()));
    let safe: std::net::SocketAddr = "10.0.0.2:2181".parse().unwrap();
    checker.report(safe, Ok(SAMPLE_CONF.replace("syncLimit=5", "syncLimit=2")));
    assert_eq!(events.next_timeout_blocking(Duration::ZERO), None);
    let checks = locks.server_checks();
    assert_eq!(checks[0].conf, Err(ConfError::Refused));
    assert!(checks[0].hazards.is_empty());
    assert_eq!(checks[1].conf.as_ref().unwrap().sync_limit, Some(2));
    assert!(checks[1].hazards.is_empty());
}
