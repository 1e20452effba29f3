//! Running a JVM (or PostgreSQL) that cannot outlive the test process, behind
//! the `/bin/sh` watchdog the crate documentation describes ("No stray JVMs").
//! The lifeline is the watchdog's stdin, whose only write end lives here (std
//! creates it close-on-exec, so no other child inherits it); it carries `term`,
//! `pause`, `resume` and `kill`, and its end-of-file without `kill` means the
//! owner died: SIGKILL and the directory's removal. The watchdog waits for the
//! JVM and exits with its status, so `try_wait` on it tells when the JVM exited.

use std::ffi::OsString;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::thread;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::util::poll;

/// How often a JVM's state is looked at while waiting for it.
const STEP: Duration = Duration::from_millis(5);

/// The watchdog. Arguments: `$1` pid file, `$2` directory to remove if the
/// owner dies (may be empty), `$3...` the JVM command line.
const WATCHDOG: &str = r#"
pidfile=$1
cleanup=$2
shift 2
exec 3<&0 </dev/null
"$@" 3<&- &
jvm=$!
echo "$jvm" >"$pidfile"
(
    owner_died=1
    while IFS= read -r cmd <&3; do
        case $cmd in
            term) kill -TERM "$jvm"; kill -CONT "$jvm" ;;
            pause) kill -STOP "$jvm" ;;
            resume) kill -CONT "$jvm" ;;
            kill) owner_died=0; break ;;
        esac
    done 2>/dev/null
    trap '' TERM
    kill -KILL "$jvm" 2>/dev/null
    if [ "$owner_died" = 1 ] && [ -n "$cleanup" ]; then
        for _ in 1 2 3 4 5; do
            rm -rf "$cleanup" 2>/dev/null
            [ -e "$cleanup" ] || break
            sleep 1
        done
    fi
) &
watcher=$!
exec 3<&-
wait "$jvm"
rc=$?
kill "$watcher" 2>/dev/null
exit "$rc"
"#;

/// A JVM behind its watchdog. Dropping it kills the JVM.
#[derive(Debug)]
pub(crate) struct Jvm {
    watchdog: Child,
    lifeline: Option<ChildStdin>,
    pid_file: PathBuf,
    pid: Option<u32>,
    status: Option<ExitStatus>,
}

impl Jvm {
    /// Starts `java args...` in `dir`, output appended to `log`.
    pub(crate) fn spawn(
        java: &Path,
        args: &[OsString],
        dir: &Path,
        log: &Path,
        cleanup_on_owner_death: Option<&Path>,
    ) -> Result<Jvm> {
        let pid_file = dir.join("jvm.pid");
        let _ = std::fs::remove_file(&pid_file);
        let log_file = File::options()
            .create(true)
            .append(true)
            .open(log)
            .map_err(|e| Error::io(format!("opening {}", log.display()), e))?;
        let log_err = log_file
            .try_clone()
            .map_err(|e| Error::io("duplicating the log file handle", e))?;
        let watchdog = Command::new("/bin/sh")
            .arg("-c")
            .arg(WATCHDOG)
            .arg("zk-testkit-watchdog")
            .arg(&pid_file)
            .arg(
                cleanup_on_owner_death
                    .map(Path::as_os_str)
                    .unwrap_or_default(),
            )
            .arg(java)
            .args(args)
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(log_file)
            .stderr(log_err)
            .spawn()
            .map_err(|e| Error::io(format!("spawning /bin/sh to run {}", java.display()), e))?;
        let mut jvm = Jvm {
            lifeline: None,
            watchdog,
            pid_file,
            pid: None,
            status: None,
        };
        jvm.lifeline = jvm.watchdog.stdin.take();
        Ok(jvm)
    }

    /// The JVM's pid, once the watchdog has recorded it.
    pub(crate) fn pid(&mut self) -> Option<u32> {
        if self.pid.is_none() {
            self.pid = std::fs::read_to_string(&self.pid_file)
                .ok()
                .and_then(|s| s.trim().parse().ok());
        }
        self.pid
    }

    /// The JVM's pid, waiting up to `timeout` for the watchdog to record it.
    pub(crate) fn wait_pid(&mut self, timeout: Duration) -> Option<u32> {
        poll(timeout, STEP, || match self.pid() {
            Some(pid) => Some(Some(pid)),
            None => self.exit_status().map(|_| None),
        })
        .flatten()
    }

    /// `Some(status)` once the JVM (and with it the watchdog) has exited.
    pub(crate) fn exit_status(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            self.status = self.watchdog.try_wait().ok().flatten();
        }
        self.status
    }

    fn send(&mut self, command: &str) -> bool {
        match &mut self.lifeline {
            Some(pipe) => pipe.write_all(format!("{command}\n").as_bytes()).is_ok(),
            None => false,
        }
    }

    fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        poll(timeout, STEP, || self.exit_status())
    }

    /// SIGSTOP / SIGCONT the JVM and wait until the kernel shows the change.
    pub(crate) fn set_paused(&mut self, paused: bool) {
        self.send(if paused { "pause" } else { "resume" });
        let Some(pid) = self.wait_pid(Duration::from_secs(5)) else {
            return;
        };
        poll(Duration::from_secs(5), STEP, || match proc_state(pid) {
            Some(state) => ((state == 'T') == paused).then_some(()),
            None => {
                // No /proc (not Linux): give the signal a moment.
                thread::sleep(Duration::from_millis(50));
                Some(())
            }
        });
    }

    /// SIGTERM, then SIGKILL if the JVM is still alive after `grace`.
    pub(crate) fn terminate(&mut self, grace: Duration) {
        if self.exit_status().is_some() {
            return;
        }
        self.send("term");
        if self.wait_exit(grace).is_none() {
            self.kill();
        }
    }

    /// SIGKILL, and wait until the JVM has been reaped.
    pub(crate) fn kill(&mut self) {
        if self.exit_status().is_some() {
            self.lifeline = None;
            return;
        }
        self.send("kill");
        // Closing the lifeline is itself a kill order, should the write fail.
        self.lifeline = None;
        if self.wait_exit(Duration::from_secs(10)).is_none() {
            // Should not happen; do not leave a zombie watchdog behind.
            let _ = self.watchdog.kill();
            self.status = self.watchdog.wait().ok();
        }
    }
}

impl Drop for Jvm {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The state letter of a process in `/proc/<pid>/stat` (`R`, `S`, `T`, `Z`, ...).
pub(crate) fn proc_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) S ...": comm may contain spaces and parentheses.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.trim_start().chars().next()
}
