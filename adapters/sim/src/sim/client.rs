//! The binding: a simulated ZooKeeper client that owns a [`lock_core::Session`] and
//! drives it exactly by the core's calling rules.
//!
//! The client keeps what a real client library keeps: its connection state, the
//! requests in flight on the current connection, the last zxid it saw and (for
//! [`Profile::KeepsWatches`]) the watches it believes are set, which it re-registers
//! after a reconnect like `SetWatches` does.

use crate::ids::ClientId;
use crate::model::ClientWatches;
use crate::sim::counters::Counters;
use crate::sim::face::ClientCore;
use crate::sim::network::Link;
use crate::sim::rng::SimRng;
use lock_core::{Config, LockEvent, LockId, RequestId, Session, Timestamp, ZkError};
use std::collections::VecDeque;
use std::fmt;
use std::time::Duration;

/// How the simulated client library behaves across reconnects and expiry.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[non_exhaustive]
pub enum Profile {
    /// Like the async `zookeeper-client` crate (and the Java client): after a
    /// reconnect on the same session its watches are still in force (it re-registers
    /// them, and the ones whose node changed meanwhile fire); on expiry it reports
    /// [`SessionExpired`](lock_core::SessionEvent::Expired), and the adapter then
    /// opens a new session.
    KeepsWatches,
    /// Like the blocking `zookeeper` crate: watches are lost on reconnect, and after
    /// a session expiry it silently opens a new session and reports
    /// `Connected { session_id: <new id> }` instead of `Expired`.
    LosesWatchesNewSession,
}

/// Settings of one simulated client.
///
/// ```
/// use zklock::sim::{ClientConfig, Profile};
/// use std::time::Duration;
/// let c = ClientConfig::new(Profile::KeepsWatches, Duration::from_secs(10)).seed(42);
/// assert_eq!(c.session_timeout, Duration::from_secs(10));
/// ```
#[derive(Clone, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub struct ClientConfig {
    /// Library behaviour.
    pub profile: Profile,
    /// The negotiated session timeout.
    pub session_timeout: Duration,
    /// Seed of the core's attempt ids and of this client's network randomness
    /// (`None`: derived from the simulation seed and the client's index).
    pub seed: Option<u64>,
    /// The core's suspension grace (`None`: the core's default, the session timeout).
    pub suspended_grace: Option<Duration>,
    /// Whether the session proves its contact with the leader with `sync`s, as
    /// lock-client's bindings do (the core's
    /// [`sync_interval`](lock_core::Config::sync_interval) at its default of a
    /// twentieth of the timeout): held locks are then trusted only while a proof
    /// lasts (default: off, the core's contact rules unused).
    pub proves_contact: bool,
}

impl ClientConfig {
    /// A client of `profile` with `session_timeout`.
    pub fn new(profile: Profile, session_timeout: Duration) -> Self {
        ClientConfig {
            profile,
            session_timeout,
            seed: None,
            suspended_grace: None,
            proves_contact: false,
        }
    }

    /// Sets the seed.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Turns the proof of contact on (see [`proves_contact`](Self::proves_contact)).
    pub fn proves_contact(mut self, on: bool) -> Self {
        self.proves_contact = on;
        self
    }

    /// Sets the core's suspension grace.
    pub fn suspended_grace(mut self, grace: Duration) -> Self {
        self.suspended_grace = Some(grace);
        self
    }
}

/// One event the core reported, with when and to whom.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct EventRecord {
    /// Virtual time of the event.
    pub at: Timestamp,
    /// The client whose session reported it.
    pub client: ClientId,
    /// The acquisition.
    pub lock: LockId,
    /// What happened.
    pub event: LockEvent,
}

/// A step of an acquisition (the core's [`Progress`](lock_core::Progress)), with
/// when it was reported ([`Sim::progress`](crate::Sim::progress)).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProgressRecord {
    /// Virtual time of the report.
    pub at: Timestamp,
    /// The acquisition.
    pub lock: LockId,
    /// The step.
    pub progress: lock_core::Progress,
}

