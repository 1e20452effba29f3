//! CMD's process group, from zklock's side: started through the guard
//! ([`crate::guard`]), signalled and killed as a whole, given the terminal's
//! foreground while it runs, stopped and continued with zklock (Ctrl-Z, `fg`),
//! and emptied before the lock is let go.

use crate::say;
use rustix::net::{sendmsg, SendAncillaryBuffer, SendAncillaryMessage, SendFlags};
use rustix::process::{getpgrp, getpid, Pid, Signal, WaitId, WaitIdOptions};
use std::ffi::OsString;
use std::fs::File;
use std::io::{IoSlice, Write};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};
use tokio::process::{Child, Command};

/// CMD's process group while one runs (0: none), for the panic hook.
static RUNNING_GROUP: AtomicI32 = AtomicI32::new(0);

/// Makes a panic of zklock kill CMD's group first: unwinding could otherwise
/// close the session (and free the lock) before the guard hears of zklock's end.
pub(crate) fn kill_group_on_panic() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if let Some(group) = Pid::from_raw(RUNNING_GROUP.load(Ordering::SeqCst)) {
            let _ = rustix::process::kill_process_group(group, Signal::KILL);
        }
        previous(info);
    }));
}

/// The guard's and CMD's process group.
pub(crate) struct Job {
    guard: Child,
    group: Pid,
}

/// CMD's guard, started before the lock is taken and waiting to be told to start
/// CMD: its start-up (an exec of zklock's binary, a runtime) then overlaps the
/// connect and the acquisition instead of following the grant.
///
/// The guard's stdin is one end of a socket pair; [`start`](Ready::start) sends
/// it CMD's environment and zklock's own stdin (as a passed descriptor, so that
/// CMD reads what zklock would have, at the same offset) and closes the socket.
/// Dropped without starting, the guard is killed (it never started CMD); it also
/// ends by itself when the socket closes without a message (zklock gone).
pub(crate) struct Ready {
    guard: Option<Child>,
    group: Pid,
    go: Option<UnixStream>,
}

/// A guard being started by [`Ready::spawn_beside`].
pub(crate) struct Starting(tokio::sync::oneshot::Receiver<std::io::Result<Ready>>);

impl Starting {
    /// The guard, once started.
    pub(crate) async fn ready(self) -> std::io::Result<Ready> {
        self.0
            .await
            .unwrap_or_else(|_| Err(std::io::Error::other("the guard's starter is gone")))
    }
}

impl Ready {
    /// Starts the guard of `cmd` as [`spawn`](Self::spawn) does, from a thread of
    /// its own: the spawn holds its caller until the kernel has set the guard's
    /// program up (a vfork and most of an exec), which zklock's main thread
    /// spends connecting instead. The thread then stays, parked, as long as
    /// zklock lives: the guard's parent-death signal fires when the thread that
    /// started it ends. Must be called inside the runtime (the guard's `Child`
    /// is the runtime's to wait for).
    pub(crate) fn spawn_beside(cmd: &[OsString]) -> std::io::Result<Starting> {
        let runtime = tokio::runtime::Handle::current();
        let cmd = cmd.to_vec();
        let (started, starting) = tokio::sync::oneshot::channel();
        std::thread::Builder::new()
            .name("zklock-guard".into())
            .stack_size(256 * 1024)
            .spawn(move || {
                let spawned = {
                    let _runtime = runtime.enter();
                    Ready::spawn(&cmd)
                };
                // Not wanted any more (zklock gave up): dropped here, killed.
                drop(started.send(spawned));
                loop {
                    std::thread::park();
                }
            })?;
        Ok(Starting(starting))
    }

    /// Starts the guard of `cmd` in a new process group, waiting.
    fn spawn(cmd: &[OsString]) -> std::io::Result<Ready> {
        let (go, guard_end) = UnixStream::pair()?;
        let mut command = Command::new(own_executable());
        command
            .arg0("zklock")
            .arg("__guard")
            .arg("--parent")
            .arg(getpid().as_raw_nonzero().to_string())
            .arg("--")
            .args(cmd)
            .stdin(Stdio::from(OwnedFd::from(guard_end)))
            .process_group(0);
        // Spawned from a thread that lives as long as zklock (`spawn_beside`):
        // the guard's parent-death signal fires when that thread ends.
        let guard = command.spawn()?;
        let group = guard
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .and_then(Pid::from_raw)
            .ok_or_else(|| std::io::Error::other("the guard has no pid"))?;
        Ok(Ready {
            guard: Some(guard),
            group,
            go: Some(go),
        })
    }

    /// Tells the guard to start CMD with `env` added; gives CMD's group the
    /// terminal's foreground if zklock has it.
    pub(crate) fn start(mut self, env: &[(&str, String)]) -> std::io::Result<Job> {
        let tty = foreground_terminal();
        let mut message = Vec::new();
        message.push(if tty.is_some() { b'T' } else { b'-' });
        for (key, value) in env {
            message.extend_from_slice(key.as_bytes());
            message.push(b'=');
            message.extend_from_slice(value.as_bytes());
            message.push(0);
        }
        RUNNING_GROUP.store(self.group.as_raw_nonzero().get(), Ordering::SeqCst);
        if let Some(tty) = &tty {
            // The guard starts CMD once its group has the terminal.
            let _ = rustix::termios::tcsetpgrp(tty, self.group);
        }
        let go = self.go.take().expect("started once");
        send_go(&go, &message)?;
        drop(go);
        let guard = self.guard.take().expect("started once");
        Ok(Job {
            guard,
            group: self.group,
        })
    }
}

