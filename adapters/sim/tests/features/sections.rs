//! Crash-detecting critical sections.

use crate::harness::{for_seeds, inject, Fault, World, MS, T};
use lock_core::{LockEvent, LockSpec, LostReason};
use lock_sim::InFlight;

/// How the holder inside its section goes away.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Exit {
    /// Its session expires (told on reconnect).
    Expire,
    /// A partition past the session timeout.
    LongPartition,
    /// The client is closed.
    Close,
    /// Its lease runs out inside the section.
    Lease,
    /// Clean release, with connection faults around it that keep the session.
    CleanRelease(Fault),
    /// Closes the section, then its session expires.
    CloseThenExpire,
}

/// A holder opens a section and goes away; the next holder's grant says whether it
/// died inside the section: a holder that dies (session expired or closed, lease run
/// out) inside one is reported `previous_holder_crashed == true`, on the uncontended
/// path (the next holder arrives after) and on the contended one (it waits); a clean
/// release (with disconnects, lost notifications and short partitions around it)
/// never is, nor a holder that closed its section. The next holder repairs: it
/// re-opens (taking the marker over) or closes, and after its clean release the
/// following holder sees no crash.
#[test]
fn sections_detect_crashes() {
    for_seeds("sections_detect_crashes", 600_000, 4000, |seed, trace| {
        let mut w = World::new(seed, trace);
        let (h, n, m) = (w.client(), w.client(), w.client());
        let lock = "/locks/ledger";
        let exits = [
            Exit::Expire,
            Exit::LongPartition,
            Exit::Close,
            Exit::Lease,
            Exit::CloseThenExpire,
            Exit::CleanRelease(Fault::None),
            Exit::CleanRelease(Fault::Disconnect),
            Exit::CleanRelease(Fault::LoseNotification),
            Exit::CleanRelease(Fault::ShortPartition),
        ];
        let exit = exits[w.rng.index(exits.len())];
        let contended = w.rng.chance(0.5);
        let scheme = w.scheme();
        let spec = || LockSpec::write(lock).detect_crashes().scheme(scheme);
        let lease = 300 * MS;
        let hspec = if exit == Exit::Lease {
            spec().max_hold(lease)
        } else {
            spec()
        };
        let lh = w.held(h, hspec)?;
        ensure!(
            !w.sim.grant(h, lh).unwrap().previous_holder_crashed,
            "a fresh lock reports no crash"
        );
        w.sim.open_section(h, lh).map_err(|e| e.to_string())?;
        // Sometimes the connection drops with the open in flight (applied or not):
        // the core sends it again once its node is verified after the reconnect.
        let interrupted = w.rng.chance(0.3);
        if interrupted {
            let applied = if w.rng.chance(0.5) {
                InFlight::Applied
            } else {
                InFlight::Lost
            };
            w.sim.disconnect_with(h, applied);
        }
        w.until(5 * T, |s| {
            s.lock_events(h, lh).contains(&LockEvent::SectionOpened)
        })?;
        if interrupted {
            let events = w.sim.lock_events(h, lh);
            ensure!(
                events.contains(&LockEvent::Resumed),
                "interrupted open: {events:?}"
            );
        }
        let ln = if contended {
            let l = w.acquire(n, spec())?;
            w.settle()?;
            Some(l)
        } else {
            None
        };
        let crashed = match exit {
            Exit::Expire => {
                w.sim.expire_session(h);
                true
            }
            Exit::LongPartition => {
                let d = w.rng.duration(T * 3 / 2, T * 3);
                w.sim.partition(h, d);
                true
            }
            Exit::Close => {
                w.sim.close(h);
                true
            }
            Exit::Lease => true,
            Exit::CloseThenExpire => {
                w.sim.close_section(h, lh).map_err(|e| e.to_string())?;
                w.until(5 * T, |s| {
                    s.lock_events(h, lh).contains(&LockEvent::SectionClosed)
                })?;
                w.sim.expire_session(h);
                false
            }
            Exit::CleanRelease(fault) => {
                w.sim.release(h, lh).map_err(|e| e.to_string())?;
                inject(&mut w, h, fault)?;
                false
            }
        };
        // The holder is gone, one way or another, before the uncontended successor
        // comes.
        let h_session = w.sim.grant(h, lh).unwrap().session_id;
        w.until(20 * T, |s| {
            s.outcome(h, lh).is_some()
                && s.children(lock).iter().all(|c| {
                    s.get(&format!("{lock}/{c}"))
                        .map_or(true, |i| i.stat.ephemeral_owner != h_session)
                })
        })?;
        let ln = match ln {
            Some(l) => l,
            None => w.acquire(n, spec())?,
        };
        w.until(20 * T, |s| s.holds(n, ln))?;
        let g = w.sim.grant(n, ln).expect("granted");
        ensure!(
            g.previous_holder_crashed == crashed,
            "{exit:?} (contended: {contended}): the next grant says crashed = {}; holder events {:?}",
            g.previous_holder_crashed,
            w.sim.lock_events(h, lh)
        );
        let outcome = w.sim.outcome(h, lh).cloned();
        match exit {
            Exit::Lease => ensure!(
                outcome == Some(LockEvent::Lost(LostReason::LeaseExpired)),
                "lease: {outcome:?}"
            ),
            Exit::CleanRelease(_) => ensure!(
                outcome == Some(LockEvent::Released),
                "clean release: {outcome:?}"
            ),
            _ => {}
        }
        // The next holder repairs: re-opens (taking the marker over) or closes; then
        // a clean release leaves nothing for the one after.
        if crashed && w.rng.chance(0.5) {
            w.sim.close_section(n, ln).map_err(|e| e.to_string())?;
            w.until(5 * T, |s| {
                s.lock_events(n, ln).contains(&LockEvent::SectionClosed)
            })?;
        } else {
            w.sim.open_section(n, ln).map_err(|e| e.to_string())?;
            w.until(5 * T, |s| {
                s.lock_events(n, ln).contains(&LockEvent::SectionOpened)
            })?;
        }
        let lm = w.acquire(m, spec())?;
        w.settle()?;
        w.sim.release(n, ln).map_err(|e| e.to_string())?;
        w.until(10 * T, |s| s.holds(m, lm))?;
        ensure!(
            !w.sim.grant(m, lm).unwrap().previous_holder_crashed,
            "after a repair and a clean release, no crash"
        );
        ensure!(
            !w.sim.children(lock).contains(&"zkl-section".to_owned()),
            "no marker left"
        );
        w.finish(&[(h, lh), (n, ln), (m, lm)])?;
        Ok(format!(
            "{exit:?} {}{}",
            if contended {
                "contended"
            } else {
                "uncontended"
            },
            if interrupted {
                ", open interrupted"
            } else {
                ""
            }
        ))
    })
}
