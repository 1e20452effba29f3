//! A holder process paused past its trust deadline: its first check after the
//! pause says the lock is not trusted, whatever its driver has done by then.
//!
//! The test runs its own binary again as the child (the same test, told so by
//! [`CHILD_SERVER`]): the child holds a lock and checks `is_trusted()` in a
//! busy loop, the test stops it with SIGSTOP for `2 T` and continues it,
//! and the child reports the first check that began after the pause.

use super::*;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// Set in the child's environment: the connect string of its parent's server
/// (and the mark that it is the child).
const CHILD_SERVER: &str = "LOCK_CONFORMANCE_PAUSED_HOLDER_SERVER";
/// Set in the child's environment: the lock path it holds.
const CHILD_PATH: &str = "LOCK_CONFORMANCE_PAUSED_HOLDER_PATH";

/// The child's session timeout: short, so that the pause is too.
const T: Duration = SESSION_TIMEOUT;

/// What marks the child's lines (the test harness writes to its stdout too).
const MARK: &str = "paused-holder:";

/// A holder stopped with SIGSTOP for `2 T` (past its `trusted_until()`, which is
/// at most `T` less a margin after its last proof of contact) and continued:
/// the first `is_trusted()` it calls after the pause is `false`, though its
/// driver may not have run yet (the check reads the clock, not only what the
/// driver last reported).
///
/// `module` is the `module_path!()` of the generated test, whose binary the test
/// runs again as the child ([`Capability::Processes`](crate::Capability)).
pub fn a_paused_holder_distrusts_its_lock_at_the_first_check(b: &Suite, module: &str) {
    if let (Ok(server), Ok(path)) = (std::env::var(CHILD_SERVER), std::env::var(CHILD_PATH)) {
        return paused_holder(b, &server, &path);
    }
    let server = cluster(b);
    let path = unique_path("paused-holder");
    // The test's name in its binary: the module path less the crate's name.
    let name = module
        .split_once("::")
        .map_or(String::new(), |(_, m)| format!("{m}::"))
        + "a_paused_holder_distrusts_its_lock_at_the_first_check";
    let child = Command::new(std::env::current_exe().expect("the test binary"))
        .args([name.as_str(), "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_SERVER, &server)
        .env(CHILD_PATH, &path)
        .stdout(Stdio::piped())
        .spawn()
        .expect("running the test binary again");
    let mut child = KillOnDrop(child);
    let lines = marked_lines(&mut child.0);

    let held = lines.recv_timeout(LONG).expect("the child holds the lock");
    assert_eq!(held, "held", "{}: the child says {held:?}", b.name());
    let pid = child.0.id();
    signal(pid, "-STOP");
    let stopped = Instant::now();
    thread::sleep(2 * T);
    signal(pid, "-CONT");
    let pause = stopped.elapsed();

    let report = lines
        .recv_timeout(SHORT)
        .unwrap_or_else(|_| panic!("{}: no report after the pause", b.name()));
    eprintln!("{}: paused {pause:?} (T = {T:?}): {report}", b.name());
    let field = |key: &str| {
        report
            .split_whitespace()
            .find_map(|f| f.strip_prefix(key)?.strip_prefix('='))
            .unwrap_or_else(|| panic!("no {key} in {report:?}"))
            .to_owned()
    };
    let gap_ms: u128 = field("gap_ms").parse().unwrap();
    assert!(
        gap_ms >= pause.as_millis() * 3 / 4,
        "{}: the reported check is not the first after the pause ({gap_ms} ms between \
         checks, paused {pause:?})",
        b.name()
    );
    assert_eq!(
        field("trusted"),
        "false",
        "{}: the first check after a pause of {pause:?} past T = {T:?} trusted the lock: \
         {report}",
        b.name()
    );
    let status = child.0.wait().expect("waiting for the child");
    assert!(status.success(), "{}: the child failed: {status}", b.name());
}

/// The child: holds the lock at `path` on `server` and checks `is_trusted()`
/// in a loop; reports the first check that began more than `T` after
/// the previous one (after the pause), and what the guard says right after.
fn paused_holder(b: &Suite, server: &str, path: &str) {
    let locks = b.client_at(server, T);
    let guard = b
        .lock(&locks, crate::Kind::Mutex, path, Wait::Timeout(SHORT))
        .expect("the child's lock");
    say("held");
    let mut last = Instant::now();
    loop {
        // A pause anywhere between the previous check's start and this one's
        // makes this the first check that began after it.
        let before = Instant::now();
        let trusted = guard.is_trusted();
        let gap = before - last;
        if gap > T {
            let (status, until) = (guard.status(), guard.trusted_until());
            let past = until.map(|u| before.saturating_duration_since(u));
            say(&format!(
                "trusted={trusted} gap_ms={} status={status:?} past_deadline={past:?}",
                gap.as_millis()
            ));
            break;
        }
        last = before;
        // Busy, as a step of work is: stopped while running, the check comes
        // first after the pause, racing the driver's threads.
        std::hint::spin_loop();
    }
    // The session expired during the pause: the lock is gone with it.
    drop(guard);
    b.close(&locks);
}

/// A line for the parent, flushed at once.
fn say(what: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{MARK} {what}")
        .and_then(|()| out.flush())
        .expect("stdout");
}

/// What the child says (after [`MARK`]), as it comes.
fn marked_lines(child: &mut Child) -> mpsc::Receiver<String> {
    let stdout = child.stdout.take().expect("piped");
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            // Anywhere in the line: the harness's "test NAME ... " comes first.
            if let Some((_, said)) = line.split_once(MARK) {
                if tx.send(said.trim().to_owned()).is_err() {
                    return;
                }
            }
        }
    });
    rx
}

/// Sends `sig` to `pid` (the shell's builtin `kill`: procps may be missing).
fn signal(pid: u32, sig: &str) {
    let ok = Command::new("/bin/sh")
        .args(["-c", "kill \"$1\" \"$2\"", "sh", sig, &pid.to_string()])
        .status()
        .expect("running /bin/sh");
    assert!(ok.success(), "kill {sig} {pid}");
}

/// Kills the child if the test fails (a stopped child would stay stopped).
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
