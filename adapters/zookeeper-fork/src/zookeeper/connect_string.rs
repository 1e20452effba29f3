//! The connect string (`host:port,...[/chroot]`) and the paths in it.

use super::{ZkResult, ZooKeeper};
use consts::ZkError;
use std::net::{SocketAddr, ToSocketAddrs};

impl ZooKeeper {
    pub(super) fn parse_connect_string(
        connect_string: &str,
    ) -> ZkResult<(Vec<SocketAddr>, Option<String>)> {
        let (chroot, end) = match connect_string.find('/') {
            Some(start) => match &connect_string[start..connect_string.len()] {
                "" | "/" => (None, start),
                chroot => (Some(try!(Self::validate_path(chroot)).to_owned()), start),
            },
            None => (None, connect_string.len()),
        };

        let mut addrs = Vec::new();
        for addr_str in connect_string[..end].split(',') {
            let addr = match addr_str.trim().to_socket_addrs() {
                Ok(mut addrs) => match addrs.nth(0) {
                    Some(addr) => addr,
                    None => return Err(ZkError::BadArguments),
                },
                Err(_) => return Err(ZkError::BadArguments),
            };
            addrs.push(addr);
        }

        Ok((addrs, chroot))
    }

    pub(super) fn validate_path(path: &str) -> ZkResult<&str> {
        match path {
            "" => Err(ZkError::BadArguments),
            path => {
                if path.len() > 1 && path.chars().last() == Some('/') {
                    Err(ZkError::BadArguments)
                } else {
                    Ok(path)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ZooKeeper;
    use consts::ZkError;
    use std::net::{Ipv6Addr, SocketAddr};

    // Upstream's test ran on macOS only (`::1:2181` resolves differently
    // elsewhere); written with addresses that parse alike on every system.
    #[test]
    fn parse_connect_string() {
        let v4 = |port| SocketAddr::from(([127, 0, 0, 1], port));
        let v6 = SocketAddr::from((Ipv6Addr::LOCALHOST, 2181));
        let mesos = Some("/mesos".to_owned());
        for (connect, parsed) in [
            (
                "127.0.0.1:2181,[::1]:2181/mesos",
                (vec![v4(2181), v6], mesos),
            ),
            ("127.0.0.1:2181", (vec![v4(2181)], None)),
            (
                "127.0.0.1:2181,127.0.0.1:2182/",
                (vec![v4(2181), v4(2182)], None),
            ),
        ] {
            assert_eq!(
                ZooKeeper::parse_connect_string(connect),
                Ok(parsed),
                "{connect}"
            );
        }
        // As ZooKeeper.java: a path must not end with a `/`.
        assert_eq!(
            ZooKeeper::parse_connect_string("127.0.0.1:2181/mesos/"),
            Err(ZkError::BadArguments)
        );
    }
}
