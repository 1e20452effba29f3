//! Linux: the sockets are found in `/proc/self/fd` and reached through
//! `pidfd_getfd` (a duplicate owned here), or, where that is refused, by borrowing
//! the listed descriptor number (module `borrowed`, the crate's one `unsafe`).

use crate::{Applied, Connection, Peers};
use rustix::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use rustix::io::Errno;
use rustix::net::{sockopt, SocketType};
use rustix::process::{getpid, pidfd_getfd, pidfd_open, PidfdFlags, PidfdGetfdFlags};
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

/// How to reach a socket listed in `/proc/self/fd`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    /// Duplicate it; borrow it if this process may not (remembered).
    Auto,
    /// Duplicate it, or fail (tests).
    #[cfg_attr(not(test), allow(dead_code))]
    Duplicate,
    /// Borrow it (tests).
    #[cfg_attr(not(test), allow(dead_code))]
    Borrow,
}

/// Set once `pidfd_open` or `pidfd_getfd` was refused (seccomp, old kernel): they
/// will be again, so later calls borrow at once.
static DUPLICATION_REFUSED: AtomicBool = AtomicBool::new(false);

/// The sockets an earlier [`apply`] found connected to a server with
/// `TCP_NODELAY` on, by their `socket:[<inode>]` link, with their server. A
/// binding calls [`apply`] after every (re)connect of every session, and a
/// process with a thousand sessions has a thousand sockets: without this, each
/// call asked the kernel about every one of them again (a duplicate, two links,
/// the peer, the option), thousands of system calls per connect and a
/// reconnect storm's worth of CPU after a server restart. A known socket costs
/// one `readlink`; an inode is not reused while its socket is open, and the
/// set keeps only what the latest scan saw.
static KNOWN_NODELAY: Mutex<Option<HashMap<PathBuf, SocketAddr>>> = Mutex::new(None);

pub(crate) fn apply(peers: &Peers, access: Access) -> io::Result<Applied> {
    // A panic during a scan leaves the set as it was or partly rebuilt, both
    // true statements about sockets: the poison carries nothing to act on.
    let mut known = KNOWN_NODELAY.lock().unwrap_or_else(PoisonError::into_inner);
    let before = known.take().unwrap_or_default();
    // Both closures below record into these (one runs per socket, never both).
    let seen = RefCell::new(HashMap::new());
    let applied = RefCell::new(Applied::default());
    let scanned = each_socket(
        peers,
        access,
        |link| match before.get(link) {
            Some(&peer) => {
                if peers.contains(peer) {
                    applied.borrow_mut().connections += 1;
                }
                seen.borrow_mut().insert(link.to_owned(), peer);
                true
            }
            None => false,
        },
        |fd, peer, link| {
            let mut applied = applied.borrow_mut();
            applied.connections += 1;
            let turned_on = match sockopt::tcp_nodelay(fd) {
                Ok(true) => Ok(false),
                Ok(false) => sockopt::set_tcp_nodelay(fd, true).map(|()| true),
                Err(e) => Err(e),
            };
            match turned_on {
                Ok(changed) => {
                    applied.changed += usize::from(changed);
                    seen.borrow_mut().insert(link.to_owned(), peer);
                }
                Err(_) => applied.failed += 1,
            }
        },
    );
    *known = Some(seen.into_inner());
    let mut applied = applied.into_inner();
    applied.borrowed = scanned?;
    Ok(applied)
}

pub(crate) fn connections(peers: &Peers, access: Access) -> io::Result<Vec<Connection>> {
    let mut found = Vec::new();
    each_socket(
        peers,
        access,
        |_| false,
        |fd, peer, _| {
            let local = rustix::net::getsockname(fd)
                .ok()
                .and_then(|a| SocketAddr::try_from(a).ok());
            if let (Some(local), Ok(nodelay)) = (local, sockopt::tcp_nodelay(fd)) {
                found.push(Connection {
                    local,
                    peer,
                    nodelay,
                });
            }
        },
    )?;
    Ok(found)
}

