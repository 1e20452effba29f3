//! Fenced writes: stale holders rejected.

use crate::harness::{acquired_at, for_seeds, World, MS, T};
use lock_core::{CreateMode, FencedError, LockEvent, LockId, LockSpec, LostReason, MultiOp};
use lock_sim::{ClientId, Sim};
use std::time::Duration;

pub(crate) const DATA: &str = "/bank/balance";
pub(crate) const ACCOUNT: &str = "/locks/account";

pub(crate) fn fenced_set(token: i64, n: u32) -> Vec<MultiOp> {
    vec![MultiOp::SetData {
        path: DATA.to_owned(),
        data: format!("{token}:{n}").into_bytes(),
        version: None,
    }]
}

/// Makes [`DATA`] and has the checker audit the fenced writes to it under [`ACCOUNT`].
pub(crate) fn audited_account(w: &mut World) -> Result<(), String> {
    w.sim
        .admin_create("/bank", b"", CreateMode::Persistent)
        .and_then(|_| w.sim.admin_create(DATA, b"", CreateMode::Persistent))
        .map_err(|e| e.to_string())?;
    w.sim.audit_fenced_writes(DATA, ACCOUNT);
    Ok(())
}

/// The outcome of fenced write `write` of (c, l), once reported.
fn write_result(sim: &Sim, c: ClientId, l: LockId, write: u64) -> Option<Result<(), FencedError>> {
    sim.lock_events(c, l).into_iter().find_map(|e| match e {
        LockEvent::FencedWrite { write: w, result } if w == write => Some(result.map(|_| ())),
        _ => None,
    })
}

/// How the first holder loses the lock with a fenced write in flight.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Stale {
    /// Someone deletes its node (forced revocation) and it writes before it hears.
    NodeDeleted,
    /// Its session expires with the write in flight.
    Expired,
    /// A partition past the session timeout with writes in flight (some reach the
    /// server before the cut, the rest never do).
    Partitioned,
    /// Its lease ends with a write in flight (the write, sent first, applies first).
    Lease,
    /// It releases with a write in flight (same).
    Release,
}

