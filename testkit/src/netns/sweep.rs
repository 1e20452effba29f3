//! Names, and getting rid of everything a lab made: on drop, through a watchdog
//! when the test process dies without dropping it, and by sweeping the leftovers
//! of dead processes when the next lab is made.
//!
//! Every namespace of a lab is named `zkt-<pid>-<lab>-...`. Deleting a namespace
//! (after killing what runs in it) deletes its veth, its bridge and its nftables
//! table with it; nothing is ever created outside the lab's namespaces.

use std::io::Write as _;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use rustix::process::{kill_process, Pid, Signal};

use super::tools::Tools;
use crate::error::{Error, Result};

/// The first part of every namespace name a lab makes.
pub(crate) const PREFIX: &str = "zkt-";

/// `zkt-<pid>-<lab>-`: the prefix of one lab's namespaces.
pub(crate) fn lab_prefix(pid: u32, lab: u64) -> String {
    format!("{PREFIX}{pid}-{lab}-")
}

/// The pid in a lab namespace's name.
fn owner_pid(name: &str) -> Option<u32> {
    name.strip_prefix(PREFIX)?.split('-').next()?.parse().ok()
}

/// The names of all named network namespaces.
pub(crate) fn list(tools: &Tools) -> Result<Vec<String>> {
    Ok(tools
        .ip(&["netns", "list"])?
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_string)
        .collect())
}

/// Kills every process in the namespaces whose names start with `prefix`, waits
/// until they are gone, and deletes the namespaces.
pub(crate) fn remove(tools: &Tools, prefix: &str) -> Result<()> {
    let names: Vec<String> = list(tools)?
        .into_iter()
        .filter(|name| name.starts_with(prefix))
        .collect();
    let deadline = Instant::now() + Duration::from_secs(10);
    for name in &names {
        loop {
            let pids = tools.ip(&["netns", "pids", name]).unwrap_or_default();
            let pids: Vec<i32> = pids
                .split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect();
            if pids.is_empty() || Instant::now() >= deadline {
                break;
            }
            for pid in pids.into_iter().filter_map(Pid::from_raw) {
                let _ = kill_process(pid, Signal::KILL);
            }
            thread::sleep(Duration::from_millis(20));
        }
    }
    let mut first_error = None;
    for name in &names {
        if let Err(e) = tools.ip(&["netns", "delete", name]) {
            first_error.get_or_insert(e);
        }
    }
    match first_error {
        // Someone else (a dead lab's watchdog, a parallel sweep) may have been
        // quicker: only what is still there is a failure.
        Some(e) if list(tools)?.iter().any(|n| names.contains(n)) => Err(e),
        _ => Ok(()),
    }
}

/// Removes the namespaces of labs whose process is gone (a crashed earlier run).
pub(crate) fn sweep_dead(tools: &Tools) -> Result<()> {
    let own = std::process::id();
    let mut dead: Vec<u32> = list(tools)?
        .iter()
        .filter_map(|name| owner_pid(name))
        .filter(|&pid| pid != own && !std::path::Path::new(&format!("/proc/{pid}")).exists())
        .collect();
    dead.sort_unstable();
    dead.dedup();
    for pid in dead {
        remove(tools, &format!("{PREFIX}{pid}-"))?;
    }
    Ok(())
}

/// Runs by `/bin/sh` with the lifeline on stdin: `$1` the `ip` program, `$2` the
/// lab's prefix. `done` means the lab cleaned up itself; end-of-file without it
/// means the test process died, so the watchdog removes the lab.
const WATCHDOG: &str = r#"
trap '' INT HUP TERM
while IFS= read -r cmd; do
    [ "$cmd" = done ] && exit 0
done
"$1" netns list | while read -r ns _; do
    case $ns in
        "$2"*)
            for pid in $("$1" netns pids "$ns"); do kill -9 "$pid"; done
            "$1" netns delete "$ns" ;;
    esac
done
"#;

/// The lab's watchdog process and the write end of its lifeline.
#[derive(Debug)]
pub(crate) struct Watchdog {
    child: Child,
    lifeline: Option<ChildStdin>,
}

impl Watchdog {
    pub(crate) fn start(tools: &Tools, prefix: &str) -> Result<Watchdog> {
        let mut child = Command::new("/bin/sh")
            .arg("-c")
            .arg(WATCHDOG)
            .arg("zk-testkit-netns-watchdog")
            .arg(&tools.ip)
            .arg(prefix)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| Error::io("spawning /bin/sh for the namespace watchdog", e))?;
        let lifeline = child.stdin.take();
        Ok(Watchdog { child, lifeline })
    }

    /// Tells the watchdog that the lab is gone, and reaps it.
    pub(crate) fn dismiss(&mut self) {
        if let Some(mut lifeline) = self.lifeline.take() {
            let _ = lifeline.write_all(b"done\n");
        }
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_the_owner_pid() {
        let prefix = lab_prefix(4242, 7);
        assert_eq!(prefix, "zkt-4242-7-");
        assert_eq!(owner_pid(&format!("{prefix}node-s1")), Some(4242));
        assert_eq!(owner_pid("zkt-x-1-node"), None);
        assert_eq!(owner_pid("other-4242"), None);
    }
}
