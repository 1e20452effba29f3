//! The `zookeeper` crate's hazards, each shown against a real ZooKeeper (with the
//! fault proxy): first what the raw crate does, then that lock-zookeeper absorbs it.

use lock_conformance::{
    fresh_server, shared_server, unique_path, wait_until, watchers_of, Admin, ZkAdmin, LONG, SHORT,
};
use lock_core::{LockEvent, LostReason};
use lock_testkit::{FaultProxy, ZkEnsemble, ZkServer};
use lock_zookeeper::{Connect, ConnectFailure, Diagnose, Error, LockClient, LockStatus, Reach};
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};
use zookeeper::{Acl, CreateMode, WatchedEvent, ZkState, ZooKeeper};

/// A raw `zookeeper` client whose state changes (after the first connection) arrive
/// on a channel. Not closed when dropped: the crate's `close` (run by its `Drop`)
/// blocks forever on a dead connection, which would turn a failed assertion into a
/// hang; drop it with `ManuallyDrop::into_inner` when the connection is sound.
fn raw(connect: &str, timeout: Duration) -> (ManuallyDrop<ZooKeeper>, mpsc::Receiver<ZkState>) {
    let zk = ZooKeeper::connect(connect, timeout, |_: WatchedEvent| {}).expect("raw client");
    let (tx, rx) = mpsc::channel();
    zk.add_listener(move |state| {
        let _ = tx.send(state);
    });
    zk.exists("/", false).expect("raw client connects");
    // The parent of `unique_path`s.
    match create(&zk, "/conformance", CreateMode::Persistent) {
        Ok(_) | Err(zookeeper::ZkError::NodeExists) => {}
        Err(e) => panic!("creating /conformance: {e:?}"),
    }
    // The first `Connected` may or may not have reached the listener (added after
    // the crate started connecting): the channel starts empty either way.
    while rx.try_recv().is_ok() {}
    (ManuallyDrop::new(zk), rx)
}

/// An empty node open to all, created by the raw crate.
fn create(zk: &ZooKeeper, path: &str, mode: CreateMode) -> zookeeper::ZkResult<String> {
    zk.create(path, Vec::new(), Acl::open_unsafe().clone(), mode)
}

/// A raw client (see [`raw`]) through `proxy`, with an ephemeral node of its
/// session at a new path named after `test` (returned).
fn raw_with_ephemeral(
    proxy: &FaultProxy,
    timeout: Duration,
    test: &str,
) -> (ManuallyDrop<ZooKeeper>, mpsc::Receiver<ZkState>, String) {
    let (zk, states) = raw(&proxy.connect_string(), timeout);
    let node = unique_path(test);
    create(&zk, &node, CreateMode::Ephemeral).expect("create");
    (zk, states, node)
}

/// Every event queued now (a loaded machine may have produced a spurious
/// suspension, resumed, before the fault under test).
fn queued(guard: &lock_zookeeper::LockGuard) -> Vec<LockEvent> {
    std::iter::from_fn(|| guard.next_event_timeout_blocking(Duration::ZERO)).collect()
}

fn client(connect: &str, timeout: Duration) -> LockClient {
    LockClient::builder(connect)
        .session_timeout(timeout)
        .connect()
        .expect("connect")
}

/// Cuts `proxy` under `locks`, holding `guard`: the crate reconnects within the
/// session (one client, one session) and the lock resumes. Then releases and
/// closes.
fn cut_costs_no_session(proxy: &FaultProxy, locks: &LockClient, guard: lock_zookeeper::LockGuard) {
    proxy.cut();
    wait_until("the reconnection", SHORT, || {
        (locks.diagnostics().reconnects >= 1).then_some(())
    });
    wait_until("the lock resumed", SHORT, || {
        guard.is_trusted().then_some(())
    });
    let events = queued(&guard);
    assert_eq!(events.last(), Some(&LockEvent::Resumed), "{events:?}");
    let d = locks.diagnostics();
    assert_eq!((d.clients_opened, d.sessions), (1, 1), "{d:?}");
    guard.release_blocking().expect("release");
    locks.close_blocking();
}

