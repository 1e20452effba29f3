//! `zklock __guard`: the small process zklock starts CMD through, so that CMD
//! never outlives zklock (and with it, the lock), and never runs past the lock's
//! deadline, whatever happens to zklock.
//!
//! zklock starts it (a re-exec of its own binary) as the leader of a process
//! group of its own before it connects, so that its start-up overlaps the connect
//! and the acquisition; the guard waits on its stdin, a socket, for zklock's word
//! that the lock is held (a [`wire::GO`]): CMD's environment, zklock's own stdin
//! (a passed descriptor, so that CMD reads from where zklock's caller left it),
//! and the lock's deadline. The socket ending without that word (no lock, zklock
//! gone) ends the guard without starting CMD.
//!
//! CMD runs in a process group of its own, which it leads, and so does
//! everything CMD starts that does not leave it. The guard is *not* in that
//! group: a SIGSTOP of CMD's group (a debugger, `kill -STOP -PGID`, a job stop)
//! leaves the guard running, so that its clock runs on whatever is stopped. A
//! guard that shared CMD's group would resume together with CMD and could only
//! race it.
//!
//! # The deadline
//!
//! The socket stays open while CMD runs. zklock sends the lock's trusted-until
//! instant (a margin before the server could expire the session, one session
//! timeout after the ensemble's leader last provably heard from it) with the
//! start, then again at every renewal (each newer proof of contact), as an
//! absolute reading of CLOCK_MONOTONIC, one clock for every process of the host:
//! a message read late is no less true, unlike a duration relative to its
//! sending. When the deadline passes unrenewed, the guard stops CMD's group
//! (SIGSTOP) at once, on its own clock, whether zklock runs or not; a renewal
//! after that continues it (a starved zklock caught up); a kill grace later (the
//! earliest the server could expire the session), or as soon as zklock says the
//! lock is gone, it kills the group (SIGKILL) and exits with 74. Past the
//! deadline, every wake-up of the guard (a SIGCHLD of CMD continued by someone,
//! its 100 ms tick) stops the group again: only the guard continues CMD's group,
//! and only before the deadline.
//!
//! # zklock's end
//!
//! The guard asks the kernel for a signal when its parent dies (Linux's and
//! FreeBSD's parent-death signal; the parent is the thread of zklock that started
//! it, which lives as long as zklock) and then kills CMD's group with SIGKILL;
//! the socket's end says the same: however zklock ends (SIGKILL, a crash, the OOM
//! killer), CMD's group dies within moments, while zklock's session, and with it
//! the lock, lasts a session timeout more. Elsewhere (macOS) it checks its parent
//! every [`PARENT_POLL`] instead.
//!
//! # Job control
//!
//! Signals zklock forwards go to CMD's group, not to the guard; it passes CMD's
//! exit status on as its own exit code (128+N for a signal N). On a terminal
//! zklock hands CMD's group the foreground once it is made; when CMD stops for
//! the terminal (Ctrl-Z: SIGTSTP, or SIGTTIN/SIGTTOU) the guard gives the
//! foreground back to zklock's group and tells zklock, which stops itself: the
//! shell shows the job stopped, and `fg` continues zklock, which asks the guard
//! to continue CMD (it does, before the deadline only). A SIGSTOP from elsewhere
//! (a debugger) is not job control and is not followed: zklock would stay
//! stopped when the debugger continued CMD.
//!
//! It does not make itself a child subreaper (PR_SET_CHILD_SUBREAPER): processes
//! that leave CMD's group (setsid, daemons) would only come back to it after
//! their parents die, and reaping them would race tokio's wait for CMD. The
//! process group is what zklock and the guard signal and kill; see the README.

