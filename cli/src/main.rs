//! `zklock`: flock(1) and `etcdctl lock`/`elect` for Apache ZooKeeper.
//!
//! ```text
//! zklock exec [-w SECS | -n] [-q | -v] [--read | --semaphore N] [--scheme native|curator|kazoo|go] [--owner ID] [--acl ACL] PATH -- CMD...
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
mod options;
mod plan;
mod progress;
mod raw;
mod render;
mod report;
mod revoke;
mod signals;
mod top;
mod usage;
mod views;

pub(crate) use connect::connect_to;
use lock_zookeeper_client::{LockClient, NodeAcl};
pub(crate) use options::{parse_secs, ConnArgs, Scheme};
use plan::{Plan, Session};
pub(crate) use report::{error_code, fail, fail_at, say};
use std::future::Future;
use std::process::ExitCode;
use std::time::Duration;

fn main() -> ExitCode {
    let plan = match plan::read(std::env::args_os()) {
        Ok(plan) => plan,
        Err(refusal) => return refusal.report(),
    };
    // The one match over what to do.
    match plan {
        Plan::Guard(args) => guard::main(args),
        Plan::Completions(shell) => print_completions(shell),
        Plan::Man => print_man_page(),
        Plan::Doctor(session, args) => block_on(doctor::run(&session.conn, &session.target, args)),
        Plan::Exec(session, args) => {
            let (acl, cmd) = (args.nodes.acl.clone(), args.cmd.clone());
            block_on(session.supervise(acl, &cmd, async |s, ready| {
                exec::run(&s.locks, args, ready, &mut s.signals).await
            }))
        }
        Plan::Elect(session, args) => {
            let (acl, cmd) = (args.nodes.acl.clone(), args.cmd.clone());
            block_on(session.supervise(acl, &cmd, async |s, ready| {
                exec::elect(&s.locks, args, ready, &mut s.signals).await
            }))
        }
        Plan::Leader(session, path, watch) => {
            block_on(session.look(async |s| {
                leader::run(&s.locks, path, watch, &mut s.signals, &s.chroot).await
            }))
        }
        // The others end on a signal as its default action would, but with the
        // session closed.
        Plan::Top(session, args) => block_on(session.look(async |s| {
            until_signal(&mut s.signals, top::run(&s.locks, args, &s.chroot)).await
        })),
        Plan::Revoke(session, target) => block_on(session.look(async |s| {
            until_signal(&mut s.signals, revoke::run(&s.locks, target, &s.chroot)).await
        })),
        Plan::Break(session, args) => block_on(session.look(async |s| {
            until_signal(&mut s.signals, break_lock::run(&s.locks, args, &s.chroot)).await
        })),
        Plan::Ls(session, path, format) => block_on(session.look(async |s| {
            until_signal(&mut s.signals, ls::run(&s.locks, path, format, &s.chroot)).await
        })),
        Plan::Deadlocks(session, root, format) => block_on(session.look(async |s| {
            let deadlocks = deadlocks::run(&s.locks, root, format, &s.chroot);
            until_signal(&mut s.signals, deadlocks).await
        })),
    }
}

/// Runs `work` on a runtime of its own (one thread: zklock waits more than it
/// computes).
fn block_on(work: impl Future<Output = ExitCode>) -> ExitCode {
    job::kill_group_on_panic();
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime.block_on(work),
        Err(e) => {
            say(format_args!("cannot start the runtime: {e}"));
            ExitCode::from(exit::FAILURE)
        }
    }
}

/// `work`, unless a signal that would end zklock comes first (its exit code).
async fn until_signal(
    signals: &mut signals::Signals,
    work: impl Future<Output = ExitCode>,
) -> ExitCode {
    tokio::select! {
        code = work => code,
        number = signals.next() => exec::signal_code(number),
    }
}

/// `zklock completions SHELL`: generated from the command line's own
/// definition, at run time (nothing to install beside the binary).
fn print_completions(shell: clap_complete::Shell) -> ExitCode {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut args::command(), "zklock", &mut script);
    print_out(Ok(script), "completion script")
}

/// Writes `text` (if it could be made) to stdout; a reader that stopped early
/// (`| head`) is no error.
fn print_out(text: std::io::Result<Vec<u8>>, what: &str) -> ExitCode {
    match text.and_then(|text| std::io::Write::write_all(&mut std::io::stdout(), &text)) {
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
    print_out(rendered.map(|()| page), "manual page")
}

/// A session of ours, open: what the subcommands run with.
struct Opened<'a> {
    locks: LockClient,
    signals: signals::Signals,
    chroot: chroot::Chroot<'a>,
}

