//! Liveness: noticing a silent connection the crate never notices.
//!
//! The crate never notices a silent connection (no read timeout: it pings after 2/3
//! of the session timeout of idleness and waits for the answer forever). So the
//! driver watches the connection itself, as the Java client does: a request
//! unanswered for `reply_deadline` (T/3) makes the connection suspect (the core gets
//! `Disconnected`), and a connection without a reply for `probe_after` (T/3) is
//! probed (`exists("/")`). A silent network is thus reported at most 2/3 T after
//! the last reply, and never later than `T` less the core's expiry margin after the
//! newest answered request was issued (`lost_after`), when the core must report
//! held locks lost anyway: with the default margin (T/10) a held lock reads
//! `Suspended` for at least 0.23 T before it is `Lost`. A connection suspect for
//! `T + reply_deadline` is abandoned (the session is expired on the server by
//! then): the core gets `Abandoned` and a new client is opened.
//!
//! When the crate reconnects, it gives up for good (`Closed`) if the server's last
//! answer is more than `floor(T) + 1` s old. (The published crate counted from its
//! last *ping*, which a busy client never sends, so it gave up a session the server
//! still held on any connection loss; the binding uses the fork that counts from
//! the last answer, zookeeper-zklock: adapters/zookeeper-fork/README.md.) The probes keep that answer fresh on an idle connection, so
//! the crate itself no longer needs to ping.
//!
//! Only replies prove a connection alive. A watch notification may be the last
//! thing a dead connection delivers (the server fires our watches when it expires
//! our session, and a healed partition hands that over before the end of the
//! stream), so notifications never clear a suspicion, and the core gets none while
//! it believes the connection down: on `Connected` it re-lists and re-verifies.

use super::{Driver, Msg};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// The liveness timings derived from the session timeout `T` (see the module docs).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Timing {
    /// How long a connection may stay without a reply before the driver probes it:
    /// T/3, as the Java client pings.
    pub(crate) probe_after: Duration,
    /// How long a request may stay unanswered before the connection is suspect: T/3,
    /// so that a silent network is noticed 2/3 T after the last reply at the latest
    /// (the Java client's read timeout).
    pub(crate) reply_deadline: Duration,
    /// How long a suspect connection is kept before it is abandoned.
    pub(crate) abandon_after: Duration,
    /// How long a client may stay unconnected without any state change before it is
    /// given up as stuck (the crate's first connection attempt has no timeout).
    pub(crate) stuck_after: Duration,
}

impl Timing {
    pub(crate) fn new(t: Duration) -> Timing {
        let reply_deadline = t / 3;
        Timing {
            probe_after: t / 3,
            reply_deadline,
            abandon_after: t + reply_deadline,
            // The crate itself gives up within floor(T) + 1 s plus its 2 s connection
            // timeout; a client silent for longer is stuck.
            stuck_after: t + Duration::from_secs(4),
        }
    }

    /// The latest a silent network is reported, after the last reply.
    #[cfg(test)]
    pub(crate) fn worst_detection(&self) -> Duration {
        self.probe_after + self.reply_deadline
    }
}

impl Driver {
    /// Times everything by the session timeout the server granted the session the
    /// crate is now connected to (the crate learns it from the server's answer to
    /// its connection request, before it reports `Connected`): the liveness
    /// timings here, and the core's settings (grace, expiry margin, proof of
    /// contact), before the core hears of the session. The server keeps a
    /// session's timeout for its life; a new session after an expiry may be
    /// granted another, and gets its own.
    pub(super) fn adopt_session_timeout(&mut self) {
        let Some(zk) = &self.conn.zk else {
            return;
        };
        let granted = zk.session_timeout();
        if granted == self.session_timeout || granted.is_zero() {
            return;
        }
        self.note(&format!("session timeout: {granted:?} granted"));
        let config = self
            .settings
            .options
            .lock_config(granted, self.settings.seed);
        self.session_timeout = granted;
        self.timing = Timing::new(granted);
        self.lost_after = granted.saturating_sub(config.margin());
        self.link.reconfigure(config);
    }

    /// The connection looks dead although the crate believes it connected.
    pub(super) fn suspect(&mut self, now: Instant) {
        if self.conn.suspect_since.is_none() {
            self.conn.suspect_since = Some(now);
            self.counters.silences.fetch_add(1, Ordering::AcqRel);
            self.sync_core();
        }
    }

    /// The server answered a request issued at `issued`.
    pub(super) fn heard(&mut self, issued: Instant) {
        self.conn.heard_at = self.conn.heard_at.max(issued);
    }

    pub(super) fn contact(&mut self, now: Instant) {
        self.conn.last_contact = now;
        if self.conn.suspect_since.take().is_some() {
            self.sync_core();
        }
    }

