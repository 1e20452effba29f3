//! `zklock exec`: run a command while holding a lock.

mod supervision;

use crate::job::{Job, Ready};
use crate::progress::{Progress, Show, Source};
use crate::signals::Signals;
use crate::usage::{self, NodeFor};
use crate::{exit, say, Scheme};
use clap::Args;
use lock_zookeeper_client::{
    Error, FailReason, FencingToken, Leadership, LockClient, LockEvent, LockGuard, LockSpec,
    NameScheme, PendingLock,
};
use rustix::process::Signal;
use std::future::Future;
use std::io::IsTerminal;
use std::os::unix::process::ExitStatusExt;
use std::pin::Pin;
use std::process::ExitCode;
use std::time::Duration;
use supervision::{Act, Supervision};
use tokio::time::{sleep_until, Instant};

/// Arguments of `zklock exec`.
#[derive(Args, Debug)]
pub(crate) struct ExecArgs {
    /// Give up (exit 75) if the lock is not acquired within SECS seconds.
    #[arg(short = 'w', long = "wait", value_name = "SECS", value_parser = crate::parse_secs)]
    wait: Option<Duration>,
    /// Fail at once (exit 75) if the lock is busy.
    #[arg(short = 'n', long = "nonblock", conflicts_with = "wait")]
    nonblock: bool,
    /// Say nothing while waiting, even on a terminal.
    #[arg(short = 'q', long)]
    quiet: bool,
    /// Show the place in the queue when stderr is not a terminal too, a line
    /// per change (on a terminal it is always shown, as one line rewritten in
    /// place; elsewhere, a log or cron's mail, nothing unless asked).
    #[arg(short = 'v', long, conflicts_with = "quiet")]
    progress: bool,
    /// Take the read side of a read/write lock (shared with other readers).
    #[arg(long, conflicts_with = "semaphore")]
    read: bool,
    /// Take one of N permits of a semaphore instead of a mutex.
    #[arg(long, value_name = "N")]
    semaphore: Option<u32>,
    /// Node naming scheme (to share the lock with Curator or kazoo clients).
    #[arg(long, value_enum, default_value = "native")]
    scheme: Scheme,
    /// Who the lock is taken for (a job, a host, a person): written into the node,
    /// shown by `zklock ls`, followed by `zklock deadlocks`. Not with --scheme
    /// curator, whose nodes have no room for it. (kazoo's nodes carry it as their
    /// identifier.)
    #[arg(long, value_name = "ID")]
    owner: Option<String>,
    /// Let `zklock revoke` (or a Curator or kazoo revoker) take the lock: on a
    /// revocation request CMD is stopped (SIGTERM, then SIGKILL) and the lock let go
    /// (exit 74); while waiting, a revocation gives up the place in the queue.
    #[arg(long)]
    revocable: bool,
    /// Lock-delay: after a holder's unclean end (its session expired, its node
    /// deleted by someone else), take the lock no sooner than SECS seconds after
    /// finding it free, so that the old holder's late writes land first; a
    /// clean release is not delayed. The wait is shown as the queue is ("lock-delay after an
    /// unclean end ..."); with -n a lock in its delay is busy. 0 means none.
    /// Mutex only; every holder of the path should use it (a holder without it
    /// leaves no marker, and its own unclean end delays nobody).
    #[arg(long, value_name = "SECS", value_parser = crate::parse_secs)]
    lock_delay: Option<Duration>,
    #[command(flatten)]
    pub(crate) nodes: crate::options::NodeArgs,
    /// The lock's directory in ZooKeeper, e.g. /locks/backup.
    path: String,
    /// The command to run while holding the lock, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub(crate) cmd: Vec<std::ffi::OsString>,
}

impl ExecArgs {
    /// What clap cannot check, found before connecting: a bad combination of
    /// flags, an invalid path or permit count, a path too long for CMD's
    /// environment.
    pub(crate) fn usage_error(&self) -> Option<String> {
        if self.lock_delay.is_some() && (self.read || self.semaphore.is_some()) {
            return Some("--lock-delay needs a mutex (not --read or --semaphore)".to_owned());
        }
        // lock-core refuses these too (no layout), but only once connected.
        if self.scheme == Scheme::Go && (self.read || self.semaphore.is_some()) {
            return Some(
                "--scheme go has only a mutex (go-zookeeper's Lock): not with --read or --semaphore"
                    .to_owned(),
            );
        }
        if self.lock_delay.is_some() && self.scheme == Scheme::Go {
            return Some(
                "--lock-delay cannot be used with --scheme go: go-zookeeper's Lock fails on the marker node it keeps"
                    .to_owned(),
            );
        }
        if self.owner.is_some() && self.scheme == Scheme::Curator {
            return Some(
                "--owner cannot be recorded in Curator-named nodes (use --scheme native or kazoo)"
                    .to_owned(),
            );
        }
        let node = match (self.read, self.semaphore) {
            (true, _) => NodeFor::Read,
            (false, Some(permits)) => NodeFor::Semaphore { permits },
            (false, None) => NodeFor::Write,
        };
        usage::lock_path(&self.path)
            .and_then(|()| self.semaphore.map_or(Ok(()), usage::permits))
            .and_then(|()| usage::node_fits_in_env(&self.path, self.scheme.into(), node))
            .err()
    }
}

