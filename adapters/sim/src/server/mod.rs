//! An in-process ZooKeeper whose clients are the real user API.
//!
//! [`Server`] keeps one [`ZkModel`](crate::ZkModel) in memory and hands out
//! [`LockClient`]s on it: the same type a real binding gives, with every lock,
//! guard, election, revocation, section and fenced write, async and blocking. It is
//! the embedded default for zklock's demo and examples, and a test double for your
//! own code: test what your program does when its lock is lost, its session expires
//! or another worker holds the lock, with no ZooKeeper installed.
//!
//! ```
//! use zklock::sim::Server;
//! use std::time::Duration;
//!
//! let server = Server::new();
//! let alice = server.client();
//! let bob = server.client();
//!
//! let guard = alice.mutex("/locks/report").lock_blocking().unwrap();
//! assert!(bob.mutex("/locks/report").try_lock_blocking().unwrap().is_none());
//!
//! // Alice's session expires: she is told, and Bob can take the lock.
//! server.expire_session(&alice);
//! assert!(matches!(guard.lost_blocking(), zklock::LostReason::SessionExpired));
//! let bobs = bob.mutex("/locks/report").lock_timeout_blocking(Duration::from_secs(5)).unwrap();
//! assert!(bobs.token() > guard.token());
//! ```
//!
//! Switching to a real ZooKeeper is one line: `Server::new().client()` becomes
//! `zklock::connect("host:2181").await?` (async) or
//! `zklock::blocking::connect("host:2181")?` (blocking, feature `blocking`); the
//! rest of the code is the same `LockClient`.
//!
//! Each client runs a driver thread that applies its requests to the model at once,
//! in order, and delivers watch firings in the order the model fires them: fast and
//! faithful to ZooKeeper's ordering guarantees, but in real time and scheduled by
//! the OS. For deterministic, seeded schedules with virtual time, use [`Sim`](crate::Sim).

mod driver;
mod state;

use crate::model::silent_cut_noticed_after;
use lock_client::LockClient;
use lock_core::Config;
use state::{Reachability, ServerState};
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The session timeout of [`Server::client`] (lock-core's, the workspace's one
/// default).
pub use lock_core::DEFAULT_SESSION_TIMEOUT;

/// An in-process ZooKeeper; see the [module docs](self). Cheap to clone: clones share
/// the same tree.
#[derive(Clone)]
pub struct Server {
    state: Arc<Mutex<ServerState>>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.lock();
        f.debug_struct("Server")
            .field("clients", &state.clients.len())
            .field("nodes", &state.model.node_count())
            .finish()
    }
}

impl Default for Server {
    fn default() -> Self {
        Server::new()
    }
}

/// Which client a fault knob acts on: the key the server gave the client.
struct ClientKey(u64);

