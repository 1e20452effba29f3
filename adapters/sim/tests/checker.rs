//! The invariant checker catches what it must: these tests break the rules on
//! purpose and expect the violation, with its seed and step.

mod support;

use lock_core::{CreateMode, LockSpec, MultiOp};
use lock_sim::{Latency, Profile, Sim, SimConfig, Violation, ViolationKind, Workload};
use std::time::Duration;
use support::holder_and_waiter;

const T: Duration = Duration::from_secs(1);

/// Seed `seed` of one schedule, the config adapted by `adapt` (an adapter that
/// breaks the core's contract): `a` holds `/l`, `b` waits, `a` is cut off for five
/// session timeouts; runs until `a`'s acquisition has ended and `b` holds.
fn cut_off_holder(seed: u64, adapt: fn(&mut SimConfig)) -> Result<(), Violation> {
    let mut cfg = SimConfig::new(seed).latency(Latency::fixed(Duration::from_millis(1)));
    adapt(&mut cfg);
    let mut sim = Sim::new(cfg);
    let ((a, la), (b, lb)) =
        holder_and_waiter(&mut sim, Profile::KeepsWatches, LockSpec::write("/l"), T);
    sim.partition(a, T * 5);
    sim.run_until(|s| s.outcome(a, la).is_some() && s.holds(b, lb))
}

/// Adapters that break the core's contract are caught, one that keeps it is not.
#[test]
fn a_cut_off_holders_adapter_is_held_to_the_contract() {
    // `Disconnected` later than the session timeout: the server expires the
    // holder's session, another client gets the lock, the old holder still trusts
    // it; caught at the expiry (a trusted holder whose node is gone) or at the
    // latest when the other acquires (some seeds notice before the expiry).
    let (seed, v) = (0..40)
        .find_map(|seed| Some((seed, cut_off_holder(seed, |c| c.notice_within = 3.0).err()?)))
        .expect("some seed notices too late");
    assert!(
        matches!(
            v.kind,
            ViolationKind::HolderWithoutNode | ViolationKind::TwoExclusiveHolders
        ),
        "{v}"
    );
    assert_eq!(v.seed, seed);
    assert!(v.step > 0 && v.detail.contains("/l/"), "{v}");
    // `Disconnected` in time but not how long before it the server was last heard
    // from: the core counts the lost window from the notice, and another client
    // gets in while the old holder is only suspended (unless the window ends
    // before the expiry).
    let mut caught = 0;
    for seed in 0..20 {
        if let Err(v) = cut_off_holder(seed, |c| c.report_contact = false) {
            assert_eq!(v.kind, ViolationKind::LostTooLate, "{v}");
            caught += 1;
        }
    }
    assert!(caught > 0, "no seed was caught");
    // The contract kept: one holder throughout.
    for seed in 0..40 {
        cut_off_holder(seed, |_| {}).unwrap();
    }
}

#[test]
fn orphan_nodes_are_reported_at_quiescence() {
    let mut sim = Sim::new(SimConfig::new(1));
    let a = sim.add_client(Profile::KeepsWatches, T);
    let l = sim.acquire(a, LockSpec::write("/o")).unwrap();
    sim.settle().unwrap();
    sim.release(a, l).unwrap();
    sim.run_until_idle().unwrap();
    sim.check_quiescent().unwrap();
    // A participant-named node nobody owns.
    sim.admin_create(
        "/o/zkl-0123456789abcdef0123456789abcdef-write-",
        b"",
        CreateMode::Persistent,
    )
    .map(|_| ())
    .unwrap_or_else(|e| panic!("{e}"));
    let name = sim.children("/o")[0].clone();
    assert!(
        lock_core::names::parse_name(&name).is_none(),
        "sequence not appended: {name}"
    );
    sim.admin_create(
        "/o/zkl-0123456789abcdef0123456789abcdef-write-0000000042",
        b"",
        CreateMode::Persistent,
    )
    .unwrap();
    let v = sim.check_quiescent().unwrap_err();
    assert_eq!(v.kind, ViolationKind::Orphan);
    assert!(v.detail.contains("0000000042"), "{v}");
}