/// How `args` take the lock.
enum Taking {
    /// `-n`: at once or not at all (`None` if busy).
    AtOnce(Pin<Box<dyn Future<Output = Result<Option<LockGuard>, Error>>>>),
    /// Waiting in the queue (at most `-w SECS`).
    Waiting(PendingLock, Option<Duration>),
}

/// Starts taking the lock as `args` say.
fn start(locks: &LockClient, args: &ExecArgs) -> Result<Taking, Error> {
    let scheme = args.scheme.into();
    macro_rules! take {
        ($lock:expr) => {{
            let lock = if args.revocable {
                $lock.revocable()
            } else {
                $lock
            };
            if args.nonblock {
                Ok(Taking::AtOnce(Box::pin(
                    async move { lock.try_lock().await },
                )))
            } else {
                lock.start()
                    .map(|pending| Taking::Waiting(pending, args.wait))
            }
        }};
    }
    let locks = match &args.owner {
        Some(owner) => locks.with_owner(owner.clone()),
        None => locks.clone(),
    };
    // Every lock watches its own node: someone deleting it (an administrator)
    // ends the hold at once, and CMD is stopped, instead of at the next reconnect.
    if args.read {
        let rw = locks.rwlock(args.path.clone()).with_scheme(scheme);
        take!(rw.read().clone().watch_node())
    } else if let Some(permits) = args.semaphore {
        take!(locks
            .semaphore(args.path.clone(), permits)
            .with_scheme(scheme)
            .watch_node())
    } else {
        take!(locks
            .mutex(args.path.clone())
            .with_scheme(scheme)
            .lock_delay(args.lock_delay.unwrap_or_default())
            .watch_node())
    }
}

/// Takes the lock as `args` say, showing the wait: `Ok(None)` if busy (`-n`),
/// `Err(Error::Timeout)` past `-w`. A signal gives up (see [`wait_for`]).
async fn acquire(
    locks: &LockClient,
    args: &ExecArgs,
    signals: &mut Signals,
) -> Result<Result<Option<LockGuard>, Error>, ExitCode> {
    let terminal = std::io::stderr().is_terminal();
    match start(locks, args) {
        Err(e) => Ok(Err(e)),
        Ok(Taking::AtOnce(taking)) => {
            let progress = Progress::new(&args.path, Show::Nothing, Source::Participants);
            wait_for(locks, progress, taking, signals).await
        }
        Ok(Taking::Waiting(pending, wait)) => {
            let show = match (args.quiet, terminal, args.progress) {
                (true, _, _) => Show::Nothing,
                (false, true, _) => Show::Line,
                (false, false, true) => Show::Changes,
                (false, false, false) => Show::Nothing,
            };
            let progress =
                Progress::new(&args.path, show, Source::Acquisition(pending.queue_watch()));
            // Dropping the pending acquisition at the timeout gives up its place
            // (its node is deleted).
            let taking = async move {
                match wait {
                    Some(wait) => match tokio::time::timeout(wait, pending).await {
                        Ok(taken) => taken.map(Some),
                        Err(_) => Err(Error::Timeout),
                    },
                    None => pending.await.map(Some),
                }
            };
            wait_for(locks, progress, taking, signals).await
        }
    }
}

/// The exit code for giving up on signal `number` (what a shell reports).
pub(crate) fn signal_code(number: i32) -> ExitCode {
    ExitCode::from(u8::try_from(128 + number).unwrap_or(exit::FAILURE))
}

/// Runs `zklock exec`.
pub(crate) async fn run(
    locks: &LockClient,
    args: ExecArgs,
    ready: Ready,
    signals: &mut Signals,
) -> ExitCode {
    // 1. Take the lock (a signal while waiting cancels: the node is deleted).
    let taken = match acquire(locks, &args, signals).await {
        Ok(taken) => taken,
        Err(code) => return code,
    };
    let guard = match taken {
        Ok(Some(guard)) => guard,
        Ok(None) => {
            say(format_args!("{} is busy", args.path));
            return ExitCode::from(exit::BUSY);
        }
        Err(Error::Timeout) => {
            say(format_args!("timed out waiting for {}", args.path));
            return ExitCode::from(exit::BUSY);
        }
        Err(Error::Failed(FailReason::PermitsMismatch { ours, theirs })) => {
            let (sentence, code) =
                crate::explain::permits_mismatch(&args.path, args.scheme, ours, theirs);
            say(sentence);
            return ExitCode::from(code);
        }
        Err(e) => return crate::fail_at(&args.path, &e),
    };

    supervise(locks, guard, ready, signals).await
}

