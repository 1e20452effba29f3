//! Lock-delay (`LockSpec::lock_delay`), in virtual time.

use crate::harness::{acquired_at, for_seeds, inject, Fault, World, MS, T};
use lock_core::{LockEvent, LockId, LockSpec, NameScheme, Progress, Timestamp};
use lock_sim::{ClientId, Sim};
use std::time::Duration;

const LOCK: &str = "/locks/delayed";
const MARKER: &str = "zkl-delay";

/// How the first holder goes away.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Exit {
    /// Its session expires.
    Expire,
    /// A partition past the session timeout (it hears `Lost` first).
    LongPartition,
    /// An administrator deletes its node (a forced break).
    ForeignDelete,
    /// The client is closed without releasing.
    Close,
    /// Clean release, with connection faults around it that keep the session.
    CleanRelease(Fault),
}

impl Exit {
    fn clean(self) -> bool {
        matches!(self, Exit::CleanRelease(_))
    }
}

/// The lock-delays reported to (c, l): (when reported, when it ends).
fn delays(sim: &Sim, c: ClientId, l: LockId) -> Vec<(Timestamp, Timestamp)> {
    sim.progress(c)
        .iter()
        .filter(|r| r.lock == l)
        .filter_map(|r| match &r.progress {
            Progress::LockDelay { until, .. } => Some((r.at, *until)),
            _ => None,
        })
        .collect()
}

fn spec(leader: bool, scheme: NameScheme, delay: Duration) -> LockSpec {
    let spec = if leader {
        LockSpec::leader(LOCK, b"candidate".to_vec())
    } else {
        LockSpec::write(LOCK)
    };
    spec.scheme(scheme).lock_delay(delay)
}

/// A lock-delay holder goes away, cleanly or not, while the next one waits
/// (contended) or before it comes (a newcomer). After an unclean end the next
/// grant comes no sooner than the delay after the next one found the lock free,
/// and within a round trip of it (the marker's take-over): "to the tick"; the
/// waiter's progress names the delay and its end first. After a clean release
/// (with disconnects, lost notifications and short partitions around it) there
/// is no delay at all. The next holder's clean release removes the marker, and
/// the one after it is not delayed.
#[test]
fn lock_delay_follows_an_unclean_end_only() {
    for_seeds(
        "lock_delay_follows_an_unclean_end_only",
        700_000,
        300,
        |seed, trace| {
            let mut w = World::new(seed, trace);
            let (h, n, m) = (w.client(), w.client(), w.client());
            let exits = [
                Exit::Expire,
                Exit::LongPartition,
                Exit::ForeignDelete,
                Exit::Close,
                Exit::CleanRelease(Fault::None),
                Exit::CleanRelease(Fault::Disconnect),
                Exit::CleanRelease(Fault::LoseNotification),
                Exit::CleanRelease(Fault::ShortPartition),
            ];
            let exit = exits[w.rng.index(exits.len())];
            let contended = w.rng.chance(0.5);
            let leader = w.rng.chance(0.3);
            let scheme = w.scheme();
            let delay = w.rng.duration(50 * MS, 3 * T);
            let spec = || spec(leader, scheme, delay);
            let lh = w.held(h, spec())?;
            ensure!(
                w.sim.children(LOCK).contains(&MARKER.to_owned()),
                "a lock-delay holder keeps its marker"
            );
            ensure!(
                delays(&w.sim, h, lh).is_empty(),
                "a fresh lock has no delay"
            );
            let ln = if contended {
                let l = w.acquire(n, spec())?;
                w.settle()?;
                Some(l)
            } else {
                None
            };
            let h_node = w.sim.owned_nodes(h, LOCK);
            ensure!(h_node.len() == 1, "the holder's node: {h_node:?}");
            let h_node = h_node[0].clone();
            match exit {
                Exit::Expire => {
                    w.sim.expire_session(h);
                }
                Exit::LongPartition => {
                    let d = w.rng.duration(T * 3 / 2, T * 3);
                    w.sim.partition(h, d);
                }
                Exit::ForeignDelete => {
                    w.sim.admin_delete(&h_node).map_err(|e| e.to_string())?;
                }
                Exit::Close => w.sim.close(h),
                Exit::CleanRelease(fault) => {
                    w.sim.release(h, lh).map_err(|e| e.to_string())?;
                    inject(&mut w, h, fault)?;
                }
            }
            // The step that deletes the holder's node, on the server.
            w.until(20 * T, |s| s.get(&h_node).is_none())?;
            let gone = w.sim.now();
            let ln = match ln {
                Some(l) => l,
                None => w.acquire(n, spec())?,
            };
            let asked = w.sim.now();
            w.until(20 * T, |s| s.holds(n, ln))?;
            let granted = acquired_at(&w.sim, n, ln);
            let found = delays(&w.sim, n, ln);
            if exit.clean() {
                ensure!(found.is_empty(), "{exit:?}: delayed {found:?}");
            } else {
                let [(reported, until)] = found[..] else {
                    return Err(format!("{exit:?}: one delay expected, got {found:?}"));
                };
                let free_since = until.saturating_sub(delay);
                // Found free by the waiter itself: after the node went (or, for a
                // newcomer, after it asked), within a notification's latency.
                let seen_from = if contended { gone } else { asked };
                ensure!(
                free_since >= seen_from && free_since - seen_from <= 20 * MS,
                "{exit:?} (contended: {contended}): the delay counts from {free_since:?}, node gone at {gone:?}, asked at {asked:?}"
            );
                ensure!(
                    reported <= until,
                    "reported at {reported:?}, ends {until:?}"
                );
                ensure!(
                    granted >= until && granted - until <= 20 * MS,
                    "{exit:?}: granted at {granted:?}, the delay ends at {until:?}"
                );
                if exit == Exit::LongPartition {
                    // The old holder stopped trusting before its node went, so it had
                    // the whole delay for its late writes.
                    let lost = w
                        .sim
                        .events(h)
                        .iter()
                        .find(|r| r.lock == lh && matches!(r.event, LockEvent::Lost(_)))
                        .map(|r| r.at);
                    ensure!(
                        lost.is_some_and(|lost| lost + delay <= granted),
                        "lost at {lost:?}, next grant at {granted:?}"
                    );
                }
            }
            // The next holder's clean release removes the marker; the one after it
            // is not delayed.
            let lm = w.acquire(m, spec())?;
            w.settle()?;
            w.sim.release(n, ln).map_err(|e| e.to_string())?;
            w.until(10 * T, |s| s.holds(m, lm))?;
            ensure!(
                delays(&w.sim, m, lm).is_empty(),
                "delayed after a clean release"
            );
            if exit.clean() {
                ensure!(
                    w.sim.outcome(h, lh) == Some(&LockEvent::Released),
                    "clean release: {:?}",
                    w.sim.outcome(h, lh)
                );
            }
            w.sim.release(m, lm).map_err(|e| e.to_string())?;
            w.until(10 * T, |s| s.outcome(m, lm).is_some())?;
            ensure!(
                !w.sim.children(LOCK).contains(&MARKER.to_owned()),
                "marker left after clean releases: {:?}",
                w.sim.children(LOCK)
            );
            w.finish(&[(h, lh), (n, ln), (m, lm)])?;
            Ok(format!(
                "{exit:?} {}",
                if contended { "contended" } else { "newcomer" }
            ))
        },
    )
}
