//! Proven contact with the ensemble's leader: until when a held lock can be trusted.
//!
//! # Why a reply from our server is not enough
//!
//! ZooKeeper's *leader* expires sessions: its session tracker gives a session
//! until one session timeout `T` after the last activity it *knows of* (rounded up
//! to the next tick). A follower records the activity of its own clients (every
//! request, every ping) in a table that it hands to the leader only in its replies
//! to the leader's pings, which come every `tickTime / 2`. A follower cut off from
//! the leader goes on answering its clients' reads and pings until it gives up on
//! the leader, about `syncLimit x tickTime` later: all that time the leader hears
//! nothing of the session, expires it one `T` after the last activity forwarded,
//! and grants its locks to others. So the time since our server last answered
//! says nothing about when the session can expire; with `syncLimit x tickTime >=
//! T` our server may answer until after the expiry.
//!
//! # What a reply does prove
//!
//! Writes and `sync` ([`Op::passes_leader`]) are answered only after the follower
//! has forwarded them to the leader and the leader has handled them. The follower
//! sends its ping replies and forwarded requests on one TCP stream, and the leader
//! handles that stream in order. So when such a request `S`, sent at `t_S`, is
//! answered, and an earlier request `X` of the same connection (any request: the
//! follower records the activity when it receives it) was answered at `r_X <= t_S
//! - D`, then between receiving `X` (before `r_X`) and forwarding `S` (after `t_S`)
//! the follower was pinged at least once if `D` exceeds the ping period, and its
//! ping reply, carrying `X`'s activity, reached the leader before `S` did. The
//! leader therefore heard of the session at some instant after `X` was sent, and
//! cannot expire it before `t_X + T`. The proven contact is the latest such `t_X`;
//! held locks are trusted until `t_X + T - margin`
//! ([`Config::margin`](crate::Config::margin)) and are
//! [`Suspended`](crate::LockEvent::Suspended) a [`Config::suspend_lead`] before.
//!
//! `D` is [`Config::touch_bound`]: a third of `T`, above the ping period of a
//! quarter of `T` at most that ZooKeeper's default bounds on the session timeout
//! (`minSessionTimeout` = 2 ticks) imply. Every time the core uses is on the safe
//! side: a send time is taken when the request is queued (it leaves later), a
//! reply time when the core sees it (it arrived earlier), so proven contact is
//! never later than the truth.
//!
//! A `Connected` report counts as contact at the instant it is handled: opening a
//! session is a transaction of the leader's, and reopening one on a follower asks
//! the leader to revalidate it (which renews it) before the client hears back.
//! That one server-to-client hop of lateness is what the margin is for, with the
//! adapter's own lateness.
//!
//! # What the server tells
//!
//! A binding may learn more of the server its session is connected to
//! ([`Session::learn_server`](crate::Session::learn_server), a [`ServerRole`]):
//! lock-client's bindings ask `srvr` (its `Mode`; ZooKeeper's default
//! `4lw.commands.whitelist` allows it) and `conf` (its `tickTime`; often
//! refused) of the servers the process is connected to, after the connection is
//! established, and report what holds for every one of them.
//!
//! - **Standalone.** A standalone server is the session tracker: it touches the
//!   session when it receives any request, so every answer (reads too, errors
//!   from the server too) proves contact at the request's send time, with no `D`
//!   at all. A restarted standalone server gives every session it reloads a
//!   whole timeout from its start, so a proof from before the restart stays a
//!   lower bound.
//! - **Ensemble member with a known `tickTime`.** `D` becomes two ticks (when
//!   shorter than `T/3`). For a follower one would do: the leader pings every
//!   half tick, and the other half is the slack for its scheduling and the
//!   network. The second tick is for the isolated leader below. A follower
//!   stops waiting for its leader `syncLimit x tickTime` after it last heard
//!   from it, which can be half a tick before the cut (the leader's pings come
//!   every half tick); the leader counts ticks once per `tickTime` and gives up
//!   on its quorum when a follower's acknowledgement is more than `syncLimit` of
//!   them old, checked once a tick. So an isolated leader answers up to about
//!   two ticks after its followers start electing, and the new leader restarts
//!   every session's timeout only once it is established, later still. With one
//!   tick, lock-partition measured 2 to 8 ms between a cut-off holder's deadline
//!   and the next grant in the leader-isolated shape (T = 4 s, 500 ms ticks,
//!   syncLimit 4): the margin alone was covering the difference. All members
//!   are assumed to have one `tickTime`, as ZooKeeper's own timeouts assume. The
//!   leader is treated like a follower here: which member is the leader changes
//!   at every election, and trusting it more is not worth a role that can change
//!   under the connection.
//! - **Nothing known** (a refused or failed probe, members that disagree, or
//!   before the report is confirmed): `D = T/3`, as without a report.
//!
//! A report is about one connection. It counts once a request sent after the
//! report was handled is answered on that connection: the connection was then up
//! from before the probe was sent until after its answer, and a server that
//! changes role or restarts closes every client connection, so every answer on
//! that connection comes from a server of the reported kind. It is forgotten at
//! every disconnection, and the binding asks again after each reconnect (a
//! report made for an earlier connection is dropped by lock-client).
//!
//! # Where it does not hold
//!
//! - A server whose `minSessionTimeout` was lowered below two ticks can grant a
//!   session timeout under `2 x tickTime`; its leader's pings may then come more
//!   than a third of the timeout apart, and a proof can run ahead of what the
//!   leader heard. `zklock doctor` and the bindings' server check report it; raise
//!   the session timeout to at least two ticks.
//! - An isolated *leader* answers `sync` from its own state until it notices it
//!   lost its quorum (about `syncLimit x tickTime`, and up to about two ticks
//!   after its followers give up on it). Without a known tick, the sessions it answers for
//!   are safe only because the new leader, elected after the followers give up
//!   on the old one, restarts every session's timeout when it takes over: a race
//!   won by `D` (`T/3`, at least two thirds of a tick) plus the election's own
//!   duration and the margin; with a known tick, `D` itself covers the two ticks
//!   (see above).
//! - Time on both sides is assumed to run at the same rate within the margin
//!   ([`Config::margin`](crate::Config::margin)); a server whose clock runs fast
//!   expires sessions early.
//!
//! # Cost, and the tolerance it buys
//!
//! A session sends `sync`s only while some acquisition holds its lock, is
//! being granted it, or waits next in line (one departure can grant it: its
//! grant may come after a wait of any length, and is reported at once only on
//! a fresh proof): one whenever no request that passes the leader (on a
//! standalone server: no request) was sent for [`Config::sync_interval`]
//! (`T/20` by default): twenty per session timeout on a holder with nothing else
//! to say, fewer on a busy one, none on an idle session (which costs the
//! ensemble only its client library's pings). A `sync` is a read of the leader's
//! state, not a transaction: nothing is logged. A lock granted while no proof
//! lasts until the session can renew it (an idle session's proof is old: the
//! renewal needs a `sync` sent `D` after an answer) is not reported held until a
//! `sync`, sent at once, proves it: at once on a standalone server (the grant's
//! own answers prove it), about `D` later on an ensemble. So a holder is never
//! told `Suspended` just after its grant on a connection that answers.
//!
//! In steady state proven contact trails the present by at most `D` plus an
//! interval, a bucket of the answer history (`D/8`) and a round trip, and a held
//! lock is `Lost` at the proof plus `T` less the margin. So a holder survives
//! (is `Resumed`, never `Lost`) any loss of contact shorter than
//! `T - margin - interval - 9D/8` less a round trip:
//!
//! | server (what the session learned) | tolerated loss of contact (default margin `T/10`, interval `T/20`) |
//! |---|---|
//! | standalone (`srvr`) | `0.85 T` |
//! | ensemble member, `tickTime` known (`srvr` and `conf`) | `0.85 T - 2.25 tick` when two ticks are under `T/3` (`0.83 T` with `T` = 100 ticks; a 30 s timeout on ZooKeeper's sample 2 s tick: `0.70 T`); else `0.475 T` |
//! | unknown (`conf` refused on an ensemble, or no probe) | `0.85 T - 0.375 T = 0.475 T` |
//!
//! Held locks are [`Suspended`](crate::LockEvent::Suspended) a
//! [`Config::suspend_lead`] (`T/10`) before they would be lost.

