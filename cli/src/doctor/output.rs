//! `zklock doctor`'s report: a block of text per server and a verdict, or one
//! JSON object.

use super::findings::{secs, Finding, Severity};
use super::server::{ServerReport, WORDS};
use super::Options;
use crate::exit;
use crate::json::Object;
use lock_zookeeper_client::{HazardKind, ServerConf};
use std::fmt::Write;
use std::time::Duration;

/// The verdict's word for an exit code.
fn verdict(code: u8) -> &'static str {
    match code {
        0 => "safe",
        exit::UNSAFE => "unsafe",
        exit::CONNECT => "unreachable",
        exit::USAGE => "no-chroot",
        _ => "unchecked",
    }
}

/// `tickTime 2 s, syncLimit 5 (...)`.
fn settings_line(conf: &ServerConf, source: &str) -> String {
    let sync = match (conf.sync_limit, conf.follower_lag()) {
        (Some(ticks), Some(lag)) => format!(
            "syncLimit {ticks} (a server cut off from the ensemble answers for up to {})",
            secs(lag)
        ),
        _ => "syncLimit unknown".to_owned(),
    };
    format!(
        "tickTime {}, {sync}, minSessionTimeout {}, maxSessionTimeout {} (from {source})",
        secs(conf.tick_time),
        secs(conf.min_session_timeout),
        secs(conf.max_session_timeout)
    )
}

/// The session timeout the rules were judged for.
fn judged_timeout(report: &ServerReport, options: &Options<'_>) -> Option<Duration> {
    match &report.session {
        Ok(session) => Some(session.negotiated),
        Err(_) => Some(report.settings()?.negotiate(options.session_timeout)),
    }
}

/// The lag rule's line: `ok: ...`, `UNSAFE`, `unchecked ...`, `none (standalone)`.
fn lag_rule(report: &ServerReport, options: &Options<'_>) -> String {
    let outlives = |kind| report.hazards.iter().any(|h| h.kind == kind);
    let conf = report.conf.as_ref().ok();
    match (conf, conf.and_then(ServerConf::lag_bound)) {
        (Some(_), None) => "none (standalone: no leader to fall behind)".to_owned(),
        (None, _) if report.standalone() => {
            "none (standalone: no leader to fall behind)".to_owned()
        }
        (Some(_), Some(bound)) => {
            let timeout = judged_timeout(report, options).unwrap_or(options.session_timeout);
            if outlives(HazardKind::FollowerOutlivesSession) {
                format!(
                    "UNSAFE: syncLimit × tickTime ≥ the session timeout {}",
                    secs(timeout)
                )
            } else if outlives(HazardKind::ThinFollowerMargin) {
                format!(
                    "UNSAFE: the session timeout {} must exceed 1.5 × (syncLimit × tickTime + \
                     tickTime/2) = {}",
                    secs(timeout),
                    secs(bound)
                )
            } else {
                format!(
                    "ok: the session timeout {} > 1.5 × (syncLimit × tickTime + tickTime/2) = {}",
                    secs(timeout),
                    secs(bound)
                )
            }
        }
        (None, _) => "unchecked (`conf` unavailable)".to_owned(),
    }
}

/// A finished run: what every server showed, the findings, the exit code.
pub(crate) struct Run<'a> {
    pub(crate) options: &'a Options<'a>,
    pub(crate) reports: &'a [ServerReport],
    pub(crate) findings: &'a [Vec<Finding>],
    pub(crate) code: u8,
    /// The connect string's chroot, when the servers say it does not exist
    /// (then `code` is [`exit::USAGE`]).
    pub(crate) missing_chroot: Option<&'a str>,
}

