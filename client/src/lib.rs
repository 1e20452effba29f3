//! # lock-client: zklock's user API, over any ZooKeeper binding
//!
//! Mutexes, read/write locks, semaphores, leader elections, revocation,
//! crash-detecting sections, fenced writes and leases on Apache ZooKeeper, written
//! once for every binding. The protocols live in [`lock_core`] (sans-IO); this crate
//! is the API users call; a *binding* (lock-zookeeper-client on the async
//! `zookeeper-client` crate, lock-zookeeper on the blocking `zookeeper` crate) is the
//! only place that knows a ZooKeeper client library. This crate does no I/O, needs
//! no runtime and reads no clock the binding does not give it: handles read the
//! [`Clock`] given to [`pair_with_clock`] ([`SystemClock`] for [`pair`]).
//!
//! ```
//! # async fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
//! use zklock::LockStatus;
//! use std::time::Duration;
//!
//! // `locks` comes from a binding, e.g. lock_zookeeper_client::LockClient::connect(..).
//! let guard = locks.mutex("/locks/report").lock_timeout(Duration::from_secs(30)).await?;
//! assert_eq!(guard.status(), LockStatus::Held);
//! println!("token {}", guard.token());
//! guard.release().await?;
//!
//! // The same calls, blocking this thread (no runtime needed):
//! let guard = locks.mutex("/locks/report").lock_blocking()?;
//! guard.release_blocking()?;
//! # Ok(()) }
//! # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
//! ```
//!
//! ## Model
//!
//! [`pair`] makes a [`LockClient`] and a [`Link`] around one core
//! [`Session`](lock_core::Session) (quinn's `ConnectionRef`: an `Arc<Mutex<SharedState>>`).
//! Handles ([`LockClient`], [`Mutex`], [`RwLock`], [`Semaphore`], [`LockGuard`],
//! [`Election`], [`Leadership`], [`ElectionObserver`]) lock the state, call the core,
//! drain its outputs (requests queue for the link; events go to per-lock slots and
//! wake the tasks or threads waiting on them), and wake the link. The binding's loop
//! owns the `Link`: it sends the queued requests through its client and feeds back
//! replies, watch firings, session changes and time. No command enum, no channel
//! per handle: [`LockClient::acquire`] has its `LockId` from the core at once.
//!
//! * **Async and blocking.** Async methods use only `std::task::Waker`s, so they run
//!   on any executor. Every one has a `*_blocking` twin (same arguments, result and
//!   cancel-safety) that parks the calling thread on a `Condvar`: see [`blocking`].
//! * **Cancel-safety.** Dropping a `lock()` future cancels the acquisition: the core
//!   deletes the node, even one whose create is still in flight. Dropping a guard
//!   releases the lock in the background ([`LockClient::wait_idle`] waits for it);
//!   inside an open critical section the section's marker stays, as if the holder
//!   had died ([`Session::abandon`](lock_core::Session::abandon)).
//! * **Failures.** When the binding reports a disconnect, held locks report
//!   [`LockEvent::Suspended`] (ownership no longer guaranteed), then
//!   [`LockEvent::Resumed`] once the node is verified after a reconnect, or
//!   [`LockEvent::Lost`] after the suspension grace or on expiry.
//!
//! ## Owners and deadlocks
//!
//! An *owner* ([`LockClient::with_owner`], [`Mutex::owner`]) is who a lock is taken
//! for, distinct from the session. An owner waiting for what it holds itself is
//! refused at once ([`Error::SelfDeadlock`]); [`Mutex::detect_deadlocks`] breaks
//! cycles across sessions with one victim ([`Error::Deadlock`]);
//! [`LockClient::participants`] and [`LockClient::deadlocks`] inspect.
//!
//! ## Metrics
//!
//! Every binding reports through the [`metrics`](https://docs.rs/metrics) facade
//! (install any recorder, e.g. `metrics-exporter-prometheus`; with none installed
//! the calls are the facade's no-ops). Labels stay bounded: `recipe` (`write`,
//! `read`, `semaphore`, `leader`), `outcome`, `reason`, `end`, `op`; lock paths
//! only with the opt-in [`ConnectOptions::metrics_path_prefix`] (`prefix`).
//!
//! | name | kind | labels | what |
//! | --- | --- | --- | --- |
//! | `zklock_acquire_wait_seconds` | histogram | `recipe`, `outcome` | from asking for a lock to its grant (`outcome="acquired"`) or to giving up: `timeout`, `cancelled`, `would_block`, `deadlock`, `self_deadlock`, `revoked`, `session_expired`, `node_deleted`, `closed`, `permits_mismatch`, `error` |
//! | `zklock_acquisitions_total` | counter | `recipe`, `outcome` | acquisitions that stopped waiting, by outcome |
//! | `zklock_handoff_seconds` | histogram | `recipe` | for an acquisition that waited behind another participant: from this client's notification that the node it waited behind was deleted to its grant (what the handoff costs on this side: a listing round trip when it is next, more when it must queue again) |
//! | `zklock_hold_seconds` | histogram | `recipe`, `end` | from the grant to the release (`end="released"`) or the loss (`lost`) |
//! | `zklock_lost_total` | counter | `recipe`, `reason` | held locks lost: `session_expired`, `suspended_too_long`, `node_deleted`, `node_not_owned`, `closed`, `lease_expired` |
//! | `zklock_suspensions_total` | counter | `recipe` | held locks suspended (connection lost) |
//! | `zklock_resumptions_total` | counter | `recipe` | suspended locks verified held again |
//! | `zklock_deadlocks_broken_total` | counter | `recipe` | waits given up as a deadlock cycle's victim |
//! | `zklock_requests_total` | counter | `op` | ZooKeeper requests handed to the binding: `create`, `get_children`, `watch_children`, `get_data`, `set_data`, `delete`, `multi`, `remove_watch`, `sync` |
//! | `zklock_locks_held` | gauge | `recipe` | locks held now (suspended ones included) |
//! | `zklock_locks_waiting` | gauge | `recipe` | acquisitions waiting now |
//!
//! ## Multi-locks
//!
//! [`LockClient::multi`] takes several locks for one owner, all or nothing, in one
//! canonical order (the lock paths' order): two multi-locks over overlapping sets
//! can never deadlock. A failure or timeout of any part releases those taken; the
//! [`MultiGuard`] releases every part (last first) and is lost when any part is.
//!
//! ```
//! # async fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
//! let both = locks.multi(["/accounts/bob", "/accounts/alice"]).lock().await?;
//! both.release().await?;
//! # Ok(()) }
//! # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
//! ```
//!
//! ## Reentrancy
//!
//! A [`Mutex::reentrant`] mutex locked again by its owner on the same session gives
//! another guard on the same node at once, with no request; the node goes with the
//! last guard ([`LockGuard::holds`] counts them). Without it, re-entering is an
//! [`Error::SelfDeadlock`].
//!
//! ## Downgrade
//!
//! The write holder of an [`RwLock`] takes its read half at once, beside its own
//! write node (a read is not blocked by a write of its own owner), then releases
//! the write and keeps reading. If a writer of someone else queued between the two
//! nodes, the read fails at once with [`Error::SelfDeadlock`] (that writer waits
//! for the owner's write, the read would wait for that writer).
//!
//! ```
//! # async fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
//! let table = locks.rwlock("/locks/table");
//! let write = table.write().lock().await?;
//! let read = table.read().lock().await?; // no queueing behind our own write
//! write.release().await?;                // still reading
//! # drop(read); Ok(()) }
//! # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
//! ```
//!
//! ## Connection state and tracing
//!
//! [`LockClient::connection_state`] and [`LockClient::connection_events`] follow
//! the session as a whole ([`ConnectionEvent`]: `Connected`, `Suspended`,
//! `Reconnected`, `SessionLost`, `ServerHazard`, `Closed`), beside each guard's
//! own events. `ServerHazard` says that a server's settings let a majority
//! expire the session while that server still answers it ([`Hazard`]: the rule
//! and the fix; [`LockClient::server_checks`] has every check). Every
//! acquisition runs in a `tracing` span `zklock.lock` (path, recipe, owner, lock id)
//! with an event per step: created, queued behind a node, acquired (node, token),
//! suspended, resumed, lost (reason), released, failed. The core has no `tracing`:
//! it reports its steps as [`Output::Progress`](lock_core::Output::Progress), which
//! this crate turns into those events, so every binding has them.
//!
//! ## The canonical binding loop
//!
//! The calling rules are on [`Link`]. An async binding's driver, in outline (the
//! `select` is over whatever the binding's client offers):
//!
//! ```text
//! let (locks, mut link) = lock_client::pair(config);
//! link.handle_session(SessionEvent::Connected { session_id }, Instant::now());
//! loop {
//!     // 1. Send every request, in order, at once (the core pipelines them).
//!     let polled = link.poll(&mut requests);
//!     for Request { id, op } in requests.drain(..) {
//!         start(id, op);            // the binding's `match op { .. }`: one client call each
//!     }
//!     if polled.closed {            // close() called, or every handle dropped
//!         close the ZooKeeper session;
//!         link.handle_session(SessionEvent::Closed, Instant::now());
//!         return;                   // dropping the link lets close() return
//!     }
//!     // 2. Wait for whatever comes first, and feed it back (with whatever else
//!     //    is already at hand: one `poll` per batch).
//!     match select(link.poll_wake(cx), replies, watches, session states, timer(polled.timeout)) {
//!         Wake                 => {}                                  // a handle asked for something
//!         Reply(id, result)    => link.handle_reply(id, result, Instant::now()),
//!         Watch(path, kind)    => link.handle_watch(path, kind, Instant::now()),
//!         State(change)        => link.handle_session(mapped(change), Instant::now()),
//!         Timer                => link.handle_timeout(Instant::now()),
//!     }
//! }
//! ```
//!
//! A threaded binding runs the same loop with [`Link::wait`] in place of
//! `poll_wake`, and wakes it from its client's callback threads through a
//! [`Notifier`]. Or, as lock-zookeeper does (adapters/zookeeper/src/driver/), it
//! receives everything on one channel, replies and watch firings from its client's
//! threads and wake-ups from the handles alike: it registers with
//! [`Link::poll_wake`] a `Waker` whose `wake` sends a message on that channel.
//!
//! ## Writing a binding
//!
//! A binding for another ZooKeeper client is six pieces of glue; lock-zookeeper-client
//! (adapters/zookeeper-client/src, under 800 lines of code) is the worked example, in
//! these files:
//!
//! 1. **Connect and pair** (`client.rs`): connect, then
//!    `lock_client::pair(options.lock_config(negotiated_timeout, random_seed()))`
//!    ([`ConnectOptions::lock_config`], [`random_seed`]); a client that learns
//!    the granted timeout only once connected pairs with the one asked for and
//!    feeds the granted one with [`Link::reconfigure`] before `Connected`
//!    (lock-zookeeper does). Hand the `LockClient` to
//!    the user and the `Link` to the loop; re-export this crate's API so users need
//!    one dependency.
//! 2. **The request `match`** (`glue.rs`): one client call per [`lock_core::Op`]:
//!    `Create { path, data, mode }` (for `EphemeralSequential`, the reply's path is
//!    `path` plus the server's `%010d` sequence; give the `Stat` when the client
//!    returns it: it is the fencing token), `GetChildren`, `WatchChildren`,
//!    `GetData { watch }` (a watch must reach [`Link::handle_watch`] when it fires),
//!    `SetData`, `Delete`, `Multi` (all or nothing; a failed op is
//!    `ZkError::MultiFailed { index, .. }`). Map the client's errors onto
//!    [`ZkError`]: anything after which the request may or may not have been
//!    applied is `ConnectionLoss`. An op the client cannot send (a future one, or
//!    `multi` on a client without it) gets `ZkError::Unimplemented`. The call
//!    must put the request on the wire in the order polled; if the client buffers
//!    writes (Nagle), set `TCP_NODELAY`.
//! 3. **Session mapping** (`driver.rs`): the client's states onto
//!    [`SessionEvent`]: connected → `Connected { session_id }`
//!    (feed `Disconnected` first if the client skipped it: [`Link::is_connected`]
//!    is still true), disconnected or read-only → `Disconnected { since_contact }`,
//!    expired or auth-failed → `Expired` (then reconnect, and report the new session
//!    with `Connected`). [`Link::is_connected`] and [`Link::session_id`] say what was
//!    fed, so the driver keeps no copy. `Disconnected` must come within 2/3 of the
//!    session timeout after the last contact, and `since_contact` must not
//!    underestimate how long ago that was (rule 4 on [`Link`]): count from the
//!    sending of the newest request the server answered (`ZkError::is_from_server`
//!    tells which failures prove it heard), bounded by the client library's own
//!    ping timing for an idle session.
//! 4. **The loop** (`driver.rs`), as above, plus its close.
//! 5. **Connection options** (`dial.rs`; `options(ConnectOptions)` on the builder): what the
//!    client library allows of [`ConnectOptions`] (auth, resent on every
//!    reconnect before any request; the [`NodeAcl`] on every `Create`, including
//!    the binding's own nodes; chroot; timeouts; TLS; SASL), and
//!    [`Error::Unsupported`] at connect for the rest, never a silent default.
//!
//! 6. **Server checks** (`driver.rs`): after each (re)connect, on a thread of
//!    its own, ask the server(s) the process is connected to for `conf`
//!    (`lock_nodelay::ask_connected_servers`) and hand each answer to the
//!    [`ServerChecker`] from [`Link::server_checker`].
//!
//! Everything else (handles, guards, events, deadlines, elections, sections,
//! fenced writes, errors, connection options) is here, so a feature is written once
//! and every binding has it. lock-zookeeper-async (adapters/zookeeper-async) is a
//! second worked example, written only against this crate's public API, over a
//! client that lacks `multi`, `sync` and the session's id.
//!
//! ### A minimal binding, walked through
//!
//! The smallest driver that keeps the contract, compiled and run with this
//! crate's tests: its "client" answers every request at once from the node
//! names it made (where a real binding calls its client library and waits for
//! the reply), and its loop is the one above, on a thread, with [`Link::wait`].
//!
//! ```
//! use lock_client::{pair, CreateMode, Op, Reply, Request, SessionEvent, Stat, ZkError};
//! use lock_client::Config;
//! use std::time::{Duration, Instant};
//!
//! let (locks, mut link) = pair(Config::new(Duration::from_secs(10), 7));
//! // What the binding must report first: the session, once it is established.
//! link.handle_session(SessionEvent::Connected { session_id: 1 }, Instant::now());
//! let user = std::thread::spawn(move || {
//!     let guard = locks.mutex("/locks/job").lock_blocking().unwrap();
//!     let token = guard.token();
//!     guard.release_blocking().unwrap();
//!     locks.close_blocking();
//!     token
//! });
//! // The loop: send every request in the order polled (here: answer it), feed
//! // each reply back, wait for the next wake-up or timer, until closed.
//! let mut nodes: Vec<String> = Vec::new();
//! let mut zxid = 100;
//! loop {
//!     let mut requests = Vec::new();
//!     let polled = link.poll(&mut requests);
//!     if polled.closed {
//!         break;
//!     }
//!     let idle = requests.is_empty();
//!     for Request { id, op } in requests {
//!         let result = match op {
//!             Op::Create { path, mode: CreateMode::EphemeralSequential, .. } => {
//!                 zxid += 1;
//!                 let path = format!("{path}{:010}", nodes.len());
//!                 nodes.push(path.clone());
//!                 // The create's Stat carries the fencing token (czxid).
//!                 let stat = Stat { czxid: zxid, ephemeral_owner: 1, ..Stat::default() };
//!                 Ok(Reply::Created { path, stat: Some(stat) })
//!             }
//!             Op::GetChildren { path } => Ok(Reply::Children(
//!                 nodes.iter().filter_map(|n| n.strip_prefix(&format!("{path}/"))).map(String::from).collect(),
//!             )),
//!             Op::Delete { path, .. } => {
//!                 nodes.retain(|n| *n != path);
//!                 Ok(Reply::Deleted)
//!             }
//!             _ => Err(ZkError::Unimplemented),
//!         };
//!         link.handle_reply(id, result, Instant::now());
//!     }
//!     if polled.timeout.is_some_and(|at| at <= Instant::now()) {
//!         link.handle_timeout(Instant::now());
//!     } else if idle {
//!         link.wait(Some(Instant::now() + Duration::from_millis(50)));
//!     }
//! }
//! // Closed: the binding closes its session and reports it; dropping the link
//! // lets `close` return.
//! link.handle_session(SessionEvent::Closed, Instant::now());
//! drop(link);
//! assert_eq!(user.join().unwrap().0, 101);
//! assert!(nodes.is_empty(), "released: no node left");
//! ```
//!
//! ### Running the kit
//!
//! `lock-conformance` is the suite both bindings of this workspace pass, for
//! any binding: one macro call in the binding's `tests/conformance.rs` runs it
//! against a real ZooKeeper that `lock-testkit` starts (Debian's `zookeeper`
//! package, `ZOOKEEPER_HOME` or `ZOOKEEPER_CLASSPATH`), declaring what the
//! client cannot do; the tests that need it say `not applicable: <capability>`:
//!
//! ```text
//! use lock_conformance::{Capability, Style, ZkEnv};
//! fn env() -> ZkEnv {
//!     ZkEnv::new("my-binding", Style::Blocking, 3, |cluster, timeout| {
//!         my_binding::builder(cluster).session_timeout(timeout).connect()
//!     })
//!     .without(Capability::Multi) // the client has no `multi`
//! }
//! lock_conformance::conformance_tests!(env());
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod blocking;
mod client;
mod clock;
mod connection;
mod election;
mod error;
mod guard;
mod handle;
mod link;
mod lock;
mod metrics;
mod multi;
mod options;
mod pending;
mod section_calls;
mod server;
mod shared;
mod status;
mod sync;
mod trace;
mod writes;