impl Session {
    /// Connects, with the signals that would end zklock caught (caught before
    /// anything is started: from then on they are handled, the node deleted,
    /// CMD's group told; one while connecting gives up with its exit code). A
    /// failure is reported, naming the servers.
    async fn open(
        &self,
        acl: NodeAcl,
        signals: std::io::Result<signals::Signals>,
    ) -> Result<Opened<'_>, ExitCode> {
        let mut signals = signals.map_err(|e| {
            say(format_args!("cannot catch signals: {e}"));
            ExitCode::from(exit::FAILURE)
        })?;
        let locks = tokio::select! {
            connected = connect_to(&self.conn, &self.conn.zk, None, acl) => {
                connected.map_err(|e| fail(&e))?
            }
            number = signals.next() => return Err(exec::signal_code(number)),
        };
        let chroot = chroot::Chroot::new(&self.conn, self.target.chroot.clone());
        Ok(Opened {
            locks,
            signals,
            chroot,
        })
    }

    /// Runs `work` in a session that creates no node (so no --acl), closed
    /// before zklock exits.
    async fn look(self, work: impl AsyncFnOnce(&mut Opened<'_>) -> ExitCode) -> ExitCode {
        let signals = signals::Signals::catch(&signals::ENDING);
        let mut opened = match self.open(NodeAcl::Open, signals).await {
            Ok(opened) => opened,
            Err(code) => return code,
        };
        let code = work(&mut opened).await;
        close(&opened.locks).await;
        code
    }

    /// Runs `work` (`exec`, `elect`: CMD under a lock) in a session whose nodes
    /// get `acl`, with CMD's guard started beside the connect: its start-up is
    /// off the path from the grant to CMD.
    async fn supervise(
        self,
        acl: NodeAcl,
        cmd: &[std::ffi::OsString],
        work: impl AsyncFnOnce(&mut Opened<'_>, job::Ready) -> ExitCode,
    ) -> ExitCode {
        let signals = signals::Signals::catch(&signals::ENDING);
        let starting = match job::Ready::spawn_beside(cmd) {
            Ok(starting) => starting,
            Err(e) => return job::cannot_start(e),
        };
        let mut opened = match self.open(acl, signals).await {
            Ok(opened) => opened,
            Err(code) => return code,
        };
        let code = match starting.ready().await {
            Ok(ready) => work(&mut opened, ready).await,
            Err(e) => job::cannot_start(e),
        };
        close(&opened.locks).await;
        code
    }
}

/// Closes the session (its nodes deleted at once), waiting at most 5 s.
async fn close(locks: &LockClient) {
    let _ = tokio::time::timeout(Duration::from_secs(5), locks.close()).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use args::{Cli, Command};
    use clap::Parser;
    use proptest::prelude::*;
    use std::ffi::OsString;
    use std::os::unix::ffi::OsStringExt;

    /// Words the command line knows, so that arbitrary arguments often reach
    /// past clap into the plan's own checks.
    const WORDS: &str = "exec|elect|ls|top|leader|revoke|break|deadlocks|doctor|completions|\
        man|--|-n|-w|1|--read|--semaphore|0|2|--scheme|go|kazoo|curator|--owner|--lock-delay|\
        --once|--zk|h:1/c|h:0|/|/a|/a/|a|--json|--help|-V|--progress|-q|--node|--force|--watch|\
        --session-timeout|-1|";

    fn argument() -> impl Strategy<Value = OsString> {
        prop_oneof![
            prop::sample::select(WORDS.split('|').collect::<Vec<_>>()).prop_map(OsString::from),
            prop::collection::vec(any::<u8>(), 0..12).prop_map(OsString::from_vec),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Any argument bytes: the parse/plan step never panics, and a refusal
        /// exits with a code of the README's table (0 for --help/--version, 2
        /// for a usage error: nothing is refused any other way before connecting).
        #[test]
        fn any_arguments_are_planned_or_refused_with_a_usage_code(
            args in prop::collection::vec(argument(), 0..8)
        ) {
            let line = std::iter::once(OsString::from("zklock")).chain(args);
            if let Err(refusal) = plan::read(line) {
                let code = refusal.code();
                prop_assert!(code == 0 || code == exit::USAGE, "{refusal:?}: {code}");
            }
        }
    }

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
            "exec -n -w 1 /l -- true",
            "exec /l",
            "exec --read --semaphore 2 /l -- true",
            "exec -w soon /l -- true",
        ] {
            let e = Cli::try_parse_from(std::iter::once("zklock").chain(bad.split(' ')));
            assert_eq!(e.unwrap_err().exit_code(), i32::from(exit::USAGE), "{bad}");
        }
    }

    #[test]
    fn seconds() {
        assert_eq!(parse_secs("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_secs("0.25"), Ok(Duration::from_millis(250)));
        assert!(parse_secs("-1").is_err());
        assert!(parse_secs("x").is_err());
    }
}