#[test]
fn holders_that_never_release_fail_liveness() {
    let mut w = Workload::exclusive();
    w.hold = (Duration::from_secs(10_000), Duration::from_secs(10_000));
    w.long_hold_chance = 0.0;
    w.cancel_chance = 0.0;
    w.deadline_chance = 0.0;
    w.revoke_chance = 0.0;
    w.revocable_chance = 0.0;
    w.lease_chance = 0.0;
    w.drain_limit = Duration::from_secs(30);
    let failure = w.run(3).unwrap_err();
    assert_eq!(failure.violation.kind, ViolationKind::Liveness);
    let text = failure.to_string();
    assert!(text.contains("seed 3"), "{text}");
    assert!(
        text.contains("Sim::replay(3, &lock_sim::Workload::exclusive())"),
        "{text}"
    );
    assert!(
        !failure.trace.is_empty(),
        "the failure carries the replay's trace"
    );
}

/// A task that cannot end while a test winds down (its client cut off for an
/// hour, waiting) is a liveness violation of `Sim::wind_down`, not a hang.
#[test]
fn a_task_that_never_ends_fails_wind_down() {
    let mut sim = Sim::new(SimConfig::new(5));
    let ((a, la), (b, lb)) =
        holder_and_waiter(&mut sim, Profile::KeepsWatches, LockSpec::write("/w"), T);
    sim.disconnect(b);
    sim.delay_reconnect(b, Duration::from_secs(3600));
    let v = sim.wind_down(&[(a, la), (b, lb)]).unwrap_err();
    assert_eq!(v.kind, ViolationKind::Liveness, "{v}");
    assert!(v.detail.contains("never ended"), "{v}");
    assert!(sim.outcome(a, la).is_some() && sim.outcome(b, lb).is_none());
}

/// A marker an administrator forges (or removes) is what the next grant reports:
/// the checker follows admin changes of the marker, so it neither flags the core's
/// honest report nor lets a report contrary to the tree through.
#[test]
fn crash_flags_follow_markers_an_administrator_changes() {
    for forge in [true, false] {
        let mut sim = Sim::new(SimConfig::new(4));
        let a = sim.add_client(Profile::KeepsWatches, T);
        let b = sim.add_client(Profile::KeepsWatches, T);
        let la = sim
            .acquire(a, LockSpec::write("/c").detect_crashes())
            .unwrap();
        sim.settle().unwrap();
        if forge {
            sim.release(a, la).unwrap();
            sim.settle().unwrap();
            sim.admin_create("/c/zkl-section", b"", CreateMode::Persistent)
                .unwrap();
        } else {
            sim.open_section(a, la).unwrap();
            sim.settle().unwrap();
            sim.expire_session(a);
            sim.settle().unwrap();
            sim.admin_delete("/c/zkl-section").unwrap();
        }
        let lb = sim
            .acquire(b, LockSpec::write("/c").detect_crashes())
            .unwrap();
        sim.settle().unwrap();
        let grant = sim.grant(b, lb).expect("b holds");
        assert_eq!(grant.previous_holder_crashed, forge, "forge = {forge}");
    }
}

/// Audited fenced writes carrying a token that is not the writer's (a stale one, or
/// one that never existed) are caught at the server, although the `check` on the
/// writer's own node lets them through.
#[test]
fn fenced_writes_with_a_foreign_token_are_caught() {
    for stale in [true, false] {
        let mut sim = Sim::new(SimConfig::new(5));
        sim.admin_create("/d", b"", CreateMode::Persistent).unwrap();
        sim.audit_fenced_writes("/d", "/f");
        let a = sim.add_client(Profile::KeepsWatches, T);
        let b = sim.add_client(Profile::KeepsWatches, T);
        let la = sim.acquire(a, LockSpec::write("/f")).unwrap();
        sim.settle().unwrap();
        let ta = sim.grant(a, la).unwrap().token.0;
        let set = |token: i64| {
            vec![MultiOp::SetData {
                path: "/d".into(),
                data: format!("{token}:x").into_bytes(),
                version: None,
            }]
        };
        sim.fenced_write(a, la, set(ta)).unwrap();
        sim.settle().unwrap();
        let lb = sim.acquire(b, LockSpec::write("/f")).unwrap();
        sim.settle().unwrap();
        sim.release(a, la).unwrap();
        sim.run_until(|s| s.holds(b, lb)).unwrap();
        let bad = if stale { ta } else { ta + 1000 };
        sim.fenced_write(b, lb, set(bad)).unwrap();
        let v = sim.settle().unwrap_err();
        assert_eq!(v.kind, ViolationKind::StaleWrite, "{v}");
        assert!(v.detail.contains("did not hold"), "{v}");
    }
}