    pub(super) fn issue_ping(&mut self, now: Instant) {
        let Some(zk) = self.conn.zk.clone() else {
            return;
        };
        self.conn.ping_since = Some(now);
        self.conn.last_ping = Some(now);
        let gen = self.conn.gen;
        let tx = self.tx.clone();
        self.pool.run(
            move || match zk.exists("/", false) {
                Ok(_) => (true, true),
                Err(zookeeper::ZkError::ConnectionLoss) => (false, false),
                Err(_) => (true, false),
            },
            move |(contact, heard)| {
                let _ = tx.send(Msg::Ping {
                    gen,
                    contact,
                    heard,
                });
            },
        );
    }

    pub(super) fn on_tick(&mut self) {
        let now = Instant::now();
        if !self.ever_connected && now >= self.connect_deadline {
            let attempts = super::reopening::Attempts {
                every_client_closed: false,
                progress: self.connect_progress(now),
            };
            self.fail_connect(self.no_session(attempts));
            return;
        }
        if self.link_timeout.is_some_and(|due| due <= now) {
            self.link.handle_timeout(now);
            self.drain();
        }
        if self.conn.zk.is_none() {
            if self.conn.reopen_at.is_some_and(|at| at <= now) && !self.stop {
                self.open(now);
            }
            return;
        }
        if self.conn.probing.is_none()
            && !self.conn.verified
            && self.conn.connected
            && self.conn.probe_retry_at.map_or(true, |at| at <= now)
        {
            self.start_probe();
        }
        if !self.ever_connected
            && !self.conn.verified
            && self.conn.opened_at + self.timing.stuck_after <= now
        {
            // The first client has not given a session in all that time, whatever
            // states it went through (it said Connected but the probe that learns
            // the session never got an answer: seen in CI, under load). Nothing is
            // held yet: start over with a fresh client rather than wait for
            // `connect` to time out on this one.
            self.link_down(now);
            return;
        }
        if !self.conn.connected {
            if self.conn.last_state_at + self.timing.stuck_after <= now {
                // Neither connected nor closed, and silent: the crate's first
                // connection attempt (which has no timeout) hangs on a server that
                // accepted the connection and never answered. Start over.
                self.link_down(now);
            }
            return;
        }
        let t = self.timing;
        match self.conn.suspect_since {
            None => match self.conn.oldest_pending() {
                Some(oldest) if oldest + t.reply_deadline <= now => self.suspect(now),
                // Still no answer when the server could soon expire the session.
                Some(_) if self.conn.heard_at + self.lost_after <= now => self.suspect(now),
                Some(_) => {}
                None => {
                    let idle_since = self.conn.last_contact.max(self.conn.connected_at);
                    if idle_since + t.probe_after <= now {
                        self.issue_ping(now);
                    }
                }
            },
            Some(since) => {
                if since + t.abandon_after <= now {
                    self.link_down(now);
                } else if self.conn.ping_since.is_none()
                    && self
                        .conn
                        .last_ping
                        .map_or(true, |at| at + t.reply_deadline <= now)
                {
                    // Find out when the connection is back.
                    self.issue_ping(now);
                }
            }
        }
    }

    pub(super) fn next_deadline(&self) -> Option<Instant> {
        let t = self.timing;
        let l = &self.conn;
        let mut next: Option<Instant> = self.link_timeout;
        let mut at = |i: Instant| next = Some(next.map_or(i, |n| n.min(i)));
        if !self.ever_connected {
            at(self.connect_deadline);
        }
        if l.zk.is_none() {
            if let Some(reopen) = l.reopen_at {
                at(reopen);
            }
        } else {
            if let Some(retry) = l.probe_retry_at {
                at(retry);
            }
            if !l.connected {
                at(l.last_state_at + t.stuck_after);
            }
            if !self.ever_connected && !l.verified {
                at(l.opened_at + t.stuck_after);
            }
            if l.connected {
                match l.suspect_since {
                    None => match l.oldest_pending() {
                        Some(oldest) => {
                            at(oldest + t.reply_deadline);
                            at(l.heard_at + self.lost_after);
                        }
                        None => at(l.last_contact.max(l.connected_at) + t.probe_after),
                    },
                    Some(since) => {
                        at(since + t.abandon_after);
                        if l.ping_since.is_none() {
                            at(l.last_ping.map_or(since, |p| p + t.reply_deadline));
                        }
                    }
                }
            }
        }
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detection_leaves_a_suspended_window() {
        for ms in [500, 1000, 2000, 5000, 10_000, 30_000] {
            let t = Duration::from_millis(ms);
            let timing = Timing::new(t);
            // Reported 2/3 T after the last reply at the latest: a held lock then
            // reads `Suspended` for at least the 0.9 T - 2/3 T before the core must
            // report it lost (with the default margin of T/10).
            assert!(timing.worst_detection() <= t * 2 / 3, "{t:?}: {timing:?}");
            let lost_after = t - lock_core::Config::new(t, 0).margin();
            assert!(timing.worst_detection() + t / 5 < lost_after, "{t:?}");
        }
    }
}