use crate::signals::{ignored_at_start, Signals, ENDING};
use crate::{exit, say};
use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};
use rustix::process::{getpgid, getppid, Pid, Signal, WaitId, WaitIdOptions};
use std::ffi::OsString;
use std::fs::File;
use std::io::{ErrorKind, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::process::{ExitCode, Stdio};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;
use tokio::signal::unix::{signal, SignalKind};

/// How often the guard checks that zklock still runs where the kernel has no
/// parent-death signal (and, everywhere, in case the signal was lost), and, past
/// the deadline, stops CMD's group again (members continued by someone else).
pub(crate) const PARENT_POLL: Duration = Duration::from_millis(100);

/// The signal the kernel sends the guard when zklock dies (Linux, FreeBSD).
const PARENT_DEATH: SignalKind = SignalKind::terminate();

/// The messages on the guard's socket: one kind byte, then the kind's payload
/// (integers little-endian).
pub(crate) mod wire {
    /// zklock to the guard, first and once: start CMD. A mode byte (`T`: zklock
    /// has the terminal's foreground, `-`), the deadline (u64 nanoseconds of
    /// CLOCK_MONOTONIC, 0 for none), the kill grace (u64 milliseconds), the
    /// environment's length (u32) and the environment (`KEY=VALUE\0`...); zklock's
    /// stdin rides along as a passed descriptor.
    pub(crate) const GO: u8 = b'G';
    /// zklock to the guard: the lock's deadline renewed (u64 nanoseconds of
    /// CLOCK_MONOTONIC).
    pub(crate) const DEADLINE: u8 = b'D';
    /// zklock to the guard: continue CMD's group (after a job stop, after the
    /// terminal's handover), if the deadline has not passed.
    pub(crate) const CONTINUE: u8 = b'C';
    /// zklock to the guard: the lock is gone: SIGTERM and SIGCONT to CMD's group
    /// before the deadline, SIGKILL after it.
    pub(crate) const TERMINATE: u8 = b'T';
    /// The guard to zklock: CMD runs, its pid (i32), the id of its process group.
    pub(crate) const STARTED: u8 = b'P';
    /// The guard to zklock: CMD stopped for the terminal (Ctrl-Z): zklock follows.
    pub(crate) const STOPPED: u8 = b'S';
    /// The length of [`GO`]'s fixed part, the kind byte included.
    pub(crate) const GO_HEADER: usize = 1 + 1 + 8 + 8 + 4;
}

/// CLOCK_MONOTONIC now, in nanoseconds: one clock for every process of the host,
/// which a stop of either end does not shift.
pub(crate) fn monotonic_ns() -> u64 {
    let now = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
        .unwrap_or_else(|_| nix::sys::time::TimeSpec::new(0, 0));
    let secs = u64::try_from(now.tv_sec()).unwrap_or(0);
    let nanos = u64::try_from(now.tv_nsec()).unwrap_or(0);
    secs.saturating_mul(1_000_000_000).saturating_add(nanos)
}

/// `at` on CLOCK_MONOTONIC, in nanoseconds, never later than the truth: the clock
/// is read before the `Instant` it is matched with, so that a delay between the
/// two readings (a stop) makes the result earlier, not later.
pub(crate) fn on_monotonic(at: std::time::Instant) -> u64 {
    let clock = monotonic_ns();
    let now = std::time::Instant::now();
    match at.checked_duration_since(now) {
        Some(ahead) => clock.saturating_add(nanos(ahead)),
        None => clock.saturating_sub(nanos(now.duration_since(at))),
    }
}

/// The `N` bytes of a message at `at` (its length checked by the caller).
pub(crate) fn bytes_at<const N: usize>(message: &[u8], at: usize) -> [u8; N] {
    message[at..at + N].try_into().expect("a checked length")
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Arguments of the hidden `zklock __guard --parent PID -- CMD...`, the line
/// zklock starts its guard with ([`GuardArgs::line`]). Read without clap: the
/// guard starts beside the connect, competing with it for the CPU, and CMD
/// waits for it at the grant if it is still starting; building the whole
/// command line's definition (a quarter of its page faults) would only add to
/// that.
#[derive(Debug)]
pub(crate) struct GuardArgs {
    /// zklock's pid: the parent whose death ends CMD's group.
    parent: i32,
    /// The command.
    cmd: Vec<OsString>,
}

impl GuardArgs {
    const NAME: &str = "__guard";

    /// The arguments (after the program name) that start the guard of `cmd` for
    /// zklock `parent`.
    pub(crate) fn line(parent: i32, cmd: &[OsString]) -> Vec<OsString> {
        let head = [Self::NAME, "--parent", &parent.to_string(), "--"].map(OsString::from);
        head.into_iter().chain(cmd.iter().cloned()).collect()
    }

    /// The guard's arguments if `args` (the program name first) is a line of
    /// [`GuardArgs::line`]; `None` for anything else (clap reads it then).
    pub(crate) fn read(args: &[OsString]) -> Option<GuardArgs> {
        match args {
            [_, name, flag, parent, dashes, cmd @ ..]
                if name == Self::NAME
                    && flag == "--parent"
                    && dashes == "--"
                    && !cmd.is_empty() =>
            {
                let parent = parent.to_str()?.parse().ok()?;
                let cmd = cmd.to_vec();
                Some(GuardArgs { parent, cmd })
            }
            _ => None,
        }
    }
}

/// Runs the guard (its own runtime: the guard never connects to ZooKeeper).
pub(crate) fn main(args: GuardArgs) -> ExitCode {
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime.block_on(run(args)),
        Err(e) => {
            say(format_args!("cannot start CMD's guard: {e}"));
            ExitCode::from(exit::CANNOT_RUN)
        }
    }
}

async fn run(args: GuardArgs) -> ExitCode {
    let Some(parent) = Pid::from_raw(args.parent) else {
        say("__guard: invalid --parent");
        return ExitCode::from(exit::USAGE);
    };
    // Catch every signal that would end (or stop) the guard, but those zklock
    // was started with ignored (CMD inherits them ignored): first, so that the
    // parent-death signal, once asked for, is caught. The guard is in a group of
    // its own, which nobody signals but on purpose.
    let stop = SignalKind::from_raw(Signal::TSTP.as_raw());
    let mut ending = match Signals::catch(&[&ENDING[..], &[stop]].concat()) {
        Ok(signals) => signals,
        Err(e) => return cannot_guard(e),
    };
    if ignored_at_start(PARENT_DEATH) {
        if let Err(e) = ending.also(PARENT_DEATH) {
            return cannot_guard(e);
        }
    }
    let mut children = match signal(SignalKind::child()) {
        Ok(children) => children,
        Err(e) => return cannot_guard(e),
    };
    #[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
    if let Err(e) = rustix::process::set_parent_process_death_signal(Signal::from_named_raw(
        PARENT_DEATH.as_raw_value(),
    )) {
        return cannot_guard(e.into());
    }
    // zklock may have died before the kernel was asked: then nothing is started.
    if orphaned(parent) {
        return ExitCode::from(exit::FAILURE);
    }
    let zklock_group = getpgid(Some(parent)).ok();
    // Started ahead of the lock: wait until zklock holds it and says so.
    // Blocking: the guard has nothing else to do until then, and the socket
    // ends when zklock does.
    let (go, rest) = match receive_go() {
        Ok(Some(go)) if !orphaned(parent) => go,
        // zklock gave up (no lock) or is gone: CMD never runs.
        Ok(_) => return ExitCode::from(exit::FAILURE),
        Err(e) => return cannot_guard(e),
    };
    let socket = match socket_from_stdin() {
        Ok(socket) => socket,
        Err(e) => return cannot_guard(e),
    };
    let (mut from_zklock, mut to_zklock) = socket.into_split();
    let terminal = File::open("/dev/tty").ok();

    let mut command = Command::new(&args.cmd[0]);
    command.args(&args.cmd[1..]).envs(go.env).process_group(0);
    command.stdin(go.stdin.map_or_else(Stdio::null, Stdio::from));
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            say(format_args!("cannot run {:?}: {e}", args.cmd[0]));
            return ExitCode::from(if e.kind() == ErrorKind::NotFound {
                exit::NOT_FOUND
            } else {
                exit::CANNOT_RUN
            });
        }
    };
    let Some(cmd_pid) = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .and_then(Pid::from_raw)
    else {
        let _ = child.kill().await;
        return cannot_guard(std::io::Error::other("CMD has no pid"));
    };
    let mut started = vec![wire::STARTED];
    started.extend_from_slice(&cmd_pid.as_raw_nonzero().get().to_le_bytes());
    // zklock may be gone already: the socket's end (below) says so.
    let _ = to_zklock.write_all(&started).await;

    let mut cmd = Cmd {
        group: cmd_pid,
        deadline: go.deadline,
        grace: go.grace,
        frozen: false,
        killed: false,
        // CMD's stops for the terminal before zklock handed it the foreground
        // are the handover's, not the user's.
        handed_over: !(go.tty && terminal.is_some()),
    };
    let mut inbox = rest;
    let mut buffer = [0u8; 256];
    let mut poll = tokio::time::interval(PARENT_POLL);
    let mut zklock_gone = false;
    cmd.enforce();
    loop {
        // The next instant the deadline asks for something: stopping, or killing.
        let due = cmd.next_due().map(at_monotonic);
        tokio::select! {
            biased;
            status = child.wait() => {
                if cmd.handed_over {
                    give_back(terminal.as_ref(), cmd.group, zklock_group);
                }
                if cmd.killed {
                    return ExitCode::from(exit::LOST);
                }
                return match status {
                    Ok(status) => ExitCode::from(crate::exit::status_code(status)),
                    Err(e) => {
                        say(format_args!("waiting for CMD: {e}"));
                        ExitCode::from(exit::FAILURE)
                    }
                };
            }
            // Wake-ups first check the clock: CMD's group never gets to run past
            // the deadline for want of the guard's attention.
            _ = children.recv() => {
                cmd.enforce();
                if let Some(stop) = stopped_by(cmd_pid) {
                    let for_terminal = [Signal::TSTP, Signal::TTIN, Signal::TTOU]
                        .iter()
                        .any(|s| s.as_raw() == stop);
                    if for_terminal && cmd.handed_over && terminal.is_some() {
                        give_back(terminal.as_ref(), cmd.group, zklock_group);
                        // zklock stops too, and asks for CMD's continuation.
                        let _ = to_zklock.write_all(&[wire::STOPPED]).await;
                    }
                }
            }
            () = sleep_until_due(due) => cmd.enforce(),
            read = from_zklock.read(&mut buffer), if !zklock_gone => {
                match read {
                    Ok(0) | Err(_) => {
                        // zklock is gone (its socket ends with it).
                        zklock_gone = true;
                        cmd.kill("zklock is gone");
                    }
                    Ok(n) => {
                        inbox.extend_from_slice(&buffer[..n]);
                        cmd.take_frames(&mut inbox);
                    }
                }
            }
            _ = ending.next() => cmd.enforce_and_follow(parent),
            _ = poll.tick() => cmd.enforce_and_follow(parent),
        }
    }
}

