//! `zklock __guard`: the small process zklock starts CMD through, so that CMD
//! never outlives zklock (and with it, the lock).
//!
//! zklock starts it (a re-exec of its own binary) as the leader of a new process
//! group before it connects, so that its start-up overlaps the connect and the
//! acquisition; the guard waits on its stdin, a socket, for zklock's word that the
//! lock is held: CMD's environment and zklock's own stdin (a passed descriptor,
//! so that CMD reads from where zklock's caller left it). The socket ending
//! without that word (no lock, zklock gone) ends the guard without starting CMD.
//! CMD inherits the group, and so does everything CMD starts that does not
//! leave it. The guard asks the kernel for a signal when its parent dies (Linux's
//! and FreeBSD's parent-death signal; the parent is zklock's main thread, which
//! lives as long as zklock) and then kills the whole group with SIGKILL: however
//! zklock ends (SIGKILL, a crash, the OOM killer), CMD's group dies within
//! moments, while zklock's session, and with it the lock, lasts a session timeout
//! more. Elsewhere (macOS) it checks its parent every [`PARENT_POLL`] instead.
//!
//! The guard is otherwise inert: signals zklock forwards go to the whole group,
//! the guard included, and it ignores them (CMD got them too); it passes CMD's
//! exit status on as its own exit code (128+N for a signal N). On a terminal it
//! gives the foreground back to zklock's group when CMD ends or stops, and stops
//! itself when CMD stops (Ctrl-Z), so that zklock sees the stop and stops too:
//! the shell then shows the job stopped, and `fg` resumes it.
//!
//! It does not make itself a child subreaper (PR_SET_CHILD_SUBREAPER): processes
//! that leave CMD's group (setsid, daemons) would only come back to it after
//! their parents die, and reaping them would race tokio's wait for CMD. The
//! process group is what zklock signals and kills; see the README.

use crate::signals::{ignored_at_start, Signals, ENDING};
use crate::{exit, say};
use clap::Args;
use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};
use rustix::process::{getpgid, getpgrp, getpid, getppid, Pid, Signal, WaitId, WaitIdOptions};
use std::ffi::OsString;
use std::fs::File;
use std::io::{ErrorKind, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::process::{ExitCode, Stdio};
use std::time::{Duration, Instant};
use tokio::process::Command;
use tokio::signal::unix::{signal, SignalKind};

/// How often the guard checks that zklock still runs where the kernel has no
/// parent-death signal (and, everywhere, in case the signal was lost).
pub(crate) const PARENT_POLL: Duration = Duration::from_millis(100);

/// The signal the kernel sends the guard when zklock dies (Linux, FreeBSD).
const PARENT_DEATH: SignalKind = SignalKind::terminate();

/// How long the guard waits for zklock to hand it the terminal before starting
/// CMD (zklock does so right after starting the guard).
const HANDOVER_WAIT: Duration = Duration::from_secs(2);

/// Arguments of the hidden `zklock __guard` (zklock's own, not for people).
#[derive(Args, Debug)]
pub(crate) struct GuardArgs {
    /// zklock's pid: the parent whose death ends CMD's group.
    #[arg(long, value_name = "PID")]
    parent: i32,
    /// The command, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    cmd: Vec<OsString>,
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
    let group = getpgrp();
    // Catch every signal that would end (or stop) the guard before CMD's group,
    // but those zklock was started with ignored (CMD inherits them ignored):
    // first, so that the parent-death signal, once asked for, is caught.
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
    // Started ahead of the lock: wait until zklock holds it and says so (on
    // stdin, a socket: CMD's environment and zklock's stdin).
    // Blocking: the guard has nothing else to do until then, and the socket
    // ends when zklock does.
    let go = match receive_go() {
        Ok(Some(go)) if !orphaned(parent) => go,
        // zklock gave up (no lock) or is gone: CMD never runs.
        Ok(_) => return ExitCode::from(exit::FAILURE),
        Err(e) => return cannot_guard(e),
    };
    let terminal = File::open("/dev/tty").ok();
    if go.tty {
        if let Some(tty) = &terminal {
            await_foreground(tty, group).await;
        }
    }

    let mut command = Command::new(&args.cmd[0]);
    command.args(&args.cmd[1..]).envs(go.env);
    command.stdin(go.stdin.map_or_else(Stdio::null, Stdio::from));
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            say(format_args!("cannot run {:?}: {e}", args.cmd[0]));
            give_back(terminal.as_ref(), group, zklock_group);
            return ExitCode::from(if e.kind() == ErrorKind::NotFound {
                exit::NOT_FOUND
            } else {
                exit::CANNOT_RUN
            });
        }
    };
    let cmd_pid = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .and_then(Pid::from_raw);
    let mut poll = tokio::time::interval(PARENT_POLL);
    // zklock gone: the terminal goes back to its group (a script zklock ran in
    // may read it next; one reading at once may still find CMD's group in the
    // foreground, it learns of zklock's death as early as the guard), and CMD's
    // whole group, the guard included, is killed.
    let end_if_orphaned = || {
        if orphaned(parent) {
            give_back(terminal.as_ref(), group, zklock_group);
            let _ = rustix::process::kill_process_group(group, Signal::KILL);
        }
    };
    loop {
        tokio::select! {
            status = child.wait() => {
                give_back(terminal.as_ref(), group, zklock_group);
                return match status {
                    Ok(status) => ExitCode::from(crate::exec::status_code(status)),
                    Err(e) => {
                        say(format_args!("waiting for CMD: {e}"));
                        ExitCode::from(exit::FAILURE)
                    }
                };
            }
            // Sent to the group (CMD has it too: the terminal's Ctrl-Z stops it,
            // and the guard follows below), or the parent-death signal.
            _ = ending.next() => end_if_orphaned(),
            _ = poll.tick() => end_if_orphaned(),
            _ = children.recv() => {
                if terminal.is_some() && cmd_pid.is_some_and(stopped) {
                    give_back(terminal.as_ref(), group, zklock_group);
                    // zklock sees this stop, stops too, and continues the group.
                    let _ = rustix::process::kill_process(getpid(), Signal::STOP);
                }
            }
        }
    }
}

