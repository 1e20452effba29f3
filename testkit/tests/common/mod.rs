//! Helpers shared by the testkit's integration tests.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::{Shutdown, TcpListener};
use std::process::{Child, Command, Stdio};
use std::thread;

/// Echoes every byte back on each connection `listener` accepts, until the test
/// process ends.
pub fn echo(listener: TcpListener) {
    thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            thread::spawn(move || {
                let mut writer = stream.try_clone().unwrap();
                let mut reader = stream;
                let _ = std::io::copy(&mut reader, &mut writer);
                let _ = writer.shutdown(Shutdown::Write);
            });
        }
    });
}

/// Alive and not a zombie (a zombie is dead for our purposes).
pub fn pid_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| {
            !stat[stat.rfind(')').unwrap() + 1..]
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(false)
}

/// This test binary, started by `wrapper` (a program and its arguments, none for
/// the binary itself), running only `test` with `env` set (the test's child half
/// checks the variable).
pub fn rerun_as_child_under(wrapper: &[&str], test: &str, env: &str) -> Command {
    let exe = std::env::current_exe().unwrap();
    let mut command = match wrapper.split_first() {
        None => Command::new(exe),
        Some((program, args)) => {
            let mut command = Command::new(program);
            command.args(args).arg(exe);
            command
        }
    };
    command.args([test, "--exact", "--nocapture"]).env(env, "1");
    command
}

/// Runs `test` again as a child ([`rerun_as_child_under`]) and reads its stdout up to
/// the line that starts with `READY `: the child, and that line's other words.
/// Fails if the child ends its output without one.
pub fn ready_child(test: &str, env: &str) -> (Child, Vec<String>) {
    let mut child = rerun_as_child_under(&[], test, env)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    for line in stdout.lines().map_while(Result::ok) {
        if let Some(words) = line.strip_prefix("READY ") {
            return (child, words.split_whitespace().map(str::to_owned).collect());
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("{test}: the child never reported READY");
}