/// CMD's process group as the guard keeps it: within the lock's deadline.
struct Cmd {
    /// CMD's process group (its pid: it leads it).
    group: Pid,
    /// The lock's deadline on CLOCK_MONOTONIC (ns), if zklock gave one.
    deadline: Option<u64>,
    /// How long after the deadline the group is killed if zklock does not say.
    grace: Duration,
    /// The group was stopped by the deadline.
    frozen: bool,
    /// The group was killed by the guard.
    killed: bool,
    /// zklock handed the terminal over (or there was none to hand).
    handed_over: bool,
}

impl Cmd {
    /// When the deadline next asks for something, on CLOCK_MONOTONIC.
    fn next_due(&self) -> Option<u64> {
        let deadline = self.deadline?;
        if self.killed {
            None
        } else if self.frozen {
            Some(deadline.saturating_add(nanos(self.grace)))
        } else {
            Some(deadline)
        }
    }

    /// Whether the deadline has passed.
    fn past_deadline(&self) -> bool {
        self.deadline.is_some_and(|d| monotonic_ns() >= d)
    }

    /// Stops the group once the deadline has passed (again at every call: a
    /// member someone else continued stops at once), kills it a grace later.
    fn enforce(&mut self) {
        let Some(deadline) = self.deadline else {
            return;
        };
        if self.killed {
            return;
        }
        let now = monotonic_ns();
        if now < deadline {
            return;
        }
        self.signal(Signal::STOP);
        if !self.frozen {
            self.frozen = true;
            say("the lock's deadline passed unrenewed: CMD's process group stopped (SIGSTOP)");
        }
        if now >= deadline.saturating_add(nanos(self.grace)) {
            self.kill("the lock is no longer held");
        }
    }

