//! Helpers shared by the test binaries that run the built `zklock` against a real
//! ZooKeeper (lock-testkit).
#![allow(dead_code)] // each test binary uses its own subset

use lock_testkit::ZkServer;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

// zklock's exit codes (the README's table).
pub const USAGE: i32 = 2;
pub const NOBODY_HOLDS: i32 = 3;
pub const DEADLOCK: i32 = 4;
pub const UNSAFE: i32 = 5;
pub const UNCHECKED: i32 = 6;
pub const NOT_FORCED: i32 = 7;
pub const CONNECT: i32 = 69;
pub const LOST: i32 = 74;
pub const BUSY: i32 = 75;

/// The session timeout (seconds) of a holder a test pauses or stops for
/// longer, to see what happens when its session expires under it.
pub const SESSION_TIMEOUT: &str = "2";

/// How long a test waits for what comes within a second or two on an idle
/// machine: generous, the machine may be busy (load 6+).
pub const LONG: Duration = Duration::from_secs(30);

/// One server per test binary (the testkit kills it at exit).
pub fn server() -> &'static ZkServer {
    static SERVER: OnceLock<ZkServer> = OnceLock::new();
    SERVER.get_or_init(|| {
        ZkServer::builder()
            .config("preAllocSize", "1024")
            .start()
            .expect("starting ZooKeeper (lock-testkit)")
    })
}