/// Waits for `taking` (a lock, a leadership), showing `progress`; a signal gives
/// up (dropping `taking` cancels it) with the exit code a shell would report (the
/// node is deleted when zklock closes its session, before it exits).
async fn wait_for<T>(
    locks: &LockClient,
    mut progress: Progress,
    taking: impl Future<Output = T>,
    signals: &mut Signals,
) -> Result<T, ExitCode> {
    tokio::pin!(taking);
    let outcome = loop {
        tokio::select! {
            taken = &mut taking => break Ok(taken),
            number = signals.next() => break Err(signal_code(number)),
            _ = progress.step(locks) => {}
        }
    };
    progress.clear();
    outcome
}

/// What CMD runs under: a held lock or a leadership.
pub(crate) trait Held {
    /// Our node.
    fn node(&self) -> &str;
    /// Until when the hold can be trusted (see `LockGuard::trusted_until`).
    fn trusted_until(&self) -> Option<std::time::Instant>;
    /// Our fencing token.
    fn fencing(&self) -> FencingToken;
    /// The next event of the hold.
    async fn event(&self) -> Option<LockEvent>;
    /// Releases (resigns).
    async fn let_go(self) -> Result<(), Error>;
}

/// A lock's guard and a leadership answer alike; they differ only in how they
/// let go (`release` against `resign`).
macro_rules! held {
    ($hold:ty, $let_go:ident) => {
        impl Held for $hold {
            fn node(&self) -> &str {
                self.path()
            }
            fn trusted_until(&self) -> Option<std::time::Instant> {
                <$hold>::trusted_until(self)
            }
            fn fencing(&self) -> FencingToken {
                self.token()
            }
            async fn event(&self) -> Option<LockEvent> {
                self.next_event().await
            }
            async fn let_go(self) -> Result<(), Error> {
                self.$let_go().await
            }
        }
    };
}
held!(LockGuard, release);
held!(Leadership, resign);

/// Runs `cmd` while `guard` holds, stops its process group if the hold is lost or
/// suspended for too long, lets go once the group is empty, and returns the exit
/// code.
pub(crate) async fn supervise(
    locks: &LockClient,
    guard: impl Held,
    ready: Ready,
    signals: &mut Signals,
) -> ExitCode {
    // 2. Run CMD behind its guard, which keeps it within the lock's deadline
    // (see `crate::guard`).
    let env = [
        ("ZKLOCK_NODE", guard.node().to_owned()),
        ("ZKLOCK_TOKEN", guard.fencing().to_string()),
    ];
    let config = locks.config();
    let margin = config.margin();
    let mut job = match ready.start(&env, guard.trusted_until(), margin).await {
        Ok(job) => job,
        Err(e) => {
            let code = crate::job::cannot_start(e);
            let _ = guard.let_go().await;
            return code;
        }
    };

    // 3. Watch CMD, signals and the lock; what to do is `Supervision`'s call
    // (the margins are explained there), carrying it out is ours. The deadline
    // moves with every proof of contact: read twice per `sync`, handed on when
    // it moved.
    let mut renewals = tokio::time::interval(config.deadline_poll_interval());
    renewals.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut messages = job.messages();
    let mut watch = Supervision::new(guard.node().to_owned(), config.clone());
    let status = loop {
        let deadline = watch.deadline().map(Instant::from_std);
        let act = tokio::select! {
            status = job.wait() => break status,
            // Every catchable signal that would end zklock: passed on to CMD's
            // group (the terminal's Ctrl-C reaches that group by itself: it is
            // the terminal's foreground while CMD runs).
            number = signals.next() => {
                if let Some(sig) = Signal::from_named_raw(number) {
                    job.signal(sig);
                }
                Act::Nothing
            }
            _ = renewals.tick(), if watch.follows_deadline() => Act::Renew(None),
            () = messages.cmd_stopped() => {
                watch.handle_stopped(job.follow_stop(), std::time::Instant::now())
            }
            event = guard.event(), if watch.hears_events() => {
                watch.handle_event(event, guard.trusted_until(), std::time::Instant::now())
            }
            _ = sleep_until(deadline.unwrap_or_else(Instant::now)), if deadline.is_some() => {
                watch.handle_deadline(std::time::Instant::now())
            }
        };
        carry_out(act, &mut job, &guard).await;
    };
    let mut lost = watch.lost();
    // Nothing of CMD's may outlive the lock: empty its group first (at once if
    // the guard itself was killed: then CMD's status is unknown).
    let guard_killed = status.as_ref().map_or(true, |s| s.signal().is_some());
    if guard_killed && !lost {
        if let Ok(status) = &status {
            say(format_args!(
                "CMD's guard was killed ({status}): killing CMD's process group"
            ));
        }
    }
    job.empty(if guard_killed { Duration::ZERO } else { margin })
        .await;
    let status = match status {
        Ok(status) => status,
        Err(e) => {
            say(format_args!("waiting for CMD: {e}"));
            let _ = guard.let_go().await;
            return ExitCode::from(exit::FAILURE);
        }
    };

    // 4. Release, and report. Bounded: with the connection down the release
    // waits for a reconnect, and a lock no longer guaranteed is not worth
    // waiting for (the server deletes the node with the session). While the
    // lock is trusted, the session is closed right behind the release: the
    // binding answers the requests already sent before it closes, so
    // `closeSession` follows the release a round trip sooner.
    let node = guard.node().to_owned();
    let trusted = guard
        .trusted_until()
        .is_some_and(|until| until > std::time::Instant::now());
    let releasing = tokio::time::timeout(config.session_gone_after(), guard.let_go());
    let released = if trusted {
        tokio::join!(releasing, locks.close()).0
    } else {
        releasing.await
    };
    match released.unwrap_or(Err(Error::Timeout)) {
        Ok(()) => {}
        Err(Error::Lost(reason)) => {
            if !lost {
                say(format_args!(
                    "the lock at {node} was lost ({}) before CMD ended",
                    crate::explain::lost(&reason)
                ));
            }
            lost = true;
        }
        Err(e) => {
            say(format_args!(
                "releasing the lock at {node}: {}",
                crate::explain::error(&e)
            ));
        }
    }
    if lost {
        ExitCode::from(exit::LOST)
    } else {
        ExitCode::from(exit::status_code(status))
    }
}