/// Hazard: the crate runs its state listener on its I/O thread, under its listener
/// lock, so a ZooKeeper call from the listener waits for a reply only that thread
/// could read: the client is wedged for good. The binding's listener only sends a
/// message; the calls a state change calls for (re-verifying a held lock after a
/// reconnect) are made by the driver, on worker threads.
#[test]
fn state_listener_cannot_call_zookeeper_so_the_driver_does() {
    let server = shared_server();

    // The raw crate: a call from the listener never returns, nor does any other.
    let proxy = FaultProxy::start(server.addr()).expect("proxy");
    let (zk, _states) = raw(&proxy.connect_string(), Duration::from_secs(2));
    let zk = Arc::new(ManuallyDrop::into_inner(zk));
    let (tx, rx) = mpsc::channel();
    let inner = zk.clone(); // a cycle: this client is leaked on purpose, wedged
    let once = AtomicBool::new(false);
    zk.add_listener(move |state| {
        if state == ZkState::Connecting && !once.swap(true, Ordering::SeqCst) {
            let _ = tx.send(inner.exists("/", false).is_ok());
        }
    });
    proxy.cut();
    // Proving that something never happens needs a bounded wait.
    assert!(
        rx.recv_timeout(Duration::from_secs(2)).is_err(),
        "a call from the listener returned: the crate no longer deadlocks"
    );
    let (tx, rx) = mpsc::channel();
    let other = zk.clone();
    std::thread::spawn(move || {
        let _ = tx.send(other.exists("/", false).is_ok());
    });
    assert!(
        rx.recv_timeout(Duration::from_secs(1)).is_err(),
        "the wedged client answered"
    );
    std::mem::forget(zk); // its Drop would block on `close` forever

    // The binding re-verifies a held lock after a cut (ZooKeeper calls in reaction
    // to the state change) and resumes it on the same session: the conformance
    // suite's short_cut_resumes_every_recipe, run on this binding by
    // tests/conformance.rs.
}

/// Hazard: after a reconnect the crate re-registers no watch (no `setWatches`), and
/// the server drops a connection's watches with it. The core re-lists and re-watches
/// on every `Connected`, which the binding feeds after each reconnect.
#[test]
fn watches_are_not_reregistered_by_the_crate() {
    let server = shared_server();
    let admin = ZkAdmin::connect(&server.connect_string());

    // The raw crate: the server forgets the watch, and the crate does not set it again.
    let proxy = FaultProxy::start(server.addr()).expect("proxy");
    let (zk, states) = raw(&proxy.connect_string(), Duration::from_secs(2));
    let path = unique_path("raw-watch");
    create(&zk, &path, CreateMode::Persistent).expect("create");
    zk.get_data(&path, true).expect("getData with a watch");
    wait_until("the server holds the watch", SHORT, || {
        (watchers_of(server, &path).len() == 1).then_some(())
    });
    proxy.cut();
    while states.recv_timeout(SHORT).expect("reconnects") != ZkState::Connected {}
    // A round trip on the new connection: a re-registration would have come first.
    zk.exists("/", false).expect("connected again");
    wait_until("the server to forget the watch, for good", SHORT, || {
        watchers_of(server, &path).is_empty().then_some(())
    });
    zk.exists("/", false).expect("connected");
    assert!(
        watchers_of(server, &path).is_empty(),
        "the crate re-registered"
    );
    assert!(admin.delete(&path));
    drop(ManuallyDrop::into_inner(zk));
    // The binding's waiter is still handed the lock: the conformance suite's
    // waiter_rewatches_after_reconnect, run on this binding by tests/conformance.rs.
}

