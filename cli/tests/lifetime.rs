//! CMD never outlives its lock, whatever happens to zklock: the built `zklock`
//! against a real ZooKeeper (lock-testkit), killed or signalled while CMD (a
//! shell with children in the background) runs, or while it waits.

mod common;

use common::*;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// How long CMD's group may take to die once zklock is gone: generous (a safety
/// bound, not a speed claim; the README's measured figure is milliseconds).
const GROUP_DEATH_BOUND: Duration = Duration::from_secs(10);

/// A `zklock exec` (session timeout 2 s) whose CMD is `sh -c` that starts two
/// `sleep 300` in the background, then waits; returns once all three run.
struct Family {
    zklock: Child,
    /// The shell's and its two children's pids.
    pids: Vec<i32>,
    /// CMD's process group.
    group: i32,
}

fn family(zk: &str, extra: &[&str], lock: &str, dir: &Path) -> Family {
    let (pids_file, ready) = (dir.join("pids"), dir.join("ready"));
    let script = format!(
        "echo $$ >> {p}; sleep 300 & echo $! >> {p}; sleep 300 & echo $! >> {p}; touch {r}; wait",
        p = pids_file.display(),
        r = ready.display()
    );
    let zklock = zklock(zk)
        .args(["--session-timeout", "2", "exec"])
        .args(extra)
        .args([lock, "--", "sh", "-c", &script])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&ready, LONG);
    let pids: Vec<i32> = std::fs::read_to_string(&pids_file)
        .unwrap()
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 3, "{pids:?}");
    let group = process_group(pids[0]).expect("CMD runs");
    let own = process_group(zklock.id() as i32).expect("zklock runs");
    assert_ne!(group, own, "CMD must run in a process group of its own");
    for &pid in &pids {
        assert_eq!(process_group(pid), Some(group), "pid {pid}");
    }
    Family {
        zklock,
        pids,
        group,
    }
}

