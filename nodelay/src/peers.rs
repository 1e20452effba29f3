//! The server addresses of a ZooKeeper connect string.

use std::io;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};

/// ZooKeeper's default client port, used for hosts given without one.
const DEFAULT_PORT: u16 = 2181;

/// The socket addresses of a set of ZooKeeper servers: the peers whose
/// connections get `TCP_NODELAY`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Peers {
    /// Normalised (see [`normalize`]), deduplicated.
    addrs: Vec<SocketAddr>,
}

impl Peers {
    /// The addresses given.
    ///
    /// ```
    /// let peers = lock_nodelay::Peers::new(["127.0.0.1:2181".parse().unwrap()]);
    /// assert!(peers.contains("127.0.0.1:2181".parse().unwrap()));
    /// ```
    pub fn new(addrs: impl IntoIterator<Item = SocketAddr>) -> Peers {
        let mut peers = Peers::default();
        for addr in addrs {
            peers.push(addr);
        }
        peers
    }

    /// The servers of `connect_string` (read as [`resolve`](Self::resolve) reads
    /// it) when every host in it is an IP address: no name to resolve, so the
    /// caller may [`apply`](crate::apply) at once instead of on a thread of its
    /// own. `None` when a host is a name, or when there is no valid host.
    ///
    /// ```
    /// assert!(lock_nodelay::Peers::literal("127.0.0.1:2181,[::1]:2182/app").is_some());
    /// assert!(lock_nodelay::Peers::literal("127.0.0.1:2181,zk2:2181").is_none());
    /// ```
    pub fn literal(connect_string: &str) -> Option<Peers> {
        let mut peers = Peers::default();
        for (host, port) in connect_string.split(',').filter_map(parse_host) {
            peers.push(SocketAddr::new(host.parse::<IpAddr>().ok()?, port));
        }
        (!peers.addrs.is_empty()).then_some(peers)
    }

    /// The servers of a ZooKeeper connect string, as `zookeeper-client` and the
    /// `zookeeper` crate read it: `host[:port][,host[:port]...][/chroot]`, hosts
    /// optionally prefixed with `tcp://` or `tcp+tls://`, IPv6 addresses in
    /// brackets, port 2181 by default. Host names are resolved (blocking) to every
    /// address they have; hosts that do not resolve are left out.
    ///
    /// ```
    /// let peers = lock_nodelay::Peers::resolve("10.0.0.1:2181,[::1]:2182,10.0.0.3/app").unwrap();
    /// assert_eq!(peers.addrs().len(), 3);
    /// assert!(peers.contains("10.0.0.3:2181".parse().unwrap()));
    /// ```
    ///
    /// # Errors
    /// [`io::ErrorKind::InvalidInput`] when no host resolves.
    pub fn resolve(connect_string: &str) -> io::Result<Peers> {
        let mut peers = Peers::default();
        let mut last_error = None;
        for entry in connect_string.split(',') {
            let Some((host, port)) = parse_host(entry) else {
                continue;
            };
            match host.parse::<IpAddr>() {
                Ok(ip) => peers.push(SocketAddr::new(ip, port)),
                Err(_) => match (host, port).to_socket_addrs() {
                    Ok(addrs) => addrs.for_each(|addr| peers.push(addr)),
                    Err(e) => last_error = Some(e),
                },
            }
        }
        if peers.addrs.is_empty() {
            let why = last_error.map_or_else(|| "no host".to_owned(), |e| e.to_string());
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("no server address in {connect_string:?}: {why}"),
            ));
        }
        Ok(peers)
    }

    /// The hosts of a connect string as written, each with its port (2181 when
    /// none is given), unresolved; `Err` with the entry for a malformed one
    /// (empty entries are skipped).
    ///
    /// ```
    /// let hosts = lock_nodelay::Peers::hosts("zk1,zk2:http,[::1]:2182/app");
    /// assert_eq!(hosts, [Ok(("zk1", 2181)), Err("zk2:http"), Ok(("::1", 2182))]);
    /// ```
    pub fn hosts(connect_string: &str) -> Vec<Result<(&str, u16), &str>> {
        connect_string
            .split(',')
            .map(str::trim)
            .filter(|entry| !entry.is_empty() && !entry.starts_with('/'))
            .map(|entry| parse_host(entry).ok_or(entry))
            .collect()
    }

    /// The addresses.
    pub fn addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }

    /// Whether `addr` is one of the servers (an IPv4-mapped IPv6 address counts
    /// as its IPv4 address).
    pub fn contains(&self, addr: SocketAddr) -> bool {
        self.addrs.contains(&normalize(addr))
    }

    fn push(&mut self, addr: SocketAddr) {
        let addr = normalize(addr);
        if !self.addrs.contains(&addr) {
            self.addrs.push(addr);
        }
    }
}