impl fmt::Display for EventRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {} {:?}",
            self.at, self.client, self.lock, self.event
        )
    }
}

/// The client's view of its connection.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum ConnectionView {
    /// Not connected; the next (re)connect attempt is at `at`.
    Connecting { at: Timestamp },
    /// Connected and talking.
    Connected,
    /// The client believes it is connected, but nothing gets through; it notices
    /// (and reports `Disconnected`) at `detect_at`.
    Blackholed { detect_at: Timestamp },
    /// Closed for good.
    Closed,
}

/// A request sent on the current connection, awaiting its reply.
#[derive(Clone, Debug)]
pub(crate) struct InFlightRequest {
    pub id: RequestId,
    /// The watch it leaves (registered client-side on success).
    pub watch: Option<(crate::model::watches::WatchType, String)>,
}

pub(crate) struct SimClient {
    pub cfg: ClientConfig,
    pub core: Box<dyn ClientCore>,
    pub rng: SimRng,
    pub conn: ConnectionView,
    /// The server session in use (or last used; `None` before the first connect
    /// and after an expiry the client has noticed).
    pub session: Option<i64>,
    pub link: Link,
    pub pending: VecDeque<InFlightRequest>,
    /// Requests the library failed locally (sent while not connected), due now.
    pub local: VecDeque<(Timestamp, RequestId, ZkError)>,
    pub watches: ClientWatches,
    pub last_zxid: i64,
    /// Reconnect attempts fail until then.
    pub partition_until: Option<Timestamp>,
    /// The last moment the server is known to have heard from this client (a
    /// connected client pings, so: when its connection last broke). Reported with
    /// `Disconnected`.
    pub last_contact: Timestamp,
    pub events: Vec<EventRecord>,
    /// Every step reported by the core (session-face clients only), in order.
    pub progress: Vec<ProgressRecord>,
    pub counters: Counters,
    /// (now, count) of core timeouts handled at one instant, to catch a timer that
    /// never advances.
    pub timer_spin: (Timestamp, u32),
}

impl SimClient {
    /// `user_api`: the instant of virtual time zero, for a client that is
    /// lock-client's user API (`None`: a bare core).
    pub fn new(
        cfg: ClientConfig,
        seed: u64,
        now: Timestamp,
        user_api: Option<std::time::Instant>,
    ) -> Self {
        let mut config = Config::new(cfg.session_timeout, seed);
        config.suspended_grace = cfg.suspended_grace;
        if cfg.proves_contact {
            config.sync_interval = Some(Config::default_sync_interval(cfg.session_timeout));
        }
        let core: Box<dyn ClientCore> = match user_api {
            Some(zero) => Box::new(crate::sim::user_face::UserClient::new(config, zero, now)),
            None => Box::new(Session::new(config)),
        };
        SimClient {
            core,
            rng: SimRng::new(seed ^ 0xc1e7_0000_0000_0000),
            conn: ConnectionView::Connecting { at: now },
            session: None,
            link: Link::default(),
            pending: VecDeque::new(),
            local: VecDeque::new(),
            watches: ClientWatches::default(),
            last_zxid: 0,
            partition_until: None,
            last_contact: now,
            events: Vec::new(),
            progress: Vec::new(),
            counters: Counters::default(),
            timer_spin: (Timestamp::ZERO, 0),
            cfg,
        }
    }

    pub fn keeps_watches(&self) -> bool {
        self.cfg.profile == Profile::KeepsWatches
    }

    pub fn is_partitioned(&self, now: Timestamp) -> bool {
        self.partition_until.is_some_and(|t| now < t)
    }

    /// Nothing in flight and no connection change pending.
    pub fn is_quiet(&self) -> bool {
        self.link.is_empty()
            && self.local.is_empty()
            && matches!(
                self.conn,
                ConnectionView::Connected | ConnectionView::Closed
            )
    }
}
