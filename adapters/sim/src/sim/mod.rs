//! The seeded simulator: [`Sim`](crate::Sim) schedules clients, their connections
//! and faults over the [`model`](crate::model) in virtual time.
//!
//! * `scheduler.rs`: [`Sim`](crate::Sim), its configuration and the step loop;
//! * `clients.rs`: the clients, indexed by their next wakeup;
//! * `client.rs`, `face.rs`, `binding.rs`: a simulated client (a bare core or
//!   lock-client's user API) and how its library drives it;
//! * `user_face.rs`, `user_calls.rs`, `user_queries.rs`, `user_events.rs`,
//!   `user_wake.rs`: the user API's face: the acquisitions, the holders' calls,
//!   the queries, their results as the core's events, the executor's wakers;
//! * `network.rs`: the FIFO pipes of one connection, with latency;
//! * `server_side.rs`: the server applying requests, routing firings, expiring
//!   sessions and reaping containers;
//! * `faults.rs`, `fault_config.rs`: random and explicit faults, and their settings;
//! * `inspect.rs`, `counters.rs`: looking into a run;
//! * `workload/`, `deadlock/`: randomized workloads and their reports;
//! * `rng.rs`: the only source of randomness.

pub(crate) mod binding;
pub(crate) mod client;
pub(crate) mod clients;
pub(crate) mod config;
pub(crate) mod counters;
pub(crate) mod deadlock;
pub(crate) mod face;
pub(crate) mod fault_config;
pub(crate) mod faults;
pub(crate) mod inspect;
pub(crate) mod network;
pub(crate) mod rng;
pub(crate) mod scheduler;
pub(crate) mod server_side;
pub(crate) mod user_calls;
pub(crate) mod user_events;
pub(crate) mod user_face;
pub(crate) mod user_queries;
pub(crate) mod user_wake;
pub(crate) mod workload;