use crate::ids::LockId;
use crate::proto::{Op, RequestId, ZkError};
use crate::spec::Config;
use crate::time::Timestamp;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::time::Duration;

/// What a binding learned of the server its session is connected to (given to
/// [`Session::learn_server`](crate::Session::learn_server)); each kind of
/// knowledge shortens how far proven contact trails the present (see the module
/// docs, "What the server tells").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerRole {
    /// A standalone server (`srvr` says `Mode: standalone`, or `conf` has no
    /// `syncLimit`): it expires sessions itself, so every answer proves the
    /// session was touched no earlier than the request's send time.
    Standalone,
    /// A member of an ensemble (leader, follower or observer) whose `tickTime`
    /// is known (from `conf`): a session's activity reaches the leader within
    /// half a tick, and an isolated leader answers up to about two ticks longer
    /// than its followers wait for it (see the module docs).
    Member {
        /// The member's `tickTime` (every member of an ensemble is assumed to
        /// have the same one, as ZooKeeper's own timeouts assume).
        tick_time: Duration,
    },
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Learned {
    /// Nothing: the conservative bound applies.
    #[default]
    Nothing,
    /// Reported at `at`, not yet confirmed for this connection.
    Pending { role: ServerRole, at: Timestamp },
    /// Reported, and confirmed by an answer to a request sent after the report
    /// (why that suffices: the module docs, "What the server tells").
    Confirmed(ServerRole),
}

