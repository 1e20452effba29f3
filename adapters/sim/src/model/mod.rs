//! The one ZooKeeper model both faces serve from: the data tree with its sessions,
//! ephemerals and containers ([`ZkModel`], `tree.rs`), the server's watch tables
//! (`watches.rs`), its path rules (`paths.rs`) and what a client library knows of
//! its own watches (`client_watches.rs`). No time and no connections here: the
//! seeded simulator ([`crate::Sim`]) and the in-process server ([`crate::Server`])
//! add those on top.

mod client_watches;
pub(crate) mod paths;
mod reads;
mod sessions;
mod tree;
mod tree_watches;
pub(crate) mod watches;
mod writes;

pub(crate) use client_watches::ClientWatches;
pub(crate) use sessions::{silent_cut_noticed_after, SessionTracker, SILENT_CUT_NOTICED_WITHIN};
pub use tree::{NodeInfo, ZkModel, CONTAINER_OWNER, NO_SESSION};
