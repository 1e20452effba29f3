//! `zklock doctor` against real ZooKeeper: an ensemble with ZooKeeper's sample
//! timing (tickTime 2000, syncLimit 5, session bounds 4-40 s), unsafe for
//! zklock's default 10 s session and safe for the 17 s the report proposes; a
//! server whose whitelist refuses `conf` (said, not guessed); an unreachable
//! server; a connect string mixing a good server and a dead one. (A malformed
//! connect string: tests/usage.rs.)

mod common;

use common::{closed_port, code, run, stderr, stdout, zklock, CONNECT, UNCHECKED, UNSAFE};
use lock_testkit::ZkEnsemble;
use std::process::Output;
use std::time::Duration;

fn doctor(zk: &str, args: &[&str]) -> (i32, String) {
    let out: Output = run(zklock(zk).arg("doctor").args(args));
    let stdout = stdout(&out);
    let stderr = stderr(&out);
    assert!(stderr.is_empty(), "stderr: {stderr}\nstdout: {stdout}");
    (code(&out), stdout)
}

fn assert_has(text: &str, line: &str) {
    assert!(text.contains(line), "no {line:?} in:\n{text}");
}

fn assert_times(text: &str, line: &str, times: usize) {
    let found = text.matches(line).count();
    assert_eq!(
        found, times,
        "{line:?} {found} times, not {times}, in:\n{text}"
    );
}

