//! What the user asks for: which recipe, on which path, named how, until when.

use crate::names::{NameScheme, NodeKind};
use crate::time::Timestamp;
use std::time::Duration;

/// ZooKeeper's default `jute.maxbuffer`, 1 MiB - 1: the largest request a server
/// accepts unless configured otherwise ([`Config::max_packet`]). Participant data
/// must fit in one request together with the node's path, so the room for data is
/// a little less (see [`UsageError::DataTooLarge`](crate::UsageError::DataTooLarge)).
pub const MAX_DATA_LEN: usize = 0xfffff;

/// The lock protocols.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[non_exhaustive]
pub enum Recipe {
    /// Exclusive lock (a write lock): held when no lower participant exists.
    Write,
    /// Shared lock: held when no lower exclusive participant exists.
    Read,
    /// Counting semaphore: held when fewer than `permits` lower participants exist.
    Semaphore {
        /// Number of concurrent holders.
        permits: u32,
    },
    /// Leader election participant: exclusive; the holder is the leader.
    Leader,
}

impl Recipe {
    /// The kind written into the node name.
    pub fn node_kind(self) -> NodeKind {
        match self {
            Recipe::Write => NodeKind::Write,
            Recipe::Read => NodeKind::Read,
            Recipe::Semaphore { .. } => NodeKind::Semaphore,
            Recipe::Leader => NodeKind::Leader,
        }
    }

    /// Whether a lower participant of kind `other` counts against us.
    pub fn is_blocked_by(self, other: NodeKind) -> bool {
        match self {
            Recipe::Read => other.is_exclusive(),
            _ => true,
        }
    }

    /// How many blocking lower participants we can tolerate plus one: we hold when
    /// fewer than `permits()` of them exist.
    pub fn permits(self) -> usize {
        match self {
            Recipe::Semaphore { permits } => permits as usize,
            _ => 1,
        }
    }
}

/// One acquisition request. Build with [`LockSpec::exclusive`], [`LockSpec::read`] /
/// [`LockSpec::write`], [`LockSpec::semaphore`] or [`LockSpec::leader`], then refine.
///
/// ```
/// use lock_core::{LockSpec, NameScheme, Timestamp};
/// use std::time::Duration;
/// let spec = LockSpec::write("/locks/job")
///     .scheme(NameScheme::Curator)
///     .deadline(Timestamp::ZERO + Duration::from_secs(5));
/// assert_eq!(spec.path(), "/locks/job");
/// ```
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct LockSpec {
    pub(crate) path: String,
    pub(crate) recipe: Recipe,
    pub(crate) scheme: NameScheme,
    pub(crate) wait: bool,
    pub(crate) revocable: bool,
    pub(crate) detect_crashes: bool,
    pub(crate) watch_node: bool,
    /// A half of a read/write lock rather than a mutex (Curator names the two
    /// recipes' exclusive nodes differently).
    pub(crate) rwlock: bool,
    /// What few specs set, boxed (`None`: all unset): the session keeps a spec
    /// per held lock, and these take 112 bytes.
    rare: Option<Box<Rare>>,
}

/// The fields of a [`LockSpec`] that few acquisitions set (read through
/// [`LockSpec::rare`]).
#[derive(Clone, PartialEq, Eq, Debug)]
pub(crate) struct Rare {
    pub(crate) data: Vec<u8>,
    pub(crate) deadline: Option<Timestamp>,
    pub(crate) max_hold: Option<Duration>,
    pub(crate) owner: Option<String>,
    pub(crate) detect_after: Option<Duration>,
    pub(crate) lock_delay: Option<Duration>,
}

/// A spec's [`Rare`] fields when none is set.
static UNSET: Rare = Rare {
    data: Vec::new(),
    deadline: None,
    max_hold: None,
    owner: None,
    detect_after: None,
    lock_delay: None,
};

