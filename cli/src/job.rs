//! CMD's process group, from zklock's side: started through the guard
//! ([`crate::guard`]), which keeps it within the lock's deadline (zklock renews
//! it), and emptied before the lock is let go.

use crate::guard::{bytes_at, on_monotonic, wire, GuardArgs};
use crate::say;
use rustix::net::{sendmsg, SendAncillaryBuffer, SendAncillaryMessage, SendFlags};
use rustix::process::{getpgrp, getpid, Pid, Signal};
use std::ffi::OsString;
use std::fs::File;
use std::io::{IoSlice, Write};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
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

/// Says that CMD's guard (zklock itself, run again) could not be started, and
/// returns the exit code for it.
pub(crate) fn cannot_start(e: std::io::Error) -> std::process::ExitCode {
    say(format_args!(
        "cannot start CMD's guard (zklock itself): {e}"
    ));
    std::process::ExitCode::from(crate::exit::CANNOT_RUN)
}

/// CMD's guard and process group.
pub(crate) struct Job {
    guard: Child,
    /// CMD's process group (`None`: the guard could not start CMD).
    group: Option<Pid>,
    /// Messages to the guard (`None` once it is gone).
    to_guard: Option<OwnedWriteHalf>,
    /// Messages from the guard (`None` once it is gone).
    from_guard: Option<OwnedReadHalf>,
    /// The latest deadline handed to the guard (CLOCK_MONOTONIC, ns).
    deadline: Option<u64>,
}

