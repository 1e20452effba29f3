//! What `zklock doctor` makes of one server's facts: problems, each with its
//! fix, and the exit code of the whole run.

use super::server::ServerReport;
use super::Options;
use crate::exit;
use lock_zookeeper_client::ConfError;
use std::time::Duration;

/// How bad a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Severity {
    /// Worth knowing; changes nothing.
    Note,
    /// Something could not be checked: not known to be safe.
    Unchecked,
    /// A lock can be granted to another session while its holder's server
    /// still answers the holder.
    Unsafe,
}

impl Severity {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Severity::Note => "note",
            Severity::Unchecked => "unchecked",
            Severity::Unsafe => "UNSAFE",
        }
    }
}

/// One problem and what to do about it.
pub(crate) struct Finding {
    pub(crate) severity: Severity,
    pub(crate) message: String,
}

fn finding(severity: Severity, message: impl Into<String>) -> Finding {
    Finding {
        severity,
        message: message.into(),
    }
}

/// `10 s`, `16.5 s`: as lock-client's hazards print durations.
pub(crate) fn secs(d: Duration) -> String {
    let millis = d.as_millis();
    let text = format!("{}.{:03}", millis / 1000, millis % 1000);
    format!("{} s", text.trim_end_matches('0').trim_end_matches('.'))
}

/// The findings on one server.
pub(crate) fn of(report: &ServerReport, options: &Options<'_>) -> Vec<Finding> {
    let mut found = Vec::new();
    if let Err(why) = &report.addr {
        found.push(finding(Severity::Unchecked, format!("no address: {why}")));
        return found;
    }
    if let Err(why) = &report.reachable {
        found.push(finding(
            Severity::Unchecked,
            format!("unreachable ({why}): nothing could be checked"),
        ));
        return found;
    }
    if let Some(why) = &report.words_error {
        found.push(finding(
            Severity::Unchecked,
            format!(
                "no four-letter word is answered on this port ({why}): mode, version and \
                 settings unknown, the rules unchecked (four-letter words go over plain TCP: \
                 run the doctor against the servers' plain client port for them)"
            ),
        ));
    }
    if report.refused.contains(&"srvr") {
        found.push(finding(
            Severity::Note,
            "`srvr` is refused: mode and version unknown (add srvr to 4lw.commands.whitelist)",
        ));
    }
    if report.mode.as_deref() == Some("not serving") {
        found.push(finding(
            Severity::Unchecked,
            "not serving requests (no quorum, or starting)",
        ));
    }
    for hazard in &report.hazards {
        let mut message = hazard.to_string();
        let safe = hazard.safe_session_timeout();
        if safe < hazard.conf.max_session_timeout {
            // The smallest whole number of seconds that fixes it, for zklock.
            let secs_needed = safe.as_secs() + 1;
            message.push_str(&format!(" (zklock: --session-timeout {secs_needed})"));
        }
        found.push(finding(Severity::Unsafe, message));
    }
    match &report.conf {
        Ok(_) => {}
        Err(ConfError::Refused) => {
            let session = report
                .session
                .as_ref()
                .map_or(options.session_timeout, |s| s.negotiated);
            let refused = "`conf` is refused (not in 4lw.commands.whitelist)";
            let message = match (report.standalone(), report.settings().is_some()) {
                // The AdminServer's tickTime settled the two-tick rule.
                (true, true) => None,
                (true, false) => Some(format!(
                    "{refused}: tickTime is unknown, so the two-tick rule cannot be checked \
                     (a standalone server has no lag rule), and zklock does not guess; add \
                     conf to 4lw.commands.whitelist, or check zoo.cfg by hand: the session \
                     timeout ({}) must span two ticks",
                    secs(session)
                )),
                (false, admin) => Some(format!(
                    "{refused}: {}, so the lag rule cannot be checked, and zklock does not \
                     guess; add conf to 4lw.commands.whitelist, or check zoo.cfg by hand: the \
                     session timeout ({}) must exceed 1.5 × (syncLimit × tickTime + \
                     tickTime/2)",
                    if admin {
                        "the AdminServer's settings have no syncLimit"
                    } else {
                        "tickTime and syncLimit are unknown"
                    },
                    secs(session)
                )),
            };
            found.extend(message.map(|m| finding(Severity::Unchecked, m)));
        }
        // Said above.
        Err(ConfError::Unreachable(_)) if report.words_error.is_some() => {}
        Err(e) => found.push(finding(
            Severity::Unchecked,
            format!("settings unknown: {e}"),
        )),
    }
    if let Some(Err(why)) = &report.admin {
        found.push(finding(Severity::Note, format!("AdminServer: {why}")));
    }
    match &report.session {
        Err(why) => found.push(finding(
            Severity::Unchecked,
            format!("cannot open a session with the options given: {why}"),
        )),
        Ok(session) => {
            if session.negotiated != options.session_timeout {
                found.push(finding(
                    Severity::Note,
                    format!(
                        "the server grants a session timeout of {} for the {} asked \
                         (minSessionTimeout/maxSessionTimeout)",
                        secs(session.negotiated),
                        secs(options.session_timeout)
                    ),
                ));
            }
            if session.nodelay == Some(false) {
                found.push(finding(
                    Severity::Note,
                    "TCP_NODELAY is off on our connection: pipelined requests wait for \
                     earlier replies (Nagle's algorithm)",
                ));
            }
        }
    }
    found
}

/// [`exit::UNSAFE`] when any finding is unsafe; else [`exit::CONNECT`] when
/// no server answered; else [`exit::UNCHECKED`] when something could not be
/// checked; else 0.
pub(crate) fn exit_code(reports: &[ServerReport], findings: &[Vec<Finding>]) -> u8 {
    let worst = findings.iter().flatten().map(|f| f.severity).max();
    if worst == Some(Severity::Unsafe) {
        exit::UNSAFE
    } else if reports.iter().all(|r| r.reachable.is_err()) {
        exit::CONNECT
    } else if worst == Some(Severity::Unchecked) {
        exit::UNCHECKED
    } else {
        0
    }
}
