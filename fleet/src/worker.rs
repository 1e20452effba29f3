//! One worker process: `count` sessions of one library, driven by the
//! coordinator over stdin/stdout, recording every hold to a file.
//!
//! The coordinator's protocol, one line each way per step:
//!
//! 1. the worker connects its sessions and prints `ready <connected>`;
//! 2. `go` starts the workload; `stop` ends it: no new acquisitions, holds
//!    finish and are released, the records are written, the worker prints
//!    `done`; the sessions stay open, so that closing them is not in the window;
//! 3. `close` closes the sessions, and the worker exits.
//!
//! Records (one line each, times in CLOCK_MONOTONIC nanoseconds, which every
//! process on the machine shares, see [`monotonic_ns`]) are described in
//! [`crate::record`].

use crate::record::{Fault, Hold, Record};
use crate::{Mode, WorkerSpec};
use futures::StreamExt;
use lock_testkit::exclusion::monotonic_ns;
use lock_testkit::floor;
use lock_zookeeper_client::{Connect, Error, LockClient, LockEvent, LostReason, TokioRuntime};
use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::{sleep, Instant};
use zookeeper_client::{Acls, Client, CreateMode};

/// How the workload is told to run: before `go`, running, after `stop`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    Waiting,
    Running,
    Stopped,
}

/// A session of either library.
enum Session {
    Zklock(LockClient),
    Bare(Client),
}

/// What every session task shares.
struct Shared {
    spec: WorkerSpec,
    phase: watch::Receiver<Phase>,
    records: Mutex<Vec<Record>>,
}

impl Session {
    fn id(&self) -> Option<i64> {
        match self {
            Session::Zklock(c) => c.session_id(),
            Session::Bare(c) => Some(c.session_id().0),
        }
    }
}

impl Shared {
    fn record(&self, record: Record) {
        self.records.lock().unwrap().push(record);
    }

    /// Records a fault of `session`, now.
    fn fault(&self, session: usize, kind: &str, detail: String) {
        self.record(Record::Fault(Fault {
            session,
            at: monotonic_ns(),
            kind: kind.into(),
            detail,
        }));
    }

    fn running(&self) -> bool {
        *self.phase.borrow() == Phase::Running
    }
}

/// Runs a worker; `spec` comes from the coordinator's command line.
pub fn run(spec: WorkerSpec) {
    // One thread: 1,000 sessions per process on a 2-core machine shared with
    // three ZooKeeper JVMs and the other workers.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let (phase_tx, phase) = watch::channel(Phase::Waiting);
    // stdin is read on a thread of its own: the runtime's one thread runs the sessions.
    let (line_tx, mut lines) = tokio::sync::mpsc::unbounded_channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if line_tx.send(line).is_err() {
                break;
            }
        }
    });
    let shared = Arc::new(Shared {
        spec: spec.clone(),
        phase,
        records: Mutex::new(Vec::new()),
    });
    rt.block_on(async move {
        let sessions = connect_all(&spec).await;
        let connected = sessions.iter().filter(|s| s.is_some()).count();
        say(&format!("ready {connected}"));
        let mut tasks = Vec::new();
        for (i, session) in sessions.into_iter().enumerate() {
            let Some(session) = session else { continue };
            let global = spec.first + i * spec.stride;
            let session = Arc::new(session);
            tasks.push((
                session.clone(),
                tokio::spawn(session_task(shared.clone(), session, global)),
            ));
        }
        while let Some(line) = lines.recv().await {
            match line.trim() {
                "go" => phase_tx.send_replace(Phase::Running),
                "stop" => {
                    phase_tx.send_replace(Phase::Stopped);
                    break;
                }
                other => panic!("worker: unexpected command {other:?}"),
            };
        }
        phase_tx.send_replace(Phase::Stopped);
        let mut handles = Vec::new();
        for (session, task) in tasks {
            task.await.expect("session task");
            handles.push(session);
        }
        let records = std::mem::take(&mut *shared.records.lock().unwrap());
        let text: String = records.iter().map(|r| r.to_line() + "\n").collect();
        std::fs::write(&spec.out, text).expect("writing the records");
        say("done");
        while let Some(line) = lines.recv().await {
            if line.trim() == "close" {
                break;
            }
        }
        let closes = handles.iter().map(|s| async move {
            match &**s {
                Session::Zklock(c) => c.close().await,
                Session::Bare(_) => {}
            }
        });
        futures::future::join_all(closes).await;
        drop(handles);
        // Give zookeeper-client's session tasks a moment to send their closes.
        sleep(Duration::from_millis(300)).await;
    });
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}").expect("stdout");
    out.flush().expect("stdout");
}