impl LockSpec {
    fn new(path: impl Into<String>, recipe: Recipe) -> Self {
        LockSpec {
            path: path.into(),
            recipe,
            scheme: NameScheme::Native,
            wait: true,
            revocable: false,
            detect_crashes: false,
            watch_node: false,
            rwlock: false,
            rare: None,
        }
    }

    /// The fields few specs set.
    pub(crate) fn rare(&self) -> &Rare {
        self.rare.as_deref().unwrap_or(&UNSET)
    }

    fn rare_mut(&mut self) -> &mut Rare {
        self.rare.get_or_insert_with(|| Box::new(UNSET.clone()))
    }

    /// The write (exclusive) half of a read/write lock on `path`.
    ///
    /// It excludes every other participant exactly as [`LockSpec::exclusive`] does;
    /// the two differ only in the node name under [`NameScheme::Curator`], which
    /// must match the Curator recipe sharing the path: `__WRIT__` for
    /// `InterProcessReadWriteLock`, `lock-` for `InterProcessMutex`.
    pub fn write(path: impl Into<String>) -> Self {
        LockSpec {
            rwlock: true,
            ..Self::new(path, Recipe::Write)
        }
    }

    /// An exclusive lock (a mutex) on `path`: Curator's `InterProcessMutex`,
    /// kazoo's `Lock`.
    pub fn exclusive(path: impl Into<String>) -> Self {
        Self::new(path, Recipe::Write)
    }

    /// The read (shared) half of a read/write lock on `path`.
    ///
    /// **Downgrade.** Taken for an [`owner`](Self::owner) that holds the write half
    /// on this session, the read is not blocked by that write node (Curator's rule:
    /// a read is not blocked by a write its own holder holds): it holds at its first
    /// listing, and the owner may then release the write and keep reading. Should
    /// another writer have queued between the two nodes (it waits for the owner's
    /// write; the read would wait for it), the read fails at that listing with
    /// [`FailReason::SelfDeadlock`](crate::FailReason::SelfDeadlock).
    pub fn read(path: impl Into<String>) -> Self {
        LockSpec {
            rwlock: true,
            ..Self::new(path, Recipe::Read)
        }
    }

    /// A semaphore with `permits` concurrent holders on `path`.
    pub fn semaphore(path: impl Into<String>, permits: u32) -> Self {
        Self::new(path, Recipe::Semaphore { permits })
    }

    /// A leader-election participant on `path`, identified by `participant` (stored
    /// as the node's data, so observers can tell who leads).
    pub fn leader(path: impl Into<String>, participant: impl Into<Vec<u8>>) -> Self {
        Self::new(path, Recipe::Leader).data(participant)
    }

    /// Names nodes with `scheme` (default [`NameScheme::Native`]).
    pub fn scheme(mut self, scheme: NameScheme) -> Self {
        self.scheme = scheme;
        self
    }

    /// Stores `data` in the participant node.
    pub fn data(mut self, data: impl Into<Vec<u8>>) -> Self {
        self.rare_mut().data = data.into();
        self
    }

    /// Gives up with [`FailReason::Timeout`](crate::FailReason::Timeout) if not held by `deadline`.
    pub fn deadline(mut self, deadline: Timestamp) -> Self {
        self.rare_mut().deadline = Some(deadline);
        self
    }

    /// Does not wait: if the lock is busy at the first look, the acquisition fails
    /// with [`FailReason::WouldBlock`](crate::FailReason::WouldBlock) and its node is removed.
    pub fn try_only(mut self) -> Self {
        self.wait = false;
        self
    }

    /// Honours revocation requests (Curator's `__REVOKE__`, the recipe's `unlock`
    /// written to our node's data): a holder gets
    /// [`LockEvent::RevocationRequested`](crate::LockEvent::RevocationRequested) and decides;
    /// a waiter gives up with [`FailReason::Revoked`](crate::FailReason::Revoked).
    pub fn revocable(mut self) -> Self {
        self.revocable = true;
        self
    }