/// Hazard: when the server expired the session while the connection was down, the
/// crate reconnects into a *new* session without a word (the listener says
/// `NotConnected`, as for any failed attempt, then `Connected`), and it hides the
/// session id. It also never notices the silent network in the first place. The
/// binding detects the silence itself (`Suspended` before the expiry), notices the
/// new session through its marker node. The held lock is never silently held: it
/// is reported `Lost(SuspendedTooLong)` before the server expires the session (the
/// core loses it a margin before the server could, counted from the last contact,
/// whatever the suspended grace).
#[test]
fn silent_new_session_after_expiry_is_reported_as_expiry() {
    let server = shared_server();
    let admin = ZkAdmin::connect(&server.connect_string());
    let timeout = Duration::from_secs(3);

    // The raw crate.
    let proxy = FaultProxy::start(server.addr()).expect("proxy");
    let (zk, states, node) = raw_with_ephemeral(&proxy, timeout, "raw-ephemeral");
    let (_, old_owner) = admin.stat(&node).expect("exists");
    proxy.blackhole();
    admin.wait_deleted(&node, LONG); // the server expired the session...
    let noticed: Vec<ZkState> = states.try_iter().collect();
    assert!(
        noticed.is_empty(),
        "...and the crate noticed nothing in all that time, but got {noticed:?}"
    );
    proxy.heal();
    let mut seen = Vec::new();
    while seen.last() != Some(&ZkState::Connected) {
        seen.push(states.recv_timeout(SHORT).expect("reconnects"));
    }
    assert!(!seen.contains(&ZkState::Closed), "{seen:?}");
    // Calls succeed, on a session the caller was never told about.
    create(&zk, &node, CreateMode::Ephemeral).expect("create on the new session");
    let (_, new_owner) = admin.stat(&node).expect("exists");
    assert_ne!(new_owner, old_owner, "a new session, silently");
    drop(ManuallyDrop::into_inner(zk));

    // The binding. A long grace: yet the lock is lost before the server could
    // expire the session (counted from the last contact), whatever the grace.
    let proxy = FaultProxy::start(server.addr()).expect("proxy");
    let locks = LockClient::builder(&proxy.connect_string())
        .session_timeout(timeout)
        .suspended_grace(Duration::from_secs(60))
        .connect()
        .expect("connect");
    let path = unique_path("silent-session");
    let guard = locks.mutex(&path).lock_blocking().expect("lock");
    let old_session = locks.session_id();
    assert_eq!(admin.stat(guard.path()).map(|s| s.1), old_session);
    proxy.blackhole();
    admin.wait_deleted(guard.path(), LONG); // the server expired the session...
    let events = queued(&guard);
    assert_eq!(
        events[events.len().saturating_sub(2)..],
        [
            LockEvent::Suspended,
            LockEvent::Lost(LostReason::SuspendedTooLong)
        ],
        "...after the holder was told it lost the lock"
    );
    proxy.heal();
    let session = wait_until("the new session", SHORT, || {
        locks.session_id().filter(|s| Some(*s) != old_session)
    });
    let d = locks.diagnostics();
    assert_eq!(
        (d.clients_opened, d.sessions),
        (1, 2),
        "the crate's own silent session was detected (not a replacement client): {d:?}"
    );
    assert!(d.silences >= 1, "the silent network was detected: {d:?}");
    assert_eq!(
        guard.release_blocking(),
        Err(Error::Lost(LostReason::SuspendedTooLong))
    );
    let guard = locks
        .mutex(&path)
        .lock_blocking()
        .expect("lock on the new session");
    assert_eq!(guard.grant().session_id, session);
    guard.release_blocking().expect("release");
    locks.wait_idle_blocking().expect("idle");
    assert!(admin.children(&path).is_empty());
    locks.close_blocking();
}

/// Hazard: a server gone long enough (no answer for `floor(T) + 1` s when the crate
/// reconnects) leaves the crate `Closed` for good: every call returns `ConnectionLoss` at
/// once. The binding treats that as the end of the session (waiters
/// `SessionExpired`; held locks were already `Lost(SuspendedTooLong)` a margin
/// before the server could expire the session), gives typed errors meanwhile, and
/// opens a new client, which works once the server is back.
#[test]
fn closed_for_good_gives_typed_errors_then_a_new_session() {
    let server = fresh_server();
    let admin = ZkAdmin::connect(&server.connect_string());
    let path = unique_path("closed-for-good");
    let locks = LockClient::builder(&server.connect_string())
        .session_timeout(Duration::from_secs(1))
        .suspended_grace(Duration::from_secs(60))
        .connect()
        .expect("connect");
    let guard = locks.mutex(&path).lock_blocking().expect("lock");
    let waiter = locks.mutex(&path).start().expect("start");
    admin.wait_children(&path, SHORT, &|c| c.len() == 2);
    drop(admin);
    server.stop();
    // Lost a margin before the server could have expired the session (were it
    // alive), long before the crate gives up.
    let mut events = Vec::new();
    while !matches!(events.last(), Some(LockEvent::Lost(_))) {
        let event = guard.next_event_timeout_blocking(SHORT);
        events.push(event.unwrap_or_else(|| panic!("not lost: {events:?}")));
    }
    assert_eq!(
        events[events.len() - 2..],
        [
            LockEvent::Suspended,
            LockEvent::Lost(LostReason::SuspendedTooLong)
        ]
    );
    let mut waiter = waiter;
    assert_eq!(
        waiter
            .wait_timeout_blocking(SHORT)
            .expect("the waiter ends")
            .err(),
        Some(Error::SessionExpired)
    );
    // While no server answers: typed errors, no hang.
    assert_eq!(
        locks
            .mutex(&path)
            .lock_timeout_blocking(Duration::from_millis(300))
            .unwrap_err(),
        Error::Timeout
    );
    assert_eq!(
        locks.mutex(&path).try_lock_blocking().unwrap_err(),
        Error::Timeout
    );
    assert_eq!(
        guard.release_blocking(),
        Err(Error::Lost(LostReason::SuspendedTooLong))
    );
    wait_until("a replacement client", SHORT, || {
        (locks.diagnostics().clients_opened >= 2).then_some(())
    });
    server.restart().expect("restart");
    // The old session's nodes go when the restarted server expires it.
    let guard = locks
        .mutex(&path)
        .lock_timeout_blocking(LONG)
        .expect("a new session once the server is back");
    assert!(locks.diagnostics().sessions >= 2);
    guard.release_blocking().expect("release");
    locks.close_blocking();
}