/// Connects every session, 20 handshakes in flight at a time (a fleet that
/// starts at once would hit the ensemble with all of them; this is gentler,
/// so that the window measures the steady state). A session that cannot connect
/// is reported on stderr and left out.
async fn connect_all(spec: &WorkerSpec) -> Vec<Option<Session>> {
    let timeout = Duration::from_millis(spec.session_timeout_ms);
    let handle = TokioRuntime(tokio::runtime::Handle::current());
    let connects = (0..spec.count).map(|i| {
        let handle = handle.clone();
        async move {
            let result = match spec.library.as_str() {
                "zklock" => LockClient::builder(&spec.connect)
                    .session_timeout(timeout)
                    .runtime(handle)
                    .connect()
                    .await
                    .map(Session::Zklock)
                    .map_err(|e| e.to_string()),
                "bare" => Client::connector()
                    .with_session_timeout(timeout)
                    .connect(&spec.connect)
                    .await
                    .map(Session::Bare)
                    .map_err(|e| e.to_string()),
                other => panic!("unknown library {other:?}"),
            };
            let global = spec.first + i * spec.stride;
            let report = |e: &String| eprintln!("worker: session {global} did not connect: {e}");
            result.inspect_err(report).ok()
        }
    });
    let sessions: Vec<Option<Session>> =
        futures::stream::iter(connects).buffered(20).collect().await;
    if spec.library == "bare" {
        // zookeeper-client leaves Nagle on; the binding turns it off, so does the floor.
        floor::set_nodelay(&spec.connect);
    }
    sessions
}

/// Waits for `go`; false if the run was stopped before it started.
async fn wait_go(shared: &Shared) -> bool {
    let mut phase = shared.phase.clone();
    let seen = phase.wait_for(|p| *p != Phase::Waiting).await.map(|p| *p);
    matches!(seen, Ok(Phase::Running))
}

/// Sleeps `span`, or less if the run stops first; false if it stopped.
async fn pause(shared: &Shared, span: Duration) -> bool {
    let mut phase = shared.phase.clone();
    tokio::select! {
        _ = sleep(span) => shared.running(),
        _ = phase.wait_for(|p| *p == Phase::Stopped) => false,
    }
}

/// An exponentially distributed span of mean `mean_ms`.
fn exponential(rng: &mut fastrand::Rng, mean_ms: f64) -> Duration {
    Duration::from_secs_f64(-(1.0 - rng.f64()).ln() * mean_ms / 1000.0)
}