    /// Crash-detecting critical sections (the Ready-file idea): the grant tells
    /// whether a previous holder died inside a section
    /// ([`Grant::previous_holder_crashed`](crate::Grant::previous_holder_crashed)).
    /// Free on the uncontended path (the pipelined listing shows the marker); one
    /// extra read on a contended grant. Exclusive recipes only.
    pub fn detect_crashes(mut self) -> Self {
        self.detect_crashes = true;
        self
    }

    /// Lock-delay (Chubby's and Consul's): after a holder's *unclean* end (its
    /// session expired, it was [`Lost`](crate::LockEvent::Lost), its node was
    /// deleted by someone else, or it [abandoned](crate::Session::abandon) the
    /// lock), this acquisition is granted no sooner than `delay` after the moment
    /// it found the lock free, by its own clock (no clocks are compared across
    /// machines). A clean release is not delayed. It is for resources that cannot
    /// check a [fencing token](crate::Grant::token): a paused or partitioned old
    /// holder (which stopped trusting the lock before its node went) gets `delay`
    /// to let its in-flight writes land before the next holder starts.
    /// `Duration::ZERO` means no delay (the default).
    ///
    /// How: a lock-delay holder keeps a persistent marker node, `zkl-delay` in the
    /// lock directory, naming its node, for its whole hold: it is created (or
    /// taken over) by a `multi` checking our node before the grant is reported
    /// (one extra round trip per grant, paid only with a delay), and deleted in
    /// the same `multi` as our node by a clean release. A grant that finds the
    /// marker naming another node knows its predecessor ended uncleanly (or a
    /// newcomer finds a stale one: it is covered too) and waits out the delay,
    /// reporting [`Progress::LockDelay`](crate::Progress::LockDelay) with its end,
    /// before taking the marker over. So at most one marker exists per lock path,
    /// only after an unclean end, and the next lock-delay holder's clean release
    /// removes it.
    ///
    /// A predecessor that leaves no marker counts as clean: a Curator, kazoo or Go
    /// holder, or a zklock holder without lock-delay, is not waited for after its
    /// crash (its client cannot say which it was). A stale marker of an earlier
    /// zklock crash still delays the next lock-delay holder, whoever held in
    /// between (it errs on the safe side). A try-lock
    /// ([`LockSpec::try_only`]) that would have to wait out a delay fails with
    /// [`FailReason::WouldBlock`](crate::FailReason::WouldBlock).
    ///
    /// Exclusive recipes only (write / exclusive, leader): shared holders would
    /// need a marker each.
    pub fn lock_delay(mut self, delay: Duration) -> Self {
        self.rare_mut().lock_delay = (!delay.is_zero()).then_some(delay);
        self
    }

    /// The lock-delay set with [`LockSpec::lock_delay`], if any (a zero delay is
    /// none).
    pub fn lock_delay_duration(&self) -> Option<Duration> {
        self.rare().lock_delay
    }

    /// Keeps a watch on our node while held, so an administrator deleting it ends
    /// the hold at once with [`Lost(NodeDeleted)`](crate::LostReason::NodeDeleted).
    ///
    /// Costs one `getData` per acquisition and one notification per release. Without
    /// it (the default, as in Curator and kazoo), a lock is still lost at once on a
    /// session expiry or a suspension past the grace period, and a holder's node is
    /// checked after every reconnect; only a deletion by hand while connected goes
    /// unnoticed until then, or until a fenced write or the release. Revocable locks
    /// and leaders always watch their node (they need it).
    pub fn watch_node(mut self) -> Self {
        self.watch_node = true;
        self
    }

    /// Whether the held node is watched: asked for with [`LockSpec::watch_node`], or
    /// needed by a feature (revocation requests arrive as data changes; a leader
    /// must hear at once that it no longer leads).
    pub fn watches_node(&self) -> bool {
        self.watch_node || self.revocable || self.recipe == Recipe::Leader
    }