/// Writes fenced by the lock never apply once the lock is gone: the server audit
/// checks every write to the data node at the instant it applies (the writer's node
/// exists, is its own and has no lower participant; the token never goes backwards),
/// and every reported outcome against what the server did. The stale holder's write
/// is rejected with `NotHeld` (or reported unknown when its connection died with it
/// in flight), and the data ends with the next holder's token.
#[test]
fn fenced_writes_reject_stale_holders() {
    for_seeds(
        "fenced_writes_reject_stale_holders",
        700_000,
        3000,
        |seed, trace| {
            let mut w = World::new(seed, trace);
            audited_account(&mut w)?;
            let (a, b) = (w.client(), w.client());
            let kinds = [
                Stale::NodeDeleted,
                Stale::Expired,
                Stale::Partitioned,
                Stale::Lease,
                Stale::Release,
            ];
            let kind = kinds[w.rng.index(kinds.len())];
            let lease = 200 * MS;
            let mut spec = LockSpec::write(ACCOUNT).scheme(w.scheme());
            if kind == Stale::Lease {
                spec = spec.max_hold(lease);
            }
            let la = w.held(a, spec)?;
            let ta = w.grant_token(a, la);
            let lb = w.acquire(b, LockSpec::write(ACCOUNT))?;
            let w1 = w
                .sim
                .fenced_write(a, la, fenced_set(ta, 1))
                .map_err(|e| e.to_string())?;
            w.until(5 * T, |s| write_result(s, a, la, w1).is_some())?;
            ensure!(
                write_result(&w.sim, a, la, w1) == Some(Ok(())),
                "the holder's write applies"
            );
            let a_node = w.sim.grant(a, la).unwrap().path.to_string();
            let stale = match kind {
                Stale::NodeDeleted => {
                    w.sim.admin_delete(&a_node).map_err(|e| e.to_string())?;
                    // It has not heard yet: the write is accepted, and rejected by the check.
                    let s = w.sim.fenced_write(a, la, fenced_set(ta, 2));
                    ensure!(s.is_ok(), "accepted before the holder hears: {s:?}");
                    s.ok()
                }
                Stale::Expired => {
                    let s = w.sim.fenced_write(a, la, fenced_set(ta, 2)).ok();
                    w.sim.expire_session(a);
                    s
                }
                Stale::Partitioned => {
                    let s = w.sim.fenced_write(a, la, fenced_set(ta, 2)).ok();
                    let _ = w.sim.fenced_write(a, la, fenced_set(ta, 3));
                    let d = w.rng.duration(T * 3 / 2, T * 3);
                    w.sim.partition(a, d);
                    s
                }
                Stale::Lease => {
                    let granted = acquired_at(&w.sim, a, la);
                    // Just before the lease ends: in flight when it does.
                    let before = w.rng.duration(Duration::ZERO, 3 * MS);
                    let t = granted + (lease - before);
                    w.until(T, |s| s.now() >= t)?;
                    w.sim.fenced_write(a, la, fenced_set(ta, 2)).ok()
                }
                Stale::Release => {
                    let s = w.sim.fenced_write(a, la, fenced_set(ta, 2)).ok();
                    w.sim.release(a, la).map_err(|e| e.to_string())?;
                    s
                }
            };
            w.until(20 * T, |s| s.holds(b, lb))?;
            let tb = w.grant_token(b, lb);
            ensure!(tb > ta, "tokens increase");
            let wb = w
                .sim
                .fenced_write(b, lb, fenced_set(tb, 1))
                .map_err(|e| e.to_string())?;
            w.until(5 * T, |s| write_result(s, b, lb, wb).is_some())?;
            ensure!(
                write_result(&w.sim, b, lb, wb) == Some(Ok(())),
                "the new holder writes"
            );
            w.until(20 * T, |s| s.outcome(a, la).is_some())?;
            // Once it has heard, the old holder cannot write any more.
            ensure!(
                w.sim.fenced_write(a, la, fenced_set(ta, 9)).is_err(),
                "a fenced write after the loss is refused"
            );
            w.settle()?;
            ensure!(
                w.sim.get(DATA).map(|n| n.data) == Some(format!("{tb}:1").into_bytes()),
                "the data ends with the new holder's write"
            );
            let stale_result = stale.and_then(|s| write_result(&w.sim, a, la, s));
            match kind {
                // Rejected by the server's check (the audit saw it not applied); the holder
                // hears of the deletion before the reply, which can only be a failure: typed
                // `NotHeld`.
                Stale::NodeDeleted => ensure!(
                    stale_result == Some(Err(FencedError::NotHeld)),
                    "{kind:?}: stale write {stale_result:?}"
                ),
                Stale::Expired => ensure!(
                    matches!(stale_result, Some(Err(FencedError::Unknown(_)))),
                    "{kind:?}: stale write {stale_result:?}"
                ),
                // Sent before the loss: it applies first (FIFO), while still held.
                Stale::Lease | Stale::Release => ensure!(
                    stale.is_none() || stale_result == Some(Ok(())),
                    "{kind:?}: write in flight {stale_result:?}"
                ),
                Stale::Partitioned => {}
            }
            let outcome = w.sim.outcome(a, la).cloned();
            let expected = match kind {
                Stale::NodeDeleted => Some(LostReason::NodeDeleted),
                Stale::Lease => Some(LostReason::LeaseExpired),
                _ => None,
            };
            if let Some(reason) = expected {
                ensure!(
                    outcome == Some(LockEvent::Lost(reason)),
                    "{kind:?}: {outcome:?}"
                );
            }
            let cov = w.sim.coverage();
            ensure!(cov.fenced_applied >= 2, "audited writes {cov:?}");
            w.finish(&[(a, la), (b, lb)])?;
            Ok(format!("{kind:?}"))
        },
    )
}
