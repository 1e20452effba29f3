//! `zklock doctor`: checks every server of the connect string for what makes
//! locks unsafe (or unknowable), says how to fix it, and exits non-zero when
//! something is unsafe ([`crate::exit::UNSAFE`]) or could not be checked
//! ([`crate::exit::UNCHECKED`]).

mod admin;
mod findings;
mod output;
mod server;

use crate::usage::ConnectString;
use crate::{exit, ConnArgs};
use clap::Args;
use std::process::ExitCode;
use std::time::Duration;

/// `zklock doctor`'s own options (the connection's are global).
#[derive(Args, Debug)]
pub(crate) struct DoctorArgs {
    #[command(flatten)]
    output: crate::format::TextOrJson,
    /// Also ask each server's AdminServer (HTTP on this port, ZooKeeper's
    /// `admin.serverPort`, 8080 by default) for its settings: tickTime and the
    /// session timeout bounds when `conf` is refused (it has no syncLimit).
    #[arg(long, value_name = "PORT")]
    admin_port: Option<u16>,
    /// How long each server gets to connect, and again to answer, per
    /// four-letter word.
    #[arg(long, value_name = "SECS", default_value = "3", value_parser = crate::parse_secs)]
    probe_timeout: Duration,
}

/// What every server check needs.
pub(crate) struct Options<'a> {
    pub(crate) conn: &'a ConnArgs,
    /// The session timeout asked for (`--session-timeout`, or the bindings'
    /// default).
    pub(crate) session_timeout: Duration,
    pub(crate) admin_port: Option<u16>,
    pub(crate) probe_timeout: Duration,
    pub(crate) connect_timeout: Duration,
}

/// Runs the checks and prints the report; the exit code says the verdict.
pub(crate) async fn run(conn: &ConnArgs, target: &ConnectString, args: DoctorArgs) -> ExitCode {
    let options = Options {
        conn,
        session_timeout: conn
            .session_timeout
            .unwrap_or(lock_core::DEFAULT_SESSION_TIMEOUT),
        admin_port: args.admin_port,
        probe_timeout: args.probe_timeout,
        connect_timeout: (args.probe_timeout * 3).max(Duration::from_secs(5)),
    };
    let mut reports = Vec::new();
    for server in &target.servers {
        reports.push(server::check(&options, server).await);
    }
    let findings: Vec<_> = reports.iter().map(|r| findings::of(r, &options)).collect();
    let mut code = findings::exit_code(&reports, &findings);
    // A chroot the servers do not have: nothing could lock under it, whatever
    // their settings (exit 2, as every subcommand; the report is still shown).
    // Looked up only when some server took a session: else there is no one to
    // ask, and the verdict says so already.
    let mut missing_chroot = None;
    if let Some(chroot) = target.chroot.as_deref() {
        if reports.iter().any(|r| r.session.is_ok())
            && crate::chroot::Chroot::new(conn, Some(chroot.to_owned()))
                .report_missing()
                .await
                .is_some()
        {
            code = exit::USAGE;
            missing_chroot = Some(chroot);
        }
    }
    let run = output::Run {
        options: &options,
        reports: &reports,
        findings: &findings,
        code,
        missing_chroot,
    };
    if args.output.format() == crate::format::Format::Json {
        println!("{}", output::json(&run));
    } else {
        print!("{}", output::text(&run));
    }
    ExitCode::from(code)
}
