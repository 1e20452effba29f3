//! Server settings under which a session can be expired by a majority while
//! the server it is connected to still answers it, judged from a
//! [`ServerConf`] and the negotiated session timeout.
//!
//! The leader expires sessions. A follower learns of its clients' requests and
//! pings and reports them to the leader with its replies to the leader's pings,
//! sent every `tickTime`/2. Cut off from the leader, a follower keeps answering
//! its clients (reads, pings) until it gives up on the leader, up to
//! `syncLimit` × `tickTime` later (a leader cut off from its quorum likewise),
//! then drops them: only then does a client see a disconnect. Meanwhile the
//! majority can expire the session `T` (the session timeout) after the last
//! touch the leader heard of, which may be a ping interval (a third of `T` for
//! the Java client, Curator and kazoo) plus half a tick older than the cut. So a
//! client is told of the cut before the majority can expire its session only if
//!
//! `syncLimit × tickTime < 2/3 × T − tickTime/2`, i.e. `T > 1.5 × (syncLimit × tickTime + tickTime/2)`,
//!
//! and the session timeout spans at least two ticks (sessions expire on tick
//! boundaries and the leader's view is half a tick old). The rules are judged
//! for the timeout the server grants (clamped into [`minSessionTimeout`,
//! `maxSessionTimeout`]); a client that times its locks by a longer one than
//! granted is a hazard of its own.

use crate::server::conf::ServerConf;
use std::fmt;
use std::time::Duration;

/// What is wrong, from [`Hazard::kind`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum HazardKind {
    /// `syncLimit × tickTime ≥` the session timeout: a server cut off from the
    /// ensemble answers the session after the majority may have expired it,
    /// even a session that sent something just before the cut.
    FollowerOutlivesSession,
    /// `syncLimit × tickTime` is under the session timeout but without the
    /// margin of the rule above: a session idle for a ping interval before the
    /// cut can be expired while its server still answers it.
    ThinFollowerMargin,
    /// The session timeout is shorter than two ticks.
    SessionUnderTwoTicks,
    /// The client times its locks by a longer session timeout than the server
    /// grants (`maxSessionTimeout` is lower): it would report a lock lost only
    /// after the server may have expired the session. Only for a client that
    /// cannot learn the negotiated timeout (both of zklock's bindings learn it
    /// and time their locks by it), or whose servers grant different timeouts
    /// (the check judges the server asked, the timeout came from another).
    SessionLongerThanGranted,
}

/// A server setting that lets a majority expire a session (and grant its locks
/// to others) before the session's client can learn it is cut off, from
/// [`Hazard::check`]; reported as
/// [`ConnectionEvent::ServerHazard`](crate::ConnectionEvent::ServerHazard).
/// Its `Display` says what is wrong and how to fix it.
///
/// ```
/// use zklock::{Hazard, HazardKind, ServerConf};
/// use std::time::Duration;
/// // ZooKeeper's sample zoo.cfg (tickTime 2000, syncLimit 5), a 10 s session.
/// let conf = ServerConf::parse("tickTime=2000\nsyncLimit=5\n\
///     minSessionTimeout=4000\nmaxSessionTimeout=40000\n").unwrap();
/// let hazards = Hazard::check(&conf, Duration::from_secs(10));
/// assert_eq!(hazards[0].kind, HazardKind::FollowerOutlivesSession);
/// assert_eq!(hazards[0].safe_session_timeout(), Duration::from_millis(16_500));
/// assert!(Hazard::check(&conf, Duration::from_secs(17)).is_empty());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Hazard {
    /// What is wrong.
    pub kind: HazardKind,
    /// The server's settings.
    pub conf: ServerConf,
    /// The negotiated session timeout judged.
    pub session_timeout: Duration,
}

impl Hazard {
    /// The hazards of a session whose client times its locks by
    /// `session_timeout` (the negotiated timeout, or the requested one when the
    /// client cannot learn it) on a server with settings `conf`; empty when the
    /// rules hold. The rules are judged for the timeout the server grants.
    pub fn check(conf: &ServerConf, session_timeout: Duration) -> Vec<Hazard> {
        let mut hazards = Vec::new();
        let granted = conf.negotiate(session_timeout);
        if granted < session_timeout {
            hazards.push(Hazard {
                kind: HazardKind::SessionLongerThanGranted,
                conf: *conf,
                session_timeout,
            });
        }
        let session_timeout = granted;
        let hazard = |kind| Hazard {
            kind,
            conf: *conf,
            session_timeout,
        };
        if let Some(lag) = conf.follower_lag() {
            if lag >= session_timeout {
                hazards.push(hazard(HazardKind::FollowerOutlivesSession));
            } else if session_timeout <= lag_bound(conf.tick_time, lag) {
                hazards.push(hazard(HazardKind::ThinFollowerMargin));
            }
        }
        if session_timeout < conf.tick_time * 2 {
            hazards.push(hazard(HazardKind::SessionUnderTwoTicks));
        }
        hazards
    }

