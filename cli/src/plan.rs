//! The command line read once (`args_os`: clap parses OS strings, so no
//! argument can panic the reading) into one validated [`Plan`]: everything that
//! can be refused is refused here, before connecting (exit 2, one line), so a
//! typo is never "cannot connect" (69, which scripts retry).

use crate::args::{Cli, Command};
use crate::break_lock::BreakArgs;
use crate::format::Format;
use crate::usage::{self, ConnectString};
use crate::{doctor, exec, exit, explain, guard, top, ConnArgs};
use std::ffi::{OsStr, OsString};

/// How to reach ZooKeeper, checked: the options and the parsed connect string.
pub(crate) struct Session {
    pub(crate) conn: ConnArgs,
    pub(crate) target: ConnectString,
}

/// What zklock will do, each variant with what it needs, already validated.
pub(crate) enum Plan {
    /// `__guard`: the process CMD runs under.
    Guard(guard::GuardArgs),
    Completions(clap_complete::Shell),
    Man,
    /// `doctor`'s TLS files are not checked here: its report says, per server,
    /// what they did.
    Doctor(Session, doctor::DoctorArgs),
    Exec(Session, exec::ExecArgs),
    Elect(Session, exec::ElectArgs),
    Leader(Session, String, bool),
    Top(Session, top::TopArgs),
    Revoke(Session, String),
    Break(Session, BreakArgs),
    Ls(Session, String, Format),
    Deadlocks(Session, String, Format),
}

/// A command line refused: what to print and the exit code.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// clap's own report (help and version requests too, exit 0), and a hint.
    Clap(clap::Error, Option<&'static str>),
    /// One line, exit 2.
    Usage(String),
}

impl Refusal {
    /// The exit code (from the README's table: 0 for --help, else 2).
    pub(crate) fn code(&self) -> u8 {
        match self {
            Refusal::Clap(e, _) => u8::try_from(e.exit_code()).unwrap_or(exit::USAGE),
            Refusal::Usage(_) => exit::USAGE,
        }
    }

    /// Prints the refusal and returns its exit code.
    pub(crate) fn report(self) -> std::process::ExitCode {
        let code = self.code();
        match self {
            Refusal::Clap(e, hint) => {
                let _ = e.print();
                if let Some(hint) = hint {
                    eprintln!("hint: {hint}");
                }
            }
            Refusal::Usage(line) => crate::say(line),
        }
        std::process::ExitCode::from(code)
    }
}

/// Reads `args` (the program name first) into a plan, or refuses them.
pub(crate) fn read(args: impl IntoIterator<Item = OsString>) -> Result<Plan, Refusal> {
    let args: Vec<OsString> = args.into_iter().collect();
    if let Some(guard) = guard::GuardArgs::read(&args) {
        return Ok(Plan::Guard(guard));
    }
    let cli = crate::args::command()
        .try_get_matches_from(&args)
        .and_then(|matches| <Cli as clap::FromArgMatches>::from_arg_matches(&matches))
        .map_err(|e| clap_refusal(e, &args))?;
    let conn = cli.conn;
    // Each arm checks its own arguments: the connect string first, then the path.
    Ok(match cli.command {
        Command::Completions { shell } => Plan::Completions(shell),
        Command::Man => Plan::Man,
        Command::Doctor(args) => {
            let target = usage::connect_string(&conn.zk).map_err(Refusal::Usage)?;
            Plan::Doctor(Session { conn, target }, args)
        }
        Command::Exec(args) => Plan::Exec(session(conn)?, checked(args.usage_error(), args)?),
        Command::Elect(args) => Plan::Elect(session(conn)?, checked(args.usage_error(), args)?),
        Command::Leader { path, watch } => Plan::Leader(session(conn)?, lock_path(path)?, watch),
        // `top` lists the lock directories under ROOT: `/` is a root like any
        // other (it is only no lock directory itself).
        Command::Top(args) => {
            let session = session(conn)?;
            let refused = (args.root != "/").then(|| usage::lock_path(&args.root).err());
            Plan::Top(session, checked(refused.flatten(), args)?)
        }
        Command::Revoke { target } => Plan::Revoke(session(conn)?, lock_path(target)?),
        Command::Break {
            path,
            node,
            force,
            output,
        } => Plan::Break(
            session(conn)?,
            BreakArgs {
                path: lock_path(path)?,
                node,
                force,
                format: output.format(),
            },
        ),
        Command::Ls { path, output } => Plan::Ls(session(conn)?, lock_path(path)?, output.format()),
        Command::Deadlocks { root, output } => {
            Plan::Deadlocks(session(conn)?, lock_path(root)?, output.format())
        }
    })
}

/// `value`, unless `problem` says what is wrong with it.
fn checked<T>(problem: Option<String>, value: T) -> Result<T, Refusal> {
    problem.map_or(Ok(value), |problem| Err(Refusal::Usage(problem)))
}

/// `path`, if the lock client will accept it as a lock directory.
fn lock_path(path: String) -> Result<String, Refusal> {
    usage::lock_path(&path).map_err(Refusal::Usage)?;
    Ok(path)
}

/// The connect string and the TLS files, checked before connecting.
fn session(conn: ConnArgs) -> Result<Session, Refusal> {
    let target = usage::connect_string(&conn.zk).map_err(Refusal::Usage)?;
    if let Err(e) = conn.tls() {
        return Err(Refusal::Usage(explain::error(&e)));
    }
    Ok(Session { conn, target })
}

/// clap's refusal of `args`, made one line where clap's would name no argument
/// (text that is not UTF-8), with a hint where the mistake is a common one: CMD
/// without `--` before it (`zklock exec /p echo hi`), which clap calls an
/// unexpected argument.
fn clap_refusal(e: clap::Error, args: &[OsString]) -> Refusal {
    use clap::error::ErrorKind;
    let is = |a: &OsStr, word: &str| a == OsStr::new(word);
    // Options and paths are text; only CMD's arguments (after `--`) may be any bytes.
    let before_cmd = || args.iter().skip(1).take_while(|a| !is(a, "--"));
    if e.kind() == ErrorKind::InvalidUtf8 {
        if let Some(bad) = before_cmd().find(|a| a.to_str().is_none()) {
            return Refusal::Usage(format!(
                "the argument {bad:?} is not valid UTF-8 (paths, options and the \
                 connect string are text; only CMD's arguments may be any bytes)"
            ));
        }
    }
    let with_cmd = before_cmd().any(|a| is(a, "exec") || is(a, "elect"));
    let has_dashes = args.iter().any(|a| is(a, "--"));
    let hint = (e.kind() == ErrorKind::UnknownArgument && with_cmd && !has_dashes).then(|| {
        if args.iter().any(|a| is(a, "elect")) {
            "add `--` before CMD: zklock elect PATH ID -- CMD [ARGS...]"
        } else {
            "add `--` before CMD: zklock exec PATH -- CMD [ARGS...]"
        }
    });
    Refusal::Clap(e, hint)
}
