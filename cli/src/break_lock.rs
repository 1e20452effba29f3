//! `zklock break`: deletes a stuck holder's node (or a named participant's),
//! after printing who held it since when with which token.
//!
//! Refused unless `--force`: the node exists, so its owner's session is alive,
//! and nothing records whether that owner would let go if asked (`zklock
//! revoke`). The refusal prints the participant it would break (stdout) and
//! says what to do (stderr), exit 7.
//!
//! Output, one line on stdout (text), the participant and what became of it:
//!
//! ```text
//! broke /locks/job/NODE: held since 2026-11-28T12:00:00Z (5m03s), owner alice, session 0x1000..., token 4294967301
//! ```
//!
//! `--format json`: one object, `{"path", "node", "held", "owner" (or null),
//! "session" (hex string), "ctime" (ms since the epoch), "since" (RFC 3339 or
//! null), "age_ms" (or null), "token", "outcome"}`, where `outcome` is
//! `deleted`, `already-gone`, `gone-uncertain`, or `refused` (not forced).

use crate::chroot::Chroot;
use crate::exit;
use crate::format::Format;
use crate::json::Object;
use crate::render::{age_ms, age_text, now_ms, session_hex};
use crate::say;
use lock_zookeeper_client::{BreakError, BreakLock, BreakOutcome, Error, LockClient, Participant};
use std::process::ExitCode;

/// What `zklock break` was asked.
pub(crate) struct BreakArgs {
    pub(crate) path: String,
    pub(crate) node: Option<String>,
    pub(crate) force: bool,
    pub(crate) format: Format,
}

/// Who breaks, for the break's record: `user@host` (the user from `$USER` or
/// `$LOGNAME`, else the uid).
fn breaker() -> String {
    let user = std::env::var("USER")
        .or_else(|_| std::env::var("LOGNAME"))
        .unwrap_or_else(|_| format!("uid {}", rustix::process::getuid().as_raw()));
    let host = rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned();
    format!("{user}@{host}")
}

/// Runs `zklock break`.
pub(crate) async fn run(locks: &LockClient, args: BreakArgs, chroot: &Chroot<'_>) -> ExitCode {
    let what = match args.node.clone() {
        Some(node) => BreakLock::node(node),
        None => BreakLock::holder(),
    };
    let what = if args.force { what.force() } else { what };
    let what = what.by(breaker());
    let now = now_ms();
    match locks.break_lock(args.path.clone(), what).await {
        Ok(broken) => {
            let outcome = match broken.outcome {
                BreakOutcome::Deleted => "deleted",
                BreakOutcome::AlreadyGone => "already-gone",
                _ => "gone-uncertain",
            };
            print_line(&broken.participant, broken.held, outcome, args.format, now);
            if broken.outcome == BreakOutcome::AlreadyGone {
                say(format_args!(
                    "{} was gone before the break reached it: nothing broken",
                    broken.participant.node
                ));
            } else if broken.outcome != BreakOutcome::Deleted {
                say(format_args!(
                    "{} is gone (our delete's answer was lost: it or its owner's end removed it)",
                    broken.participant.node
                ));
            }
            ExitCode::SUCCESS
        }
        Err(Error::Break(BreakError::NotForced { target, held })) => {
            print_line(&target, held, "refused", args.format, now);
            let node = args.node.as_deref().unwrap_or(&args.path);
            say(format_args!(
                "not broken: {} {} {} and its session is alive; ask it to let go with \
                 `zklock revoke {node}` first, or break it with --force",
                target.node,
                if held { "holds" } else { "waits for" },
                args.path,
            ));
            ExitCode::from(exit::NOT_FORCED)
        }
        Err(Error::Break(e @ BreakError::NobodyHolds { .. })) => {
            // A path that does not exist is said to.
            let hint = chroot.nothing_at(&args.path).await;
            let hint = hint.map(|h| format!(": {h}")).unwrap_or_default();
            say(format_args!("nothing to break: {e}{hint}"));
            ExitCode::from(exit::NOBODY_HOLDS)
        }
        Err(Error::Break(e)) => {
            // Several holders and no --node, or a --node that takes no part:
            // a different command line is the remedy.
            say(format_args!(
                "{e}; pick one with --node NAME (see `zklock ls {}`)",
                args.path
            ));
            ExitCode::from(exit::USAGE)
        }
        Err(e) => crate::fail_at(&args.path, &e),
    }
}

/// The participant's one line on stdout.
fn print_line(p: &Participant, held: bool, outcome: &str, format: Format, now: i64) {
    let path = format!("{}/{}", p.dir, p.node);
    let since = rfc3339(p.ctime);
    let age = age_ms(p.ctime, now);
    if format == Format::Json {
        let mut out = String::new();
        let mut o = Object::new(&mut out);
        o.str("path", &p.dir)
            .str("node", &path)
            .bool("held", held)
            .opt_str("owner", p.owner.as_deref())
            .str("session", &session_hex(p.session))
            .int("ctime", p.ctime)
            .opt_str("since", since.as_deref())
            .opt_int("age_ms", age)
            .int("token", p.token.0)
            .str("outcome", outcome)
            .end();
        println!("{out}");
        return;
    }
    let verb = match outcome {
        "deleted" => "broke",
        "refused" => "would break",
        _ => "gone",
    };
    println!(
        "{verb} {path}: {} since {} ({}), owner {}, session {}, token {}",
        if held { "held" } else { "waiting" },
        since.as_deref().unwrap_or("an unknown time"),
        age_text(age),
        p.owner.as_deref().unwrap_or("-"),
        session_hex(p.session),
        p.token,
    );
}

/// `ctime` (ms since the epoch) as RFC 3339 UTC, to the second (`None` when
/// the server gave no time).
fn rfc3339(ctime: i64) -> Option<String> {
    if ctime <= 0 {
        return None;
    }
    let at = time::OffsetDateTime::from_unix_timestamp(ctime / 1000).ok()?;
    at.format(&time::format_description::well_known::Rfc3339)
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creation_times_read_as_utc() {
        assert_eq!(
            rfc3339(1_764_331_200_123).as_deref(),
            Some("2025-11-28T12:00:00Z")
        );
        assert_eq!(rfc3339(0), None);
    }
}
