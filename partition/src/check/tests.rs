//! The checker on hand-made histories that must pass or fail.

use super::*;

/// Events from `at client event [arg]` lines on lock `/l`.
fn history(lines: &[&str]) -> Vec<Event> {
    lines
        .iter()
        .map(|line| {
            let (at, rest) = line.split_once(' ').unwrap();
            let (client, event) = rest.split_once(' ').unwrap();
            Event::parse(&format!("{at} {client} /l {event}")).unwrap()
        })
        .collect()
}

fn fault(start: Nanos, heal: Nanos, cut_off: &[&str]) -> Fault {
    Fault {
        shape: "follower-isolated".into(),
        start,
        heal,
        cut_off: cut_off.iter().map(|c| c.to_string()).collect(),
    }
}

#[test]
fn a_clean_history_with_a_fault_passes_and_measures_the_margins() {
    let events = history(&[
        "10 async-a acquire-request",
        "11 async-a granted 100",
        "12 kazoo-b acquire-request",
        "20 async-a released",
        "21 kazoo-b granted 200",
        "30 kazoo-b released",
        "31 async-a granted 300",
        // cut at 35
        "2000000035 async-a suspended",
        "3000000035 async-a lost SuspendedTooLong",
        "3500000035 kazoo-b granted 400",
        // healed at 6e9
        "6100000000 kazoo-b released",
        "6200000000 async-a granted 500",
    ]);
    let report = check(&events, &[fault(35, 6_000_000_000, &["async-a"])]);
    assert_eq!(report.violations, vec![]);
    assert_eq!(report.grants, 5);
    assert_eq!(report.margins.len(), 1);
    let margin = &report.margins[0];
    assert_eq!(margin.holder, "async-a");
    assert!((margin.lost.unwrap() - 0.5).abs() < 1e-9, "{margin:?}");
    assert!((margin.trust.unwrap() - 1.5).abs() < 1e-9, "{margin:?}");
    assert!(report
        .summary()
        .contains("follower-isolated async 1 | +0.500/+0.500/+0.500 (n=1)"));
}

#[test]
fn two_trusted_holders_at_once_are_an_overlap() {
    let events = history(&[
        "10 async-a granted 1",
        "15 blocking-b granted 2",
        "20 async-a released",
    ]);
    let report = check(&events, &[]);
    assert_eq!(
        report.violations,
        vec![Violation::Overlap {
            lock: "/l".into(),
            first: ("async-a".into(), 10),
            second: ("blocking-b".into(), 15),
        }]
    );
}

#[test]
fn suspension_ends_trust_but_only_lost_keeps_the_zklock_promise() {
    let lines = |who: &str| {
        history(&[
            &format!("10 {who} granted 1"),
            &format!("14 {who} suspended"),
            "15 curator-b granted 2",
            &format!("20 {who} lost SessionExpired"),
            "35 curator-b released",
            &format!("40 {who} granted 3"),
        ])
    };
    // A kazoo holder that stopped trusting at 14: safe.
    let report = check(&lines("kazoo-a"), &[fault(12, 30, &["kazoo-a"])]);
    assert_eq!(report.violations, vec![]);
    assert_eq!(report.margins[0].lost, Some(-5e-9));
    // A zklock holder must have been told Lost before 15.
    let report = check(&lines("blocking-a"), &[fault(12, 30, &["blocking-a"])]);
    assert_eq!(
        report.violations,
        vec![Violation::LostAfterGrant {
            shape: "follower-isolated".into(),
            holder: "blocking-a".into(),
            lost: Some(20),
            next_grant: ("curator-b".into(), 15),
        }]
    );
    assert!(report.violations[0]
        .to_string()
        .contains("told Lost 0.000 s after"));
}

#[test]
fn a_holder_never_told_lost_is_reported() {
    let events = history(&[
        "10 async-a granted 1",
        "14 async-a suspended",
        "15 kazoo-b granted 2",
    ]);
    let report = check(&events, &[fault(12, 30, &["async-a"])]);
    assert!(matches!(
        report.violations.as_slice(),
        [
            Violation::LostAfterGrant { lost: None, .. },
            Violation::NoProgress { .. }
        ]
    ));
}

#[test]
fn resuming_while_another_holds_is_an_overlap() {
    let events = history(&[
        "10 kazoo-a granted 1",
        "12 kazoo-a suspended",
        "15 curator-b granted 2",
        "16 kazoo-a resumed",
        "20 curator-b released",
    ]);
    let report = check(&events, &[]);
    assert!(matches!(
        report.violations.as_slice(),
        [Violation::Overlap { first, second, .. }] if first.0 == "curator-b" && second == &("kazoo-a".to_string(), 16)
    ));
}

#[test]
fn a_released_holder_needs_no_lost() {
    let events = history(&[
        "10 async-a granted 1",
        "14 async-a released",
        "15 kazoo-b granted 2",
    ]);
    let report = check(&events, &[fault(12, 13, &["async-a"])]);
    assert_eq!(report.violations, vec![]);
    assert_eq!(report.margins[0].lost, None);
}

#[test]
fn tokens_must_increase_with_grant_order() {
    let events = history(&[
        "10 async-a granted 5",
        "11 async-a released",
        "12 blocking-b granted 4",
        "13 blocking-b released",
    ]);
    assert!(matches!(
        check(&events, &[]).violations.as_slice(),
        [Violation::TokenOrder { earlier, later, .. }] if earlier.1 == 5 && later.1 == 4
    ));
}

#[test]
fn no_grant_after_a_heal_is_no_progress() {
    let events = history(&["10 async-a granted 1", "11 async-a released"]);
    let report = check(&events, &[fault(20, 30, &["async-a"])]);
    assert_eq!(
        report.violations,
        vec![Violation::NoProgress {
            shape: "follower-isolated".into(),
            lock: "/l".into(),
            heal: 30
        }]
    );
}

#[test]
fn holds_outside_the_fault_or_of_others_are_not_measured() {
    let events = history(&[
        "10 async-a granted 1",
        "11 async-a released",
        "40 async-a granted 2",
        "41 async-a released",
        "42 async-b granted 3",
    ]);
    let report = check(&events, &[fault(20, 30, &["async-a"])]);
    assert!(report.margins.is_empty());
    assert_eq!(report.violations, vec![]);
}