/// A contender on `lock`, queued behind the family: its CMD records in
/// `overlap` every one of `pids` still alive when it runs, then touches `ran`.
fn contender(zk: &str, lock: &str, pids: &[i32], dir: &Path) -> Child {
    let pids: Vec<String> = pids.iter().map(i32::to_string).collect();
    let script = format!(
        "for p in {pids}; do \
           s=$(cut -d' ' -f3 /proc/$p/stat 2>/dev/null); \
           if [ -n \"$s\" ] && [ \"$s\" != Z ]; then echo $p >> {o}; fi; \
         done; touch {r}",
        pids = pids.join(" "),
        o = dir.join("overlap").display(),
        r = dir.join("ran").display()
    );
    zklock(zk)
        .args(["exec", lock, "--", "sh", "-c", &script])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// kill -9, SIGHUP and SIGTERM of zklock while CMD runs: CMD's whole group is
/// gone soon after zklock, and a second `zklock exec` queued on the same lock
/// runs its CMD only once none of the group's processes is alive.
///
/// For the README, prints how long the group outlived zklock: from zklock's
/// reaping to the start of the first scan of /proc (polled every 200 µs) that
/// finds no live member, 0 when none was left at zklock's death; the longest of
/// ZKLOCK_OUTLIVE_RUNS=N runs per signal (default 1).
#[test]
fn cmd_group_dies_with_zklock() {
    let zk = server().connect_string();
    let runs: usize = std::env::var("ZKLOCK_OUTLIVE_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1);
    for (signal, expected) in [
        ("-KILL", None),
        ("-HUP", Some(128 + 1)),
        ("-TERM", Some(128 + 15)),
    ] {
        let mut longest = Duration::ZERO;
        for _ in 0..runs {
            let lock = unique("dies-with");
            let dir = scratch(&format!("dies-with{signal}"));
            let mut family = family(&zk, &[], &lock, &dir);
            let second = contender(&zk, &lock, &family.pids, &dir);
            ls_rows_of(&zk, &lock, 2);
            kill(&family.zklock, signal);
            let status = family.zklock.wait().unwrap();
            let gone = Instant::now();
            assert_eq!(status.code(), expected, "{signal}: {status:?}");
            let mut first = true;
            let outlived = loop {
                let scan = Instant::now();
                if !group_alive(family.group) {
                    break if first { Duration::ZERO } else { scan - gone };
                }
                first = false;
                assert!(
                    gone.elapsed() < GROUP_DEATH_BOUND,
                    "{signal}: CMD's group lives on"
                );
                std::thread::sleep(Duration::from_micros(200));
            };
            longest = longest.max(outlived);
            let out = second.wait_with_output().unwrap();
            assert_eq!(code(&out), 0, "{signal}: {out:?}");
            assert!(
                dir.join("ran").exists(),
                "{signal}: the contender's CMD ran"
            );
            let overlap = std::fs::read_to_string(dir.join("overlap")).unwrap_or_default();
            assert!(
                overlap.is_empty(),
                "{signal}: the contender ran while these of CMD's processes lived: {overlap}"
            );
        }
        println!("{signal}: CMD's group outlived zklock by at most {longest:?} over {runs} runs");
    }
}

/// A revocation (`--revocable`) stops CMD's whole group, the shell's children
/// in the background too, not CMD's pid alone: exit 74, no process of the group
/// alive once zklock is gone, and the lock free again.
#[test]
fn a_revocation_stops_the_whole_group() {
    let (zk, lock, dir) = setup("revoked");
    let mut family = family(&zk, &["--revocable"], &lock, &dir);
    exits(&zk, &["revoke", &lock], 0);
    let status = family.zklock.wait().unwrap();
    assert_eq!(status.code(), Some(LOST), "{status:?}");
    assert!(
        !group_alive(family.group),
        "CMD's group outlived the revoked lock: {:?}",
        family.pids
    );
    exits(&zk, &["exec", "-n", &lock, "--", "true"], 0);
}

/// CMD exits, leaving a child running in its group: the child is stopped before
/// the lock is let go (the next holder finds it dead).
#[test]
fn cmd_leftovers_stopped_before_the_release() {
    let (zk, lock, dir) = setup("leftovers");
    let pid_file = dir.join("pid");
    let script = format!("sleep 300 & echo $! > {}", pid_file.display());
    let out = exits(&zk, &["exec", &lock, "--", "sh", "-c", &script], 0);
    assert!(stderr(&out).contains("left processes"), "{out:?}");
    let pid: i32 = read(&pid_file).parse().unwrap();
    assert!(!alive(pid), "the leftover sleep {pid} outlived the lock");
}

/// SIGHUP, SIGINT, SIGTERM and kill -9 of a waiting zklock: it gives up and
/// leaves no node in the queue: at once on a signal it handles (128+N), at the
/// session's expiry after kill -9 (then nothing runs to delete it).
#[test]
fn waiting_zklock_leaves_no_node() {
    let (zk, lock, dir) = setup("waiting");
    let mut holder = holding(&zk, &[], &lock, &dir.join("ready"));
    for (signal, code) in [
        ("-HUP", Some(128 + 1)),
        ("-INT", Some(128 + 2)),
        ("-TERM", Some(128 + 15)),
        ("-KILL", None),
    ] {
        let ran = dir.join(format!("ran{signal}"));
        let waiter = zklock(&zk)
            .args(["--session-timeout", "2", "exec", &lock, "--", "touch"])
            .arg(&ran)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        ls_rows_of(&zk, &lock, 2);
        // CMD's guard is started ahead of the lock and waits with zklock.
        let guards = guards_of(waiter.id());
        assert_eq!(guards.len(), 1, "{signal}: one guard waits: {guards:?}");
        kill(&waiter, signal);
        let out = waiter.wait_with_output().unwrap();
        assert_eq!(out.status.code(), code, "{signal}: {out:?}");
        until("the waiting guard gone", GROUP_DEATH_BOUND, || {
            (!alive(guards[0])).then_some(())
        });
        assert!(!ran.exists(), "{signal}: CMD ran without the lock");
        if code.is_some() {
            assert_eq!(
                ls_rows(&zk, &lock).len(),
                1,
                "{signal}: the node is deleted at once"
            );
        } else {
            // The killed waiter's node goes with its session.
            ls_rows_of(&zk, &lock, 1);
        }
    }
    terminate(&mut holder);
}

/// The live (not zombie) `zklock __guard` processes started by zklock `pid`.
fn guards_of(pid: u32) -> Vec<i32> {
    let parent = format!("--parent\0{pid}\0");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&p| {
            std::fs::read(format!("/proc/{p}/cmdline")).is_ok_and(|cmdline| {
                let cmdline = String::from_utf8_lossy(&cmdline);
                cmdline.contains("__guard\0") && cmdline.contains(&parent)
            }) && alive(p)
        })
        .collect()
}

/// Whether a live (not zombie) process is in `group`.
fn group_alive(group: i32) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
        entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse().ok())
            .and_then(process_group)
            == Some(group)
    })
}