async fn session_task(shared: Arc<Shared>, session: Arc<Session>, global: usize) {
    if !wait_go(&shared).await {
        return;
    }
    let spec = &shared.spec;
    let mut rng =
        fastrand::Rng::with_seed(spec.seed ^ (global as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let hot = global < spec.hot_sessions;
    let mut session_id = session.id();
    // The coordinator matches the servers' expiries against these ids.
    let opened = format!("{:#x}", session_id.unwrap_or(0));
    shared.fault(global, crate::record::SESSION_OPENED, opened);
    if spec.mode == Mode::Idle {
        // Holding nothing, a session sees an expiry only as a new session id.
        while pause(&shared, Duration::from_secs(1)).await {
            note_session_change(&shared, &session, global, &mut session_id);
        }
        note_session_change(&shared, &session, global, &mut session_id);
        return;
    }
    if spec.mode == Mode::Fleet && !hot {
        // Spread the first acquisitions over one mean think time.
        let first = Duration::from_secs_f64(rng.f64() * spec.think_ms as f64 / 1000.0);
        if !pause(&shared, first).await {
            return;
        }
    }
    match spec.mode {
        Mode::Uncontended if spec.library == "bare" => {
            if let Session::Bare(c) = &*session {
                floor::mkdir(c, &format!("/yard/bare/u/{global}")).await;
            }
        }
        Mode::Handoff if spec.library == "bare" => {
            if let Session::Bare(c) = &*session {
                // Every session makes it; mkdir tolerates existing ancestors, and a
                // concurrent creation of the last one is harmless.
                let options = CreateMode::Persistent.with_acls(Acls::anyone_all());
                let _ = c.mkdir("/yard/bare/h", &options).await;
            }
        }
        _ => {}
    }
    let bare = spec.library == "bare";
    while shared.running() {
        let (lock, hot_lock) = match spec.mode {
            Mode::Fleet if hot => (format!("/fleet/hot/{}", global % spec.hot_locks), true),
            Mode::Fleet => (
                format!("/fleet/cold/{}", rng.usize(..spec.cold_locks)),
                false,
            ),
            // The bare client's directories are persistent nodes of their own: zklock's
            // are containers, which the server reaps once empty, under a bare create.
            Mode::Uncontended if bare => (format!("/yard/bare/u/{global}"), false),
            Mode::Uncontended => (format!("/yard/u/{global}"), false),
            Mode::Handoff if bare => ("/yard/bare/h".to_owned(), true),
            Mode::Handoff => ("/yard/h".to_owned(), true),
            Mode::Idle => unreachable!("idle sessions returned above"),
        };
        let hold = match (spec.mode, hot) {
            (Mode::Fleet, true) => Duration::from_millis(spec.hot_hold_ms),
            (Mode::Fleet, false) => exponential(&mut rng, spec.hold_ms as f64),
            _ => Duration::ZERO,
        };
        let times = match &*session {
            Session::Zklock(client) => cycle_zklock(&shared, client, global, &lock, hold).await,
            Session::Bare(client) => Some(cycle_bare(client, &lock, hold).await),
        };
        if let Some((requested, granted, released, segments)) = times {
            shared.record(Record::Hold(Hold {
                lock,
                hot: hot_lock,
                session: global,
                requested,
                granted,
                released,
                segments,
            }));
        }
        note_session_change(&shared, &session, global, &mut session_id);
        let think = match (spec.mode, hot) {
            (Mode::Fleet, true) => Duration::from_millis(rng.u64(..=spec.hot_think_ms)),
            (Mode::Fleet, false) => exponential(&mut rng, spec.think_ms as f64),
            _ => Duration::ZERO,
        };
        if !think.is_zero() && !pause(&shared, think).await {
            break;
        }
    }
}

/// Records a fault if the session's id changed since `session_id` (an expiry
/// the client recovered from with a new session).
fn note_session_change(
    shared: &Shared,
    session: &Session,
    global: usize,
    session_id: &mut Option<i64>,
) {
    let now_id = session.id();
    if now_id != *session_id && now_id.is_some() {
        let (was, now) = (session_id.unwrap_or(0), now_id.unwrap_or(0));
        shared.fault(global, "session-changed", format!("{was:#x} -> {now:#x}"));
        *session_id = now_id;
    }
}

/// A hold's [`Hold::requested`], `granted`, `released` and `segments`.
type HoldTimes = (u64, u64, u64, Vec<(u64, u64)>);

/// One zklock acquire, hold and release; `None` if nothing was granted. The
/// hold's trusted segments end at a `Suspended` and start again at a `Resumed`:
/// what the overlap check compares is when this session believed it held the lock.
async fn cycle_zklock(
    shared: &Shared,
    client: &LockClient,
    session: usize,
    lock: &str,
    hold: Duration,
) -> Option<HoldTimes> {
    let fault = |kind: &str, detail: String| shared.fault(session, kind, detail);
    let requested = monotonic_ns();
    let timeout = Duration::from_millis(shared.spec.acquire_timeout_ms);
    let mut phase = shared.phase.clone();
    // A stopped run gives up waiting (dropping the future cancels the acquisition).
    let mutex = client.mutex(lock);
    let acquired = tokio::select! {
        acquired = mutex.lock_timeout(timeout) => acquired,
        _ = phase.wait_for(|p| *p == Phase::Stopped) => return None,
    };
    let guard = match acquired {
        Ok(guard) => guard,
        Err(Error::SessionExpired) => {
            fault("expired-waiting", lock.to_owned());
            return None;
        }
        Err(Error::Timeout) => {
            fault("acquire-timeout", lock.to_owned());
            return None;
        }
        Err(e) => {
            fault("acquire-error", format!("{lock}: {e}"));
            // Do not spin on a persistent error.
            sleep(Duration::from_millis(100)).await;
            return None;
        }
    };
    let granted = monotonic_ns();
    let mut segments = Vec::new();
    let mut trusted_since = Some(granted);
    let mut lost = None;
    let until = Instant::now() + hold;
    loop {
        tokio::select! {
            _ = tokio::time::sleep_until(until) => break,
            event = guard.next_event() => match event {
                Some(LockEvent::Suspended) => {
                    segments.extend(trusted_since.take().map(|start| (start, monotonic_ns())));
                }
                Some(LockEvent::Resumed) => trusted_since = Some(monotonic_ns()),
                Some(LockEvent::Lost(reason)) => {
                    segments.extend(trusted_since.take().map(|start| (start, monotonic_ns())));
                    lost = Some(reason);
                    break;
                }
                Some(_) => {}
                None => break,
            },
        }
    }
    let released = monotonic_ns();
    segments.extend(trusted_since.map(|start| (start, released)));
    match lost {
        Some(LostReason::SessionExpired) => fault("expired-holding", lock.to_owned()),
        Some(reason) => fault("lost", format!("{lock}: {reason:?}")),
        None => {
            if let Err(e) = guard.release().await {
                fault("release-error", format!("{lock}: {e}"));
            }
        }
    }
    Some((requested, granted, released, segments))
}

/// The bare client's cycle: the floor's requests (`lock_testkit::floor`), no failure
/// handling (the yardstick runs without faults).
async fn cycle_bare(client: &Client, lock: &str, hold: Duration) -> HoldTimes {
    let requested = monotonic_ns();
    let node = floor::bare_lock(client, lock).await;
    let granted = monotonic_ns();
    if !hold.is_zero() {
        sleep(hold).await;
    }
    let released = monotonic_ns();
    floor::bare_release(client, &node).await;
    (requested, granted, released, vec![(granted, released)])
}
