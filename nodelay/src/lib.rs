//! # lock-nodelay: TCP_NODELAY for ZooKeeper client crates that leave Nagle on
//!
//! zklock's bindings pipeline their requests: an acquisition sends `create` and
//! `getChildren` back to back, and ZooKeeper's per-session FIFO order makes the
//! listing contain the new node, so a free lock takes one round trip. That only
//! holds on the wire if the second request leaves without waiting for the first
//! one's reply. Neither client crate the bindings use sets `TCP_NODELAY` on its
//! connection (`zookeeper-client` 0.11.2, the latest release, and `zookeeper` 0.8.0,
//! likewise), and both write each request with its own `write`. Nagle's algorithm
//! then holds every small write made while earlier data is unacknowledged, so the
//! `getChildren` waits for the `create`'s reply (which carries the
//! acknowledgement): 2 round trips instead of 1, and a release's `delete` may wait
//! behind the holder's own-node `getData` likewise. The Java client, Curator and
//! kazoo all set the option.
//!
//! Neither crate offers a hook to reach its socket, so this crate sets the option
//! from outside: [`apply`] looks through the process's open file descriptors
//! (`/proc/self/fd`) for TCP sockets connected to one of the ZooKeeper servers of a
//! connect string ([`Peers`]) and turns Nagle's algorithm off on each. The bindings
//! call it after every (re)connection, since the client crates open a new socket
//! each time (possibly to another ensemble member). It is idempotent and cheap (a
//! `readlink` per descriptor, a few system calls per socket).
//!
//! ```no_run
//! let peers = lock_nodelay::Peers::resolve("127.0.0.1:2181,127.0.0.1:2182/app")?;
//! let applied = lock_nodelay::apply(&peers)?;
//! println!("{} connection(s), Nagle turned off on {}", applied.connections, applied.changed);
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! ## Which sockets
//!
//! Every TCP socket of the process whose peer is one of the servers' addresses:
//! the connections of the binding's client, and those of any other ZooKeeper
//! client in the process connected to the same servers. For those the option is
//! just as right (a ZooKeeper client is a request/response protocol with small
//! messages); nothing else connects to a ZooKeeper server's client port.
//!
//! ## How a socket is reached
//!
//! A descriptor number found in `/proc/self/fd` belongs to someone else (here, the
//! client crate's connection object), and Rust's I/O safety forbids using a number
//! one does not own. So the socket is reached by *duplicating* the descriptor with
//! `pidfd_getfd(2)` on this process's own pidfd (Linux 5.6): a new descriptor,
//! owned here, for the same socket, through rustix's safe API. Nothing in the
//! process is touched but the one socket option, and the duplicate is checked to be
//! the socket that was listed (its `/proc/self/fd` link names the same inode) before
//! its peer address is compared.
//!
//! Container sandboxes often refuse `pidfd_getfd` (Docker's default seccomp profile
//! allows it only with `CAP_SYS_PTRACE`). Then, and only then, the crate falls back
//! to its one `unsafe` block (module `borrowed`): it borrows the listed descriptor
//! number for the duration of the same few calls (`getpeername`, `getsockopt`,
//! `setsockopt`). The block's comment gives the argument; in short, the worst a
//! descriptor closed and reused meanwhile can suffer is `TCP_NODELAY` on another
//! connection to the same ZooKeeper server, which the checks make all but
//! impossible and which would be harmless.
//!
//! On other systems than Linux [`apply`] reports [`std::io::ErrorKind::Unsupported`]
//! and the bindings carry on (Nagle's delays included).
//!
//! ## Four-letter words
//!
//! The crate also holds the other socket matter both bindings share:
//! [`four_letter_word`], one short exchange with a server's client port (plain
//! `std::net::TcpStream`, with a timeout), and
//! [`ask_connected_servers_all_after`], which after a (re)connect asks the
//! servers this process is connected to ([`connected_servers`], found as
//! above) for their settings and role on a thread of its own, so that the check
//! never holds up a lock operation. lock-client judges the answers
//! (`lock_client::ServerConf`, `lock_client::Hazard`).
//!
//! ## Tests
//!
//! This crate's tests set the option on real loopback connections through both
//! access paths and check that other sockets are left alone. Each binding has a
//! test that checks the option on the live socket after connecting and after a
//! reconnection through a fault proxy, and round-trip tests through a delaying
//! proxy that fail with Nagle's algorithm on. `patches/` at the repository root
//! holds the fix for `zookeeper-client` itself, for its maintainer; once a release
//! sets the option, this crate can go.
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