/// Calls `visit` with every TCP socket of this process connected to one of
/// `peers`, its peer address and its `socket:[<inode>]` link, except the sockets
/// whose link `skip` takes (it is asked once per socket). Returns whether any
/// socket was borrowed.
fn each_socket(
    peers: &Peers,
    access: Access,
    mut skip: impl FnMut(&std::path::Path) -> bool,
    mut visit: impl FnMut(BorrowedFd<'_>, SocketAddr, &std::path::Path),
) -> io::Result<bool> {
    let mut duplicate = match access {
        Access::Auto => !DUPLICATION_REFUSED.load(Ordering::Relaxed),
        Access::Duplicate => true,
        Access::Borrow => false,
    };
    let mut pidfd: Option<OwnedFd> = None;
    let mut borrowed = false;
    // Sockets (by their `socket:[<inode>]` link) already visited: a socket can have
    // several descriptors, e.g. the fleeting duplicates of a concurrent call.
    let mut seen = HashSet::new();
    for entry in std::fs::read_dir("/proc/self/fd")? {
        let Ok(entry) = entry else { continue };
        let Some(fd) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<RawFd>().ok())
            .filter(|&fd| fd >= 0)
        else {
            continue;
        };
        // `socket:[<inode>]`; an error means the descriptor was closed meanwhile.
        let Ok(link) = std::fs::read_link(entry.path()) else {
            continue;
        };
        if !link.to_str().is_some_and(|l| l.starts_with("socket:[")) || seen.contains(&link) {
            continue;
        }
        if skip(&link) {
            seen.insert(link);
            continue;
        }
        if duplicate {
            match duplicate_fd(&mut pidfd, fd) {
                Ok(dup) => {
                    // The number may have been closed and reused since it was
                    // listed: go on only if the duplicate is the socket listed.
                    if std::fs::read_link(format!("/proc/self/fd/{}", dup.as_raw_fd()))
                        .is_ok_and(|l| l == link)
                        && inspect(dup.as_fd(), peers, &mut |fd, peer| visit(fd, peer, &link))
                    {
                        seen.insert(link);
                    }
                    continue;
                }
                Err(e) if refused(e) && access == Access::Auto => {
                    DUPLICATION_REFUSED.store(true, Ordering::Relaxed);
                    duplicate = false;
                }
                Err(e) if refused(e) => return Err(e.into()),
                // Closed meanwhile.
                Err(_) => continue,
            }
        }
        borrowed = true;
        if borrowed::with_fd(fd, |fd| {
            inspect(fd, peers, &mut |fd, peer| visit(fd, peer, &link))
        }) {
            seen.insert(link);
        }
    }
    Ok(borrowed)
}

/// A duplicate of this process's descriptor `fd`, owned here.
fn duplicate_fd(pidfd: &mut Option<OwnedFd>, fd: RawFd) -> Result<OwnedFd, Errno> {
    let pidfd = match pidfd {
        Some(pidfd) => pidfd,
        None => pidfd.insert(pidfd_open(getpid(), PidfdFlags::empty())?),
    };
    pidfd_getfd(pidfd.as_fd(), fd, PidfdGetfdFlags::empty())
}

/// The errors that mean this process may not duplicate descriptors this way.
fn refused(e: Errno) -> bool {
    matches!(e, Errno::PERM | Errno::ACCESS | Errno::NOSYS)
}