    /// A lease: once held for `max_hold`, the lock is reported
    /// [`Lost(LeaseExpired)`](crate::LostReason::LeaseExpired) and its node deleted.
    pub fn max_hold(mut self, max_hold: Duration) -> Self {
        self.rare_mut().max_hold = Some(max_hold);
        self
    }

    /// Takes the lock for `owner`: who the lock is held for (a task, a job, a
    /// transaction), as distinct from the session. An owner that already holds a
    /// node on the same path that would block this acquisition forever (upgrading
    /// a read lock to write, re-entering a mutex) is refused at once with
    /// [`UsageError::SelfDeadlock`](crate::UsageError::SelfDeadlock) instead of
    /// waiting for itself (a downgrade, the read half taken while holding the
    /// write half, is allowed: see [`LockSpec::read`]). Without an owner, no such check is made: two tasks sharing
    /// a session may well contend for one path.
    pub fn owner(mut self, owner: impl Into<String>) -> Self {
        self.rare_mut().owner = Some(owner.into());
        self
    }

    /// Detects distributed deadlocks this acquisition is part of (see
    /// [`deadlock`](crate::deadlock)): once it has waited for `after`, it publishes
    /// where its owner waits and chases the waits of its blockers through
    /// ZooKeeper; if it is the chosen victim of a confirmed cycle it fails with
    /// [`FailReason::Deadlock`](crate::FailReason::Deadlock). A wait shorter than
    /// `after` costs nothing. Needs an [`owner`](Self::owner), and the native
    /// scheme (the published waits live in zklock's node header) or the kazoo
    /// scheme without data of its own (the owner is the node's data, as kazoo's
    /// identifier; such a node's waits are inferred, see
    /// [`deadlock`](crate::deadlock)).
    pub fn detect_deadlocks(mut self, after: Duration) -> Self {
        self.rare_mut().detect_after = Some(after);
        self
    }

    /// The deadlock detection delay, if detection is on.
    pub fn detect_after(&self) -> Option<Duration> {
        self.rare().detect_after
    }

    /// The owner, if one was given.
    pub fn owner_id(&self) -> Option<&str> {
        self.rare().owner.as_deref()
    }

    /// The lock directory.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The recipe.
    pub fn recipe(&self) -> Recipe {
        self.recipe
    }

    /// The naming scheme nodes are created with (see [`LockSpec::scheme`]).
    pub fn naming_scheme(&self) -> NameScheme {
        self.scheme
    }
}

/// The session timeout asked for when the user names none: 10 s, ZooKeeper's
/// usual choice (Curator's is 60 s, kazoo's 10 s). The one default of the
/// workspace: [`Config::default`], every binding and the `zklock` command use it.
pub const DEFAULT_SESSION_TIMEOUT: Duration = Duration::from_secs(10);