/// `result` is the failure of a connect the client gave up on (no session
/// within the connect timeout), explained: `server` accepted TCP connections
/// and answered nothing.
fn assert_gave_up(result: Result<LockClient, Error>, server: &str) {
    let Err(Error::Connect {
        failure: ConnectFailure::Unreachable { servers },
        source: Some(source),
    }) = &result
    else {
        panic!("{result:?}");
    };
    assert_eq!(servers, &vec![(server.to_owned(), Reach::NoAnswer)]);
    assert!(
        matches!(
            source.downcast_ref::<Error>(),
            Some(Error::Connect {
                failure: ConnectFailure::NoSession { .. },
                ..
            })
        ),
        "{source:?}"
    );
}

/// Hazard: `create` returns no Stat, so no token. The core takes the token from the
/// `getData` on its own node that it sends anyway: the token is our node's `czxid`,
/// at no extra request (the request count is checked by the conformance suite). The
/// session id that ownership checks compare with comes from the marker node; it is
/// our node's `ephemeralOwner`.
#[test]
fn token_without_stat_on_create_is_the_nodes_czxid() {
    let server = shared_server();
    let admin = ZkAdmin::connect(&server.connect_string());
    let locks = client(&server.connect_string(), Duration::from_secs(2));
    let path = unique_path("token");
    let mut last = 0;
    for _ in 0..3 {
        let guard = locks.mutex(&path).lock_blocking().expect("lock");
        let (czxid, owner) = admin.stat(guard.path()).expect("our node");
        assert_eq!(guard.token().0, czxid);
        assert_eq!(Some(owner), locks.session_id());
        assert_eq!(guard.grant().session_id, owner);
        assert!(czxid > last);
        last = czxid;
        guard.release_blocking().expect("release");
    }
    locks.close_blocking();
}

/// Hazard: the crate (0.8.0) has no `multi`. Added in the fork
/// (`ZooKeeper::multi`): creates (a container among them), a setData, a check and
/// a delete apply as one transaction, with their results; a failing op is named
/// and nothing is applied; paths go through the chroot both ways.
#[test]
fn fork_runs_a_multi_as_one_transaction() {
    use zookeeper::{MultiError, Op, OpResult, ZkError};
    let server = shared_server();
    let (zk, _) = raw(&server.connect_string(), Duration::from_secs(10));
    let dir = unique_path("fork-multi");
    let (a, gone) = (format!("{dir}/a"), format!("{dir}/gone"));
    let create = |path: &str, mode| Op::Create {
        path: path.to_owned(),
        data: b"v0".to_vec(),
        acl: Acl::open_unsafe().clone(),
        mode,
    };
    let results = zk
        .multi(vec![
            create(&dir, CreateMode::Persistent),
            create(&a, CreateMode::Persistent),
            create(&format!("{dir}/c"), CreateMode::Container),
            create(&format!("{dir}/s-"), CreateMode::EphemeralSequential),
            create(&gone, CreateMode::Persistent),
            Op::SetData {
                path: a.clone(),
                data: b"v1".to_vec(),
                version: Some(0),
            },
            Op::Check {
                path: a.clone(),
                version: Some(1),
            },
            Op::Delete {
                path: gone.clone(),
                version: None,
            },
        ])
        .expect("the multi applies");
    match &results[..] {
        [OpResult::Create(d), OpResult::Create(_), OpResult::Create(c), OpResult::Create(s), OpResult::Create(_), OpResult::SetData(stat), OpResult::Check, OpResult::Delete] =>
        {
            assert_eq!((d, c), (&dir, &format!("{dir}/c")));
            assert!(s.starts_with(&format!("{dir}/s-")) && s.len() == dir.len() + 13);
            assert_eq!(stat.version, 1);
        }
        other => panic!("{other:?}"),
    }
    let (data, stat) = zk.get_data(&a, false).expect("a");
    assert_eq!((data.as_slice(), stat.version), (&b"v1"[..], 1));
    // Created (as a container: the server shows clients no mark of it, and reaps
    // it only a minute after it had children; the unit test checks the op code).
    assert!(zk.exists(&format!("{dir}/c"), false).expect("c").is_some());
    assert!(zk.exists(&gone, false).expect("gone").is_none());

    // The check fails: the setData before it is not applied either.
    let failed = zk.multi(vec![
        Op::SetData {
            path: a.clone(),
            data: b"v2".to_vec(),
            version: None,
        },
        Op::Check {
            path: gone.clone(),
            version: None,
        },
    ]);
    assert_eq!(
        failed.unwrap_err(),
        MultiError::Op {
            index: 1,
            error: ZkError::NoNode
        }
    );
    assert_eq!(zk.get_data(&a, false).expect("a").0, b"v1");

    // Under a chroot: paths in and out are the chroot's.
    let (rooted, _) = raw(&format!("{}{dir}", server.connect_string()), SHORT);
    let results = rooted
        .multi(vec![
            create("/r", CreateMode::Persistent),
            Op::Delete {
                path: "/a".into(),
                version: Some(1),
            },
        ])
        .expect("a multi under the chroot");
    assert!(matches!(&results[..], [OpResult::Create(r), OpResult::Delete] if r == "/r"));
    assert!(zk.exists(&a, false).expect("a").is_none());
    assert!(zk.exists(&format!("{dir}/r"), false).expect("r").is_some());
    drop(ManuallyDrop::into_inner(rooted));
    drop(ManuallyDrop::into_inner(zk));
}