pub use crate::metrics::{describe_metrics, HISTOGRAM_BUCKETS};
pub use client::{pair, pair_with_clock, BreakLock, Broken};
pub use clock::{Clock, SystemClock};
pub use connection::ConnectionEvents;
pub use connection::{ConnectionEvent, ConnectionState};
pub use election::{Election, ElectionEvent, ElectionObserver, Leadership};
pub use error::{BreakError, Cause, ConnectFailure, Cycle, Error, Reach};
pub use guard::LockGuard;
pub use handle::LockClient;
pub use link::{Link, Notifier, Polled, ServerChecker};
pub use lock::{Mutex, ReadLock, RwLock, Semaphore, WriteLock};
pub use multi::{MultiGuard, MultiLock, MultiPart};
pub use options::{random_seed, AclEntry, Auth, ConnectOptions, NodeAcl, Perms, SaslDigest, Tls};
pub use pending::{Canceller, PendingLock, QueueWatch};
pub use server::{
    four_letter_word_refused, ConfError, Hazard, HazardKind, ServerCheck, ServerConf, ServerProbe,
};
pub use status::{LockStatus, Queued};
pub use writes::Writes;

pub use lock_core::{
    BreakOutcome, CreateMode, CycleNode, FailReason, FencedError, FencingToken, Grant, LastBreak,
    Leader, LockEvent, LockSpec, LostReason, MultiOp, MultiResult, NameScheme, NodeKind,
    Participant, Participants, ServerRole, Stats, UsageError, WaitFor, ZkError,
};
/// What a binding exchanges with the [`Link`] (lock-core's wire vocabulary),
/// here so that a binding depends on this crate alone.
pub use lock_core::{Config, Op, Reply, Request, RequestId, SessionEvent, Stat, WatchKind};

#[cfg(test)]
mod tests;