    /// [`enforce`](Self::enforce)s, and kills the group if zklock (`parent`) is
    /// gone.
    fn enforce_and_follow(&mut self, parent: Pid) {
        self.enforce();
        if orphaned(parent) {
            self.kill("zklock is gone");
        }
    }

    /// Kills the group (once), saying why.
    fn kill(&mut self, why: &str) {
        if !self.killed {
            self.killed = true;
            self.signal(Signal::KILL);
            say(format_args!("{why}: CMD's process group killed (SIGKILL)"));
        }
    }

    fn signal(&self, sig: Signal) {
        let _ = rustix::process::kill_process_group(self.group, sig);
    }

    /// Acts on zklock's complete messages in `inbox`, leaving a partial one.
    fn take_frames(&mut self, inbox: &mut Vec<u8>) {
        loop {
            let used = match inbox.first() {
                Some(&wire::DEADLINE) if inbox.len() >= 9 => {
                    self.renew(u64::from_le_bytes(bytes_at(inbox, 1)));
                    9
                }
                Some(&wire::CONTINUE) => {
                    self.handed_over = true;
                    self.enforce();
                    if !self.past_deadline() && !self.killed {
                        self.signal(Signal::CONT);
                    }
                    1
                }
                Some(&wire::TERMINATE) => {
                    if self.past_deadline() {
                        self.kill("the lock is gone after its deadline");
                    } else if !self.killed {
                        self.signal(Signal::TERM);
                        self.signal(Signal::CONT);
                    }
                    1
                }
                Some(&wire::DEADLINE) | None => return,
                Some(other) => {
                    say(format_args!("__guard: unknown message {other}"));
                    1
                }
            };
            inbox.drain(..used);
        }
    }