/// A request on its way: when it was queued, and whether it passes the leader.
#[derive(Clone, Copy, Debug)]
struct Sent {
    at: Timestamp,
    passes_leader: bool,
}

/// Requests answered on this connection, as `(sent, answered)` pairs in answer
/// order (FIFO: sent order too). Answers close together share one entry, which
/// keeps the earliest send and the latest answer: a later proof, never a wrong
/// one, and a bounded history (a few entries per `touch_bound`).
#[derive(Default, Debug)]
struct Answered {
    entries: VecDeque<(Timestamp, Timestamp)>,
}

impl Answered {
    fn push(&mut self, sent: Timestamp, answered: Timestamp, bucket: Duration) {
        if let Some(last) = self.entries.back_mut() {
            // Same bucket: measured from the entry's send, so entries keep moving.
            if answered.saturating_since(last.0) < bucket {
                last.1 = last.1.max(answered);
                return;
            }
        }
        self.entries.push_back((sent, answered));
    }

    /// The latest send among requests answered no later than `by`; drops the
    /// entries before it (a later proof can only use later ones).
    fn latest_sent_answered_by(&mut self, by: Timestamp) -> Option<Timestamp> {
        let count = self.entries.iter().take_while(|(_, a)| *a <= by).count();
        if count == 0 {
            return None;
        }
        self.entries.drain(..count - 1);
        self.entries.front().map(|(sent, _)| *sent)
    }
}

/// What [`Contact::lasts_until_renewed`] weighs.
struct Renewal {
    /// A `sync` sent now is answered before held locks are suspended.
    in_time: bool,
    /// What that `sync` proves lasts until the next one's answer.
    run_lasts: bool,
    /// The newest answer early enough for `run_lasts`, if any: later walks stop
    /// there (the proof it is weighed against only grows), if they get there.
    anchor: Option<usize>,
}

