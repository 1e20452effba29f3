//! The binding: a simulated ZooKeeper client that owns a [`lock_core::Session`] and
//! drives it exactly by the core's calling rules.
//!
//! The client keeps what a real client library keeps: its connection state, the
//! requests in flight on the current connection, the last zxid it saw and (for
//! [`Profile::KeepsWatches`]) the watches it believes are set, which it re-registers
//! after a reconnect like `SetWatches` does.

use crate::counters::Counters;
use crate::face::ClientCore;
use crate::model::ZkModel;
use crate::network::Link;
use crate::rng::SimRng;
use crate::watches::WatchType;
use lock_core::{Config, LockEvent, LockId, RequestId, Session, Timestamp, WatchKind, ZkError};
use std::collections::{BTreeSet, VecDeque};
use std::fmt;
use std::time::Duration;

/// Identifies a client of a [`Sim`](crate::Sim) (its index, in the order added).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct ClientId(pub usize);

impl fmt::Display for ClientId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "c{}", self.0)
    }
}

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
/// use lock_sim::{ClientConfig, Profile};
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
}

impl ClientConfig {
    /// A client of `profile` with `session_timeout`.
    pub fn new(profile: Profile, session_timeout: Duration) -> Self {
        ClientConfig {
            profile,
            session_timeout,
            seed: None,
            suspended_grace: None,
        }
    }

    /// Sets the seed.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
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
pub(crate) enum Conn {
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

/// The watches a client library believes it has, to re-register after a reconnect.
#[derive(Default, Debug)]
pub(crate) struct ClientWatches {
    pub data: BTreeSet<String>,
    pub exist: BTreeSet<String>,
    pub child: BTreeSet<String>,
}

impl ClientWatches {
    /// A notification consumes the watches it answers (client-side `materialize`).
    pub fn fired(&mut self, path: &str, kind: WatchKind) {
        match kind {
            WatchKind::NodeDeleted => {
                self.data.remove(path);
                self.exist.remove(path);
                self.child.remove(path);
            }
            WatchKind::NodeChildrenChanged => {
                self.child.remove(path);
            }
            _ => {
                self.data.remove(path);
                self.exist.remove(path);
            }
        }
    }

    pub fn clear(&mut self) {
        self.data.clear();
        self.exist.clear();
        self.child.clear();
    }

    /// What a request does to the registry as it is sent: the watch it leaves once
    /// answered (to [`set`](Self::set) on success). A watch removal forgets at once
    /// (it is not set again on a reconnect), as zookeeper-client does when a
    /// watcher is dropped.
    pub fn on_send(&mut self, op: &lock_core::Op) -> Option<(WatchType, String)> {
        match op {
            lock_core::Op::GetData { path, watch: true } => Some((WatchType::Data, path.clone())),
            lock_core::Op::WatchChildren { path } => Some((WatchType::Child, path.clone())),
            lock_core::Op::RemoveWatch { path, watch } => {
                match watch {
                    lock_core::WatchType::Children => self.child.remove(path),
                    _ => self.data.remove(path),
                };
                None
            }
            _ => None,
        }
    }

    /// A request that leaves `watch` succeeded: the library knows the watch.
    pub fn set(&mut self, watch: Option<(WatchType, String)>) {
        match watch {
            Some((WatchType::Data, path)) => drop(self.data.insert(path)),
            Some((WatchType::Child, path)) => drop(self.child.insert(path)),
            None => {}
        }
    }

    /// A reconnect to the same, live `session`. The server dropped the old
    /// connection's watches with it (ZooKeeper's `DataTree.removeCnxn`); a library
    /// that `keeps` watches sets its own again with the last zxid it saw
    /// (`SetWatches`: `DataTree.setWatches` fires at once those whose node changed
    /// since, see [`ZkModel::set_watches`]); one that does not forgets them. The
    /// firings wait in the model's notifications.
    pub fn reconnect(&mut self, model: &mut ZkModel, session: i64, last_zxid: i64, keeps: bool) {
        model.remove_watches(session);
        if !keeps {
            self.clear();
            return;
        }
        let data: Vec<String> = self.data.iter().cloned().collect();
        let exist: Vec<String> = self.exist.iter().cloned().collect();
        let child: Vec<String> = self.child.iter().cloned().collect();
        model.set_watches(session, last_zxid, &data, &exist, &child);
    }
}

/// A request sent on the current connection, awaiting its reply.
#[derive(Clone, Debug)]
pub(crate) struct Pending {
    pub id: RequestId,
    /// The watch it leaves (registered client-side on success).
    pub watch: Option<(crate::watches::WatchType, String)>,
}

pub(crate) struct SimClient {
    pub cfg: ClientConfig,
    pub core: ClientCore,
    pub rng: SimRng,
    pub conn: Conn,
    /// The server session in use (or last used; `None` before the first connect
    /// and after an expiry the client has noticed).
    pub session: Option<i64>,
    pub link: Link,
    pub pending: VecDeque<Pending>,
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
        let core = match user_api {
            Some(zero) => ClientCore::User(Box::new(crate::user_face::UserClient::new(
                config, zero, now,
            ))),
            None => ClientCore::Session(Session::new(config)),
        };
        SimClient {
            core,
            rng: SimRng::new(seed ^ 0xc1e7_0000_0000_0000),
            conn: Conn::Connecting { at: now },
            session: None,
            link: Link::default(),
            pending: VecDeque::new(),
            local: VecDeque::new(),
            watches: ClientWatches::default(),
            last_zxid: 0,
            partition_until: None,
            last_contact: now,
            events: Vec::new(),
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
            && matches!(self.conn, Conn::Connected | Conn::Closed)
    }
}
