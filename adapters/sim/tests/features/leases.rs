//! Max-hold leases expire and hand over.

use crate::harness::{acquired_at, for_seeds, inject, Fault, World, ALL_FAULTS, MS, T};
use lock_core::{CreateMode, LockEvent, LockSpec, LostReason, MultiOp};
use std::time::Duration;

const DATA: &str = "/bank/balance";
const ACCOUNT: &str = "/locks/account";

fn fenced_set(token: i64, n: u32) -> Vec<MultiOp> {
    vec![MultiOp::SetData {
        path: DATA.to_owned(),
        data: format!("{token}:{n}").into_bytes(),
        version: None,
    }]
}

/// Makes [`DATA`] and has the checker audit the fenced writes to it under [`ACCOUNT`].
fn audited_account(w: &mut World) -> Result<(), String> {
    w.sim
        .admin_create("/bank", b"", CreateMode::Persistent)
        .and_then(|_| w.sim.admin_create(DATA, b"", CreateMode::Persistent))
        .map_err(|e| e.to_string())?;
    w.sim.audit_fenced_writes(DATA, ACCOUNT);
    Ok(())
}

/// A holder with a max-hold lease loses the lock when the lease runs out:
/// `Lost(LeaseExpired)` exactly `max_hold` after its grant (unless a fault took the
/// lock first), its node is deleted (after the reconnect, if it was cut off), the
/// waiter acquires with a higher token, and the fenced data's tokens only grow.
#[test]
fn leases_expire_and_hand_over() {
    for_seeds(
        "leases_expire_and_hand_over",
        800_000,
        3000,
        |seed, trace| {
            let mut w = World::new(seed, trace);
            audited_account(&mut w)?;
            let (h, wt) = (w.client(), w.client());
            let max_hold = w.rng.duration(50 * MS, 800 * MS);
            let fault = ALL_FAULTS[w.rng.index(ALL_FAULTS.len())];
            let scheme = w.scheme();
            let lh = w.held(
                h,
                LockSpec::write(ACCOUNT).max_hold(max_hold).scheme(scheme),
            )?;
            let granted_at = acquired_at(&w.sim, h, lh);
            let th = w.grant_token(h, lh);
            let _ = w.sim.fenced_write(h, lh, fenced_set(th, 1));
            let lw = w.acquire(wt, LockSpec::write(ACCOUNT).max_hold(10 * T))?;
            // The fault strikes some time before the lease ends (or after).
            let at = w.rng.duration(Duration::ZERO, max_hold + 100 * MS);
            w.until(2 * T, |s| s.now() >= granted_at + at)?;
            inject(&mut w, h, fault)?;
            w.until(20 * T, |s| s.holds(wt, lw))?;
            let tw = w.grant_token(wt, lw);
            let _ = w.sim.fenced_write(wt, lw, fenced_set(tw, 1));
            w.until(20 * T, |s| s.outcome(h, lh).is_some())?;
            w.settle()?;
            let lost = w
                .sim
                .events(h)
                .iter()
                .find(|r| r.lock == lh && r.event.is_terminal())
                .cloned()
                .expect("ended");
            match &lost.event {
                LockEvent::Lost(LostReason::LeaseExpired) => ensure!(
                    lost.at == granted_at + max_hold,
                    "lease lost at {} for a grant at {granted_at} + {max_hold:?}",
                    lost.at
                ),
                LockEvent::Lost(_) if !fault.keeps_session() => {}
                other => return Err(format!("{fault:?}: holder ended with {other:?}")),
            }
            if fault.keeps_session() {
                ensure!(
                    lost.event == LockEvent::Lost(LostReason::LeaseExpired),
                    "{fault:?}: {lost:?}"
                );
            }
            ensure!(
                w.sim.owned_nodes(h, ACCOUNT).is_empty(),
                "the expired holder's node is gone"
            );
            ensure!(tw > th, "tokens increase");
            let waited_from = acquired_at(&w.sim, wt, lw);
            if fault == Fault::None {
                ensure!(
                    waited_from >= granted_at + max_hold,
                    "the waiter got in at {waited_from}, before the lease ended"
                );
            }
            let data = w.sim.get(DATA).map(|n| n.data).unwrap_or_default();
            ensure!(
                data == format!("{tw}:1").into_bytes(),
                "the data ends with the next holder's token: {:?}",
                String::from_utf8_lossy(&data)
            );
            w.finish(&[(h, lh), (wt, lw)])?;
            Ok(format!("{fault:?}"))
        },
    )
}
