//! # lock-sim: zklock's lock protocols on a simulated ZooKeeper
//!
//! `lock-sim` binds [`lock_core::Session`] to an in-memory ZooKeeper model under a
//! seeded, deterministic scheduler with fault injection. It is three things:
//!
//! * **a test double**: put a [`Sim`] in your unit tests instead of a ZooKeeper
//!   server; everything runs in virtual time, in microseconds of real time;
//! * **the engine of zklock's simulation tests**: a [`Workload`] drives many clients
//!   through random schedules with disconnects, partitions, session expiries, lost
//!   watch notifications and admin meddling, while the invariant checker
//!   ([`check`]) verifies mutual exclusion, fencing and liveness after every
//!   step; a failing seed replays exactly with [`Sim::replay`];
//! * **a ZooKeeper model** ([`ZkModel`]) with the server's naming, versioning, watch
//!   and container rules, usable on its own.
//!
//! Each simulated client is a bare [`lock_core::Session`], or with
//! [`SimConfig::user_api`] (workloads: [`Workload::through_lock_client`])
//! lock-client's `LockClient` driven through its `Link` on a virtual clock, its
//! futures polled only when their wakers are woken (quinn-proto's test `Pair`):
//! the invariants then check what the user sees, and a lost wake-up or a guard
//! status contradicting its events is a violation too.
//!
//! ## Example
//!
//! ```
//! use zklock::{LockEvent, LockSpec};
//! use zklock::sim::{Profile, Sim, SimConfig};
//! use std::time::Duration;
//!
//! let mut sim = Sim::new(SimConfig::new(7));
//! let alice = sim.add_client(Profile::KeepsWatches, Duration::from_secs(6));
//! let bob = sim.add_client(Profile::LosesWatchesNewSession, Duration::from_secs(6));
//!
//! let a = sim.acquire(alice, LockSpec::write("/locks/report")).unwrap();
//! sim.settle().unwrap();
//! let b = sim.acquire(bob, LockSpec::write("/locks/report")).unwrap();
//! sim.settle().unwrap();
//! assert!(sim.holds(alice, a));
//! assert!(!sim.holds(bob, b));
//!
//! // Alice's session expires: she loses the lock, Bob gets it.
//! sim.expire_session(alice);
//! sim.settle().unwrap();
//! assert!(matches!(sim.outcome(alice, a), Some(LockEvent::Lost(_))));
//! assert!(sim.holds(bob, b));
//!
//! // Fencing tokens grow with every holder.
//! let ta = sim.grant(alice, a).unwrap().token;
//! let tb = sim.grant(bob, b).unwrap().token;
//! assert!(tb > ta);
//! ```
//!
//! ## The API at a glance
//!
//! | what | how |
//! |---|---|
//! | set up | [`Sim::new`]`(`[`SimConfig`]`)`, [`Sim::add_client`] (a [`Profile`] and a session timeout) or [`Sim::add_client_with`] ([`ClientConfig`]: seed, grace) |
//! | act as the user | [`Sim::acquire`], [`Sim::release`], [`Sim::cancel`], [`Sim::observe`], [`Sim::revoke`], [`Sim::fenced_write`], [`Sim::open_section`] / [`Sim::close_section`] |
//! | run | [`Sim::step`], [`Sim::run_for`], [`Sim::run_until`]`(predicate)`, [`Sim::settle`] (network quiet: [`Sim::is_quiet`]), [`Sim::run_until_idle`] (and every core idle: [`Sim::is_idle`]) |
//! | inspect | [`Sim::now`], [`Sim::events`] / [`Sim::lock_events`] (timestamped), [`Sim::holds`], [`Sim::grant`], [`Sim::outcome`], [`Sim::children`], [`Sim::get`], [`Sim::counters`] / [`Sim::total_counters`] / [`Sim::reset_counters`], [`Sim::trace_log`] |
//! | break things | [`Sim::disconnect`] / [`Sim::disconnect_with`], [`Sim::partition`] / [`Sim::heal`], [`Sim::expire_session`], [`Sim::lose_notifications`], [`Sim::delay_reconnect`], [`Sim::admin_delete`], [`Sim::admin_set_data`], [`Sim::close`], random ones with [`FaultConfig`] |
//! | check | invariants after every step (a [`Violation`] stops the run), [`Sim::check_quiescent`] for orphans, [`Sim::wind_down`] (end every task, then check), [`Sim::audit_fenced_writes`] (every write to a data node audited at the server), [`Sim::coverage`] (what the feature checks exercised) |
//! | explore | [`Workload::run`]`(seed)`, [`Sim::replay`]`(seed, &workload)`, [`Workload::simulate`]; presets per recipe and for the holder's features ([`Workload::sections`], [`Workload::fenced`], [`Workload::features`]) |
//!
//! ## Faults: one set of names on both faces
//!
//! The seeded [`Sim`] and the in-process [`Server`] serve the same ZooKeeper model
//! (the tree, its watches and its session tracker) and break it with the same
//! faults, under the same names:
//!
//! | fault | seeded [`Sim`] | in-process [`Server`] |
//! |---|---|---|
//! | reset connection: noticed at once, back after a delay | [`Sim::disconnect`], [`Sim::disconnect_with`] | [`Server::disconnect`] |
//! | silent partition: noticed within 2/3 of the session timeout | [`Sim::partition`] | [`Server::partition`] |
//! | end the cut early | [`Sim::heal`], [`Sim::heal_all`] | [`Server::heal`] |
//! | the server expires the session | [`Sim::expire_session`] | [`Server::expire_session`] |
//! | an administrator deletes a node | [`Sim::admin_delete`] | [`Server::admin_delete`] |
//! | an administrator writes a node | [`Sim::admin_set_data`] | [`Server::admin_set_data`] |
//! | notifications in flight lost with their connection | [`Sim::lose_notifications`] | [`Server::hold_replies`], then a cut |
//! | replies applied but lost with their connection | [`Sim::disconnect_with`] ([`InFlight::Applied`]) | [`Server::hold_replies`], then a cut |
//! | reconnects fail for a while | [`Sim::delay_reconnect`] | a [`Server::partition`] that lasts |
//!
//! A cut session expires one session timeout after the cut unless its client is back
//! first, on both faces; a watch set before a cut is dropped with the connection and
//! set again on the reconnect with the last zxid the client saw, so a change while
//! cut off fires once it is back.
//!
//! ## The model of the network and the clients
//!
//! Each client has one connection with per-session FIFO order: requests are applied
//! by the server in send order after a [`Latency`], replies and watch notifications
//! come back in order after a latency. A connected client pings, so its session
//! stays alive; a disconnected or partitioned one is expired by the server after
//! its session timeout. A client notices a reset connection at once and a
//! partition within 2/3 of its session timeout (as real clients do), reports
//! `Disconnected`, and reconnects after a reconnect delay: to the same session if it
//! is still alive, otherwise it learns of the expiry according to its [`Profile`].
#![forbid(unsafe_code)]
#![deny(missing_docs)]

/// `+=` for a struct of counts ([`Counters`], [`Coverage`]): field by field.
macro_rules! add_assign_fields {
    ($ty:ty: $($field:ident),+ $(,)?) => {
        impl std::ops::AddAssign for $ty {
            fn add_assign(&mut self, other: $ty) {
                $(self.$field += other.$field;)+
            }
        }
    };
}

pub mod check;
mod ids;
mod model;
pub mod server;
mod sim;

pub use check::{Coverage, Violation, ViolationKind};
pub use ids::ClientId;
pub use model::paths::validate_path;
pub use model::watches::{Notification, WatchType};
pub use model::{NodeInfo, ZkModel, CONTAINER_OWNER, NO_SESSION};
pub use server::Server;
pub use sim::client::{ClientConfig, EventRecord, Profile, ProgressRecord};
pub use sim::config::SimConfig;
pub use sim::counters::{Counters, OpKind};
pub use sim::deadlock::{DeadlockReport, DeadlockWorkload};
pub use sim::fault_config::{FaultConfig, InFlight};
pub use sim::network::Latency;
pub use sim::rng::SimRng;
pub use sim::scheduler::{Sim, TraceEntry};
pub use sim::workload::{Failure, Report, Workload};