/// Session-wide settings, and the one owner of the rules derived from the
/// session timeout (the margins, the intervals, the bounds): a caller asks for a
/// window here instead of dividing the timeout itself.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Config {
    /// The negotiated ZooKeeper session timeout.
    pub session_timeout: Duration,
    /// How long a held lock may stay suspended before it is reported lost
    /// (default: the session timeout).
    pub suspended_grace: Option<Duration>,
    /// How long before the server could expire a disconnected session its held
    /// locks are reported lost (default: a tenth of the session timeout, at most
    /// 2 s). See [`lost_window`](Self::lost_window).
    ///
    /// ZooKeeper expires a session on the first expiry tick (its `tickTime`) at
    /// least one session timeout after it last heard from the client, so the tick
    /// only makes expiry later and needs no room here. The margin covers what the
    /// core cannot see: the time between its timer firing and the user's code
    /// reacting to `Lost` (a loaded machine's scheduling delays), an adapter's
    /// lateness in reporting the disconnection, and the difference between the
    /// server's clock rate and ours. Only monotonic clocks are involved on either
    /// side.
    ///
    /// "Last heard from us" means the *leader*: a follower cut off from it keeps
    /// answering, so with [`sync_interval`](Self::sync_interval) on, the last
    /// contact is the last one proven to have reached the leader, and the lock is
    /// lost a margin before one session timeout after it even while connected (the
    /// argument is in [`crate::contact`]). Without it, the adapter's `since_contact`
    /// is all the core has, which is safe only against a standalone server or the
    /// leader itself.
    pub expiry_margin: Option<Duration>,
    /// Seed for attempt ids. Give every session a different seed (the adapters mix
    /// in the session id and the process's randomness).
    pub seed: u64,
    /// Pause before retrying after an error that leaves the connection up
    /// (e.g. an operation timeout).
    pub retry_interval: Duration,
    /// Give up creating a missing lock directory after this many tries (containers
    /// reaped in between).
    pub max_parent_retries: u32,
    /// The largest request the servers accept: their `jute.maxbuffer` (default
    /// [`MAX_DATA_LEN`], 1 MiB - 1). A larger request makes the server drop the
    /// connection, so every request is measured before it is sent and input that
    /// would make one too large is refused with a typed error.
    pub max_packet: usize,
    /// While connected, send a `sync` this often (at most: any request that passes
    /// the leader in between counts), so that the core knows when the ensemble's
    /// leader last heard from the session, not only when our server did; `None`
    /// (the default here; lock-client turns it on) trusts the adapter's
    /// `since_contact` alone. See [`crate::contact`] for the argument, and
    /// [`touch_bound`](Self::touch_bound).
    ///
    /// With it, a held lock is [`Suspended`](crate::LockEvent::Suspended) once the
    /// leader's last proven contact is more than the session timeout less
    /// [`margin`](Self::margin) and [`suspend_lead`](Self::suspend_lead) old, and
    /// [`Lost`](crate::LockEvent::Lost) at the session timeout less the margin, even
    /// while our server still answers: a follower cut off from the leader does.
    pub sync_interval: Option<Duration>,
}

impl Config {
    /// Defaults for a session with the given timeout and seed.
    pub fn new(session_timeout: Duration, seed: u64) -> Self {
        Config {
            session_timeout,
            suspended_grace: None,
            expiry_margin: None,
            seed,
            retry_interval: Duration::from_millis(200),
            max_parent_retries: 8,
            max_packet: MAX_DATA_LEN,
            sync_interval: None,
        }
    }

    /// The default [`sync_interval`](Self::sync_interval) lock-client uses: a
    /// twentieth of the session timeout (one `sync` every 500 ms with the default
    /// 10 s, sent only while the session holds a lock, is being granted one or
    /// waits next in line). What loss of contact a held lock survives with it:
    /// [`crate::contact`], "Cost".
    pub fn default_sync_interval(session_timeout: Duration) -> Duration {
        session_timeout / 20
    }

    /// How often a ZooKeeper client pings an idle session: every third of the
    /// session timeout (the Java client's read timeout, two thirds of it, halved;
    /// zookeeper-client does the same). A client process stopped (`SIGSTOP`, a
    /// debugger) for this long has stopped pinging long enough that its session
    /// may be close to expiry.
    ///
    /// ```
    /// let config = lock_core::Config::new(std::time::Duration::from_secs(9), 0);
    /// assert_eq!(config.ping_interval(), std::time::Duration::from_secs(3));
    /// ```
    pub fn ping_interval(&self) -> Duration {
        self.session_timeout / 3
    }

    /// How often to read a held lock's trust deadline to follow it (e.g. to hand
    /// it on to a watchdog in another process): twice per
    /// [`sync_interval`](Self::sync_interval), the pace at which the deadline
    /// moves (the [default](Self::default_sync_interval) when none is set).
    ///
    /// ```
    /// let config = lock_core::Config::new(std::time::Duration::from_secs(10), 0);
    /// assert_eq!(config.deadline_poll_interval(), std::time::Duration::from_millis(250));
    /// ```
    pub fn deadline_poll_interval(&self) -> Duration {
        self.sync_interval
            .unwrap_or_else(|| Self::default_sync_interval(self.session_timeout))
            / 2
    }