/// The text report.
pub(crate) fn text(run: &Run<'_>) -> String {
    let Run {
        options,
        reports,
        findings,
        code,
        missing_chroot,
    } = *run;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "zklock doctor: {} server(s) in {}, session timeout asked {}",
        reports.len(),
        options.conn.zk,
        secs(options.session_timeout)
    );
    for (report, found) in reports.iter().zip(findings) {
        let _ = writeln!(out);
        let _ = writeln!(out, "{}", report.entry);
        let mut line = |name: &str, value: &str| {
            let _ = writeln!(out, "  {name:<12} {value}");
        };
        match (&report.addr, &report.reachable) {
            (Ok(addr), Ok(())) => {
                line("reachable", &format!("yes ({addr})"));
                let unknown = || "unknown".to_owned();
                line("mode", &report.mode.clone().unwrap_or_else(unknown));
                line("version", &report.version.clone().unwrap_or_else(unknown));
                line("4lw allowed", &words(&report.allowed));
                line("4lw refused", &words(&report.refused));
                let settings = match (&report.conf, report.settings()) {
                    (Ok(conf), _) => settings_line(conf, "conf"),
                    (Err(_), Some(conf)) => settings_line(conf, "the AdminServer"),
                    (Err(e), None) => format!("unknown: {e}"),
                };
                line("settings", &settings);
                let session = match &report.session {
                    Ok(s) => format!(
                        "granted {} (asked {})",
                        secs(s.negotiated),
                        secs(options.session_timeout)
                    ),
                    Err(e) => format!("none: {e}"),
                };
                line("session", &session);
                let nodelay = match &report.session {
                    Ok(s) => match s.nodelay {
                        Some(true) => "on (our connection)",
                        Some(false) => "off (our connection)",
                        None => "not checkable here",
                    },
                    Err(_) => "no connection",
                };
                line("TCP_NODELAY", nodelay);
                line("lag rule", &lag_rule(report, options));
            }
            (Ok(addr), Err(e)) => line("reachable", &format!("no ({addr}: {e})")),
            (Err(e), _) => line("reachable", &format!("no ({e})")),
        }
        for f in found {
            let _ = writeln!(out, "  {}: {}", f.severity.label(), f.message);
        }
    }
    let count = |severity| {
        findings
            .iter()
            .filter(|found| found.iter().any(|f| f.severity == severity))
            .count()
    };
    let summary = match code {
        0 => "every check passed".to_owned(),
        exit::UNSAFE => format!(
            "{} of {} server(s) unsafe for this session timeout",
            count(Severity::Unsafe),
            reports.len()
        ),
        exit::CONNECT => "no server answered".to_owned(),
        exit::USAGE => crate::explain::missing_chroot(missing_chroot.unwrap_or("?")),
        _ => format!(
            "nothing unsafe found, but {} of {} server(s) could not be fully checked",
            count(Severity::Unchecked),
            reports.len()
        ),
    };
    let _ = writeln!(out);
    let _ = writeln!(out, "verdict: {} (exit {code}): {summary}", verdict(code));
    out
}

fn words(list: &[&str]) -> String {
    if list.is_empty() {
        "none".to_owned()
    } else {
        list.join(" ")
    }
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

fn conf_json(conf: &ServerConf) -> String {
    let mut out = String::new();
    let mut o = Object::new(&mut out);
    o.int("tick_time_ms", millis(conf.tick_time))
        .opt_int("sync_limit", conf.sync_limit.map(i64::from))
        .int("min_session_timeout_ms", millis(conf.min_session_timeout))
        .int("max_session_timeout_ms", millis(conf.max_session_timeout))
        .end();
    out
}

/// The JSON report: {"connect", "session_timeout_ms", "verdict", "exit_code",
/// "probed_words", "servers": [...]}.
pub(crate) fn json(run: &Run<'_>) -> String {
    let mut out = String::new();
    let mut top = Object::new(&mut out);
    top.str("connect", &run.options.conn.zk)
        .int("session_timeout_ms", millis(run.options.session_timeout))
        .str("verdict", verdict(run.code))
        .int("exit_code", i64::from(run.code))
        .strs("probed_words", &WORDS);
    let servers: Vec<_> = run.reports.iter().zip(run.findings).collect();
    top.array("servers", &servers, |out, (report, found)| {
        let mut o = Object::new(out);
        o.str("server", &report.entry)
            .opt_str(
                "address",
                report.addr.as_ref().ok().map(|a| a.to_string()).as_deref(),
            )
            .bool("reachable", report.reachable.is_ok())
            .opt_str("mode", report.mode.as_deref())
            .opt_str("version", report.version.as_deref())
            .strs("allowed_words", &report.allowed)
            .strs("refused_words", &report.refused);
        match &report.conf {
            Ok(conf) => o.raw("conf", &conf_json(conf)).raw("conf_error", "null"),
            Err(e) => o.raw("conf", "null").str("conf_error", &e.to_string()),
        };
        match &report.admin {
            Some(Ok(conf)) => o.raw("admin", &conf_json(conf)),
            _ => o.raw("admin", "null"),
        };
        match &report.session {
            Ok(s) => {
                o.int("negotiated_session_timeout_ms", millis(s.negotiated));
                match s.nodelay {
                    Some(on) => o.bool("tcp_nodelay", on),
                    None => o.raw("tcp_nodelay", "null"),
                };
            }
            Err(_) => {
                o.raw("negotiated_session_timeout_ms", "null")
                    .raw("tcp_nodelay", "null");
            }
        }
        let lag_bound = report.conf.as_ref().ok().and_then(ServerConf::lag_bound);
        o.opt_int("lag_bound_ms", lag_bound.map(millis));
        o.array("hazards", &report.hazards, |out, hazard| {
            let mut h = Object::new(out);
            let kind = match hazard.kind {
                HazardKind::FollowerOutlivesSession => "follower_outlives_session",
                HazardKind::ThinFollowerMargin => "thin_follower_margin",
                HazardKind::SessionUnderTwoTicks => "session_under_two_ticks",
                HazardKind::SessionLongerThanGranted => "session_longer_than_granted",
                _ => "other",
            };
            h.str("kind", kind)
                .int("session_timeout_ms", millis(hazard.session_timeout))
                .int(
                    "safe_session_timeout_ms",
                    millis(hazard.safe_session_timeout()),
                )
                .str("message", &hazard.to_string());
            h.end();
        });
        o.array("findings", found, |out, f| {
            let mut item = Object::new(out);
            item.str("severity", &f.severity.label().to_lowercase())
                .str("message", &f.message);
            item.end();
        });
        o.end();
    });
    top.end();
    out
}
