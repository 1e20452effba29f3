//! `zklock`: flock(1) and `etcdctl lock`/`elect` for Apache ZooKeeper.
//!
//! ```text
//! zklock exec [-w SECS | -n] [--read | --semaphore N] [--scheme native|curator|kazoo] [--owner ID] [--acl ACL] PATH -- CMD...
//! zklock elect [--acl ACL] PATH ID -- CMD...
//! zklock ls PATH [--json]
//! zklock revoke PATH|NODE
//! zklock leader PATH [--watch]
//! zklock deadlocks ROOT [--json | --dot]
//! zklock top ROOT [--once] [--sort wait|hold|path]
//! zklock doctor [--json] [--admin-port PORT]
//! ```
//!
//! Every command takes `--zk HOSTS[/chroot]` (env `ZKLOCK_ZK`, default
//! `127.0.0.1:2181`) and `--session-timeout SECS`. The exit codes are in
//! [`exit`] and in `zklock --help`.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod args;
mod chroot;
mod deadlocks;
mod doctor;
mod exec;
mod explain;
mod guard;
mod job;
mod json;
mod ls;
mod progress;
mod raw;
mod reach;
mod signals;
mod top;
mod usage;
mod views;

pub(crate) use args::{parse_secs, Cli, Command, ConnArgs, Scheme};
use lock_zookeeper_client::{ConnectOptions, Error, LockClient, NameScheme, NodeAcl, Tls, ZkError};
use std::process::ExitCode;
use std::time::Duration;

/// The exit codes of `zklock` (besides CMD's own, which `exec` passes on).
pub mod exit {
    /// Other failures: ZooKeeper refused a request, the client closed.
    pub const FAILURE: u8 = 1;
    /// Usage error, found before connecting: bad arguments (clap's code), an
    /// invalid lock path, permit count or connect string, a lock path too long
    /// for CMD's environment; or found on the server, where the remedy is still
    /// a different command line: the connect string's chroot does not exist,
    /// `exec --semaphore N` where the semaphore has another permit count.
    pub const USAGE: u8 = 2;
    /// `leader`: nobody leads the election.
    pub const NO_LEADER: u8 = 3;
    /// `deadlocks`: at least one deadlock was found.
    pub const DEADLOCK: u8 = 4;
    /// `doctor`: some server's settings are unsafe for the session timeout.
    pub const UNSAFE: u8 = 5;
    /// `doctor`: nothing unsafe found, but something could not be checked (a
    /// server unreachable, `conf` refused, no session).
    pub const UNCHECKED: u8 = 6;
    /// Could not connect to ZooKeeper (sysexits' `EX_UNAVAILABLE`).
    pub const CONNECT: u8 = 69;
    /// The lock was suspended past the safe margin, lost or revoked (`--revocable`)
    /// while CMD ran: CMD was stopped (or had ended with the lock no longer
    /// guaranteed).
    pub const LOST: u8 = 74;
    /// `-n`: the lock is busy; `-w SECS`: timed out; `--revocable`: revoked while
    /// waiting (sysexits' `EX_TEMPFAIL`, like flock's `-E` default).
    pub const BUSY: u8 = 75;
    /// CMD was found but could not be run.
    pub const CANNOT_RUN: u8 = 126;
    /// CMD was not found.
    pub const NOT_FOUND: u8 = 127;
}

/// What every subcommand's help says instead of repeating the table.
const SEE_EXIT_CODES: &str = "Exit codes: see `zklock --help`.";