/// Does `act` to CMD (its message said first).
async fn carry_out(act: Act, job: &mut Job, guard: &impl Held) {
    match act {
        Act::Nothing => {}
        Act::Say(message) => say(message),
        Act::Renew(message) => {
            if let Some(message) = message {
                say(message);
            }
            if let Some(until) = guard.trusted_until() {
                job.renew(until).await;
            }
        }
        Act::Resume => job.resume().await,
        Act::Terminate(message) => {
            say(message);
            job.terminate().await;
        }
        Act::Kill(message) => {
            say(message);
            job.signal(Signal::KILL);
        }
    }
}

/// Arguments of `zklock elect`.
#[derive(Args, Debug)]
pub(crate) struct ElectArgs {
    /// The election's directory in ZooKeeper, e.g. /services/scheduler.
    path: String,
    /// Our participant id (what `zklock leader` prints).
    id: String,
    /// Lock-delay: after a leader's unclean end (its session expired, its node
    /// deleted by someone else), lead no sooner than SECS seconds after finding
    /// the election free, so that the old leader's late writes land first; a
    /// clean resignation is not delayed. 0 means none. Every participant should
    /// use it (one without it leaves no marker).
    #[arg(long, value_name = "SECS", value_parser = crate::parse_secs)]
    lock_delay: Option<Duration>,
    #[command(flatten)]
    pub(crate) nodes: crate::options::NodeArgs,
    /// The command to run while leader, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub(crate) cmd: Vec<std::ffi::OsString>,
}

impl ElectArgs {
    /// An empty ID, an invalid path, or one too long for CMD's environment
    /// (before connecting).
    pub(crate) fn usage_error(&self) -> Option<String> {
        if self.id.is_empty() {
            return Some("the participant ID must not be empty".to_owned());
        }
        usage::lock_path(&self.path)
            .and_then(|()| usage::node_fits_in_env(&self.path, NameScheme::Native, NodeFor::Leader))
            .err()
    }
}

/// Runs `zklock elect`: waits to lead, then runs CMD as `exec` does.
pub(crate) async fn elect(
    locks: &LockClient,
    args: ElectArgs,
    ready: Ready,
    signals: &mut Signals,
) -> ExitCode {
    let mut spec = LockSpec::leader(args.path.clone(), args.id.clone());
    if let Some(delay) = args.lock_delay {
        spec = spec.lock_delay(delay);
    }
    let mut election = match locks.election_with_spec(spec) {
        Ok(election) => election,
        Err(e) => return crate::report::fail(&e),
    };
    let show = match std::io::stderr().is_terminal() {
        true => Show::Line,
        false => Show::Nothing,
    };
    let progress = Progress::new(&args.path, show, Source::Participants);
    let leading = election.leadership();
    let led = match wait_for(locks, progress, leading, signals).await {
        Ok(led) => led,
        Err(code) => return code,
    };
    let leadership = match led {
        Ok(leadership) => leadership,
        Err(e) => return crate::fail_at(&args.path, &e),
    };
    let code = supervise(locks, leadership, ready, signals).await;
    election.resign().await;
    code
}