    /// The session timeout that fixes this hazard at the server's settings: a
    /// timeout above it (lag hazards), at least it (two ticks), or at most it
    /// (longer than granted).
    pub fn safe_session_timeout(&self) -> Duration {
        match (self.kind, self.conf.follower_lag()) {
            (HazardKind::SessionLongerThanGranted, _) => self.conf.max_session_timeout,
            (HazardKind::SessionUnderTwoTicks, _) | (_, None) => self.conf.tick_time * 2,
            (_, Some(lag)) => lag_bound(self.conf.tick_time, lag),
        }
    }

    /// The largest `syncLimit × tickTime` that is safe for this session
    /// timeout (strictly less than it is); `None` when no lag is (the session
    /// timeout is too short for the tick).
    pub fn max_follower_lag(&self) -> Option<Duration> {
        (self.session_timeout * 2 / 3).checked_sub(self.conf.tick_time / 2)
    }
}

impl ServerConf {
    /// The lag rule's bound, `1.5 × (syncLimit × tickTime + tickTime/2)`: a
    /// session timeout must exceed it; `None` for a standalone server.
    ///
    /// ```
    /// let conf = zklock::ServerConf::new(
    ///     std::time::Duration::from_secs(2), Some(5),
    ///     std::time::Duration::from_secs(4), std::time::Duration::from_secs(40));
    /// assert_eq!(conf.lag_bound(), Some(std::time::Duration::from_millis(16_500)));
    /// ```
    pub fn lag_bound(&self) -> Option<Duration> {
        Some(lag_bound(self.tick_time, self.follower_lag()?))
    }
}

/// `1.5 × (lag + tick/2)`: the session timeout must exceed it.
fn lag_bound(tick: Duration, lag: Duration) -> Duration {
    lag * 3 / 2 + tick * 3 / 4
}

/// `10 s`, `16.5 s`, `0.75 s`: whole milliseconds, trailing zeros dropped.
pub(crate) fn secs(d: Duration) -> String {
    let millis = d.as_millis();
    let text = format!("{}.{:03}", millis / 1000, millis % 1000);
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text} s")
}