const EXIT_CODES: &str = "\
Exit codes:
  0     success (ls: also when nobody holds or waits, or PATH does not exist;
        deadlocks: no deadlock found)
  0..   exec, elect: CMD's own exit code (128+N if CMD was killed by signal N);
        128+N also when signal N made zklock give up waiting
  1     other failure (ZooKeeper refused a request, ...)
  2     usage error, found before connecting (bad arguments, invalid lock path,
        permits or connect string, path too long for ZKLOCK_NODE); or found on
        the server: the connect string's chroot does not exist, exec
        --semaphore N where the semaphore has another permit count
  3     leader: no leader
  4     deadlocks: deadlock(s) found
  5     doctor: unsafe settings on some server (the report says how to fix them)
  6     doctor: nothing unsafe found, but something could not be checked
        (a server unreachable, `conf` refused, no session)
  69    cannot connect to ZooKeeper (each server named, with what it did;
        doctor: no server answered)
  74    exec: the lock was lost (or suspended too long, or revoked with --revocable)
        while CMD ran; CMD was stopped
  75    exec: the lock is busy (-n), the wait timed out (-w), or it was revoked
        while waiting (--revocable)
  126   exec: CMD could not be run
  127   exec: CMD not found";

/// Prints `zklock: <message>` on stderr.
pub(crate) fn say(message: impl std::fmt::Display) {
    eprintln!("zklock: {message}");
}

/// The exit code for a failed lock-client call.
pub(crate) fn error_code(e: &Error) -> u8 {
    match e {
        Error::Usage(_) | Error::BadOption(_) => exit::USAGE,
        Error::Connect(_) | Error::NoRuntime => exit::CONNECT,
        Error::Timeout | Error::WouldBlock | Error::Revoked => exit::BUSY,
        Error::Lost(_) => exit::LOST,
        // The command line asks for another count than the semaphore's.
        Error::Failed(lock_zookeeper_client::FailReason::PermitsMismatch { .. }) => exit::USAGE,
        _ => exit::FAILURE,
    }
}

/// Reports `e` (a sentence) and returns its exit code.
pub(crate) fn fail(e: &Error) -> ExitCode {
    say(explain::error(e));
    ExitCode::from(error_code(e))
}

/// Reports `e` as about `path` (a sentence naming it) and returns its exit code.
pub(crate) fn fail_at(path: &str, e: &Error) -> ExitCode {
    say(explain::at(path, e));
    ExitCode::from(error_code(e))
}

async fn connect(conn: &ConnArgs, acl: NodeAcl) -> Result<LockClient, Error> {
    connect_to(conn, &conn.zk, None, acl).await
}

/// Connects to the servers `zk` with the options of `conn`; nodes created in the
/// session get `acl`.
pub(crate) async fn connect_to(
    conn: &ConnArgs,
    zk: &str,
    connect_timeout: Option<Duration>,
    acl: NodeAcl,
) -> Result<LockClient, Error> {
    let mut options = ConnectOptions::new().acl(acl);
    if let Some(timeout) = connect_timeout {
        options = options.connect_timeout(timeout);
    }
    if let Some(timeout) = conn.session_timeout {
        options = options.session_timeout(timeout);
    }
    if let Some((user, password)) = &conn.auth {
        options = options.digest_auth(user, password);
    }
    if let Some(tls) = conn.tls()? {
        options = options.tls(tls);
    }
    lock_zookeeper_client::builder(zk)
        .options(options)
        .connect()
        .await
}

/// Connects; gives up early when every server refuses, and a failure names the
/// servers and what each did.
async fn connect_or_explain(
    conn: &ConnArgs,
    acl: NodeAcl,
    servers: &[usage::Server],
) -> Result<LockClient, Error> {
    tokio::select! {
        result = connect(conn, acl) => match result {
            Err(Error::Connect(why)) => Err(Error::Connect(reach::explain(servers, &why).await)),
            other => other,
        },
        refused = reach::every_server_refuses(servers) => Err(Error::Connect(refused)),
    }
}

fn main() -> ExitCode {
    let parsed = args::command()
        .try_get_matches()
        .and_then(|matches| <Cli as clap::FromArgMatches>::from_arg_matches(&matches));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) => return usage::clap_error(e),
    };
    match cli.command {
        Command::Guard(args) => return guard::main(args),
        Command::Completions { shell } => return print_completions(shell),
        Command::Man => return print_man_page(),
        _ => {}
    }
    job::kill_group_on_panic();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            say(format_args!("cannot start the runtime: {e}"));
            return ExitCode::from(exit::FAILURE);
        }
    };
    runtime.block_on(run(cli))
}

