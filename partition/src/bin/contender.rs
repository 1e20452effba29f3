//! A zklock contender for the partition tests: takes one lock again and again
//! and prints a history line per event (see `lock_partition::history`).
//!
//! ```text
//! contender <async|blocking> <connect string> <lock path> <name>
//!           [--scheme native|curator|kazoo] [--session-timeout-ms N]
//!           [--hold-ms N] [--pause-ms N] [--busy reads|writes]
//! ```
//!
//! `async` connects with lock-zookeeper-client (its driver on a tokio runtime),
//! `blocking` with lock-zookeeper; both then run the same loop on lock-client's
//! blocking API. Each hold lasts `--hold-ms` (default 300), then the lock is
//! released and asked for again after `--pause-ms` (default 100). With `--busy`
//! the holder works while it holds: every 200 ms, while it trusts the lock, it
//! reads the lock's participants (`reads`), and with `writes` also makes a fenced
//! write (an ephemeral node created and deleted in one multi, checked against
//! the lock node). The difference matters under a partition: a follower cut
//! off from its leader goes on answering reads, while a write (and everything
//! the session sends after it) waits for the leader.
//!
//! Commands on stdin: `stick` makes the next hold last until the lock is lost
//! (at most 60 s), so the test can cut the holder off. End of input stops the
//! contender: it releases what it holds, closes its session and exits.
//!
//! A separate thread watches the lock's status every 2 ms and prints
//! `suspended`, `resumed` and `lost` as they happen, so a busy holder blocked in
//! a request does not delay them.

use std::io::{BufRead, Write as _};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use lock_testkit::exclusion::monotonic_ns;
use lock_zookeeper_client::{CreateMode, LockClient, LockGuard, LockStatus, NameScheme, Writes};

const STATUS_POLL: Duration = Duration::from_millis(2);
const BUSY_EVERY: Duration = Duration::from_millis(200);
const STICKY_MAX: Duration = Duration::from_secs(60);
const LOCK_WAIT: Duration = Duration::from_secs(30);

struct Args {
    binding: String,
    connect: String,
    lock: String,
    name: String,
    scheme: NameScheme,
    session_timeout: Duration,
    hold: Duration,
    pause: Duration,
    busy: Busy,
}

/// What a holder does while it holds.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Busy {
    Idle,
    Reads,
    Writes,
}

fn parse_args() -> Result<Args, String> {
    let mut words = std::env::args().skip(1);
    let mut positional = Vec::new();
    let mut args = Args {
        binding: String::new(),
        connect: String::new(),
        lock: String::new(),
        name: String::new(),
        scheme: NameScheme::Native,
        session_timeout: Duration::from_secs(4),
        hold: Duration::from_millis(300),
        pause: Duration::from_millis(100),
        busy: Busy::Idle,
    };
    let millis = |value: Option<String>, flag: &str| {
        value
            .and_then(|v| v.parse().ok())
            .map(Duration::from_millis)
            .ok_or(format!("{flag} needs milliseconds"))
    };
    while let Some(word) = words.next() {
        match word.as_str() {
            "--session-timeout-ms" => args.session_timeout = millis(words.next(), &word)?,
            "--hold-ms" => args.hold = millis(words.next(), &word)?,
            "--pause-ms" => args.pause = millis(words.next(), &word)?,
            "--busy" => {
                args.busy = match words.next().as_deref() {
                    Some("reads") => Busy::Reads,
                    Some("writes") => Busy::Writes,
                    _ => return Err("--busy takes reads or writes".into()),
                }
            }
            "--scheme" => {
                args.scheme = match words.next().as_deref() {
                    Some("native") => NameScheme::Native,
                    Some("curator") => NameScheme::Curator,
                    Some("kazoo") => NameScheme::Kazoo,
                    _ => return Err("--scheme takes native, curator or kazoo".into()),
                }
            }
            flag if flag.starts_with("--") => return Err(format!("unknown option {flag}")),
            _ => positional.push(word),
        }
    }
    let [binding, connect, lock, name]: [String; 4] = positional
        .try_into()
        .map_err(|_| "expected <async|blocking> <connect string> <lock path> <name>".to_string())?;
    if binding != "async" && binding != "blocking" {
        return Err(format!("binding {binding:?}: async or blocking"));
    }
    (args.binding, args.connect, args.lock, args.name) = (binding, connect, lock, name);
    Ok(args)
}

/// Prints history lines (one writer at a time, flushed at once).
struct History {
    prefix: String,
}

impl History {
    fn log(&self, event: &str) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{} {} {event}", monotonic_ns(), self.prefix);
        let _ = out.flush();
    }
}

