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
mod break_lock;
mod chroot;
mod connect;
mod deadlocks;
mod doctor;
mod exec;
pub mod exit;
mod explain;
mod format;
mod guard;
mod job;
mod json;
mod leader;
mod ls;
mod progress;
mod raw;
mod render;
mod report;
mod revoke;
mod signals;
mod top;
mod usage;
mod views;

pub(crate) use args::{parse_secs, Cli, Command, ConnArgs, Scheme};
pub(crate) use connect::connect_to;
use format::{AnyFormat, TextOrJson};
use lock_zookeeper_client::{LockClient, NodeAcl};
pub(crate) use report::{error_code, fail, fail_at, say};
use std::ffi::OsString;
use std::process::ExitCode;
use std::time::Duration;

fn main() -> ExitCode {
    let parsed = args::command()
        .try_get_matches()
        .and_then(|matches| <Cli as clap::FromArgMatches>::from_arg_matches(&matches));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) => return usage::clap_error(e),
    };
    let online = match Run::resolve(cli.command) {
        Run::Offline(Offline::Guard(args)) => return guard::main(args),
        Run::Offline(Offline::Completions(shell)) => return print_completions(shell),
        Run::Offline(Offline::Man) => return print_man_page(),
        Run::Online(online) => online,
    };
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
    runtime.block_on(run(&cli.conn, online))
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

/// What the command line asks for, resolved once from [`Command`]: what runs
/// without ZooKeeper, and what connects (sorted by what it needs).
enum Run {
    /// Needs no ZooKeeper and no runtime.
    Offline(Offline),
    /// Connects (or, `doctor`, probes the servers).
    Online(Online),
}

/// The subcommands that do not connect.
enum Offline {
    /// `__guard`: the process CMD runs under.
    Guard(guard::GuardArgs),
    /// `completions SHELL`.
    Completions(clap_complete::Shell),
    /// `man`.
    Man,
}

/// The subcommands that reach ZooKeeper.
enum Online {
    /// `doctor`: reads the connect string itself and opens its own sessions.
    Doctor(doctor::DoctorArgs),
    /// The others: one session, opened here.
    Session(InSession),
}

/// The subcommands that run in one session of ours.
enum InSession {
    /// `exec`, `elect`: run CMD (its guard started beside the connect).
    Supervised(Supervised),
    /// The others look (or, `revoke`, ask).
    Look(Look),
}

/// The subcommands that create no node.
enum Look {
    /// `leader`: once, or following the election until a signal.
    Leader { path: String, watch: bool },
    /// `top`: until q or a signal.
    Top(top::TopArgs),
    /// `revoke`, `break`, `ls`, `deadlocks`: one answer (a signal ends them with the
    /// session closed).
    Inspect(Inspect),
}

/// The subcommands that run CMD under a lock.
enum Supervised {
    Exec(exec::ExecArgs),
    Elect(exec::ElectArgs),
}

/// The one-shot subcommands.
enum Inspect {
    Revoke { target: String },
    Break(break_lock::BreakArgs),
    Ls { path: String, output: TextOrJson },
    Deadlocks { root: String, output: AnyFormat },
}

impl Run {
    /// The one `match` over [`Command`].
    fn resolve(command: Command) -> Run {
        let in_session = match command {
            Command::Guard(args) => return Run::Offline(Offline::Guard(args)),
            Command::Completions { shell } => return Run::Offline(Offline::Completions(shell)),
            Command::Man => return Run::Offline(Offline::Man),
            Command::Doctor(args) => return Run::Online(Online::Doctor(args)),
            Command::Exec(args) => InSession::Supervised(Supervised::Exec(args)),
            Command::Elect(args) => InSession::Supervised(Supervised::Elect(args)),
            Command::Leader { path, watch } => InSession::Look(Look::Leader { path, watch }),
            Command::Top(args) => InSession::Look(Look::Top(args)),
            Command::Revoke { target } => {
                InSession::Look(Look::Inspect(Inspect::Revoke { target }))
            }
            Command::Break {
                path,
                node,
                force,
                output,
            } => InSession::Look(Look::Inspect(Inspect::Break(break_lock::BreakArgs {
                path,
                node,
                force,
                format: output.format(),
            }))),
            Command::Ls { path, output } => {
                InSession::Look(Look::Inspect(Inspect::Ls { path, output }))
            }
            Command::Deadlocks { root, output } => {
                InSession::Look(Look::Inspect(Inspect::Deadlocks { root, output }))
            }
        };
        Run::Online(Online::Session(in_session))
    }
}

impl InSession {
    /// What is wrong with the command line beyond clap's checks, found before
    /// connecting. The lock client refuses `/` as a root too (it cannot be a
    /// lock directory): refused here, before connecting, like any invalid path.
    fn usage_error(&self) -> Option<String> {
        match self {
            InSession::Supervised(Supervised::Exec(args)) => args.usage_error(),
            InSession::Supervised(Supervised::Elect(args)) => args.usage_error(),
            InSession::Look(Look::Leader { path, .. })
            | InSession::Look(Look::Inspect(
                Inspect::Ls { path, .. }
                | Inspect::Revoke { target: path }
                | Inspect::Break(break_lock::BreakArgs { path, .. })
                | Inspect::Deadlocks { root: path, .. },
            )) => usage::lock_path(path).err(),
            InSession::Look(Look::Top(args)) => usage::lock_path(&args.root).err(),
        }
    }
}