/// `zklock completions SHELL`: generated from the command line's own
/// definition, at run time (nothing to install beside the binary).
fn print_completions(shell: clap_complete::Shell) -> ExitCode {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut args::command(), "zklock", &mut script);
    print_out(&script, "completion script")
}

/// Writes `text` to stdout; a reader that stopped early (`| head`) is no error.
fn print_out(text: &[u8], what: &str) -> ExitCode {
    match std::io::Write::write_all(&mut std::io::stdout(), text) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            say(format_args!("cannot print the {what}: {e}"));
            ExitCode::from(exit::FAILURE)
        }
    }
}

/// `zklock man`: the manual page, zklock(1), in roff, from the command line's
/// definition (the subcommands as sections of one page).
fn print_man_page() -> ExitCode {
    let command = args::command();
    let mut page = Vec::new();
    let rendered = clap_mangen::Man::new(command.clone())
        .render(&mut page)
        .and_then(|()| {
            for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
                let name = format!("zklock {}", sub.get_name());
                use std::io::Write;
                writeln!(page, ".SH \"{}\"", name.to_uppercase())?;
                let sub = sub.clone().bin_name(name);
                let man = clap_mangen::Man::new(sub);
                man.render_synopsis_section(&mut page)?;
                man.render_description_section(&mut page)?;
                man.render_options_section(&mut page)?;
            }
            Ok(())
        });
    match rendered {
        Ok(()) => print_out(&page, "manual page"),
        Err(e) => {
            say(format_args!("cannot print the manual page: {e}"));
            ExitCode::from(exit::FAILURE)
        }
    }
}

/// What is wrong with the command line beyond clap's checks, found before
/// connecting.
fn usage_error(cli: &Cli) -> Option<String> {
    // doctor reads the connect string itself (and reports every bad server).
    if !matches!(cli.command, Command::Doctor(_)) {
        if let Err(problem) = usage::connect_string(&cli.conn.zk) {
            return Some(problem);
        }
    }
    match &cli.command {
        Command::Exec(args) => args.usage_error(),
        Command::Elect(args) => args.usage_error(),
        // The lock client refuses `/` as a root too (it cannot be a lock
        // directory): refused here, before connecting, like any invalid path.
        Command::Ls { path, .. }
        | Command::Leader { path, .. }
        | Command::Revoke { target: path }
        | Command::Deadlocks { root: path, .. } => usage::lock_path(path).err(),
        Command::Top(args) => usage::lock_path(&args.root).err(),
        Command::Guard(_) | Command::Doctor(_) | Command::Completions { .. } | Command::Man => None,
    }
}