#[test]
fn the_sample_timing_is_unsafe_for_ten_second_sessions_and_safe_for_the_fix() {
    // ZooKeeper's sample zoo.cfg: syncLimit 5, 10 s of lag; its default
    // session bounds (2 and 20 ticks).
    let ensemble = ZkEnsemble::builder()
        .tick_time(Duration::from_secs(2))
        .sync_limit(5)
        .min_session_timeout(Duration::from_secs(4))
        .max_session_timeout(Duration::from_secs(40))
        .config("preAllocSize", "1024")
        .start_ensemble(3)
        .expect("starting a 3-node ensemble");
    let zk = ensemble.connect_string();

    // zklock's default session timeout, 10 s: syncLimit × tickTime = 10 s.
    let (status, report) = doctor(&zk, &[]);
    println!("{report}");
    assert_eq!(status, UNSAFE, "{report}");
    for member in ensemble.members() {
        assert_has(&report, &format!("\n{}\n", member.connect_string()));
    }
    assert_times(&report, "  mode         leader", 1);
    assert_times(&report, "  mode         follower", 2);
    assert_has(&report, "  version      3.8");
    assert_has(
        &report,
        "  settings     tickTime 2 s, syncLimit 5 (a server cut off from the ensemble \
         answers for up to 10 s), minSessionTimeout 4 s, maxSessionTimeout 40 s (from conf)",
    );
    assert_has(&report, "  session      granted 10 s (asked 10 s)");
    assert_has(&report, "  TCP_NODELAY  on (our connection)");
    assert_times(
        &report,
        "  lag rule     UNSAFE: syncLimit × tickTime ≥ the session timeout 10 s",
        3,
    );
    assert_has(
        &report,
        "lower syncLimit or tickTime so that syncLimit × tickTime < 5.666 s (syncLimit ≤ 2 \
         at this tickTime), or raise the session timeout above 16.5 s (zklock: \
         --session-timeout 17)",
    );
    assert_has(
        &report,
        "verdict: unsafe (exit 5): 3 of 3 server(s) unsafe for this session timeout",
    );

    let (status, json) = doctor(&zk, &["--json"]);
    assert_eq!(status, UNSAFE, "{json}");
    assert!(
        json.starts_with('{') && json.trim_end().ends_with('}'),
        "{json}"
    );
    assert_has(&json, r#""verdict":"unsafe","exit_code":5"#);
    assert_has(&json, r#""conf":{"tick_time_ms":2000,"sync_limit":5,"#);
    assert_has(
        &json,
        r#""negotiated_session_timeout_ms":10000,"tcp_nodelay":true"#,
    );
    assert_has(&json, r#""kind":"follower_outlives_session""#);
    assert_has(&json, r#""safe_session_timeout_ms":16500"#);

    // The fix the report proposes.
    // The lag rule met on every member, nothing unsafe or unchecked.
    let (status, report) = doctor(&zk, &["--session-timeout", "17"]);
    assert_eq!(status, 0, "{report}");
    let rule = "  lag rule     ok: the session timeout 17 s > 1.5 × (syncLimit × tickTime + \
                tickTime/2) = 16.5 s";
    assert_times(&report, rule, 3);
    assert!(
        !report.contains("UNSAFE") && !report.contains("unchecked"),
        "{report}"
    );
    assert_has(&report, "verdict: safe (exit 0): every check passed");
    let (status, json) = doctor(&zk, &["--json", "--session-timeout", "17"]);
    assert_eq!(status, 0, "{json}");
    assert_has(&json, r#""verdict":"safe","exit_code":0"#);
    assert_has(&json, r#""lag_bound_ms":16500,"hazards":[],"findings":[]"#);

    // A member that cannot be reached: nothing unsafe, but not all checked.
    let partly = format!(
        "{},127.0.0.1:{}",
        ensemble.member(0).unwrap().connect_string(),
        closed_port()
    );
    let (status, report) = doctor(&partly, &["--session-timeout", "17"]);
    assert_eq!(status, UNCHECKED, "{report}");
    assert_has(&report, "unchecked: unreachable (");
    assert_has(
        &report,
        "verdict: unchecked (exit 6): nothing unsafe found, but 1 of 2 server(s) could not \
         be fully checked",
    );
}

#[test]
fn a_server_that_refuses_conf_is_reported_unchecked_not_guessed() {
    // ZooKeeper 3.8's default whitelist, on a lone quorum peer (an ensemble
    // member's settings, one JVM).
    let ensemble = ZkEnsemble::builder()
        .config("4lw.commands.whitelist", "srvr")
        .config("preAllocSize", "1024")
        .start_ensemble(1)
        .expect("starting ZooKeeper");
    let server = ensemble.member(0).expect("the member");
    // By name: `localhost` may resolve to ::1 first, where nothing listens.
    let by_name = format!("localhost:{}", server.port());
    let (status, report) = doctor(&by_name, &[]);
    println!("{report}");
    assert_eq!(status, UNCHECKED, "{report}");
    assert_has(
        &report,
        &format!("{by_name}\n  reachable    yes ({})", server.addr()),
    );
    assert_has(&report, "  mode         leader");
    assert_has(&report, "  4lw allowed  srvr\n");
    assert_has(
        &report,
        "  4lw refused  ruok stat conf envi mntr isro wchs dirs\n",
    );
    assert_has(
        &report,
        "  settings     unknown: the server refuses the `conf` four-letter word",
    );
    assert_has(&report, "  lag rule     unchecked (`conf` unavailable)");
    assert_has(
        &report,
        "unchecked: `conf` is refused (not in 4lw.commands.whitelist): tickTime and syncLimit \
         are unknown, so the lag rule cannot be checked, and zklock does not guess",
    );
    assert!(!report.contains("tickTime 0"), "{report}");
    let (status, json) = doctor(&server.connect_string(), &["--json"]);
    assert_eq!(status, UNCHECKED, "{json}");
    assert_has(&json, r#""conf":null,"conf_error":"the server refuses"#);
    assert_has(&json, r#""hazards":[]"#);
}

#[test]
fn an_unreachable_server_is_exit_69() {
    let zk = format!("127.0.0.1:{}", closed_port());
    let (status, report) = doctor(&zk, &[]);
    assert_eq!(status, CONNECT, "{report}");
    assert_has(&report, &format!("{zk}\n  reachable    no (127.0.0.1:"));
    assert_has(
        &report,
        "verdict: unreachable (exit 69): no server answered",
    );
    let (status, json) = doctor(&zk, &["--json"]);
    assert_eq!(status, CONNECT, "{json}");
    assert_has(&json, r#""verdict":"unreachable""#);
    assert_has(&json, r#""reachable":false"#);
}