/// What the session knows of its contact with the leader (see the module docs).
#[derive(Default, Debug)]
pub(crate) struct Contact {
    /// The latest instant the leader is proven to have heard from the session.
    proven: Option<Timestamp>,
    /// Requests in flight on this connection.
    sent: HashMap<RequestId, Sent>,
    answered: Answered,
    /// When the newest request that passes the leader was queued.
    last_leader_send: Option<Timestamp>,
    /// The core's own `sync` in flight.
    sync_in_flight: Option<RequestId>,
    /// What is known of this connection's server.
    learned: Learned,
    /// The acquisitions that hold, are being granted, or wait next in line:
    /// only for them does the session send `sync`s (an idle session sends none).
    wanted: BTreeSet<LockId>,
    /// The acquisitions a renewed proof moves on (a grant waiting for it, a
    /// suspended hold): a reply that renews contact calls only these.
    awaiting: BTreeSet<LockId>,
    /// The holds that do not watch their node yet: the sync timer looks at
    /// these only (see `Acquisition::on_sync_timer`).
    unwatched: BTreeSet<LockId>,
}

impl Contact {
    // Getters.

    /// Until when held locks are trusted, if the feature is on and there was
    /// contact: the proven contact plus the session timeout less the margin.
    pub(crate) fn trusted_until(&self, config: &Config) -> Option<Timestamp> {
        config.sync_interval?;
        let proven = self.proven?;
        Some(proven + config.session_timeout.saturating_sub(config.margin()))
    }

    /// When held locks must be suspended for want of a newer proof.
    pub(crate) fn suspend_at(&self, config: &Config) -> Option<Timestamp> {
        self.trusted_until(config)
            .map(|until| until.saturating_sub(config.suspend_lead()))
    }

    /// Whether held locks can be trusted at `now`.
    pub(crate) fn is_fresh(&self, config: &Config, now: Timestamp) -> bool {
        self.suspend_at(config).map_or(true, |at| now < at)
    }

    /// Whether a lock granted at `now` may be reported held: the proof must last
    /// until the session renews it, or the holder would be told `Suspended`
    /// (then `Resumed` or `Lost`) moments after its grant on a connection that
    /// is fine (a waiter that sent nothing for a while has an old proof).
    ///
    /// A `sync` proves what was answered a [`touch_bound`](Self::touch_bound)
    /// `D` before it was sent. So proofs come steadily only from a *run* of
    /// answers, each sent within two intervals of the next, the newest recent
    /// (a holder's or a next waiter's `sync`s, a grant's own requests), and
    /// only from `D` after the run began. Until then the best a `sync` sent now
    /// can prove is what was answered `D` ago. The grant is reported when both
    /// last: the current proof until a `sync` sent now is answered, and what
    /// that `sync` proves until one sent `D` after the run's first answer is
    /// (an interval for the `sync`'s schedule and two for its round trip and
    /// the machine's lateness, in each). Otherwise it waits for the renewal
    /// (see `Acquisition::grant`).
    pub(crate) fn lasts_until_renewed(&self, config: &Config, now: Timestamp) -> bool {
        self.renewal(config, now)
            .map_or(true, |r| r.in_time && r.run_lasts)
    }

