//! `zklock exec` and stops of zklock and of CMD's process group, in every order:
//! CMD never runs after the lock was granted to the next holder.
//!
//! Each scenario holds a lock with `zklock exec` (session timeout 2 s) whose CMD
//! appends a line to a file every 10 ms; a second `zklock exec` on the same path
//! waits, and its CMD appends `GRANTED` to the same file once granted. Lines
//! appended with O_APPEND land in the order of the writes, so "CMD ran after the
//! grant" is a line of CMD's after `GRANTED`, whatever the timing: that is what
//! the tests assert. Each line also carries the wall clock (`date +%s%N`), from
//! which the report measures by how much.
//!
//! `ZKLOCK_STOP_ORDER_RUNS=N` repeats each scenario N times and prints the worst
//! case per scenario; `ZKLOCK_BIN` runs another zklock binary (scripts/
//! exec-stop-orders.sh measures a build of main against this one). Both only
//! change what is measured, never what is asserted.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How the scenario stops and continues zklock and CMD's group.
#[derive(Clone, Copy, Debug)]
enum Order {
    /// zklock alone is stopped past the session timeout (until the next holder
    /// is granted), then continued.
    ZklockAlone,
    /// CMD's group alone is stopped for two session timeouts, then continued;
    /// zklock keeps the lock meanwhile; then zklock is asked to end (SIGTERM).
    CmdAlone,
    /// Both stopped until the next holder is granted; zklock continued first.
    BothZklockFirst,
    /// Both stopped until the next holder is granted; CMD's group first.
    BothCmdFirst,
}

/// The built zklock, or `ZKLOCK_BIN`.
fn binary() -> PathBuf {
    std::env::var_os("ZKLOCK_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_zklock").into())
}

fn zklock_at(zk: &str, setsid: bool) -> Command {
    let mut c = Command::new(if setsid { "setsid" } else { "env" });
    if setsid {
        c.args(["env", "--default-signal"]);
    } else {
        c.arg("--default-signal");
    }
    c.arg(binary()).env("ZKLOCK_ZK", zk);
    c
}

/// Sends `sig` to `target` (a pid, or `-PGID`); a continuation may find the
/// target gone (the guard killed CMD's group: what it is for).
fn signal(target: &str, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, "--", target])
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(ok.success() || sig == "-CONT", "kill {sig} {target}");
}

/// What a scenario saw: how long after the grant CMD's last line was written
/// (negative: that long before), and how many of its lines follow `GRANTED`.
struct Seen {
    last_after_grant_ms: f64,
    lines_after_grant: usize,
}

/// Runs one scenario; returns what the shared file shows.
fn scenario(order: Order, setsid: bool) -> Seen {
    let (zk, lock, dir) = setup("stop-order");
    let out = dir.join("out");
    let pid_file = dir.join("pid");
    let holder_script = format!(
        "echo $$ > {pid}; while :; do echo \"1 $(date +%s%N)\" >> {out}; sleep 0.01; done",
        pid = pid_file.display(),
        out = out.display()
    );
    let mut holder = zklock_at(&zk, setsid)
        .args(words(&format!(
            "--session-timeout {SESSION_TIMEOUT} exec {lock} -- sh -c"
        )))
        .arg(&holder_script)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let cmd = written_pid(&pid_file);
    let group = format!("-{}", stat_field(cmd, 3).expect("CMD runs"));
    let zklock = holder.id().to_string();
    let mut next = zklock_at(&zk, false)
        .args(["exec", &lock, "--", "sh", "-c"])
        .arg(format!(
            "echo \"GRANTED $(date +%s%N)\" >> {}",
            out.display()
        ))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // CMD runs and the next holder waits.
    std::thread::sleep(Duration::from_millis(500));
    let granted = || granted(&out);
    match order {
        Order::ZklockAlone => {
            signal(&zklock, "-STOP");
            until("the next holder's grant", Duration::from_secs(60), granted);
            // CMD would write meanwhile if it ran.
            std::thread::sleep(Duration::from_millis(1000));
            signal(&zklock, "-CONT");
        }
        Order::CmdAlone => {
            signal(&group, "-STOP");
            std::thread::sleep(Duration::from_secs(4));
            signal(&group, "-CONT");
            std::thread::sleep(Duration::from_millis(1000));
            assert!(granted().is_none(), "granted while zklock held the lock");
            signal(&zklock, "-TERM");
            until("the next holder's grant", Duration::from_secs(60), granted);
        }
        Order::BothZklockFirst | Order::BothCmdFirst => {
            signal(&zklock, "-STOP");
            signal(&group, "-STOP");
            until("the next holder's grant", Duration::from_secs(60), granted);
            let (first, second) = match order {
                Order::BothZklockFirst => (&zklock, &group),
                _ => (&group, &zklock),
            };
            signal(first, "-CONT");
            std::thread::sleep(Duration::from_millis(1000));
            signal(second, "-CONT");
            std::thread::sleep(Duration::from_millis(1000));
        }
    }
    // Whatever is left ends: zklock asked to (SIGTERM), then killed; the group too.
    end(&mut holder, &group);
    let _ = next.wait();
    let seen = read(&out);
    let _ = std::fs::remove_dir_all(&dir);
    seen
}

