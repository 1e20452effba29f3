//! Revocation: cooperative release, revoked waiters. (A lock that is not revocable
//! ignores requests: the checker flags a `RevocationRequested` or `Failed(Revoked)`
//! of one in every randomized workload, whose faults include revocation markers.)

use crate::harness::{count, for_seeds, inject_soon, Fault, World, ALL_FAULTS, T};
use lock_core::{FailReason, LockEvent, LockSpec, LockState};

/// A revocable holder asked to let go (by a revoker on another session) gets
/// `RevocationRequested`, releases cooperatively, and the waiter gets the lock.
/// Faults strike the holder (lost notification, disconnect, partitions shorter and
/// longer than the session timeout, expiry) or the revoker (its requests lost).
#[test]
fn revocation_cooperative_release() {
    for_seeds("revocation_cooperative_release", 0, 3000, |seed, trace| {
        let mut w = World::new(seed, trace);
        let (h, wt, r) = (w.client(), w.client(), w.client());
        let lock = "/locks/rev";
        let fault = ALL_FAULTS[w.rng.index(ALL_FAULTS.len())];
        let on_revoker = fault != Fault::None && w.rng.chance(0.25);
        let session_kept = on_revoker || fault.keeps_session();
        // A revocable waiter would be revoked too if the revoker looked after the
        // holder was gone; keep it so only where the revoker cannot.
        let waiter_revocable = session_kept && !on_revoker && w.rng.chance(0.5);
        let scheme = w.scheme();
        let lh = w.held(h, LockSpec::write(lock).revocable().scheme(scheme))?;
        let h_node = w.sim.grant(h, lh).expect("granted").path.to_string();
        let mut spec = LockSpec::write(lock).scheme(scheme);
        if waiter_revocable {
            spec = spec.revocable();
        }
        let lw = w.acquire(wt, spec)?;
        w.settle()?;
        ensure!(
            w.sim.state(wt, lw) == Some(LockState::Waiting),
            "waiter waits"
        );
        // The holder's user lets go as soon as asked.
        w.react = Box::new(move |sim, e| {
            if (e.client, e.lock, &e.event) == (h, lh, &LockEvent::RevocationRequested) {
                let _ = sim.release(h, lh);
            }
        });
        let lr = w.sim.revoke(r, lock).map_err(|e| e.to_string())?;
        inject_soon(&mut w, if on_revoker { r } else { h }, fault)?;
        w.until(20 * T, |s| s.holds(wt, lw))?;
        w.until(20 * T, |s| {
            s.outcome(r, lr).is_some() && s.outcome(h, lh).is_some()
        })?;
        let events = w.sim.lock_events(h, lh);
        let asked = count(&events, &LockEvent::RevocationRequested);
        let outcome = w.sim.outcome(h, lh).cloned();
        if session_kept {
            ensure!(
                asked == 1 && outcome == Some(LockEvent::Released),
                "{fault:?}: holder events {events:?}"
            );
        } else {
            ensure!(asked <= 1, "asked {asked} times: {events:?}");
            ensure!(
                matches!(outcome, Some(LockEvent::Released | LockEvent::Lost(_))),
                "{fault:?}: holder events {events:?}"
            );
        }
        ensure!(
            w.grant_token(wt, lw) > w.grant_token(h, lh),
            "tokens increase"
        );
        let nodes = match w.sim.outcome(r, lr) {
            Some(LockEvent::RevocationSent { nodes }) => nodes.clone(),
            other => return Err(format!("revoker ended with {other:?}")),
        };
        if session_kept && !on_revoker {
            ensure!(
                nodes == vec![h_node.clone()],
                "revoked {nodes:?}, not {h_node}"
            );
        } else {
            // A revoker that lost its requests looks again: it may find the waiter
            // holding by then (not revocable here: it ignores the request).
            let w_node = w.sim.grant(wt, lw).expect("granted").path.to_string();
            ensure!(
                nodes.iter().all(|n| *n == h_node || *n == w_node),
                "revoked {nodes:?}"
            );
        }
        w.finish(&[(h, lh), (wt, lw)])?;
        Ok(format!(
            "{}{fault:?}",
            if on_revoker { "revoker " } else { "holder " }
        ))
    })
}

/// A revocable waiter whose node is revoked gives up with `Failed(Revoked)` and
/// leaves no node behind; the holder is untouched, and a non-revocable waiter
/// behind it, also asked, keeps its place and gets the lock in turn.
#[test]
fn revocation_of_waiters() {
    for_seeds("revocation_of_waiters", 300_000, 3000, |seed, trace| {
        let mut w = World::new(seed, trace);
        let (h, a, b, r) = (w.client(), w.client(), w.client(), w.client());
        let lock = "/locks/queue";
        let fault = ALL_FAULTS[w.rng.index(ALL_FAULTS.len())];
        let scheme = w.scheme();
        let lh = w.held(h, LockSpec::write(lock).revocable().scheme(scheme))?;
        let la = w.acquire(a, LockSpec::write(lock).revocable().scheme(scheme))?;
        w.settle()?;
        let lb = w.acquire(b, LockSpec::write(lock).scheme(scheme))?;
        w.settle()?;
        let a_node = w.sim.owned_nodes(a, lock)[0].clone();
        let b_node = w.sim.owned_nodes(b, lock)[0].clone();
        let ra = w.sim.revoke(r, &a_node).map_err(|e| e.to_string())?;
        let rb = w.sim.revoke(r, &b_node).map_err(|e| e.to_string())?;
        inject_soon(&mut w, a, fault)?;
        w.until(20 * T, |s| s.outcome(a, la).is_some())?;
        w.until(20 * T, |s| {
            s.outcome(r, ra).is_some() && s.outcome(r, rb).is_some()
        })?;
        w.settle()?;
        let outcome = w.sim.outcome(a, la).cloned();
        if fault.keeps_session() {
            ensure!(
                outcome == Some(LockEvent::Failed(FailReason::Revoked)),
                "{fault:?}: revoked waiter ended with {outcome:?}"
            );
        } else {
            ensure!(
                matches!(
                    outcome,
                    Some(LockEvent::Failed(
                        FailReason::Revoked | FailReason::SessionExpired
                    ))
                ),
                "{fault:?}: revoked waiter ended with {outcome:?}"
            );
        }
        ensure!(
            w.sim.owned_nodes(a, lock).is_empty() && w.sim.get(&a_node).is_none(),
            "the revoked waiter left {:?}",
            w.sim.children(lock)
        );
        ensure!(w.sim.holds(h, lh), "the holder is untouched");
        ensure!(
            w.sim.lock_events(h, lh).len() == 1,
            "holder events {:?}",
            w.sim.lock_events(h, lh)
        );
        ensure!(
            w.sim.state(b, lb) == Some(LockState::Waiting),
            "the non-revocable waiter keeps its place"
        );
        w.sim.release(h, lh).map_err(|e| e.to_string())?;
        w.until(10 * T, |s| s.holds(b, lb))?;
        w.finish(&[(h, lh), (a, la), (b, lb)])?;
        Ok(format!("{fault:?}"))
    })
}