    /// How long after its last contact a session is certainly gone from the
    /// ensemble: two session timeouts (one for the server to expire it, the rest
    /// for its expiry tick, at most half a session timeout under ZooKeeper's
    /// default `minSessionTimeout` of two ticks, the leader's processing and
    /// clock-rate differences).
    /// Past it, waiting on a release or a reconnect gains nothing: the server has
    /// deleted the session's ephemeral nodes.
    ///
    /// ```
    /// let config = lock_core::Config::new(std::time::Duration::from_secs(10), 0);
    /// assert_eq!(config.session_gone_after(), std::time::Duration::from_secs(20));
    /// ```
    pub fn session_gone_after(&self) -> Duration {
        self.session_timeout * 2
    }

    /// How long a follower may take to pass a session's activity on to the
    /// leader, when nothing is known of the server: a third of the session
    /// timeout. The argument, and the shorter bounds of a session that learned
    /// its server ([`ServerRole`](crate::ServerRole)), are in [`crate::contact`].
    pub fn touch_bound(&self) -> Duration {
        self.session_timeout / 3
    }

    /// How long before the proven-contact deadline held locks are suspended: a
    /// tenth of the session timeout. In steady state the deadline stays at least
    /// `7/15` of the session timeout less the margin ahead (see [`crate::contact`]), so
    /// only a late `sync` reaches it.
    pub fn suspend_lead(&self) -> Duration {
        self.session_timeout / 10
    }

    /// The most participant data a node under `lock_path` can hold: what one
    /// request of [`max_packet`](Self::max_packet) bytes leaves beside the path, the
    /// longest node name, the request's framing and its ACLs. `None` for a path too
    /// long to fit at all.
    ///
    /// ```
    /// let config = lock_core::Config::default();
    /// let room = config.max_data_len("/locks/job").unwrap();
    /// assert!(room < lock_core::MAX_DATA_LEN && room > lock_core::MAX_DATA_LEN - 1024);
    /// ```
    pub fn max_data_len(&self, lock_path: &str) -> Option<usize> {
        crate::limits::room_for_data(self.max_packet, lock_path).ok()
    }

    /// The effective suspension grace.
    pub fn grace(&self) -> Duration {
        self.suspended_grace.unwrap_or(self.session_timeout)
    }

    /// The effective [`expiry_margin`](Self::expiry_margin).
    pub fn margin(&self) -> Duration {
        self.expiry_margin
            .unwrap_or((self.session_timeout / 10).min(Duration::from_secs(2)))
    }

    /// How long a held lock stays suspended after a disconnection reported
    /// `since_contact` after the last contact before it is reported lost: the
    /// [`grace`](Self::grace), but never past the last contact plus the session
    /// timeout minus the [`margin`](Self::margin), the earliest the server could
    /// expire the session and let another session take the lock. Zero when that
    /// time has already come.
    ///
    /// ```
    /// use lock_core::Config;
    /// use std::time::Duration;
    /// let config = Config::new(Duration::from_secs(2), 0); // margin 200 ms
    /// assert_eq!(config.lost_window(Duration::from_millis(800)), Duration::from_millis(1000));
    /// assert_eq!(config.lost_window(Duration::from_secs(3)), Duration::ZERO);
    /// ```
    pub fn lost_window(&self, since_contact: Duration) -> Duration {
        self.session_timeout
            .saturating_sub(self.margin())
            .saturating_sub(since_contact)
            .min(self.grace())
    }
}

impl Default for Config {
    fn default() -> Self {
        Config::new(DEFAULT_SESSION_TIMEOUT, 0)
    }
}
