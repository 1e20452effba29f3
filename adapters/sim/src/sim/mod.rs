//! The seeded simulator: [`Sim`](crate::Sim) schedules clients, their connections
//! and faults over the [`model`](crate::model) in virtual time; `rng.rs` is the
//! only source of randomness.

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
pub(crate) mod user_face;
pub(crate) mod user_queries;
pub(crate) mod workload;