/// Ctrl-Z in an interactive shell (bash -i on a pty from script(1)) stops CMD and
/// zklock as one job (the shell lists it as stopped; CMD's guard, in a group of
/// its own, keeps running), and `fg` resumes it: CMD
/// (a `sleep`) finishes, exit 0. A stop longer than a third of the session timeout (zklock
/// could not ping meanwhile) ends in CMD stopped for good and 74 instead.
#[test]
fn ctrl_z_stops_the_job_and_fg_resumes_it() {
    use std::io::Write;
    let zk = server().connect_string();
    let dir = scratch("ctrl-z");
    let (mut shell, _group) = typed_into(&zk, "/bin/bash", "bash --norc --noprofile -i");
    let mut tty = shell.stdin.take().unwrap();
    let mut type_in = |text: &str| {
        tty.write_all(text.as_bytes()).unwrap();
        tty.flush().unwrap();
    };
    // (session timeout, how long the job stays stopped, expected exit code)
    for (case, (timeout, stop, expected)) in
        [("30", 1, "0"), ("3", 3, "74")].into_iter().enumerate()
    {
        let lock = unique("ctrl-z");
        let (pid, code, jobs) = (
            dir.join(format!("pid{case}")),
            dir.join(format!("code{case}")),
            dir.join(format!("jobs{case}")),
        );
        // CMD becomes `sleep` itself: a Ctrl-Z while a shell is forking would
        // stop the child in vfork, the shell blocked unstoppably in it (with or
        // without zklock). Long enough to be stopped on a loaded machine (2 s
        // ran out before the Ctrl-Z took effect at load 5).
        type_in(&format!(
            "{} --session-timeout {timeout} exec {lock} -- sh -c 'echo $$ > {}; exec sleep 8'\n",
            env!("CARGO_BIN_EXE_zklock"),
            pid.display(),
        ));
        let cmd = written_pid(&pid);
        until("CMD's sleep", Duration::from_secs(10), || {
            let comm = std::fs::read_to_string(format!("/proc/{cmd}/comm")).ok()?;
            (comm.trim() == "sleep").then_some(())
        });
        // A Ctrl-Z before CMD's group has the terminal (during zklock's start)
        // is another scenario: this one presses it while CMD runs.
        until(
            "CMD's group in the terminal's foreground",
            Duration::from_secs(10),
            || {
                let (group, foreground) = (stat_field(cmd, 3)?, stat_field(cmd, 6)?);
                (group == foreground).then_some(())
            },
        );
        let guard = parent_of(cmd).unwrap();
        let zklock = parent_of(guard).unwrap();
        type_in("\x1a");
        let states = || [cmd, zklock].map(state);
        let start = Instant::now();
        let mut seen = Vec::new();
        while states().iter().any(|s| *s != Some('T')) {
            let now = (states(), state(guard));
            if seen.last().map(|(_, s)| s) != Some(&now) {
                seen.push((start.elapsed(), now));
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "session timeout {timeout}: CMD and zklock not both stopped: {:?} (seen: {seen:?})",
                states()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        // The guard keeps running (its clock enforces the lock's deadline).
        assert_ne!(state(guard), Some('T'), "the guard stopped");
        type_in(&format!("jobs > {}\n", jobs.display()));
        wait_for(&jobs, Duration::from_secs(10));
        let listed = std::fs::read_to_string(&jobs).unwrap();
        assert!(listed.contains("Stopped"), "{listed:?}");
        std::thread::sleep(Duration::from_secs(stop));
        type_in(&format!("fg\necho $? > {}\n", code.display()));
        wait_for(&code, LONG);
        until("the exit code written", Duration::from_secs(5), || {
            let text = std::fs::read_to_string(&code).ok()?;
            text.ends_with('\n').then_some(())
        });
        let code = std::fs::read_to_string(&code).unwrap();
        assert_eq!(
            code.trim(),
            expected,
            "session timeout {timeout}, stopped {stop} s"
        );
        // 0: CMD slept its 8 s out; 74: it was stopped for good.
        assert!(!alive(cmd), "session timeout {timeout}: CMD still runs");
    }
    type_in("exit\n");
    drop(tty);
    shell.wait().unwrap();
}

/// `line` run by `shell` on a terminal of its own (script(1)), typed into
/// through script's stdin; its group is killed if a failed assertion leaves it.
fn typed_into(zk: &str, shell: &str, line: &str) -> (Child, KillOnDrop) {
    let script = on_a_terminal(zk, line)
        .env("SHELL", shell)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("script(1) from util-linux");
    let group = KillOnDrop(script.id());
    (script, group)
}

fn parent_of(pid: i32) -> Option<i32> {
    stat_field(pid, 2)?.parse().ok()
}

/// zklock started with SIGHUP ignored (`nohup`, `trap '' HUP`): a SIGHUP
/// changes nothing (CMD runs to its end, exit 0), and CMD inherits it ignored.
#[test]
fn a_signal_ignored_at_start_stays_ignored() {
    let (zk, lock, dir) = setup("nohup");
    let (ignored, ready) = (dir.join("ignored"), dir.join("ready"));
    let cmd = dir.join("cmd.sh");
    std::fs::write(
        &cmd,
        format!(
            "grep SigIgn /proc/$$/status > {}; touch {}; sleep 1\n",
            ignored.display(),
            ready.display()
        ),
    )
    .unwrap();
    let zklock = std::process::Command::new("sh")
        .args(["-c", "trap '' HUP; exec \"$0\" exec \"$1\" -- sh \"$2\""])
        .arg(env!("CARGO_BIN_EXE_zklock"))
        .arg(&lock)
        .arg(&cmd)
        .env("ZKLOCK_ZK", &zk)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&ready, LONG);
    kill(&zklock, "-HUP");
    let out = zklock.wait_with_output().unwrap();
    assert_eq!(code(&out), 0, "{out:?}");
    let mask = std::fs::read_to_string(&ignored).unwrap();
    let mask = u64::from_str_radix(mask.trim_start_matches("SigIgn:").trim(), 16).unwrap();
    assert_eq!(mask & 1, 1, "CMD's SIGHUP is not ignored: {mask:#x}");
}

/// kill -9 of zklock run by a script on a terminal (a pty from script(1)): CMD's
/// group dies, and the terminal goes back to the script, which reads its next
/// line from it a second later. (At once it could still find CMD's group in the
/// foreground: the guard hears of zklock's death when the script does.)
#[test]
fn the_terminal_goes_back_when_zklock_dies() {
    use std::io::Write;
    let (zk, lock, dir) = setup("tty-back");
    let (pid, got) = (dir.join("pid"), dir.join("got"));
    let script = dir.join("script.sh");
    std::fs::write(
        &script,
        format!(
            "{} exec {lock} -- sh -c 'echo $$ > {}; exec sleep 300'\nsleep 1\nread line\necho \"$line\" > {}\n",
            env!("CARGO_BIN_EXE_zklock"),
            pid.display(),
            got.display()
        ),
    )
    .unwrap();
    let (mut shell, _group) = typed_into(&zk, "/bin/sh", &format!("sh {}", script.display()));
    let cmd = written_pid(&pid);
    let guard = parent_of(cmd).unwrap();
    let zklock = parent_of(guard).unwrap();
    let comm = std::fs::read_to_string(format!("/proc/{zklock}/comm")).unwrap();
    assert_eq!(comm.trim(), "zklock", "pid {zklock}");
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &zklock.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    until("CMD gone", GROUP_DEATH_BOUND, || {
        (!alive(cmd)).then_some(())
    });
    let mut tty = shell.stdin.take().unwrap();
    tty.write_all(b"hello\n").unwrap();
    tty.flush().unwrap();
    until("the script read its line", Duration::from_secs(10), || {
        let text = std::fs::read_to_string(&got).ok()?;
        (text == "hello\n").then_some(())
    });
    drop(tty);
    shell.wait().unwrap();
}