/// Hazard: the crate never times out a silent connection, and gives up for good on
/// a reconnect if the server's last answer is older than `floor(T) + 1` s. The
/// driver probes a connection without a reply for T/3, so an idle holder stays
/// quiet (no spurious suspension) for many timeouts, its session is touched all
/// the while, and the crate's last answer stays fresh: it still resumes after a cut.
#[test]
fn idle_holder_stays_quiet_and_resumes_after_a_cut() {
    let timeout = Duration::from_secs(2);
    let proxy = FaultProxy::start(shared_server().addr()).expect("proxy");
    let locks = client(&proxy.connect_string(), timeout);
    let guard = locks
        .mutex(unique_path("idle"))
        .lock_blocking()
        .expect("lock");
    // Four session timeouts of idleness (without the probes, the crate's last answer
    // could be 8 s old, against `floor(T) + 1` = 3 s). Nothing should happen to the
    // lock (a machine loaded enough to delay a reply past the reply deadline could
    // make the binding suspend and resume it, which is not what this is about).
    let idle = guard.next_event_timeout_blocking(timeout * 4);
    assert!(
        matches!(idle, None | Some(LockEvent::Suspended)),
        "{idle:?}"
    );
    cut_costs_no_session(&proxy, &locks, guard);
}

/// Keeps `locks` busy (taking and releasing a lock at `path`, never idle for 2/3 T)
/// for `busy`: the `zookeeper` crate pings only after 2/3 T without traffic, so
/// it sends no ping all that time.
fn keep_busy(locks: &LockClient, path: &str, busy: Duration) {
    let start = Instant::now();
    while start.elapsed() < busy {
        locks
            .mutex(path)
            .lock_blocking()
            .expect("lock")
            .release_blocking()
            .expect("release");
    }
}