/// What stdin asked for.
#[derive(Default)]
struct Control {
    stick: AtomicBool,
    stop: AtomicBool,
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(why) => {
            eprintln!("contender: {why}");
            return ExitCode::from(2);
        }
    };
    let history = History {
        prefix: format!("{} {}", args.name, args.lock),
    };
    let control = Arc::new(Control::default());
    thread::spawn({
        let control = control.clone();
        move || {
            for line in std::io::stdin().lock().lines().map_while(Result::ok) {
                if line.trim() == "stick" {
                    control.stick.store(true, Ordering::SeqCst);
                }
            }
            control.stop.store(true, Ordering::SeqCst);
        }
    });
    // The async binding's driver runs on this runtime; it lives until exit.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let connected = match args.binding.as_str() {
        "async" => runtime.block_on(
            lock_zookeeper_client::builder(&args.connect)
                .session_timeout(args.session_timeout)
                .connect(),
        ),
        _ => lock_zookeeper::builder(&args.connect)
            .session_timeout(args.session_timeout)
            .connect(),
    };
    let locks = match connected {
        Ok(locks) => locks,
        Err(e) => {
            history.log(&format!("failed connect {e}"));
            return ExitCode::FAILURE;
        }
    };
    history.log("ready");
    contend(&locks, &args, &control, &history);
    locks.close_blocking();
    ExitCode::SUCCESS
}

/// Takes the lock, holds it, lets go; again until stopped.
fn contend(locks: &LockClient, args: &Args, control: &Control, history: &History) {
    let mutex = locks.mutex(args.lock.as_str()).with_scheme(args.scheme);
    let parent = args.lock.rsplit_once('/').map_or("", |(parent, _)| parent);
    let scratch = format!("{parent}/fenced-{}", args.name);
    while !control.stop.load(Ordering::SeqCst) {
        history.log("acquire-request");
        let guard = match mutex.lock_timeout_blocking(LOCK_WAIT) {
            Ok(guard) => guard,
            Err(e) => {
                history.log(&format!("failed {e}"));
                thread::sleep(args.pause);
                continue;
            }
        };
        history.log(&format!("granted {}", guard.token().0));
        let sticky = control.stick.swap(false, Ordering::SeqCst);
        let deadline = Instant::now() + if sticky { STICKY_MAX } else { args.hold };
        let watching = AtomicBool::new(true);
        thread::scope(|scope| {
            scope.spawn(|| watch(&guard, &watching, history));
            hold(&guard, args, &scratch, deadline, sticky, locks, control);
            watching.store(false, Ordering::SeqCst);
        });
        if !matches!(guard.status(), LockStatus::Lost(_)) {
            history.log("released");
            if let Err(e) = guard.release_blocking() {
                history.log(&format!("note release {e}"));
            }
        }
        thread::sleep(args.pause);
    }
}

/// Holds until the deadline (or, for a sticky hold, until the lock is lost),
/// working if `--busy`.
fn hold(
    guard: &LockGuard,
    args: &Args,
    scratch: &str,
    deadline: Instant,
    sticky: bool,
    locks: &LockClient,
    control: &Control,
) {
    loop {
        if matches!(guard.status(), LockStatus::Lost(_)) {
            return;
        }
        let now = Instant::now();
        if now >= deadline || (!sticky && control.stop.load(Ordering::SeqCst)) {
            return;
        }
        thread::sleep(BUSY_EVERY.min(deadline - now));
        if args.busy != Busy::Idle && guard.is_trusted() {
            let _ = locks.participants_blocking(args.lock.as_str());
        }
        if args.busy == Busy::Writes && guard.is_trusted() {
            let write = Writes::new()
                .create_with_mode(scratch, guard.token().0.to_string(), CreateMode::Ephemeral)
                .delete(scratch);
            let _ = guard.fenced_write_blocking(write);
        }
    }
}

/// Prints the lock's status changes until it is lost or `watching` ends.
fn watch(guard: &LockGuard, watching: &AtomicBool, history: &History) {
    let mut last = LockStatus::Held;
    loop {
        let done = !watching.load(Ordering::SeqCst);
        let status = guard.status();
        if status != last {
            match &status {
                LockStatus::Suspended => history.log("suspended"),
                LockStatus::Held => history.log("resumed"),
                LockStatus::Lost(reason) => {
                    history.log(&format!("lost {reason:?}"));
                    return;
                }
                _ => {}
            }
            last = status;
        }
        if done {
            return;
        }
        thread::sleep(STATUS_POLL);
    }
}
