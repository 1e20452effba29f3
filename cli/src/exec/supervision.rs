//! The decisions of `exec`'s watch over CMD, apart from the processes and the
//! runtime: [`Supervision`] takes what happened (a lock event, zklock stopped, a
//! deadline passed) and says what to do to CMD ([`Act`]); `exec::supervise`
//! carries it out. The windows it decides by are lock-core's [`Config`]'s, the
//! one owner of the session-timeout rules: the [`margin`](Config::margin) CMD
//! gets between SIGTERM and SIGKILL (and the guard's kill grace), and the
//! [`ping_interval`](Config::ping_interval), the longest zklock may be stopped
//! with the lock still trusted.
//!
//! Calling order: [`Supervision::deadline`] before every wait, then one of the
//! `handle_*` methods for what ended the wait.

use lock_core::{Config, LockEvent, LostReason};
use std::time::{Duration, Instant};

/// Where CMD stands with respect to the lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// The lock is held; CMD runs.
    Running,
    /// The lock is suspended: CMD keeps running until `until` unless it resumes.
    Suspended { until: Instant },
    /// CMD's group was sent SIGTERM; SIGKILL at `kill_at`.
    Terminating { kill_at: Instant },
    /// CMD's group was sent SIGKILL.
    Killed,
}

/// What to do to CMD; every message is said (`zklock: ...`) before acting.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Act {
    /// Nothing.
    Nothing,
    /// Say this; CMD runs on (for now).
    Say(&'static str),
    /// Say this, if anything, then hand the lock's deadline on to the guard.
    Renew(Option<&'static str>),
    /// Let CMD go on after zklock's own stop.
    Resume,
    /// Say this, then send SIGTERM to CMD's group.
    Terminate(String),
    /// Say this, then send SIGKILL to CMD's group.
    Kill(&'static str),
}

/// The watch over CMD while the lock is held: the phase, whether the lock was
/// lost (the exit code 74), whether its events still come.
#[derive(Debug)]
pub(crate) struct Supervision {
    /// The lock's node, named when it is lost.
    node: String,
    config: Config,
    phase: Phase,
    lost: bool,
    events: bool,
}

impl Supervision {
    /// CMD just started under the lock held with `node`.
    pub(crate) fn new(node: String, config: Config) -> Supervision {
        Supervision {
            node,
            config,
            phase: Phase::Running,
            lost: false,
            events: true,
        }
    }

    /// The lock was lost, suspended too long or revoked while CMD ran, or zklock
    /// was stopped too long: the lock is no longer guaranteed.
    pub(crate) fn lost(&self) -> bool {
        self.lost
    }

    /// The lock's events are still worth waiting for.
    pub(crate) fn hears_events(&self) -> bool {
        self.events
    }

    /// The lock's deadline is still followed (handed on to the guard).
    pub(crate) fn follows_deadline(&self) -> bool {
        matches!(self.phase, Phase::Running | Phase::Suspended { .. })
    }

    /// When [`handle_deadline`](Self::handle_deadline) is due, if at all.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        match self.phase {
            Phase::Suspended { until } => Some(until),
            Phase::Terminating { kill_at } => Some(kill_at),
            Phase::Running | Phase::Killed => None,
        }
    }

    /// zklock was stopped (Ctrl-Z) for `stopped_for` and runs again at `now`.
    /// After a ping's interval the session may be near its expiry: CMD is
    /// stopped rather than let go on.
    pub(crate) fn handle_stopped(&mut self, stopped_for: Duration, now: Instant) -> Act {
        if stopped_for >= self.config.ping_interval() && self.follows_deadline() {
            self.terminate(
                format!(
                    "zklock was stopped for {stopped_for:.1?}: the lock is no longer \
                     guaranteed; stopping CMD"
                ),
                now,
            )
        } else {
            Act::Resume
        }
    }

    /// The lock's next event (`None`: no more), with the lock's trust deadline
    /// at `now`.
    pub(crate) fn handle_event(
        &mut self,
        event: Option<LockEvent>,
        trusted_until: Option<Instant>,
        now: Instant,
    ) -> Act {
        match event {
            Some(LockEvent::Suspended) => {
                if self.phase != Phase::Running {
                    return Act::Nothing;
                }
                // CMD gets SIGTERM a margin (T/10) after the drop unless the
                // connection comes back, and half a margin before the lock's
                // deadline at the latest (it has that long to exit cleanly
                // before the guard stops its group). A margin, not less: the
                // README's failure table has a holder ride out any drop shorter
                // than its tolerance (a server restart, a leader election:
                // `Resumed`, never `Lost`), and safety does not hang on this
                // SIGTERM (the guard stops CMD at the deadline whatever
                // happens), so a shorter wait would only kill CMD on drops the
                // lock survives.
                let margin = self.config.margin();
                let until = trusted_until
                    .map_or(now + margin, |at| at.max(now + margin / 2) - margin / 2)
                    .min(now + margin);
                self.phase = Phase::Suspended { until };
                Act::Say(
                    "connection to ZooKeeper lost: the lock is suspended; \
                     stopping CMD unless it comes back at once",
                )
            }
            Some(LockEvent::Resumed) => {
                if !matches!(self.phase, Phase::Suspended { .. }) {
                    return Act::Nothing;
                }
                self.phase = Phase::Running;
                Act::Renew(Some(
                    "connection back: the lock is held again; CMD continues",
                ))
            }
            // Only a --revocable lock hears this.
            Some(LockEvent::RevocationRequested) if self.follows_deadline() => self.terminate(
                "revocation requested: stopping CMD, then letting go".to_owned(),
                now,
            ),
            Some(LockEvent::Lost(reason)) => {
                self.events = false;
                self.handle_lost(&reason, now)
            }
            Some(_) => Act::Nothing,
            None => {
                self.events = false;
                Act::Nothing
            }
        }
    }

    /// The [`deadline`](Self::deadline) passed at `now`.
    pub(crate) fn handle_deadline(&mut self, now: Instant) -> Act {
        match self.phase {
            Phase::Suspended { .. } => self.terminate(
                "the lock is no longer guaranteed: stopping CMD (SIGTERM)".to_owned(),
                now,
            ),
            Phase::Terminating { .. } => {
                self.phase = Phase::Killed;
                Act::Kill("CMD did not exit on SIGTERM: killing its process group (SIGKILL)")
            }
            Phase::Running | Phase::Killed => Act::Nothing,
        }
    }

    /// The lock was lost; if CMD still ran under it, it is stopped.
    fn handle_lost(&mut self, reason: &LostReason, now: Instant) -> Act {
        if !self.follows_deadline() {
            self.lost = true;
            return Act::Nothing;
        }
        self.terminate(
            format!(
                "the lock at {} was lost ({}): stopping CMD",
                self.node,
                crate::explain::lost(reason)
            ),
            now,
        )
    }

    /// Records the lock as no longer guaranteed, SIGTERM now and SIGKILL a
    /// margin later.
    fn terminate(&mut self, message: String, now: Instant) -> Act {
        self.lost = true;
        self.phase = Phase::Terminating {
            kill_at: now + self.config.margin(),
        };
        Act::Terminate(message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    fn watch() -> Supervision {
        Supervision::new("/l/n-1".to_owned(), Config::new(10 * SECOND, 0))
    }

    #[test]
    fn suspended_then_sigterm_half_a_margin_before_the_deadline_then_sigkill() {
        let mut w = watch();
        let now = Instant::now();
        let trusted_until = now + 10 * SECOND / 10; // a tenth ahead, as suspended
        let act = w.handle_event(Some(LockEvent::Suspended), Some(trusted_until), now);
        assert!(matches!(act, Act::Say(m) if m.contains("suspended")));
        assert_eq!(w.deadline(), Some(trusted_until - SECOND / 2));
        assert!(!w.lost());
        let at = trusted_until - SECOND / 2;
        assert!(matches!(w.handle_deadline(at), Act::Terminate(m) if m.contains("SIGTERM")));
        assert!(w.lost());
        assert_eq!(w.deadline(), Some(at + SECOND));
        assert!(!w.follows_deadline());
        assert!(matches!(w.handle_deadline(at + SECOND), Act::Kill(_)));
        assert_eq!(w.deadline(), None);
        assert_eq!(w.handle_deadline(at + 2 * SECOND), Act::Nothing);
    }

    #[test]
    fn suspension_waits_at_most_a_margin_and_at_least_half_of_one() {
        let now = Instant::now();
        let mut far = watch();
        far.handle_event(Some(LockEvent::Suspended), Some(now + 60 * SECOND), now);
        assert_eq!(far.deadline(), Some(now + SECOND));
        let mut past = watch();
        past.handle_event(Some(LockEvent::Suspended), Some(now), now);
        assert_eq!(past.deadline(), Some(now));
        let mut unknown = watch();
        unknown.handle_event(Some(LockEvent::Suspended), None, now);
        assert_eq!(unknown.deadline(), Some(now + SECOND));
    }

    #[test]
    fn resumed_renews_and_runs_on() {
        let mut w = watch();
        let now = Instant::now();
        w.handle_event(Some(LockEvent::Suspended), Some(now + SECOND), now);
        let act = w.handle_event(Some(LockEvent::Resumed), Some(now + 9 * SECOND), now);
        assert!(matches!(act, Act::Renew(Some(m)) if m.contains("connection back")));
        assert_eq!(w.deadline(), None);
        assert!(!w.lost());
        // Resumed while running: nothing to say.
        assert_eq!(
            w.handle_event(Some(LockEvent::Resumed), None, now),
            Act::Nothing
        );
    }

    #[test]
    fn a_lost_lock_stops_cmd_once_and_ends_the_events() {
        let mut w = watch();
        let now = Instant::now();
        let act = w.handle_event(Some(LockEvent::Lost(LostReason::SessionExpired)), None, now);
        assert!(matches!(act, Act::Terminate(m) if m.starts_with("the lock at /l/n-1 was lost")));
        assert!(w.lost() && !w.hears_events());
        assert_eq!(w.deadline(), Some(now + SECOND));
        // A 60 s session's CMD gets the core's margin with its 2 s cap, not 6 s.
        let mut long = Supervision::new("/l/n-1".to_owned(), Config::new(60 * SECOND, 0));
        long.handle_event(Some(LockEvent::Lost(LostReason::SessionExpired)), None, now);
        assert_eq!(long.deadline(), Some(now + 2 * SECOND));
    }

    #[test]
    fn revocation_stops_cmd_only_while_it_runs_under_the_lock() {
        let mut w = watch();
        let now = Instant::now();
        let act = w.handle_event(Some(LockEvent::RevocationRequested), None, now);
        assert!(matches!(act, Act::Terminate(m) if m.contains("revocation")));
        assert!(w.lost());
        assert_eq!(
            w.handle_event(Some(LockEvent::RevocationRequested), None, now),
            Act::Nothing
        );
    }

    #[test]
    fn a_stop_of_zklock_longer_than_a_ping_interval_stops_cmd() {
        let now = Instant::now();
        let mut short = watch();
        assert_eq!(short.handle_stopped(3 * SECOND, now), Act::Resume);
        assert!(!short.lost());
        let mut long = watch();
        assert!(
            matches!(long.handle_stopped(4 * SECOND, now), Act::Terminate(m) if m.contains("stopped for 4.0s"))
        );
        assert!(long.lost());
        // Already stopping CMD: zklock's own stop changes nothing.
        assert_eq!(long.handle_stopped(9 * SECOND, now), Act::Resume);
    }

    #[test]
    fn the_end_of_events_is_no_loss() {
        let mut w = watch();
        assert_eq!(w.handle_event(None, None, Instant::now()), Act::Nothing);
        assert!(!w.hears_events() && !w.lost());
    }
}