/// Hazard, fixed in the crate (the fork, zookeeper-zklock): a reconnect gave up for good
/// (`Closed`) when the crate's last *ping* was older than `floor(T) + 1` s, and a
/// busy client never pings (only after 2/3 T of idleness), so it lost its session
/// on any connection loss although the server still held it. The patched crate
/// counts from the server's last answer: a busy client reconnects into its
/// session, and the binding's held lock is suspended, then resumed.
#[test]
fn busy_client_keeps_its_session_across_a_cut() {
    let server = shared_server();
    let timeout = Duration::from_secs(1);

    // The crate: busy for three times `floor(T) + 1` s, then cut.
    let proxy = FaultProxy::start(server.addr()).expect("proxy");
    let (zk, states, node) = raw_with_ephemeral(&proxy, timeout, "raw-busy");
    let owner = zk
        .exists(&node, false)
        .expect("exists")
        .map(|s| s.ephemeral_owner);
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(3) {
        zk.exists("/", false).expect("busy");
    }
    proxy.cut();
    let mut seen = Vec::new();
    while !matches!(seen.last(), Some(ZkState::Connected | ZkState::Closed)) {
        seen.push(states.recv_timeout(SHORT).expect("reconnects or gives up"));
    }
    assert_eq!(seen.last(), Some(&ZkState::Connected), "gave up: {seen:?}");
    assert_eq!(
        zk.exists(&node, false)
            .expect("exists")
            .map(|s| s.ephemeral_owner),
        owner,
        "the same session, its ephemeral node kept"
    );
    drop(ManuallyDrop::into_inner(zk));

    // The binding: the held lock is suspended and resumed, on the same session.
    let proxy = FaultProxy::start(server.addr()).expect("proxy");
    let locks = client(&proxy.connect_string(), timeout);
    let path = unique_path("busy");
    keep_busy(&locks, &path, Duration::from_secs(3));
    let guard = locks.mutex(&path).lock_blocking().expect("lock");
    cut_costs_no_session(&proxy, &locks, guard);
}

/// The same fix, seen from a queue: a busy client's waiter keeps its node (its
/// place) across a cut, and is granted in turn, before a session that queued
/// after it.
#[test]
fn busy_client_s_waiter_keeps_its_place_across_a_cut() {
    let server = shared_server();
    let admin = ZkAdmin::connect(&server.connect_string());
    let timeout = Duration::from_secs(2);
    let proxy = FaultProxy::start(server.addr()).expect("proxy");
    let busy = client(&proxy.connect_string(), timeout);
    let holder = client(&server.connect_string(), Duration::from_secs(10));
    let later = client(&server.connect_string(), Duration::from_secs(10));
    let queue = unique_path("busy-queue");
    let held = holder.mutex(&queue).lock_blocking().expect("lock");
    let mut waiting = busy.mutex(&queue).start().expect("start");
    let ours = admin.wait_children(&queue, SHORT, &|c| c.len() == 2);
    let ours: Vec<String> = ours
        .into_iter()
        .filter(|name| !held.path().ends_with(name.as_str()))
        .collect();
    let mut behind = later.mutex(&queue).start().expect("start");
    admin.wait_children(&queue, SHORT, &|c| c.len() == 3);
    let session = busy.session_id();
    // Never idle for 2/3 T, for longer than floor(T) + 1 s.
    let work = unique_path("busy-work");
    keep_busy(&busy, &work, Duration::from_millis(3500));
    let guard = busy.mutex(&work).lock_blocking().expect("lock");
    proxy.cut();
    wait_until("the lock resumed", SHORT, || {
        (busy.diagnostics().reconnects >= 1 && guard.is_trusted()).then_some(())
    });
    assert_eq!(busy.session_id(), session);
    assert_eq!(busy.diagnostics().clients_opened, 1);
    let names = admin.children(&queue);
    assert!(
        ours.iter().all(|name| names.contains(name)),
        "the waiter's node {ours:?} is kept: {names:?}"
    );
    held.release_blocking().expect("release");
    let granted = waiting
        .wait_timeout_blocking(SHORT)
        .expect("the waiter ends")
        .expect("the waiter is granted");
    assert_eq!(
        granted
            .path()
            .rsplit_once('/')
            .map(|(_, name)| vec![name.to_owned()]),
        Some(ours),
        "granted on its original node"
    );
    assert_eq!(granted.grant().session_id, session.expect("a session"));
    assert!(
        behind.wait_timeout_blocking(Duration::ZERO).is_none(),
        "the later session still waits"
    );
    granted.release_blocking().expect("release");
    let last = behind
        .wait_timeout_blocking(SHORT)
        .expect("the later waiter ends")
        .expect("granted");
    last.release_blocking().expect("release");
    guard.release_blocking().expect("release");
    for locks in [busy, holder, later] {
        locks.close_blocking();
    }
}