impl Server {
    /// An empty tree (just `/`).
    pub fn new() -> Server {
        Server {
            state: Arc::new(Mutex::new(ServerState::new())),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ServerState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new client with its own session ([`DEFAULT_SESSION_TIMEOUT`]).
    pub fn client(&self) -> LockClient {
        self.client_with_timeout(DEFAULT_SESSION_TIMEOUT)
    }

    /// A new client with its own session of `session_timeout`.
    pub fn client_with_timeout(&self, session_timeout: Duration) -> LockClient {
        // The core's attempt ids need a seed: std's randomly keyed hasher (each
        // `RandomState` differs from the last), over a count of the clients made.
        static CLIENTS: AtomicU64 = AtomicU64::new(0);
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u64(CLIENTS.fetch_add(1, Ordering::Relaxed));
        // Timed as the real bindings time a session: the same sync interval, so a
        // held lock here proves contact, and watches its node once held a while,
        // as it does against ZooKeeper.
        let mut config = Config::new(session_timeout, hasher.finish());
        config.sync_interval = Some(Config::default_sync_interval(session_timeout));
        let (locks, link) = lock_client::pair(config);
        let key = self.lock().attach(session_timeout, link.notifier());
        link.set_extension(Arc::new(ClientKey(key)));
        let state = self.state.clone();
        std::thread::Builder::new()
            .name(format!("lock-sim client {key}"))
            .spawn(move || driver::run(state, key, link))
            .expect("spawning a client driver thread");
        locks
    }

    fn key(&self, client: &LockClient) -> Option<u64> {
        client.extension::<ClientKey>().map(|k| k.0)
    }

    /// Cuts `client` off for `duration`: it notices at once (a reset connection) and
    /// reports `Suspended` for its held locks; if it stays away longer than its
    /// session timeout, the server expires the session (its nodes go, others move
    /// up) and, back, it is told so and continues on a new session; otherwise it
    /// resumes on the same one. A client not of this server is ignored.
    pub fn disconnect(&self, client: &LockClient, duration: Duration) {
        self.cut(client, duration, Duration::ZERO);
    }

    /// Like [`disconnect`](Self::disconnect), but silent: the client notices only
    /// after 2/3 of its session timeout without an answer (as real clients notice a
    /// dead network), or when the partition ends, whichever comes first.
    pub fn partition(&self, client: &LockClient, duration: Duration) {
        let timeout = self
            .key(client)
            .and_then(|k| self.lock().clients.get(&k).map(|c| c.timeout));
        if let Some(timeout) = timeout {
            self.cut(client, duration, silent_cut_noticed_after(timeout));
        }
    }

    fn cut(&self, client: &LockClient, duration: Duration, notice_after: Duration) {
        let Some(key) = self.key(client) else { return };
        let now = Instant::now();
        self.lock()
            .cut(key, now, now + duration, now + notice_after);
    }

    /// Ends a [`disconnect`](Self::disconnect) or [`partition`](Self::partition) of
    /// `client` now (the network heals early): it reconnects, on its session if the
    /// server has not expired it meanwhile. Nothing happens if it is not cut off.
    pub fn heal(&self, client: &LockClient) {
        let Some(key) = self.key(client) else { return };
        let mut state = self.lock();
        if let Some(c) = state.clients.get_mut(&key) {
            if let Reachability::Down { until, .. } = &mut c.conn {
                *until = Instant::now();
                c.notifier.notify();
            }
        }
    }

    /// Holds everything the server sends `client` from now on (replies and watch
    /// firings): its requests are still applied, but it hears nothing until the
    /// next [`disconnect`](Self::disconnect) or [`partition`](Self::partition),
    /// which loses the held replies with the connection (the client gets
    /// `ConnectionLoss` for those requests) and delivers the held firings after the
    /// reconnect. This is how a test loses exactly the reply to a create the server
    /// applied, which the client must then find and adopt:
    ///
    /// ```
    /// # use zklock::sim::Server;
    /// # use std::time::Duration;
    /// let server = Server::new();
    /// let client = server.client();
    /// // The lock directory exists, so the create is the first request held.
    /// client.mutex("/locks/a").lock_blocking().unwrap().release_blocking().unwrap();
    /// server.hold_replies(&client);
    /// let pending = client.mutex("/locks/a").start().unwrap();
    /// while server.children("/locks/a").unwrap().is_empty() {
    ///     std::thread::yield_now(); // the create is applied; its reply is held
    /// }
    /// server.disconnect(&client, Duration::ZERO); // the reply is lost
    /// let guard = pending.wait_blocking().unwrap();
    /// assert_eq!(server.children("/locks/a").unwrap().len(), 1, "adopted, not created twice");
    /// # drop(guard);
    /// ```
    pub fn hold_replies(&self, client: &LockClient) {
        let Some(key) = self.key(client) else { return };
        if let Some(c) = self.lock().clients.get_mut(&key) {
            c.holding = true;
        }
    }

    /// Expires `client`'s session now, as the server does after a long silence: its
    /// nodes are deleted (waking the sessions that watch them), its locks are lost,
    /// and it continues on a new session ([`Sim::expire_session`](crate::Sim::expire_session)
    /// on the seeded face).
    pub fn expire_session(&self, client: &LockClient) {
        let Some(key) = self.key(client) else { return };
        let mut state = self.lock();
        let Some(session) = state.clients.get(&key).map(|c| c.session) else {
            return;
        };
        state.expire_session(session);
        if let Some(c) = state.clients.get(&key) {
            c.notifier.notify();
        }
    }

    /// Deletes `path` as an administrator would (any version); whether it existed.
    /// Watches fire as on a real server ([`Sim::admin_delete`](crate::Sim::admin_delete)
    /// on the seeded face).
    pub fn admin_delete(&self, path: &str) -> bool {
        let mut state = self.lock();
        let deleted = state.model.delete(crate::NO_SESSION, path, None).is_ok();
        state.route(None);
        deleted
    }

    /// Writes `data` to `path` as an administrator would; whether the node exists
    /// ([`Sim::admin_set_data`](crate::Sim::admin_set_data) on the seeded face).
    pub fn admin_set_data(&self, path: &str, data: &[u8]) -> bool {
        let mut state = self.lock();
        let written = state
            .model
            .set_data(crate::NO_SESSION, path, data, None)
            .is_ok();
        state.route(None);
        written
    }

    /// The children of `path`, sorted; `None` if it does not exist.
    pub fn children(&self, path: &str) -> Option<Vec<String>> {
        let mut children = self.lock().model.children(path)?;
        children.sort();
        Some(children)
    }

    /// The data of `path`; `None` if it does not exist.
    pub fn data(&self, path: &str) -> Option<Vec<u8>> {
        self.lock().model.get(path).map(|n| n.data)
    }

    /// The stat of `path` (its `czxid` is the fencing token of a lock node); `None`
    /// if it does not exist.
    pub fn stat(&self, path: &str) -> Option<lock_core::Stat> {
        self.lock().model.stat(path)
    }

    /// The sessions watching `path` (any kind of watch), sorted.
    pub fn watchers(&self, path: &str) -> Vec<i64> {
        let state = self.lock();
        let mut sessions: Vec<i64> = state
            .model
            .sessions()
            .into_iter()
            .filter(|&s| state.model.watches_of(s).iter().any(|(_, p)| p == path))
            .collect();
        sessions.sort_unstable();
        sessions
    }

    /// Requests the server has received from all its clients so far (what a real
    /// server counts as `zk_packets_received`, pings aside: these clients send none).
    pub fn requests_received(&self) -> u64 {
        self.lock().requests
    }

    /// The whole tree under `path`, one node a line (for debugging and examples).
    pub fn dump(&self, path: &str) -> String {
        self.lock().model.dump(path)
    }
}
