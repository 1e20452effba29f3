#![doc = include_str!("../README.md")]
//!
//! [`apply`] takes the servers of a connect string ([`Peers`]); the bindings
//! call it after every (re)connection, since the client crates open a new socket
//! each time. It is idempotent and cheap (a `readlink` per descriptor, a few
//! system calls per socket):
//!
//! ```no_run
//! let peers = lock_nodelay::Peers::resolve("127.0.0.1:2181,127.0.0.1:2182/app")?;
//! let applied = lock_nodelay::apply(&peers)?;
//! println!("{} connection(s), Nagle turned off on {}", applied.connections, applied.changed);
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! Every TCP socket of the process whose peer is one of the servers gets the
//! option, another ZooKeeper client's too: for a request/response protocol of
//! small messages it is just as right.
#![deny(missing_docs, unsafe_code)]
#![warn(rust_2018_idioms)]

mod fourlw;
mod peers;
mod reach;

#[cfg(target_os = "linux")]
mod linux;

pub use fourlw::{
    ask_connected_servers_all_after, connected_servers, four_letter_word, ServersAnswers,
    BACKGROUND_TIMEOUT, SHARED_ANSWERS_FOR,
};
pub use peers::Peers;
pub use reach::{probe_all, Reach, PROBE_TIMEOUT};

use std::io;
use std::net::SocketAddr;

/// What [`apply`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Applied {
    /// TCP connections of this process to the servers.
    pub connections: usize,
    /// Those that had Nagle's algorithm on and now have it off.
    pub changed: usize,
    /// Those whose option could not be read or set (closed meanwhile, usually).
    pub failed: usize,
    /// Whether the sockets were reached through the fallback (the borrowed
    /// descriptor numbers) because `pidfd_getfd` was refused.
    pub borrowed: bool,
}

/// One TCP connection of this process to a server, as [`connections`] reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Connection {
    /// Our end.
    pub local: SocketAddr,
    /// The server's end.
    pub peer: SocketAddr,
    /// Whether `TCP_NODELAY` is set (Nagle's algorithm off).
    pub nodelay: bool,
}

/// Sets `TCP_NODELAY` on every TCP socket of this process connected to one of
/// `peers`. Blocking, but quick: no network traffic, a few system calls per
/// descriptor of the process.
///
/// # Errors
/// When `/proc/self/fd` cannot be read, and on other systems than Linux
/// ([`io::ErrorKind::Unsupported`]). Failures on single sockets are counted in
/// [`Applied::failed`].
pub fn apply(peers: &Peers) -> io::Result<Applied> {
    #[cfg(target_os = "linux")]
    return linux::apply(peers, linux::Access::Auto);
    #[cfg(not(target_os = "linux"))]
    return unsupported(peers);
}

/// The TCP connections of this process to one of `peers`, with their
/// `TCP_NODELAY` setting (for tests and diagnostics).
///
/// # Errors
/// As for [`apply`].
pub fn connections(peers: &Peers) -> io::Result<Vec<Connection>> {
    #[cfg(target_os = "linux")]
    return linux::connections(peers, linux::Access::Auto);
    #[cfg(not(target_os = "linux"))]
    return unsupported(peers);
}

/// Resolves `connect_string` ([`Peers::resolve`]) and [`apply`]s, on a thread of
/// its own (name resolution may block), then calls `done` with the outcome on
/// that thread. For async callers.
///
/// # Errors
/// When no thread can be started; `done` is then dropped without being called.
pub fn apply_in_background(
    connect_string: String,
    done: impl FnOnce(io::Result<Applied>) + Send + 'static,
) -> io::Result<()> {
    std::thread::Builder::new()
        .name("zklock-nodelay".into())
        .spawn(move || done(Peers::resolve(&connect_string).and_then(|peers| apply(&peers))))
        .map(drop)
}

#[cfg(not(target_os = "linux"))]
fn unsupported<T>(_: &Peers) -> io::Result<T> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "setting TCP_NODELAY from outside the client is implemented on Linux only",
    ))
}