async fn run(cli: Cli) -> ExitCode {
    if let Some(problem) = usage_error(&cli) {
        say(problem);
        return ExitCode::from(exit::USAGE);
    }
    if let Command::Doctor(args) = cli.command {
        return doctor::run(&cli.conn, args).await;
    }
    // Caught from now on: a signal that would end zklock while it waits or holds
    // is handled (the node deleted, CMD's group told) instead.
    let mut signals = match signals::Signals::catch(&signals::ENDING) {
        Ok(signals) => signals,
        Err(e) => {
            say(format_args!("cannot catch signals: {e}"));
            return ExitCode::from(exit::FAILURE);
        }
    };
    let Ok(target) = usage::connect_string(&cli.conn.zk) else {
        unreachable!("checked by usage_error")
    };
    let chroot = chroot::Chroot::new(&cli.conn, target.chroot);
    // CMD's guard starts now, beside the connect, and waits for the lock: its
    // start-up is off the path from the grant to CMD.
    let cmd = match &cli.command {
        Command::Exec(args) => Some(&args.cmd),
        Command::Elect(args) => Some(&args.cmd),
        _ => None,
    };
    let cannot_guard = |e: std::io::Error| {
        say(format_args!(
            "cannot start CMD's guard (zklock itself): {e}"
        ));
        ExitCode::from(exit::CANNOT_RUN)
    };
    let starting = match cmd.map(|cmd| job::Ready::spawn_beside(cmd)).transpose() {
        Ok(starting) => starting,
        Err(e) => return cannot_guard(e),
    };
    // Only the subcommands that create nodes take --acl; the others create none.
    let acl = match &cli.command {
        Command::Exec(args) => args.nodes.acl.clone(),
        Command::Elect(args) => args.nodes.acl.clone(),
        _ => NodeAcl::Open,
    };
    let locks = tokio::select! {
        connected = connect_or_explain(&cli.conn, acl, &target.servers) => match connected {
            Ok(locks) => locks,
            Err(e) => return fail(&e),
        },
        number = signals.next() => return exec::signal_code(number),
    };
    let ready = match starting {
        Some(starting) => match starting.ready().await {
            Ok(ready) => Some(ready),
            Err(e) => {
                let _ = tokio::time::timeout(Duration::from_secs(5), locks.close()).await;
                return cannot_guard(e);
            }
        },
        None => None,
    };
    let code = match cli.command {
        Command::Exec(args) => {
            let ready = ready.expect("spawned for exec");
            exec::run(&locks, args, ready, &mut signals, &chroot).await
        }
        Command::Elect(args) => {
            let ready = ready.expect("spawned for elect");
            exec::elect(&locks, args, ready, &mut signals, &chroot).await
        }
        Command::Leader { path, watch } => leader(&locks, path, watch, &mut signals, &chroot).await,
        Command::Top(args) => tokio::select! {
            code = top::run(&cli.conn, &locks, args, &chroot) => code,
            number = signals.next() => exec::signal_code(number),
        },
        // The others end on a signal as its default action would, but with the
        // session closed.
        command => tokio::select! {
            code = inspect(&locks, command, &chroot) => code,
            number = signals.next() => exec::signal_code(number),
        },
    };
    let _ = tokio::time::timeout(Duration::from_secs(5), locks.close()).await;
    code
}

/// The one-shot commands: revoke, ls, deadlocks.
async fn inspect(locks: &LockClient, command: Command, chroot: &chroot::Chroot<'_>) -> ExitCode {
    match command {
        Command::Revoke { target } => revoke(locks, target, chroot).await,
        Command::Ls { path, json } => ls::run(locks, path, json, chroot).await,
        Command::Deadlocks { root, json, dot } => {
            let format = if json {
                deadlocks::Format::Json
            } else if dot {
                deadlocks::Format::Dot
            } else {
                deadlocks::Format::Text
            };
            deadlocks::run(locks, root, format, chroot).await
        }
        Command::Exec(_)
        | Command::Elect(_)
        | Command::Leader { .. }
        | Command::Top(_)
        | Command::Guard(_)
        | Command::Doctor(_)
        | Command::Completions { .. }
        | Command::Man => unreachable!("not a one-shot command"),
    }
}

/// `zklock revoke`: asks the holders at `target` (or its one node) to let go.
async fn revoke(locks: &LockClient, target: String, chroot: &chroot::Chroot<'_>) -> ExitCode {
    match locks.revoke(target.clone()).await {
        Ok(nodes) => {
            if nodes.is_empty() {
                // Nobody there: a missing chroot is exit 2, a missing path said.
                let hint = match chroot.nothing_at(&target).await {
                    Ok(hint) => hint.map(|h| format!(": {h}")).unwrap_or_default(),
                    Err(code) => return code,
                };
                say(format_args!("nobody to revoke at {target}{hint}"));
            }
            for node in nodes {
                println!("{node}");
            }
            ExitCode::SUCCESS
        }
        Err(e @ Error::Zk(ZkError::NoNode)) => match chroot.nothing_at(&target).await {
            Err(code) => code,
            Ok(Some(hint)) => {
                say(format_args!("cannot revoke {target}: {hint}"));
                ExitCode::from(error_code(&e))
            }
            Ok(None) => fail_at(&target, &e),
        },
        Err(e) => chroot.fail(&target, &e).await,
    }
}

