//! The text of a case, and BENCHMARKS.md's fleet section.

use crate::case::CaseResult;
use crate::check::Spread;
use lock_testkit::measure::thousands;
use std::fmt::Write as _;
use std::time::Duration;

fn ms(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1000.0;
    if ms >= 100.0 {
        format!("{ms:.0}")
    } else if ms >= 10.0 {
        format!("{ms:.1}")
    } else {
        format!("{ms:.2}")
    }
}

/// `p50 / p99 / max` in ms.
fn spread(s: &Spread) -> String {
    if s.count == 0 {
        return "-".into();
    }
    format!("{} / {} / {}", ms(s.p50), ms(s.p99), ms(s.max))
}

/// MiB, whole, or `?` if not measured.
fn mib(value: Option<f64>) -> String {
    value.map_or("?".into(), |v| format!("{v:.0}"))
}

/// A case as lines of `key: value`, for the terminal.
pub fn case_text(r: &CaseResult) -> String {
    let mut t = String::new();
    let c = &r.config;
    let _ = writeln!(
        t,
        "== {} ({} workers, window {:.0} s, load {} -> {})",
        c.label(),
        c.workers,
        r.window.as_secs_f64(),
        r.load.0,
        r.load.1
    );
    let _ = writeln!(
        t,
        "sessions connected: {} of {} in {:.1} s",
        r.connected,
        c.sessions,
        r.connect_time.as_secs_f64()
    );
    let _ = writeln!(
        t,
        "packets/s received: leader {:.0}, follower {:.0} (mean), per session {:.3}",
        r.leader_rps, r.follower_rps, r.per_session_rps
    );
    let _ = writeln!(
        t,
        "leader pipeline requests/s {:.0}, writes proposed/s {:.0}",
        r.leader_pipeline_rps, r.proposals_per_s
    );
    let _ = writeln!(
        t,
        "grants/s: {:.1} ({} in the window)",
        r.grants_per_s, r.figures.grants
    );
    for (name, latency) in [
        ("grant latency cold", &r.figures.cold_grant),
        ("grant latency hot ", &r.figures.hot_grant),
        ("handoff latency   ", &r.figures.handoff),
    ] {
        let count = latency.count;
        let _ = writeln!(t, "{name} p50/p99/max ms: {} (n={count})", spread(latency));
    }
    let _ = writeln!(
        t,
        "client per session: RSS {:.1} KiB, CPU {:.1} us/s",
        r.client_rss_kib_per_session, r.client_cpu_us_per_session_s
    );
    for (i, m) in r.members.iter().enumerate() {
        let _ = writeln!(
            t,
            "member {}: heap used {} MiB, RSS {} MiB, max outstanding {}, max connections {}, mntr unanswered {}, expired {}",
            i + 1,
            mib(m.heap_used_mb),
            mib(m.rss_mb),
            m.max_outstanding,
            m.max_connections,
            m.unanswered,
            m.expired
        );
    }
    for (i, role, took) in &r.restarts {
        let _ = writeln!(
            t,
            "restart: member {} ({role}) serving again after {:.1} s",
            i + 1,
            took.as_secs_f64()
        );
    }
    let _ = writeln!(
        t,
        "expired sessions (fleet sessions): clients {}, servers {} (expiries in all {})",
        r.client_expired,
        r.server_expired_fleet,
        r.server_expired()
    );
    let _ = writeln!(t, "overlaps: {}", r.overlaps.len());
    let _ = writeln!(t, "faults: {:?}", r.faults);
    if let Some(f) = &r.first_fault {
        let _ = writeln!(
            t,
            "first fault: session {} {} {}",
            f.session, f.kind, f.detail
        );
    }
    let problems = r.problems();
    let _ = writeln!(
        t,
        "verdict: {}",
        if problems.is_empty() {
            "ok".to_owned()
        } else {
            problems.join("; ")
        }
    );
    t
}

/// One row of the fleet table.
fn row(r: &CaseResult) -> String {
    let c = &r.config;
    let restart = if c.rolling_restart {
        "rolling restart"
    } else {
        "-"
    };
    let faults = if r.faults.is_empty() {
        "none".to_owned()
    } else {
        r.faults
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let heaps: Vec<String> = r.members.iter().map(|m| mib(m.heap_used_mb)).collect();
    let library = match c.workload.mode {
        crate::Mode::Fleet => c.workload.library.clone(),
        mode => format!("{} ({}, no locks)", c.workload.library, mode.key()),
    };
    format!(
        "| {library} | {} | {restart} | {:.0} / {:.0} | {:.0} ({:.0}) | {:.3} | {:.1} | {} | {} | {} | {:.1} / {:.1} | {} | {} / {} ({}) | {} | {faults} | {} |",
        thousands(c.sessions),
        r.leader_rps,
        r.follower_rps,
        r.leader_pipeline_rps,
        r.proposals_per_s,
        r.per_session_rps,
        r.grants_per_s,
        spread(&r.figures.cold_grant),
        spread(&r.figures.hot_grant),
        spread(&r.figures.handoff),
        r.client_rss_kib_per_session,
        r.client_cpu_us_per_session_s,
        heaps.join(" / "),
        r.client_expired,
        r.server_expired_fleet,
        r.server_expired_unowned,
        r.overlaps.len(),
        r.load.1,
    )
}

/// The fleet table (markdown).
pub fn table(results: &[CaseResult]) -> String {
    let mut t = String::from(
        "| library | sessions | servers | packets/s from clients, leader / follower | leader pipeline req/s (writes/s) | packets/s per session | grants/s | grant ms, cold p50 / p99 / max | grant ms, hot | handoff ms p50 / p99 / max | client KiB / CPU µs/s per session | heap used MiB (members 1/2/3) | expired fleet sessions: client / server (server expiries of no client's session) | overlaps | faults | load (1 min, end) |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in results {
        t.push_str(&row(r));
        t.push('\n');
    }
    t
}