/// CMD's guard, started before the lock is taken and waiting for
/// [`start`](Ready::start) (the socket protocol: [`crate::guard`]): its start-up
/// (an exec of zklock's binary, a runtime) then overlaps the connect and the
/// acquisition instead of following the grant. Dropped without starting, the
/// guard is killed (it never started CMD).
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
            .args(GuardArgs::line(getpid().as_raw_nonzero().get(), cmd))
            .stdin(Stdio::from(OwnedFd::from(guard_end)))
            .process_group(0);
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

    /// Tells the guard to start CMD with `env` added, within `deadline` (the
    /// lock's trusted-until instant) and killed `grace` after it unless renewed;
    /// gives CMD's group the terminal's foreground if zklock has it. Returns once
    /// the guard has started CMD (or failed to: then the guard's exit says why).
    pub(crate) async fn start(
        mut self,
        env: &[(&str, String)],
        deadline: Option<Instant>,
        grace: Duration,
    ) -> std::io::Result<Job> {
        let tty = foreground_terminal();
        let deadline = deadline.map(on_monotonic);
        let mut environment = Vec::new();
        for (key, value) in env {
            environment.extend_from_slice(key.as_bytes());
            environment.push(b'=');
            environment.extend_from_slice(value.as_bytes());
            environment.push(0);
        }
        let mut message = vec![wire::GO, if tty.is_some() { b'T' } else { b'-' }];
        message.extend_from_slice(&deadline.unwrap_or(0).to_le_bytes());
        let grace_ms = u64::try_from(grace.as_millis()).unwrap_or(u64::MAX);
        message.extend_from_slice(&grace_ms.to_le_bytes());
        let length = u32::try_from(environment.len())
            .map_err(|_| std::io::Error::other("CMD's environment is too large"))?;
        message.extend_from_slice(&length.to_le_bytes());
        message.extend_from_slice(&environment);
        let go = self.go.take().expect("started once");
        send_go(&go, &message)?;
        let guard = self.guard.take().expect("started once");
        go.set_nonblocking(true)?;
        let (mut from_guard, to_guard) = tokio::net::UnixStream::from_std(go)?.into_split();
        // CMD's pid, which leads its group; none if the guard could not start it.
        let mut started = [0u8; 5];
        let group = match from_guard.read_exact(&mut started).await {
            Ok(_) if started[0] == wire::STARTED => {
                Pid::from_raw(i32::from_le_bytes(bytes_at(&started, 1)))
            }
            _ => None,
        };
        if let Some(group) = group {
            RUNNING_GROUP.store(group.as_raw_nonzero().get(), Ordering::SeqCst);
        }
        let mut job = Job {
            guard,
            group,
            to_guard: Some(to_guard),
            from_guard: Some(from_guard),
            deadline,
        };
        if let (Some(tty), Some(group)) = (&tty, group) {
            // zklock has the foreground, and asks from it; then the guard continues
            // CMD if it stopped reading the terminal before this.
            let _ = rustix::termios::tcsetpgrp(tty, group);
            job.tell(&[wire::CONTINUE]).await;
        }
        Ok(job)
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
    /// Sends `sig` to CMD's group (CMD and whatever it started).
    pub(crate) fn signal(&self, sig: Signal) {
        if let Some(group) = self.group {
            let _ = rustix::process::kill_process_group(group, sig);
        }
    }

    /// Hands the guard a renewed deadline (the lock's trusted-until instant), if
    /// later than the last one.
    pub(crate) async fn renew(&mut self, until: Instant) {
        let until = on_monotonic(until);
        if self.deadline.is_some_and(|d| d >= until) {
            return;
        }
        self.deadline = Some(until);
        let mut message = vec![wire::DEADLINE];
        message.extend_from_slice(&until.to_le_bytes());
        self.tell(&message).await;
    }

    /// Sends the guard `message` (nothing if it is gone: CMD has ended).
    async fn tell(&mut self, message: &[u8]) {
        if let Some(to_guard) = &mut self.to_guard {
            if to_guard.write_all(message).await.is_err() {
                self.to_guard = None;
            }
        }
    }

    /// Whether the latest deadline has passed (by zklock's clock).
    fn past_deadline(&self) -> bool {
        self.deadline
            .is_some_and(|d| crate::guard::monotonic_ns() >= d)
    }

    /// The lock is gone: SIGTERM to the group and SIGCONT so that stopped members
    /// get it now, if the deadline has not passed; SIGKILL after it (a member
    /// continued then would run without the lock). The guard decides, on its
    /// clock; zklock itself once the guard is gone.
    pub(crate) async fn terminate(&mut self) {
        self.tell(&[wire::TERMINATE]).await;
        if self.to_guard.is_none() {
            self.terminate_here();
        }
    }

    fn terminate_here(&self) {
        if self.past_deadline() {
            self.signal(Signal::KILL);
        } else {
            self.signal(Signal::TERM);
            self.signal(Signal::CONT);
        }
    }

    /// Waits for the guard, that is for CMD (cancel-safe).
    pub(crate) async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        self.guard.wait().await
    }

    /// The guard's messages, read apart from the job (which is waited for
    /// meanwhile).
    pub(crate) fn messages(&mut self) -> Messages {
        Messages {
            from_guard: self.from_guard.take(),
        }
    }

    /// CMD stopped for the terminal: stops zklock too, as a shell job stops, and
    /// returns how long it was stopped once continued (`fg`, `bg`). The caller
    /// then [`resume`](Self::resume)s the group or stops it for good.
    pub(crate) fn follow_stop(&self) -> Duration {
        let stopped = Instant::now();
        // Returns once zklock is continued; at once where the kernel discards a
        // terminal stop (an orphaned process group: no shell to continue it).
        let _ = rustix::process::kill_process(getpid(), Signal::TSTP);
        stopped.elapsed()
    }

    /// Continues the group, in the terminal's foreground if zklock now has it:
    /// through the guard, which continues it before the deadline only.
    pub(crate) async fn resume(&mut self) {
        if let (Some(tty), Some(group)) = (foreground_terminal(), self.group) {
            let _ = rustix::termios::tcsetpgrp(&tty, group);
        }
        self.tell(&[wire::CONTINUE]).await;
    }

    /// Once the guard has ended: stops what CMD left running in its group
    /// (SIGTERM, then SIGKILL after `grace`; SIGKILL at once past the deadline)
    /// and waits (bounded) until none is left, so that nothing started under the
    /// lock runs once it is let go.
    pub(crate) async fn empty(self, grace: Duration) {
        if self.has_members() {
            say(
                "CMD left processes in its process group: stopping them (SIGTERM, \
                 then SIGKILL) before letting go of the lock",
            );
            self.terminate_here();
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
        let Some(group) = self.group else {
            return false;
        };
        if rustix::process::test_kill_process_group(group).is_err() {
            return false;
        }
        live_member_in_proc(group).unwrap_or(true)
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

/// The guard's messages to zklock.
pub(crate) struct Messages {
    /// `None` once the guard's socket has ended.
    from_guard: Option<OwnedReadHalf>,
}

impl Messages {
    /// Returns when the guard says CMD stopped for the terminal (Ctrl-Z, a read
    /// from it in the background); never once the guard's socket has ended
    /// (cancel-safe: one byte at a time).
    pub(crate) async fn cmd_stopped(&mut self) {
        loop {
            let Some(from_guard) = &mut self.from_guard else {
                return std::future::pending().await;
            };
            match from_guard.read_u8().await {
                Ok(wire::STOPPED) => return,
                Ok(_) => {}
                Err(_) => self.from_guard = None,
            }
        }
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