fn leader_line(leader: Option<&lock_zookeeper_client::Leader>) -> String {
    match leader {
        Some(l) => format!(
            "{}\t{}\t{}",
            String::from_utf8_lossy(&l.id),
            l.path,
            l.token
        ),
        None => "-".to_owned(),
    }
}

/// `zklock leader`: the leader of the election at `path`, once or at every
/// change (`watch`).
async fn leader(
    locks: &LockClient,
    path: String,
    watch: bool,
    signals: &mut signals::Signals,
    chroot: &chroot::Chroot<'_>,
) -> ExitCode {
    let mut observer = match locks.observe_election(path.clone()).await {
        Ok(observer) => observer,
        Err(e) => return chroot.fail(&path, &e).await,
    };
    // Nobody leads: a missing chroot is exit 2 (also with --watch: nothing
    // could ever lead there), a missing path is said (a typo, most likely).
    let absent = match observer.leader() {
        Some(_) => None,
        None => match chroot.nothing_at(&path).await {
            Ok(hint) => hint,
            Err(code) => return code,
        },
    };
    if !watch {
        return match observer.leader() {
            Some(l) => {
                println!("{}", leader_line(Some(l)));
                ExitCode::SUCCESS
            }
            None => {
                let hint = absent.map(|h| format!(": {h}")).unwrap_or_default();
                say(format_args!("no leader at {path}{hint}"));
                ExitCode::from(exit::NO_LEADER)
            }
        };
    }
    if let Some(hint) = absent {
        // Watched all the same: the election may start later.
        say(hint);
    }
    println!("{}", leader_line(observer.leader()));
    loop {
        tokio::select! {
            changed = observer.changed() => match changed {
                Ok(leader) => println!("{}", leader_line(leader.as_ref())),
                Err(e) => return fail_at(&path, &e),
            },
            _ = signals.next() => return ExitCode::SUCCESS,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn the_cli_is_well_formed() {
        args::command().debug_assert();
    }

    #[test]
    fn parses_exec() {
        let cli = Cli::try_parse_from([
            "zklock", "--zk", "h:1/c", "exec", "-w", "1.5", "--read", "/l", "--", "ls", "-l",
        ])
        .unwrap();
        assert_eq!(cli.conn.zk, "h:1/c");
        let Command::Exec(args) = cli.command else {
            panic!("not exec")
        };
        assert!(format!("{args:?}").contains("1.5s"));
        // -n and -w exclude each other; CMD is required; --read excludes --semaphore.
        for bad in [
            &["zklock", "exec", "-n", "-w", "1", "/l", "--", "true"][..],
            &["zklock", "exec", "/l"],
            &[
                "zklock",
                "exec",
                "--read",
                "--semaphore",
                "2",
                "/l",
                "--",
                "true",
            ],
            &["zklock", "exec", "-w", "soon", "/l", "--", "true"],
        ] {
            let e = Cli::try_parse_from(bad).unwrap_err();
            assert_eq!(e.exit_code(), i32::from(exit::USAGE), "{bad:?}");
        }
    }

    #[test]
    fn owner_needs_a_scheme_with_room_for_it() {
        let exec = |scheme: &str| {
            let cli = Cli::try_parse_from([
                "zklock", "exec", "--owner", "me", "--scheme", scheme, "/l", "--", "true",
            ])
            .unwrap();
            let Command::Exec(args) = cli.command else {
                panic!("not exec")
            };
            args.usage_error()
        };
        assert_eq!(exec("native"), None);
        assert_eq!(exec("kazoo"), None);
        assert!(exec("curator").unwrap().contains("Curator"));
    }

    #[test]
    fn seconds() {
        assert_eq!(parse_secs("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_secs("0.25"), Ok(Duration::from_millis(250)));
        assert!(parse_secs("-1").is_err());
        assert!(parse_secs("x").is_err());
    }

    #[test]
    fn error_codes() {
        assert_eq!(error_code(&Error::Timeout), exit::BUSY);
        assert_eq!(error_code(&Error::Connect("x".into())), exit::CONNECT);
        assert_eq!(error_code(&Error::Closed), exit::FAILURE);
    }
}