/// Passes `fd` on to `visit` if it is a TCP socket connected to one of `peers`.
/// Returns whether `fd` was a socket that could be asked (false when it was
/// closed meanwhile).
fn inspect(
    fd: BorrowedFd<'_>,
    peers: &Peers,
    visit: &mut impl FnMut(BorrowedFd<'_>, SocketAddr),
) -> bool {
    let peer = match rustix::net::getpeername(fd) {
        Ok(Some(peer)) => peer,
        Ok(None) | Err(Errno::NOTCONN) => return true, // not a connection
        Err(_) => return false,                        // closed meanwhile, or not a socket any more
    };
    let Ok(peer) = SocketAddr::try_from(peer) else {
        return true; // not IPv4 or IPv6
    };
    if peers.contains(peer) && sockopt::socket_type(fd) == Ok(SocketType::STREAM) {
        visit(fd, peer);
    }
    true
}

/// The crate's one `unsafe` block, used only where `pidfd_getfd` is refused.
#[allow(unsafe_code)]
mod borrowed {
    use rustix::fd::{BorrowedFd, RawFd};

    /// Lends `f` this process's descriptor number `fd`, which something else owns
    /// (the client crate's connection), for the duration of the call.
    pub(super) fn with_fd<R>(fd: RawFd, f: impl FnOnce(BorrowedFd<'_>) -> R) -> R {
        assert!(fd >= 0, "descriptor numbers are not negative");
        // SAFETY: `borrow_raw` asks that `fd` stay open while borrowed, which
        // nobody here can promise: its owner may close it at any moment. What is
        // done with the borrow makes that harmless. It cannot outlive `f`, and the
        // callers only ask the kernel about it (`getpeername`, `getsockname`,
        // `getsockopt(SO_TYPE)`, `getsockopt(TCP_NODELAY)`) and, for a TCP socket
        // connected to a ZooKeeper server, set `TCP_NODELAY`: no read, write,
        // close, or other change of state, and no memory is involved. Closed
        // meanwhile, the number gives EBADF; reused meanwhile (between the
        // `/proc/self/fd` listing and these calls), it names another descriptor,
        // which is left alone unless it is, again, a TCP connection to the same
        // ZooKeeper server, where TCP_NODELAY is wanted anyway.
        let fd = unsafe { BorrowedFd::borrow_raw(fd) };
        f(fd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    /// Sockets connected to `server`, one with Nagle on, one with it off, and one
    /// to `other`; the server side accepts.
    fn setup() -> (TcpListener, TcpListener, [TcpStream; 3]) {
        let server = TcpListener::bind("127.0.0.1:0").unwrap();
        let other = TcpListener::bind("127.0.0.1:0").unwrap();
        let nagle = TcpStream::connect(server.local_addr().unwrap()).unwrap();
        let nodelay = TcpStream::connect(server.local_addr().unwrap()).unwrap();
        nodelay.set_nodelay(true).unwrap();
        let elsewhere = TcpStream::connect(other.local_addr().unwrap()).unwrap();
        assert!(!nagle.nodelay().unwrap());
        (server, other, [nagle, nodelay, elsewhere])
    }

    #[test]
    fn sets_the_option_through_duplicates_and_borrowed_numbers() {
        // Duplicates need Linux 5.6 and no seccomp filter refusing pidfd_getfd.
        for access in [Access::Duplicate, Access::Borrow] {
            let (server, _other, [nagle, nodelay, elsewhere]) = setup();
            let (accepted, _) = server.accept().unwrap();
            // More descriptors for the same sockets: each socket counts once.
            let _clones = [&nagle, &nodelay].map(|s| s.try_clone().unwrap());
            let peers = Peers::new([server.local_addr().unwrap()]);

            let mut seen = connections(&peers, access).unwrap();
            seen.sort_by_key(|c| c.local);
            let mut expected = [(&nagle, false), (&nodelay, true)].map(|(s, on)| Connection {
                local: s.local_addr().unwrap(),
                peer: server.local_addr().unwrap(),
                nodelay: on,
            });
            expected.sort_by_key(|c| c.local);
            assert_eq!(seen, expected, "{access:?}");

            let applied = apply(&peers, access).unwrap();
            assert_eq!(
                (applied.connections, applied.changed, applied.failed),
                (2, 1, 0),
                "{access:?}: {applied:?}"
            );
            assert_eq!(applied.borrowed, access == Access::Borrow);
            assert!(nagle.nodelay().unwrap(), "{access:?}: the option is set");
            assert!(nodelay.nodelay().unwrap());
            // Not connected to the server: left alone, including the server's own end.
            assert!(!elsewhere.nodelay().unwrap());
            assert!(!accepted.nodelay().unwrap());
            let again = apply(&peers, access).unwrap();
            assert_eq!((again.connections, again.changed), (2, 0), "{again:?}");
        }
    }

    #[test]
    fn a_socket_set_by_an_earlier_call_is_not_asked_again() {
        let (server, _other, [nagle, _nodelay, _elsewhere]) = setup();
        let peers = Peers::new([server.local_addr().unwrap()]);
        let first = apply(&peers, Access::Duplicate).unwrap();
        assert_eq!((first.connections, first.changed), (2, 1), "{first:?}");
        // Turned back on behind our back (nothing does that; here it shows which
        // sockets the next call asks), and a new connection since.
        nagle.set_nodelay(false).unwrap();
        let later = TcpStream::connect(server.local_addr().unwrap()).unwrap();
        let again = apply(&peers, Access::Duplicate).unwrap();
        assert_eq!((again.connections, again.changed), (3, 1), "{again:?}");
        assert!(later.nodelay().unwrap(), "the new socket is set");
        assert!(
            !nagle.nodelay().unwrap(),
            "a known socket is not asked again"
        );
    }

    #[test]
    fn duplicates_are_closed() {
        let (server, _other, _streams) = setup();
        let peers = Peers::new([server.local_addr().unwrap()]);
        let count = || std::fs::read_dir("/proc/self/fd").unwrap().count();
        // Other tests open and close descriptors concurrently: compare many runs.
        let before = count();
        for _ in 0..200 {
            apply(&peers, Access::Duplicate).unwrap();
        }
        let after = count();
        assert!(
            after < before + 50,
            "{before} descriptors before, {after} after"
        );
    }
}