/// A listener that holds every connection it accepts without answering (a tarpit)
/// until `forward` is set; connections accepted after that are forwarded to
/// `upstream` (those held stay held, unlike a healed `FaultProxy`'s). Also
/// returns the number of connections held.
fn tarpit(
    upstream: std::net::SocketAddr,
) -> (std::net::SocketAddr, Arc<AtomicBool>, Arc<AtomicUsize>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("tarpit");
    let addr = listener.local_addr().expect("address");
    let forward = Arc::new(AtomicBool::new(false));
    let held_count = Arc::new(AtomicUsize::new(0));
    let (switch, count) = (forward.clone(), held_count.clone());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming() {
            let Ok(client) = conn else { continue };
            if !switch.load(Ordering::SeqCst) {
                held.push(client);
                count.fetch_add(1, Ordering::SeqCst);
                continue;
            }
            let Ok(server) = std::net::TcpStream::connect(upstream) else {
                continue;
            };
            let (mut c1, mut s1) = (client.try_clone().unwrap(), server.try_clone().unwrap());
            let (mut c2, mut s2) = (client, server);
            std::thread::spawn(move || std::io::copy(&mut c1, &mut s1));
            std::thread::spawn(move || std::io::copy(&mut s2, &mut c2));
        }
    });
    (addr, forward, held_count)
}

/// Hazard: the crate arms its connection timeout only when it *re*connects. Its
/// first attempt has none: a server that accepts the TCP connection and never
/// answers (one starting up under load, or a tarpit) leaves the client `Connecting`
/// forever, without a state change; its calls block forever. The binding gives a
/// client that makes no progress up after `T + 4 s` and starts a fresh one, and
/// `connect` keeps to its timeout.
#[test]
fn first_connection_without_timeout_is_given_up() {
    let server = shared_server();

    // The raw crate: nothing happens, for longer than any of its own timeouts.
    let silent = FaultProxy::start(server.addr()).expect("proxy");
    silent.blackhole();
    let addr = silent.addr();
    let zk = ZooKeeper::connect(
        &addr.to_string(),
        Duration::from_secs(1),
        |_: WatchedEvent| {},
    )
    .expect("raw client");
    let (tx, states) = mpsc::channel();
    zk.add_listener(move |state| {
        let _ = tx.send(state);
    });
    let (tx, calls) = mpsc::channel();
    let zk = Arc::new(zk);
    let caller = zk.clone();
    std::thread::spawn(move || {
        let _ = tx.send(caller.exists("/", false).is_ok());
    });
    // Proving that something never happens needs a bounded wait: 4 s is past the
    // crate's 2 s connection timeout and its `floor(T) + 1` = 2 s closing rule.
    assert!(
        calls.recv_timeout(Duration::from_secs(4)).is_err(),
        "the call returned"
    );
    assert!(
        states.try_recv().is_err(),
        "the crate reported a state change"
    );
    std::mem::forget(zk); // stuck: its Drop would block

    // The binding: `connect` keeps to its timeout...
    let start = std::time::Instant::now();
    let result = LockClient::builder(&addr.to_string())
        .session_timeout(Duration::from_secs(1))
        .connect_timeout(Duration::from_secs(2))
        .connect();
    assert_gave_up(result, &addr.to_string());
    assert!(start.elapsed() < SHORT);

    // ...and replaces a stuck client: the first one lands in the tarpit, the one
    // opened after the watchdog gives up on it reaches the server.
    let (addr, forward, held) = tarpit(server.addr());
    let connecting = std::thread::spawn(move || {
        LockClient::builder(&addr.to_string())
            .session_timeout(Duration::from_secs(1))
            .connect_timeout(LONG)
            .connect()
    });
    // (The binding's probe of a server that gave no session at once lands
    // there too.)
    wait_until("the first client is in the tarpit", SHORT, || {
        (held.load(Ordering::SeqCst) >= 1).then_some(())
    });
    forward.store(true, Ordering::SeqCst);
    let locks = connecting
        .join()
        .expect("connect thread")
        .expect("connected");
    assert_eq!(locks.diagnostics().clients_opened, 2);
    let guard = locks
        .mutex(unique_path("tarpit"))
        .lock_blocking()
        .expect("lock");
    guard.release_blocking().expect("release");
    locks.close_blocking();
}