/// zklock's word to start CMD.
struct Go {
    /// zklock handed CMD's group the terminal's foreground.
    tty: bool,
    /// Added to CMD's environment (`ZKLOCK_NODE`, `ZKLOCK_TOKEN`).
    env: Vec<(OsString, OsString)>,
    /// zklock's stdin, for CMD's (`None`: zklock had none).
    stdin: Option<OwnedFd>,
}

/// Reads zklock's message from stdin (a socket) to its end: `None` if zklock
/// closed it without one.
fn receive_go() -> std::io::Result<Option<Go>> {
    let socket = std::io::stdin();
    let socket = socket.as_fd();
    let mut message = Vec::new();
    let mut stdin = None;
    let mut buffer = [0u8; 4096];
    loop {
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
            break;
        }
        message.extend_from_slice(&buffer[..received.bytes]);
    }
    let Some((&mode, entries)) = message.split_first() else {
        return Ok(None);
    };
    let env = entries
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
    Ok(Some(Go {
        tty: mode == b'T',
        env,
        stdin,
    }))
}

fn cannot_guard(e: std::io::Error) -> ExitCode {
    say(format_args!("cannot guard CMD: {e}"));
    ExitCode::from(exit::CANNOT_RUN)
}

/// Whether zklock is gone (its pid is no longer the guard's parent).
fn orphaned(parent: Pid) -> bool {
    getppid() != Some(parent)
}

/// Whether the child `pid` has stopped (consumes the stop's report only: its
/// exit is still tokio's to collect).
fn stopped(pid: Pid) -> bool {
    let options = WaitIdOptions::STOPPED | WaitIdOptions::NOHANG;
    matches!(rustix::process::waitid(WaitId::Pid(pid), options), Ok(Some(s)) if s.stopped())
}

/// Waits (bounded) until the terminal's foreground process group is `group`.
async fn await_foreground(tty: &File, group: Pid) {
    let start = Instant::now();
    while rustix::termios::tcgetpgrp(tty).is_ok_and(|fg| fg != group)
        && start.elapsed() < HANDOVER_WAIT
    {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Gives the terminal's foreground back to zklock's group, if CMD's group has it
/// (only then: from the background, asking would stop the guard with SIGTTOU).
fn give_back(tty: Option<&File>, group: Pid, zklock_group: Option<Pid>) {
    if let (Some(tty), Some(zklock_group)) = (tty, zklock_group) {
        if rustix::termios::tcgetpgrp(tty).is_ok_and(|fg| fg == group) {
            let _ = rustix::termios::tcsetpgrp(tty, zklock_group);
        }
    }
}