/// The address without IPv6 flow and scope, IPv4-mapped addresses as IPv4 (a
/// dual-stack socket reports an IPv4 peer so).
fn normalize(addr: SocketAddr) -> SocketAddr {
    let ip = match addr.ip() {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    };
    SocketAddr::new(ip, addr.port())
}

/// `host` and port of one comma-separated entry; `None` for an empty or
/// malformed one.
fn parse_host(entry: &str) -> Option<(&str, u16)> {
    let entry = entry.trim();
    let entry = entry
        .strip_prefix("tcp://")
        .or_else(|| entry.strip_prefix("tcp+tls://"))
        .unwrap_or(entry);
    // A chroot follows the last host.
    let entry = entry.find('/').map_or(entry, |i| &entry[..i]);
    let (host, port) = if let Some(rest) = entry.strip_prefix('[') {
        let (host, rest) = rest.split_once(']')?;
        match rest.strip_prefix(':') {
            Some(port) => (host, port),
            None if rest.is_empty() => (host, ""),
            None => return None,
        }
    } else {
        match entry.rsplit_once(':') {
            Some((host, port)) => (host, port),
            None => (entry, ""),
        }
    };
    if host.is_empty() {
        return None;
    }
    let port = if port.is_empty() {
        DEFAULT_PORT
    } else {
        port.parse().ok().filter(|&p| p != 0)?
    };
    Some((host, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn connect_strings() {
        assert_eq!(parse_host("127.0.0.1:2182"), Some(("127.0.0.1", 2182)));
        assert_eq!(parse_host(" zk1 "), Some(("zk1", 2181)));
        assert_eq!(parse_host("tcp://zk1:1/chroot/x"), Some(("zk1", 1)));
        assert_eq!(parse_host("tcp+tls://[::1]:9"), Some(("::1", 9)));
        assert_eq!(parse_host("[fe80::1]"), Some(("fe80::1", 2181)));
        assert_eq!(parse_host("[::1]x"), None);
        assert_eq!(parse_host(""), None);
        assert_eq!(parse_host(":2181"), None);
        assert_eq!(parse_host("zk1:0"), None);
        assert_eq!(parse_host("zk1:http"), None);

        let peers = Peers::resolve("127.0.0.1:1,127.0.0.1:2,127.0.0.1:1/app").unwrap();
        assert_eq!(peers.addrs(), [addr("127.0.0.1:1"), addr("127.0.0.1:2")]);
        let peers = Peers::resolve("localhost:7").unwrap();
        assert!(peers.contains(addr("127.0.0.1:7")) || peers.contains(addr("[::1]:7")));
        assert!(!peers.contains(addr("127.0.0.1:8")));
        let err = Peers::resolve(",/chroot").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn literal_connect_strings_need_no_resolution() {
        let peers = Peers::literal("127.0.0.1:1,[::1]:2,10.0.0.3/app").unwrap();
        assert_eq!(
            peers.addrs(),
            [addr("127.0.0.1:1"), addr("[::1]:2"), addr("10.0.0.3:2181")]
        );
        assert_eq!(Peers::literal("127.0.0.1:1,localhost:2"), None);
        assert_eq!(Peers::literal(",/chroot"), None);
    }

    #[test]
    fn mapped_addresses_match_their_ipv4_address() {
        let peers = Peers::new([addr("127.0.0.1:2181")]);
        assert!(peers.contains(addr("[::ffff:127.0.0.1]:2181")));
        let peers = Peers::new([addr("[::ffff:10.1.2.3]:2181")]);
        assert_eq!(peers.addrs(), [addr("10.1.2.3:2181")]);
        assert!(peers.contains(addr("10.1.2.3:2181")));
        assert!(!peers.contains(addr("10.1.2.3:2182")));
    }
}