impl fmt::Display for Hazard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let conf = &self.conf;
        let (tick, timeout) = (conf.tick_time, self.session_timeout);
        let safe = self.safe_session_timeout();
        let raise = if safe >= conf.max_session_timeout {
            format!(
                "raise maxSessionTimeout (now {}) and the session timeout above {}",
                secs(conf.max_session_timeout),
                secs(safe)
            )
        } else {
            format!("raise the session timeout above {}", secs(safe))
        };
        match (self.kind, conf.follower_lag(), conf.sync_limit) {
            (HazardKind::SessionLongerThanGranted, ..) => write!(
                f,
                "the client times its locks by a session timeout of {}, but the server \
                 grants at most {} (maxSessionTimeout): a lock would be reported lost only \
                 after the server may have expired the session; ask for at most {}, or \
                 raise maxSessionTimeout",
                secs(timeout),
                secs(conf.max_session_timeout),
                secs(conf.max_session_timeout)
            ),
            (HazardKind::SessionUnderTwoTicks, ..) | (_, None, _) | (_, _, None) => write!(
                f,
                "session timeout {} is under two ticks (tickTime {}): the leader's view of \
                 the session is up to half a tick old and sessions expire on tick \
                 boundaries; raise the session timeout to at least {} or lower tickTime \
                 below {}",
                secs(timeout),
                secs(tick),
                secs(safe),
                secs(timeout / 2)
            ),
            (kind, Some(lag), Some(sync_limit)) => {
                let what = if kind == HazardKind::FollowerOutlivesSession {
                    "≥"
                } else {
                    "leaves too little of"
                };
                write!(
                    f,
                    "syncLimit × tickTime = {sync_limit} × {} = {} {what} the session timeout \
                     {}: a server cut off from the ensemble answers the session for that long, \
                     after a majority may have expired it and granted its locks; ",
                    secs(tick),
                    secs(lag),
                    secs(timeout),
                )?;
                match self.max_follower_lag() {
                    Some(max) if !max.is_zero() => {
                        let ticks = (max.as_nanos().div_ceil(tick.as_nanos().max(1)) as u64)
                            .saturating_sub(1);
                        write!(
                            f,
                            "lower syncLimit or tickTime so that syncLimit × tickTime < {}",
                            secs(max)
                        )?;
                        if ticks >= 1 {
                            write!(f, " (syncLimit ≤ {ticks} at this tickTime)")?;
                        }
                        write!(f, ", or {raise}")
                    }
                    _ => write!(f, "{raise}"),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `maxSessionTimeout` ZooKeeper's default (20 ticks), `minSessionTimeout`
    /// lowered to 100 ms (the default, 2 ticks, rules out a session under two).
    fn conf(tick_ms: u64, sync_limit: Option<u32>) -> ServerConf {
        ServerConf {
            tick_time: Duration::from_millis(tick_ms),
            sync_limit,
            min_session_timeout: Duration::from_millis(100),
            max_session_timeout: Duration::from_millis(tick_ms * 20),
        }
    }

    /// Asserts that `hazard`'s message says each of `parts`.
    fn says(hazard: &Hazard, parts: &[&str]) {
        let text = hazard.to_string();
        for part in parts {
            assert!(text.contains(part), "{part:?} not in {text}");
        }
    }

    fn kinds(conf: &ServerConf, timeout_ms: u64) -> Vec<HazardKind> {
        Hazard::check(conf, Duration::from_millis(timeout_ms))
            .iter()
            .map(|h| h.kind)
            .collect()
    }

    #[test]
    fn the_sample_config_with_a_ten_second_session_is_unsafe() {
        let sample = conf(2000, Some(5));
        assert_eq!(
            kinds(&sample, 10_000),
            [HazardKind::FollowerOutlivesSession]
        );
        assert_eq!(kinds(&sample, 16_500), [HazardKind::ThinFollowerMargin]);
        assert_eq!(kinds(&sample, 16_501), []);
        // 2/3 × 10 s − 1 s = 5.667 s: syncLimit 2 (4 s) fits, 3 (6 s) does not.
        let parts = [
            "syncLimit × tickTime = 5 × 2 s = 10 s ≥ the session timeout 10 s",
            "syncLimit × tickTime < 5.666 s (syncLimit ≤ 2 at this tickTime)",
            "raise the session timeout above 16.5 s",
        ];
        says(&Hazard::check(&sample, Duration::from_secs(10))[0], &parts);
    }

    #[test]
    fn the_lag_rule_has_its_margin() {
        // The issue's acceptance setup: tickTime 500, syncLimit 4, 4 s sessions.
        let acceptance = conf(500, Some(4));
        assert_eq!(kinds(&acceptance, 4000), []);
        assert_eq!(kinds(&acceptance, 3375), [HazardKind::ThinFollowerMargin]);
        assert_eq!(
            kinds(&acceptance, 2000),
            [HazardKind::FollowerOutlivesSession]
        );
        // A standalone server has no lag.
        assert_eq!(kinds(&conf(2000, None), 4000), []);
    }

    #[test]
    fn a_session_under_two_ticks() {
        let standalone = conf(2000, None);
        assert_eq!(kinds(&standalone, 3999), [HazardKind::SessionUnderTwoTicks]);
        let hazard = Hazard::check(&standalone, Duration::from_millis(3000))[0];
        assert_eq!(hazard.safe_session_timeout(), Duration::from_secs(4));
        let parts = [
            "raise the session timeout to at least 4 s",
            "lower tickTime below 1.5 s",
        ];
        says(&hazard, &parts);
    }

    #[test]
    fn a_fix_beyond_max_session_timeout_says_so() {
        let conf = conf(2000, Some(15)); // 30 s of lag, max 40 s
        let hazard = Hazard::check(&conf, Duration::from_secs(40))[0];
        assert_eq!(hazard.kind, HazardKind::ThinFollowerMargin);
        let raise = "raise maxSessionTimeout (now 40 s) and the session timeout above 46.5 s";
        says(&hazard, &[raise]);
        // A session too short for any lag at this tick.
        let short = Hazard::check(&conf, Duration::from_millis(1400))[0];
        assert_eq!(short.max_follower_lag(), None);
        assert!(!short.to_string().contains("lower syncLimit"));
    }

    #[test]
    fn a_session_longer_than_granted() {
        // Asked 60 s of a server granting at most 40 s (the sample settings).
        let hazards = Hazard::check(&conf(2000, Some(5)), Duration::from_secs(60));
        assert_eq!(hazards.len(), 1, "{hazards:?}");
        assert_eq!(hazards[0].kind, HazardKind::SessionLongerThanGranted);
        assert_eq!(hazards[0].session_timeout, Duration::from_secs(60));
        assert_eq!(hazards[0].safe_session_timeout(), Duration::from_secs(40));
        says(&hazards[0], &["grants at most 40 s"]);
        // The lag rule is judged for what is granted: 40 s, which passes it;
        // a 4 s lag bound fails at 4 s (the minimum raises 1 s to 4 s).
        let defaults = ServerConf::new(
            Duration::from_secs(2),
            Some(2),
            Duration::from_secs(4),
            Duration::from_secs(40),
        );
        let short = Hazard::check(&defaults, Duration::from_secs(1));
        assert_eq!(short[0].kind, HazardKind::FollowerOutlivesSession);
        assert_eq!(short[0].session_timeout, Duration::from_secs(4));
    }

    #[test]
    fn seconds() {
        assert_eq!(secs(Duration::from_secs(10)), "10 s");
        assert_eq!(secs(Duration::from_millis(16_500)), "16.5 s");
        assert_eq!(secs(Duration::from_millis(750)), "0.75 s");
        assert_eq!(secs(Duration::ZERO), "0 s");
    }
}
