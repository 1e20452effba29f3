//! The exit codes of `zklock` (besides CMD's own, which `exec` passes on),
//! and the table `zklock --help` shows (`EXIT_CODES`: when each is used).

/// Other failures: ZooKeeper refused a request, the client closed.
pub const FAILURE: u8 = 1;
/// Usage error: found before connecting, or on the server where the remedy is
/// still a different command line.
pub const USAGE: u8 = 2;
/// `leader`: nobody leads the election.
pub const NO_LEADER: u8 = 3;
/// `break`: nobody holds the lock; the same code as `leader`'s "nobody leads".
pub const NOBODY_HOLDS: u8 = 3;
/// `deadlocks`: at least one deadlock was found.
pub const DEADLOCK: u8 = 4;
/// `doctor`: some server's settings are unsafe for the session timeout.
pub const UNSAFE: u8 = 5;
/// `doctor`: nothing unsafe found, but something could not be checked.
pub const UNCHECKED: u8 = 6;
/// `break` without `--force`: refused (the holder's session is alive).
pub const NOT_FORCED: u8 = 7;
/// Could not connect to ZooKeeper (sysexits' `EX_UNAVAILABLE`).
pub const CONNECT: u8 = 69;
/// The lock was lost (or suspended too long, or revoked) while CMD ran.
pub const LOST: u8 = 74;
/// The lock is busy, the wait timed out, or it was revoked while waiting
/// (sysexits' `EX_TEMPFAIL`, like flock's `-E` default).
pub const BUSY: u8 = 75;
/// CMD was found but could not be run.
pub const CANNOT_RUN: u8 = 126;
/// CMD was not found.
pub const NOT_FOUND: u8 = 127;

/// What every subcommand's help says instead of repeating the table.
pub(crate) const SEE_EXIT_CODES: &str = "Exit codes: see `zklock --help`.";

pub(crate) const EXIT_CODES: &str = "\
Exit codes:
  0     success (ls: also when nobody holds or waits, or PATH does not exist;
        deadlocks: no deadlock found)
  0..   exec, elect: CMD's own exit code (128+N if CMD was killed by signal N);
        128+N also when signal N made zklock give up waiting
  1     other failure (ZooKeeper refused a request, ...)
  2     usage error, found before connecting (bad arguments, invalid lock path,
        permits or connect string, path too long for ZKLOCK_NODE); or found on
        the server: the connect string's chroot does not exist, exec
        --semaphore N where the semaphore has another permit count, break
        with several holders and no --node, or a --node that takes no part
  3     leader: no leader; break: nobody holds the lock (nothing broken)
  4     deadlocks: deadlock(s) found
  5     doctor: unsafe settings on some server (the report says how to fix them)
  6     doctor: nothing unsafe found, but something could not be checked
        (a server unreachable, `conf` refused, no session)
  7     break: refused without --force (the holder's session is alive); the
        participant it would break is printed
  69    cannot connect to ZooKeeper (each server named, with what it did;
        doctor: no server answered)
  74    exec: the lock was lost (or suspended too long, or revoked with --revocable)
        while CMD ran; CMD was stopped
  75    exec: the lock is busy (-n), the wait timed out (-w), or it was revoked
        while waiting (--revocable)
  126   exec: CMD could not be run
  127   exec: CMD not found";

/// The exit code that reports `status` (128+N for signal N, like a shell).
pub(crate) fn status_code(status: std::process::ExitStatus) -> u8 {
    match (
        status.code(),
        std::os::unix::process::ExitStatusExt::signal(&status),
    ) {
        (Some(code), _) => u8::try_from(code & 0xff).unwrap_or(FAILURE),
        (None, Some(sig)) => u8::try_from(128 + (sig & 0x7f)).unwrap_or(FAILURE),
        (None, None) => FAILURE,
    }
}