/// Ends the holder: continued and asked to end (SIGTERM), killed after 10 s.
fn end(holder: &mut Child, group: &str) {
    let pid = holder.id().to_string();
    let _ = Command::new("kill").args(["-CONT", &pid]).status();
    let _ = Command::new("kill").args(["-TERM", &pid]).status();
    let start = Instant::now();
    while holder.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(10) {
            let _ = holder.kill();
            let _ = holder.wait();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = Command::new("kill")
        .args(["-KILL", "--", group])
        .stderr(Stdio::null())
        .status();
}

/// The wall-clock stamp of the grant, once written.
fn granted(out: &Path) -> Option<u128> {
    let text = std::fs::read_to_string(out).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("GRANTED ")?.trim().parse().ok())
}

fn read(out: &Path) -> Seen {
    let text = std::fs::read_to_string(out).unwrap();
    let grant_line = text
        .lines()
        .position(|l| l.starts_with("GRANTED "))
        .expect("the next holder was granted");
    let grant = granted(out).unwrap() as f64;
    let stamp = |l: &str| l.strip_prefix("1 ")?.trim().parse::<u128>().ok();
    let last = text.lines().filter_map(stamp).max();
    Seen {
        last_after_grant_ms: last.map_or(f64::MIN, |t| (t as f64 - grant) / 1e6),
        lines_after_grant: text.lines().skip(grant_line + 1).filter_map(stamp).count(),
    }
}

/// Runs `order` with and without `setsid` (`ZKLOCK_STOP_ORDER_RUNS` times each,
/// default once), prints the worst case, and asserts that CMD never wrote after
/// the grant.
fn check(order: Order) {
    let runs: usize = std::env::var("ZKLOCK_STOP_ORDER_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1);
    let mut failures = Vec::new();
    for setsid in [false, true] {
        let mut worst = f64::MIN;
        let mut worst_lines = 0;
        for _ in 0..runs {
            let seen = scenario(order, setsid);
            worst = worst.max(seen.last_after_grant_ms);
            worst_lines = worst_lines.max(seen.lines_after_grant);
        }
        println!(
            "STOP-ORDER {order:?} setsid={setsid} runs={runs}: CMD's last write {worst:+.0} ms \
             after the grant (max), lines after the grant: {worst_lines} (max)"
        );
        if worst_lines > 0 {
            failures.push(format!(
                "{order:?} setsid={setsid}: CMD wrote {worst_lines} line(s) after the next \
                 holder's grant, the last {worst:.0} ms after it"
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn zklock_alone_stopped() {
    check(Order::ZklockAlone);
}

#[test]
fn cmd_group_alone_stopped() {
    check(Order::CmdAlone);
}

#[test]
fn both_stopped_zklock_continued_first() {
    check(Order::BothZklockFirst);
}

#[test]
fn both_stopped_cmd_continued_first() {
    check(Order::BothCmdFirst);
}