    /// A newer deadline: a group the old one stopped continues if it is ahead.
    fn renew(&mut self, deadline: u64) {
        if self.deadline.is_some_and(|d| d >= deadline) || self.killed {
            return;
        }
        self.deadline = Some(deadline);
        if self.frozen && !self.past_deadline() {
            self.frozen = false;
            self.signal(Signal::CONT);
            say("the lock's deadline was renewed: CMD's process group continued");
        }
    }
}

/// The tokio instant for `at` on CLOCK_MONOTONIC (for a timer only: the guard
/// acts on the clock's own reading).
fn at_monotonic(at: u64) -> tokio::time::Instant {
    let now = tokio::time::Instant::now();
    let clock = monotonic_ns();
    now + Duration::from_nanos(at.saturating_sub(clock))
}

/// Sleeps until `due`, forever if `None`.
async fn sleep_until_due(due: Option<tokio::time::Instant>) {
    match due {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// zklock's word to start CMD.
struct Go {
    /// zklock has the terminal's foreground: it hands it to CMD's group.
    tty: bool,
    /// The lock's deadline (CLOCK_MONOTONIC, ns).
    deadline: Option<u64>,
    /// How long after the deadline CMD's group is killed.
    grace: Duration,
    /// Added to CMD's environment (`ZKLOCK_NODE`, `ZKLOCK_TOKEN`).
    env: Vec<(OsString, OsString)>,
    /// zklock's stdin, for CMD's (`None`: zklock had none).
    stdin: Option<OwnedFd>,
}

/// Reads zklock's [`wire::GO`] from stdin (a socket): `None` if zklock closed it
/// without one; with it, what was read past it (zklock's next messages).
fn receive_go() -> std::io::Result<Option<(Go, Vec<u8>)>> {
    let socket = std::io::stdin();
    let socket = socket.as_fd();
    let mut message = Vec::new();
    let mut stdin = None;
    let mut buffer = [0u8; 4096];
    let total = loop {
        if message.len() >= wire::GO_HEADER {
            let total = wire::GO_HEADER + u32::from_le_bytes(bytes_at(&message, 18)) as usize;
            if message.len() >= total {
                break total;
            }
        }
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
        let mut control = RecvAncillaryBuffer::new(&mut space);
        let received = rustix::net::recvmsg(
            socket,
            &mut [IoSliceMut::new(&mut buffer)],
            &mut control,
            RecvFlags::CMSG_CLOEXEC,
        )?;
        for ancillary in control.drain() {
            if let RecvAncillaryMessage::ScmRights(fds) = ancillary {
                for fd in fds {
                    stdin.get_or_insert(fd);
                }
            }
        }
        if received.bytes == 0 {
            return Ok(None);
        }
        message.extend_from_slice(&buffer[..received.bytes]);
    };
    if message[0] != wire::GO {
        return Err(std::io::Error::other("the first message is not the start"));
    }
    let rest = message.split_off(total);
    let deadline = Some(u64::from_le_bytes(bytes_at(&message, 2))).filter(|&d| d != 0);
    let grace = Duration::from_millis(u64::from_le_bytes(bytes_at(&message, 10)));
    let env = message[wire::GO_HEADER..]
        .split(|&b| b == 0)
        .filter(|entry| !entry.is_empty())
        .map(|entry| {
            let (key, value) =
                entry.split_at(entry.iter().position(|&b| b == b'=').unwrap_or(entry.len()));
            let value = value.get(1..).unwrap_or_default();
            (
                OsString::from_vec(key.to_vec()),
                OsString::from_vec(value.to_vec()),
            )
        })
        .collect();
    let go = Go {
        tty: message[1] == b'T',
        deadline,
        grace,
        env,
        stdin,
    };
    Ok(Some((go, rest)))
}

/// The guard's stdin, the socket to zklock, as a tokio stream (a duplicate, not
/// inherited by CMD, whose stdin is zklock's).
fn socket_from_stdin() -> std::io::Result<tokio::net::UnixStream> {
    let fd = rustix::io::fcntl_dupfd_cloexec(std::io::stdin().as_fd(), 3)?;
    let socket = std::os::unix::net::UnixStream::from(fd);
    socket.set_nonblocking(true)?;
    tokio::net::UnixStream::from_std(socket)
}

fn cannot_guard(e: std::io::Error) -> ExitCode {
    say(format_args!("cannot guard CMD: {e}"));
    ExitCode::from(exit::CANNOT_RUN)
}

/// Whether zklock is gone (its pid is no longer the guard's parent).
fn orphaned(parent: Pid) -> bool {
    getppid() != Some(parent)
}

/// The signal that stopped the child `pid`, if it has just stopped (consumes the
/// stop's report only, and a continuation's: its exit is still tokio's to
/// collect).
fn stopped_by(pid: Pid) -> Option<i32> {
    let options = WaitIdOptions::STOPPED | WaitIdOptions::CONTINUED | WaitIdOptions::NOHANG;
    match rustix::process::waitid(WaitId::Pid(pid), options) {
        Ok(Some(status)) if status.stopped() => status.stopping_signal(),
        _ => None,
    }
}

/// Gives the terminal's foreground back to zklock's group, if CMD's group has it
/// (only then). The guard asks from the background: SIGTTOU, which would stop
/// it, is blocked for the call (blocked, not ignored: an ignored disposition
/// would be inherited by anything the guard starts later; it starts nothing
/// later, but the mask is restored at once all the same).
fn give_back(tty: Option<&File>, group: Pid, zklock_group: Option<Pid>) {
    use nix::sys::signal::{pthread_sigmask, SigSet, SigmaskHow, Signal as NixSignal};
    if let (Some(tty), Some(zklock_group)) = (tty, zklock_group) {
        if rustix::termios::tcgetpgrp(tty).is_ok_and(|fg| fg == group) {
            let mut ttou = SigSet::empty();
            ttou.add(NixSignal::SIGTTOU);
            let mut old = SigSet::empty();
            let blocked = pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&ttou), Some(&mut old));
            let _ = rustix::termios::tcsetpgrp(tty, zklock_group);
            if blocked.is_ok() {
                let _ = pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&old), None);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::GuardArgs;
    use std::ffi::OsString;

    #[test]
    fn the_guard_reads_the_line_zklock_starts_it_with_and_nothing_else() {
        let cmd = ["sh", "-c", "echo --parent --"].map(OsString::from);
        let zklock = OsString::from("zklock");
        let line: Vec<OsString> = std::iter::once(zklock)
            .chain(GuardArgs::line(42, &cmd))
            .collect();
        let read = GuardArgs::read(&line).expect("the guard's own line");
        assert_eq!((read.parent, read.cmd), (42, cmd.to_vec()));
        // Without CMD, or with a pid that is no number: left to clap, which
        // knows no `__guard` (exit 2).
        assert!(GuardArgs::read(&line[..5]).is_none());
        let mut bad_pid = line.clone();
        bad_pid[3] = OsString::from("x");
        assert!(GuardArgs::read(&bad_pid).is_none());
    }
}