/// Hazard: the crate (0.8.0) has no `sync`, the request that makes a follower ask
/// the leader (a read is answered by the server alone). Added in the fork (zookeeper-zklock):
/// through a follower whose leader is frozen, reads still return at once, and a
/// sync returns only once the leader is back.
#[test]
fn sync_goes_through_the_leader() {
    let ensemble = ZkEnsemble::start(3).expect("a 3-node ensemble");
    let leader = ensemble.wait_for_leader(SHORT).expect("a leader");
    let follower = (0..3).find(|&i| i != leader).expect("a follower");
    let connect = ensemble.member(follower).expect("member").connect_string();
    let (zk, _) = raw(&connect, Duration::from_secs(10));
    let (reader, _) = raw(&connect, Duration::from_secs(10));
    assert_eq!(zk.sync("/conformance"), Ok("/conformance".to_owned()));
    ensemble.members()[leader]
        .pause()
        .expect("pause the leader");
    // Within syncLimit (3 s), the follower still serves.
    reader
        .exists("/", false)
        .expect("a read, answered by the follower alone");
    let (tx, synced) = mpsc::channel();
    let zk = Arc::new(ManuallyDrop::into_inner(zk));
    let syncing = zk.clone();
    std::thread::spawn(move || {
        let _ = tx.send(syncing.sync("/conformance"));
    });
    // Proving that something does not happen needs a bounded wait.
    assert!(
        synced.recv_timeout(Duration::from_secs(1)).is_err(),
        "the sync returned while the leader was frozen"
    );
    ensemble.members()[leader]
        .resume()
        .expect("resume the leader");
    assert_eq!(
        synced.recv_timeout(SHORT).expect("the sync returns"),
        Ok("/conformance".to_owned())
    );
    drop(ManuallyDrop::into_inner(reader));
}

/// Hazard: the crate (0.8.0) does not say which session timeout the server
/// granted; a server clamps the timeout asked for into its `minSessionTimeout`
/// ..= `maxSessionTimeout`. Added in the fork (`ZooKeeper::session_timeout`): the
/// granted one once connected, the one asked for before.
#[test]
fn fork_reports_the_granted_session_timeout() {
    let server = ZkServer::builder()
        .max_session_timeout(Duration::from_secs(4))
        .start()
        .expect("a server granting at most 4 s");
    // Clamped down.
    let (zk, _) = raw(&server.connect_string(), Duration::from_secs(20));
    assert_eq!(zk.session_timeout(), Duration::from_secs(4));
    drop(ManuallyDrop::into_inner(zk));
    // Granted as asked.
    let (zk, _) = raw(&server.connect_string(), Duration::from_millis(1500));
    assert_eq!(zk.session_timeout(), Duration::from_millis(1500));
    drop(ManuallyDrop::into_inner(zk));
    // Before any answer: a listener that never accepts (the kernel completes the
    // handshake, nobody answers the connection request).
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let zk = ZooKeeper::connect(
        &silent.local_addr().expect("addr").to_string(),
        Duration::from_secs(20),
        |_: WatchedEvent| {},
    )
    .expect("a client, connecting");
    assert_eq!(zk.session_timeout(), Duration::from_secs(20));
    // Closing would wait for an answer that never comes.
    std::mem::forget(zk);
}

/// The binding asks for 20 s of a server that grants at most 4 s: it reports 4 s
/// and times its locks by it. Behind a blackhole (the server hears nothing more,
/// and expires the session 4 s after it last did), a held lock goes `Suspended`,
/// then `Lost` within 4 s of the cut, before the server could expire the session
/// (timed by the 20 s asked for, it would read `Lost` after about 18 s).
#[test]
fn granted_timeout_times_the_locks() {
    let granted = Duration::from_secs(4);
    let server = ZkServer::builder()
        .max_session_timeout(granted)
        .start()
        .expect("a server granting at most 4 s");
    let proxy = FaultProxy::start(server.addr()).expect("proxy");
    let locks = client(&proxy.connect_string(), Duration::from_secs(20));
    assert_eq!(locks.session_timeout(), granted);
    let guard = locks
        .mutex(unique_path("granted-timeout"))
        .lock_blocking()
        .expect("lock");
    proxy.blackhole();
    let cut_at = Instant::now();
    let mut suspended_at = None;
    let lost_at = loop {
        match guard.status() {
            LockStatus::Held => {}
            LockStatus::Suspended => {
                suspended_at.get_or_insert_with(|| cut_at.elapsed());
            }
            LockStatus::Lost(_) => break cut_at.elapsed(),
            other => panic!("{other:?}"),
        }
        assert!(
            cut_at.elapsed() < LONG,
            "not lost within {LONG:?} of the cut"
        );
        std::thread::sleep(Duration::from_millis(1));
    };
    eprintln!("granted 4 s, blackhole at 0: Suspended from {suspended_at:?}, Lost at {lost_at:?}");
    assert!(
        lost_at < granted,
        "lost {lost_at:?} after the cut: the server may have expired the session first"
    );
    assert!(suspended_at.expect("Suspended before Lost") < lost_at);
    assert_eq!(
        queued(&guard).last(),
        Some(&LockEvent::Lost(LostReason::SuspendedTooLong))
    );
    proxy.heal();
    locks.close_blocking();
}