impl Drop for Ready {
    fn drop(&mut self) {
        if self.guard.is_some() {
            // Not started: nothing but the guard is in the group.
            let _ = rustix::process::kill_process_group(self.group, Signal::KILL);
        }
    }
}

/// Sends the start message and zklock's stdin (none if zklock has no fd 0).
fn send_go(go: &UnixStream, message: &[u8]) -> std::io::Result<()> {
    let stdin = std::io::stdin();
    let stdin = stdin.as_fd();
    let fds = [stdin];
    let has_stdin = rustix::io::fcntl_getfd(stdin).is_ok();
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if has_stdin && !control.push(SendAncillaryMessage::ScmRights(&fds)) {
        return Err(std::io::Error::other("no room for a descriptor"));
    }
    let sent = sendmsg(
        go,
        &[IoSlice::new(message)],
        &mut control,
        SendFlags::NOSIGNAL,
    )?;
    // The descriptor went with the first byte; the rest (a long node path) follows.
    let mut rest = go;
    rest.write_all(&message[sent..])
}

impl Job {
    /// Sends `sig` to the whole group (CMD and whatever it started).
    pub(crate) fn signal(&self, sig: Signal) {
        let _ = rustix::process::kill_process_group(self.group, sig);
    }

    /// SIGTERM to the group, and SIGCONT so that stopped members get it now.
    pub(crate) fn terminate(&self) {
        self.signal(Signal::TERM);
        self.signal(Signal::CONT);
    }

    /// Waits for the guard, that is for CMD (cancel-safe).
    pub(crate) async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        self.guard.wait().await
    }

    /// After a SIGCHLD: if the guard stopped (CMD stopped: Ctrl-Z, or a read
    /// from the terminal in the background), stops zklock too, as a shell job
    /// stops, and returns how long it was stopped once continued (`fg`, `bg`).
    /// The caller then [`resume`](Self::resume)s the group or stops it for good.
    pub(crate) fn follow_stop(&self) -> Option<Duration> {
        let options = WaitIdOptions::STOPPED | WaitIdOptions::NOHANG;
        let guard = Pid::from_raw(self.group.as_raw_nonzero().get())?;
        match rustix::process::waitid(WaitId::Pid(guard), options) {
            Ok(Some(status)) if status.stopped() => {}
            _ => return None,
        }
        let stopped = Instant::now();
        // Returns once zklock is continued; at once where the kernel discards a
        // terminal stop (an orphaned process group: no shell to continue it).
        let _ = rustix::process::kill_process(getpid(), Signal::TSTP);
        Some(stopped.elapsed())
    }

    /// Continues the group, in the terminal's foreground if zklock now has it.
    pub(crate) fn resume(&self) {
        if let Some(tty) = foreground_terminal() {
            let _ = rustix::termios::tcsetpgrp(&tty, self.group);
        }
        self.signal(Signal::CONT);
    }

    /// Once the guard has ended: stops what CMD left running in its group
    /// (SIGTERM, then SIGKILL after `grace`) and waits (bounded) until none is
    /// left, so that nothing started under the lock runs once it is let go.
    pub(crate) async fn empty(self, grace: Duration) {
        if self.has_members() {
            say(
                "CMD left processes in its process group: stopping them (SIGTERM, \
                 then SIGKILL) before letting go of the lock",
            );
            self.terminate();
            if !self.gone_within(grace).await {
                self.signal(Signal::KILL);
                if !self.gone_within(Duration::from_secs(5)).await {
                    say("some of CMD's processes did not die on SIGKILL");
                }
            }
        }
        RUNNING_GROUP.store(0, Ordering::SeqCst);
    }

    /// Whether a process of the group is still alive (zombies, which some init
    /// processes never reap, do not count: they hold nothing and run nothing).
    fn has_members(&self) -> bool {
        if rustix::process::test_kill_process_group(self.group).is_err() {
            return false;
        }
        live_member_in_proc(self.group).unwrap_or(true)
    }

    async fn gone_within(&self, bound: Duration) -> bool {
        let start = Instant::now();
        while self.has_members() {
            if start.elapsed() >= bound {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        true
    }
}

/// zklock's executable, to start the guard from: `/proc/self/exe` on Linux
/// (still the same program if the file was replaced meanwhile).
fn own_executable() -> std::path::PathBuf {
    let proc_exe = std::path::Path::new("/proc/self/exe");
    if proc_exe.exists() {
        return proc_exe.to_owned();
    }
    std::env::current_exe().unwrap_or_else(|_| "zklock".into())
}

/// The controlling terminal, if zklock's process group is its foreground.
fn foreground_terminal() -> Option<File> {
    let tty = File::open("/dev/tty").ok()?;
    let foreground = rustix::termios::tcgetpgrp(&tty).ok()?;
    (foreground == getpgrp()).then_some(tty)
}

/// Whether /proc lists a process of `group` that is not a zombie (`None` where
/// there is no /proc to read).
fn live_member_in_proc(group: Pid) -> Option<bool> {
    let group = group.as_raw_nonzero().get();
    let live = std::fs::read_dir("/proc").ok()?.flatten().any(|entry| {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            return false;
        };
        // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
        let mut fields = stat
            .rsplit_once(')')
            .map_or("", |(_, rest)| rest)
            .split_whitespace();
        let state = fields.next();
        let pgrp = fields.nth(1).and_then(|f| f.parse::<i32>().ok());
        pgrp == Some(group) && state != Some("Z")
    });
    Some(live)
}