/// A port nobody listens on (bound, then closed).
pub fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A lock path unique to this run.
pub fn unique(test: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "/cli-tests/{test}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// A fresh scratch directory.
pub fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "zklock-cli-{}-{}",
        std::process::id(),
        unique(test).replace('/', "_")
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// What most tests start from, named after `test`: the connect string of the
/// binary's server, a lock path of its own and a fresh scratch directory.
pub fn setup(test: &str) -> (String, String, PathBuf) {
    (server().connect_string(), unique(test), scratch(test))
}

/// The built zklock, with every signal at its default: zklock keeps a signal
/// ignored when it was started with it ignored (as `cmd &` in a script starts it
/// for SIGINT, `nohup` for SIGHUP), and a test runner started that way would pass
/// it on, leaving the tests' `kill -INT` or `kill -HUP` without effect.
/// (`env --default-signal` execs, so the child's pid is zklock's.)
pub fn zklock(zk: &str) -> Command {
    let mut c = Command::new("env");
    c.args(["--default-signal", env!("CARGO_BIN_EXE_zklock")]);
    c.env("ZKLOCK_ZK", zk);
    c
}

/// `line`'s words (split at single spaces): a command line written as one
/// string, for arguments that hold no space.
pub fn words(line: &str) -> Vec<&str> {
    line.split(' ').collect()
}

pub fn run(c: &mut Command) -> Output {
    c.output().expect("running zklock")
}

/// Runs `zklock ARGS` against `zk`, asserts that it exits `expected`, and
/// returns its output.
#[track_caller]
pub fn exits(zk: &str, args: &[&str], expected: i32) -> Output {
    let out = run(zklock(zk).args(args));
    assert_eq!(code(&out), expected, "{out:?}");
    out
}

/// What `o` wrote on stdout (invalid UTF-8 replaced).
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// What `o` wrote on stderr (invalid UTF-8 replaced).
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn code(o: &Output) -> i32 {
    o.status
        .code()
        .unwrap_or_else(|| panic!("killed by a signal: {o:?}"))
}

pub fn wait_for(path: &Path, timeout: Duration) {
    let start = Instant::now();
    while !path.exists() {
        assert!(
            start.elapsed() < timeout,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A holder running `sh -c script` under `zklock exec`, started in the background.
pub fn hold(zk: &str, extra: &[&str], lock: &str, script: &str) -> Child {
    zklock(zk)
        .arg("exec")
        .args(extra)
        .arg(lock)
        .args(["--", "sh", "-c", script])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// `zklock exec` holding `lock` (with `extra` flags) around a minute-long sleep;
/// returns once CMD runs (it writes its node's path, `ZKLOCK_NODE`, to `marker`
/// first, moved into place so that it is read whole).
pub fn holding(zk: &str, extra: &[&str], lock: &str, marker: &Path) -> Child {
    let holder = hold(
        zk,
        extra,
        lock,
        &format!(
            "echo $ZKLOCK_NODE > {0}.tmp; mv {0}.tmp {0}; exec sleep 60",
            marker.display()
        ),
    );
    wait_for(marker, LONG);
    holder
}

/// [`holding`], with its node's path (from a marker in `dir`).
pub fn holding_node(zk: &str, extra: &[&str], lock: &str, dir: &Path) -> (Child, String) {
    let file = dir.join("node");
    (holding(zk, extra, lock, &file), read(&file))
}

/// Stops `child` with SIGTERM and waits for it to end.
pub fn terminate(child: &mut Child) -> std::process::ExitStatus {
    kill(child, "-TERM");
    child.wait().unwrap()
}

pub fn kill(child: &Child, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
}

/// Polls `check` every 20 ms until it gives something (panics after `timeout`,
/// naming `what`).
pub fn until<T>(what: &str, timeout: Duration, mut check: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(t) = check() {
            return t;
        }
        assert!(start.elapsed() < timeout, "{what}: not after {timeout:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs `script` with Debian's `/usr/bin/python3` (the one with kazoo), `input` on
/// its stdin; panics unless it succeeds, and returns its stdout.
pub fn python(script: &str, args: &[&str], input: &[u8]) -> String {
    use std::io::Write;
    let mut child = Command::new("/usr/bin/python3")
        .arg("-c")
        .arg(script)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running /usr/bin/python3");
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "python failed: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// `zklock ls PATH` on a lock whose holders' libraries disagree: it succeeds,
/// warns that the lock mixes naming schemes, and names each library's holder
/// (`lines`, e.g. "kazoo takes for the holder: #2").
pub fn assert_ls_names_each_librarys_holder(zk: &str, path: &str, lines: &[&str]) {
    let out = run(zklock(zk).args(["ls", path]));
    assert_eq!(code(&out), 0, "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("mixes naming schemes"), "{stderr}");
    for line in lines {
        assert!(stderr.contains(line), "{line}: {stderr}");
    }
}

/// The rows of `zklock ls PATH` (whitespace-separated cells, header skipped).
pub fn ls_rows(zk: &str, path: &str) -> Vec<Vec<String>> {
    let out = run(zklock(zk).args(["ls", path]));
    assert_eq!(code(&out), 0, "{out:?}");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().map(str::to_owned).collect())
        .collect()
}

/// The rows of `zklock ls PATH` once there are `count` of them (within 30 s).
pub fn ls_rows_of(zk: &str, path: &str, count: usize) -> Vec<Vec<String>> {
    until(&format!("{count} rows at {path}"), LONG, || {
        let rows = ls_rows(zk, path);
        (rows.len() == count).then_some(rows)
    })
}

/// `script(1)` running the shell line `line` on a terminal of its own (a pty),
/// with `zk` as ZKLOCK_ZK.
pub fn on_a_terminal(zk: &str, line: &str) -> Command {
    let mut c = Command::new("script");
    c.args(["-qec", line, "/dev/null"]).env("ZKLOCK_ZK", zk);
    c
}

/// Sends `sig` to a whole process group.
pub fn signal_group(pgid: u32, sig: &str) {
    // The shell's builtin `kill` (procps may not be installed); dash's takes no `--`.
    let ok = Command::new("/bin/sh")
        .args(["-c", "kill \"$1\" \"-$2\"", "sh", sig, &pgid.to_string()])
        .status()
        .unwrap();
    assert!(ok.success(), "kill {sig} -{pgid}");
}

/// Stops `holder`'s process group (SIGSTOP); returns once it is stopped.
pub fn pause(holder: &Child) {
    signal_group(holder.id(), "-STOP");
    until("the holder stopped", Duration::from_secs(10), || {
        (state(holder.id() as i32) == Some('T')).then_some(())
    });
}

/// Holder A of a paused-holder scenario: `zklock --session-timeout
/// SESSION_TIMEOUT exec EXTRA LOCK` in `dir` with `db`'s `$PSQL` and
/// `$DATABASE_URL`, in a process group of its own. Its CMD runs `first`, then
/// starts `write` in a session of its own (out of zklock's reach, so that it
/// always reaches the database) that waits up to a minute for the file `go` and
/// leaves its output in `a.result`. Returns once CMD runs, zklock's group paused
/// (SIGSTOP): the write is "in flight".
pub fn paused_late_writer(
    zk: &str,
    extra: &[&str],
    lock: &str,
    dir: &Path,
    db: &lock_testkit::Postgres,
    (first, write): (&str, &str),
) -> (Child, KillOnDrop) {
    let script = format!(
        "{first}; \
         setsid sh -c 'n=0; while [ ! -e go ] && [ $n -lt 1200 ]; do sleep 0.05; n=$((n+1)); done; \
           [ -e go ] && {} > a.tmp 2>&1; mv a.tmp a.result' </dev/null >/dev/null 2>&1 & \
         touch ready; wait",
        write.replace('\'', "'\\''")
    );
    let holder = zklock(zk)
        .args(["--session-timeout", SESSION_TIMEOUT, "exec"])
        .args(extra)
        .args([lock, "--", "sh", "-c", &script])
        .env("PSQL", db.psql_path())
        .env("DATABASE_URL", db.url())
        .current_dir(dir)
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let group = KillOnDrop(holder.id());
    wait_for(&dir.join("ready"), LONG);
    pause(&holder);
    (holder, group)
}

/// Kills a process group when dropped: a failed test leaves nothing of it
/// running, stopped or not. (A paused holder's late write gives up by itself:
/// it waits a minute at most for `go`.)
pub struct KillOnDrop(pub u32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = Command::new("/bin/sh")
            .args([
                "-c",
                "kill -KILL \"-$1\" 2>/dev/null",
                "sh",
                &self.0.to_string(),
            ])
            .status();
    }
}

/// The state letter of a process (`T` when stopped, `Z` a zombie).
pub fn state(pid: i32) -> Option<char> {
    stat_field(pid, 1)?.chars().next()
}

/// The process group of `pid` (`None` once it is gone or a zombie).
pub fn process_group(pid: i32) -> Option<i32> {
    (state(pid)? != 'Z').then_some(())?;
    stat_field(pid, 3)?.parse().ok()
}

/// Whether `pid` is a live (not zombie) process.
pub fn alive(pid: i32) -> bool {
    process_group(pid).is_some()
}

/// Field `n` (1-based, after the command name: 1 the state, 3 the process group) of
/// /proc/PID/stat, if the process is there.
pub fn stat_field(pid: i32, n: usize) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(n - 1)
        .map(str::to_owned)
}

/// The pid CMD wrote to `file` (`echo $$ > FILE`), once written whole.
pub fn written_pid(file: &Path) -> i32 {
    until("CMD's pid", LONG, || {
        std::fs::read_to_string(file)
            .ok()?
            .strip_suffix('\n')?
            .parse()
            .ok()
    })
}

pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap().trim().to_owned()
}

pub const PEER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/kazoo_lock.py");

/// Runs the kazoo peer in `mode` on `lock` as `identifier`.
pub fn kazoo(zk: &str, lock: &str, identifier: &str, mode: &[&str]) -> Command {
    let mut c = Command::new("/usr/bin/python3");
    c.arg(PEER).args([zk, lock, identifier]).args(mode);
    c
}

/// A kazoo holder (`hold`, or `shold N` for a semaphore lease): started, and
/// returned once it says it holds (with its node).
pub fn kazoo_holder(zk: &str, lock: &str, identifier: &str, mode: &[&str]) -> (Child, String) {
    let mut child = kazoo(zk, lock, identifier, mode)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    let node = line
        .strip_prefix("HELD ")
        .unwrap_or_else(|| panic!("kazoo peer said {line:?} (python3-kazoo installed?)"))
        .trim()
        .to_owned();
    (child, node)
}