    /// What [`lasts_until_renewed`](Self::lasts_until_renewed) weighs at `now`;
    /// `None` when nothing needs renewing (the feature is off, or no contact yet).
    fn renewal(&self, config: &Config, now: Timestamp) -> Option<Renewal> {
        let (Some(suspend_at), Some(interval)) = (self.suspend_at(config), config.sync_interval)
        else {
            return None;
        };
        let touch_bound = self.touch_bound(config);
        let entries = &self.answered.entries;
        // How long a proof keeps a lock from being suspended.
        let lasts = suspend_at.saturating_since(self.proven.unwrap_or_default());
        let provable_now = entries
            .iter()
            .rev()
            .find(|(_, answered)| *answered + touch_bound <= now)
            .map(|(sent, _)| *sent)
            .max(self.proven)
            .unwrap_or_default();
        // Syncs leave an interval apart: one for their schedule, two for the
        // round trip and the machine's lateness.
        let renewal = 3 * interval;
        let early_enough =
            |answered: Timestamp| answered + touch_bound + renewal < provable_now + lasts;
        // The first answer of the run (an entry keeps its earliest send and its
        // latest answer), or none yet: a sync proves it once sent a touch bound
        // after it. An earlier first answer only lasts longer (answers are in
        // order), so the walk back stops at the first one early enough: a busy
        // session's run is its whole history.
        let gap = 2 * interval + touch_bound / 8;
        let (mut run_sent, mut run_lasts) = (now, early_enough(now));
        for (sent, answered) in entries.iter().rev() {
            if run_lasts || run_sent.saturating_since(*sent) > gap {
                break;
            }
            (run_sent, run_lasts) = (*sent, early_enough(*answered));
        }
        Some(Renewal {
            in_time: now + renewal < suspend_at,
            run_lasts,
            anchor: entries
                .partition_point(|(_, answered)| early_enough(*answered))
                .checked_sub(1),
        })
    }

    /// Whether `id` is the core's own `sync`.
    pub(crate) fn is_own_sync(&self, id: RequestId) -> bool {
        self.sync_in_flight == Some(id)
    }

    /// The server's role as confirmed on this connection, if it is.
    pub(crate) fn confirmed_role(&self) -> Option<ServerRole> {
        match self.learned {
            Learned::Confirmed(role) => Some(role),
            _ => None,
        }
    }

    /// How long a follower may take to pass our activity on to the leader, as far
    /// as this connection's server is known: [`Config::touch_bound`] unless its
    /// tick is known and makes it shorter (see the module docs).
    pub(crate) fn touch_bound(&self, config: &Config) -> Duration {
        match self.confirmed_role() {
            Some(ServerRole::Member { tick_time }) => config.touch_bound().min(2 * tick_time),
            Some(ServerRole::Standalone) => Duration::ZERO,
            None => config.touch_bound(),
        }
    }

    /// When the next `sync` is due, if one is: `sync_interval` after the newest
    /// request that passes the leader (or the connection), unless a `sync` is in
    /// flight, there is no connection, or no acquisition wants one (`wanted`).
    pub(crate) fn next_sync(&self, config: &Config) -> Option<Timestamp> {
        let interval = config.sync_interval?;
        if self.sync_in_flight.is_some() || self.wanted.is_empty() {
            return None;
        }
        self.last_leader_send.map(|sent| sent + interval)
    }

    // Handlers.

    /// The session is (re)connected: opening or revalidating it went through the
    /// leader just now.
    pub(crate) fn on_connected(&mut self, now: Timestamp) {
        self.forget_connection();
        self.proven = Some(self.proven.map_or(now, |p| p.max(now)));
        // The session's (re)opening went through the leader: the first sync is
        // due an interval after it.
        self.last_leader_send = Some(now);
    }

    /// The binding learned `role` of the connection's server at `now`, from a
    /// probe sent after the connection was established. It counts once a
    /// request sent at or after `now` is answered on this connection.
    pub(crate) fn on_server_learned(&mut self, role: ServerRole, now: Timestamp) {
        if self.learned != Learned::Confirmed(role) {
            self.learned = Learned::Pending { role, at: now };
        }
    }

    /// A request was queued at `now`.
    pub(crate) fn on_sent(&mut self, config: &Config, id: RequestId, op: &Op, now: Timestamp) {
        if config.sync_interval.is_none() {
            return;
        }
        // A standalone server is the session tracker: every request renews.
        let passes_leader =
            op.passes_leader() || self.confirmed_role() == Some(ServerRole::Standalone);
        if passes_leader {
            self.last_leader_send = Some(now);
        }
        self.sent.insert(
            id,
            Sent {
                at: now,
                passes_leader,
            },
        );
    }

    /// The core's own `sync` was queued.
    pub(crate) fn on_sync_sent(&mut self, config: &Config, id: RequestId, op: &Op, now: Timestamp) {
        self.on_sent(config, id, op, now);
        self.sync_in_flight = Some(id);
    }

