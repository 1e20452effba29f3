//! A ZooKeeper client: the `zookeeper` crate 0.8.0 (by Nandor Kracser,
//! <https://github.com/bonifaido/rust-zookeeper>) with zklock's fixes, published as
//! `zookeeper-zklock`. Depend on it under the original name to keep `use
//! zookeeper::...`:
//!
//! ```toml
//! [dependencies]
//! zookeeper = { package = "zookeeper-zklock", version = "0.9.0" }
//! ```
//!
//! What differs from 0.8.0 (README.md has the reasons and the tests):
//!
//! * a client busy with requests (it never pings) reconnects into its session
//!   after a connection loss instead of giving the session up;
//! * [`ZooKeeper::sync`], ZooKeeper's `sync`;
//! * [`ZooKeeper::session_timeout`], the session timeout the server granted;
//! * [`ZooKeeper::multi`], ZooKeeper's `multi` (a transaction of creates,
//!   deletes, setData and checks);
//! * what zklock never calls is removed: the recipes (`recipes::{cache, leader,
//!   queue}`), `ZooKeeperExt`, `set_acl`, `get_data_w`, `add_watch` (persistent
//!   watches), `remove_listener` (and `Subscription`), `Stat::is_ephemeral`,
//!   `Permission::can`, `&` and `Display`, `Acl`'s `Display`, `ZkState::Associating`.
//!
//! The code is upstream's 2020 code, formatted, and otherwise kept close to it so
//! that fixes travel both ways: hence the lints allowed below rather than fixed.
//! Its one `unsafe` block is upstream's (`src/try_io.rs`: a socket reads into a
//! buffer's uninitialized spare capacity); zklock's own crates forbid `unsafe`
//! but for lock-nodelay's one block.

// Upstream's code predates these lints (deprecated `try!`, style lints); not
// correctness lints, which stay on.
#![allow(deprecated)]
#![allow(clippy::style, clippy::complexity, clippy::perf)]
#![deny(unused_mut)]
extern crate byteorder;
extern crate bytes;
#[macro_use]
extern crate lazy_static;
#[macro_use]
extern crate log;
extern crate mio;
extern crate mio_extras;
#[macro_use]
extern crate zookeeper_derive;

pub use acl::*;
pub use consts::{WatcherType, *};
pub use data::*;
pub use multi::{MultiError, Op, OpResult};
pub use watch::{WatchedEvent, Watcher};
pub use zookeeper::{ZkResult, ZooKeeper};

mod acl;
mod consts;
mod data;
mod io;
mod listeners;
mod multi;
mod proto;
mod try_io;
mod watch;
mod zookeeper;