impl Supervised {
    /// CMD and its arguments.
    fn cmd(&self) -> &[OsString] {
        match self {
            Supervised::Exec(args) => &args.cmd,
            Supervised::Elect(args) => &args.cmd,
        }
    }

    /// The ACL of the nodes created (only these subcommands create any).
    fn acl(&self) -> NodeAcl {
        match self {
            Supervised::Exec(args) => args.nodes.acl.clone(),
            Supervised::Elect(args) => args.nodes.acl.clone(),
        }
    }
}

async fn run(conn: &ConnArgs, online: Online) -> ExitCode {
    match online {
        // doctor reads the connect string itself (and reports every bad server).
        Online::Doctor(args) => doctor::run(conn, args).await,
        Online::Session(work) => in_session(conn, work).await,
    }
}

/// Runs `work` in a session of its own, closed before zklock exits.
async fn in_session(conn: &ConnArgs, work: InSession) -> ExitCode {
    let target = match usage::connect_string(&conn.zk) {
        Ok(target) => target,
        Err(problem) => {
            say(problem);
            return ExitCode::from(exit::USAGE);
        }
    };
    if let Some(problem) = work.usage_error() {
        say(problem);
        return ExitCode::from(exit::USAGE);
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
    let chroot = chroot::Chroot::new(conn, target.chroot);
    let (locks, code) = match work {
        InSession::Supervised(supervised) => {
            let cannot_guard = |e: std::io::Error| {
                say(format_args!(
                    "cannot start CMD's guard (zklock itself): {e}"
                ));
                ExitCode::from(exit::CANNOT_RUN)
            };
            // CMD's guard starts now, beside the connect, and waits for the
            // lock: its start-up is off the path from the grant to CMD.
            let starting = match job::Ready::spawn_beside(supervised.cmd()) {
                Ok(starting) => starting,
                Err(e) => return cannot_guard(e),
            };
            let locks = match open(conn, supervised.acl(), &mut signals).await {
                Ok(locks) => locks,
                Err(code) => return code,
            };
            let ready = match starting.ready().await {
                Ok(ready) => ready,
                Err(e) => {
                    close(&locks).await;
                    return cannot_guard(e);
                }
            };
            let code = match supervised {
                Supervised::Exec(args) => exec::run(&locks, args, ready, &mut signals).await,
                Supervised::Elect(args) => exec::elect(&locks, args, ready, &mut signals).await,
            };
            (locks, code)
        }
        InSession::Look(look) => {
            // Only the subcommands that create nodes take --acl; these create none.
            let locks = match open(conn, NodeAcl::Open, &mut signals).await {
                Ok(locks) => locks,
                Err(code) => return code,
            };
            let code = match look {
                Look::Leader { path, watch } => {
                    leader::run(&locks, path, watch, &mut signals, &chroot).await
                }
                Look::Top(args) => tokio::select! {
                    code = top::run(conn, &locks, args, &chroot) => code,
                    number = signals.next() => exec::signal_code(number),
                },
                // The others end on a signal as its default action would, but
                // with the session closed.
                Look::Inspect(inspect) => tokio::select! {
                    code = inspect.run(&locks, &chroot) => code,
                    number = signals.next() => exec::signal_code(number),
                },
            };
            (locks, code)
        }
    };
    close(&locks).await;
    code
}

/// Opens the session (a signal gives up, with its exit code); a failure is
/// reported, naming the servers.
async fn open(
    conn: &ConnArgs,
    acl: NodeAcl,
    signals: &mut signals::Signals,
) -> Result<LockClient, ExitCode> {
    tokio::select! {
        connected = connect::connect(conn, acl) => {
            connected.map_err(|e| fail(&e))
        }
        number = signals.next() => Err(exec::signal_code(number)),
    }
}

/// Closes the session (its nodes deleted at once), waiting at most 5 s.
async fn close(locks: &LockClient) {
    let _ = tokio::time::timeout(Duration::from_secs(5), locks.close()).await;
}

impl Inspect {
    /// Runs `revoke`, `break`, `ls` or `deadlocks`.
    async fn run(self, locks: &LockClient, chroot: &chroot::Chroot<'_>) -> ExitCode {
        match self {
            Inspect::Revoke { target } => revoke::run(locks, target, chroot).await,
            Inspect::Break(args) => break_lock::run(locks, args, chroot).await,
            Inspect::Ls { path, output } => ls::run(locks, path, output.format(), chroot).await,
            Inspect::Deadlocks { root, output } => {
                deadlocks::run(locks, root, output.format(), chroot).await
            }
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
}