    /// A reply arrived at `now`. Returns whether the proven contact moved.
    pub(crate) fn on_reply<T>(
        &mut self,
        config: &Config,
        id: RequestId,
        result: &Result<T, ZkError>,
        now: Timestamp,
    ) -> bool {
        if self.sync_in_flight == Some(id) {
            self.sync_in_flight = None;
        }
        let Some(sent) = self.sent.remove(&id) else {
            return false;
        };
        // Only an answer from the server shows it received the request.
        if result.as_ref().is_err_and(|e| !e.is_from_server()) {
            return false;
        }
        if let Learned::Pending { role, at } = self.learned {
            if sent.at >= at {
                self.learned = Learned::Confirmed(role);
            }
        }
        let touch_bound = self.touch_bound(config);
        let mut moved = false;
        let heard = match self.confirmed_role() {
            // The session tracker answered: it touched the session on receipt.
            Some(ServerRole::Standalone) => Some(sent.at),
            _ if sent.passes_leader => self
                .answered
                .latest_sent_answered_by(sent.at.saturating_sub(touch_bound)),
            _ => None,
        };
        if let Some(heard) = heard {
            if self.proven.map_or(true, |p| heard > p) {
                self.proven = Some(heard);
                moved = true;
            }
        }
        let bucket = touch_bound / 8;
        self.answered.push(sent.at, now, bucket);
        // A standalone server's answers are never weighed against a later
        // request's send (`latest_sent_answered_by`, which trims the history),
        // and each answer proves its own send: the history before the run's
        // anchor is of no further use, and would grow by every answer.
        if self.confirmed_role() == Some(ServerRole::Standalone) {
            if let Some(anchor) = self.renewal(config, now).and_then(|r| r.anchor) {
                self.answered.entries.drain(..anchor);
            }
        }
        moved
    }

    // Mutators.

    /// Records whether `lock` waits for a renewed proof (see `awaiting`).
    pub(crate) fn set_awaiting(&mut self, lock: LockId, awaiting: bool) {
        set_member(&mut self.awaiting, lock, awaiting);
    }

    /// The acquisitions waiting for a renewed proof, in lock order.
    pub(crate) fn awaiting(&self) -> Vec<LockId> {
        self.awaiting.iter().copied().collect()
    }

    /// Records whether `lock` wants the session to keep proving contact (see
    /// `wanted`).
    pub(crate) fn set_wanted(&mut self, lock: LockId, wanted: bool) {
        set_member(&mut self.wanted, lock, wanted);
    }

    /// Records whether `lock` holds without a watch on its node (see `unwatched`).
    pub(crate) fn set_unwatched(&mut self, lock: LockId, unwatched: bool) {
        set_member(&mut self.unwatched, lock, unwatched);
    }

    /// The holds that do not watch their node yet, in lock order.
    pub(crate) fn unwatched(&self) -> Vec<LockId> {
        self.unwatched.iter().copied().collect()
    }

    /// The connection dropped: nothing in flight will be answered on it, and
    /// answers on the next one prove nothing together with those on this one.
    /// What was learned of its server is forgotten: the next connection may be
    /// to another server, and is learned again.
    pub(crate) fn forget_connection(&mut self) {
        self.sent.clear();
        self.answered.entries.clear();
        self.sync_in_flight = None;
        self.last_leader_send = None;
        self.learned = Learned::Nothing;
    }

    /// The session ended: nothing is proven of the next one until it connects.
    pub(crate) fn on_session_ended(&mut self) {
        self.forget_connection();
        self.proven = None;
    }
}

/// Puts `lock` in `set` or takes it out.
fn set_member(set: &mut BTreeSet<LockId>, lock: LockId, member: bool) {
    if member {
        set.insert(lock);
    } else {
        set.remove(&lock);
    }
}

#[cfg(test)]
mod tests;
