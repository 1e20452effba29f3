//! What can be refused before connecting (exit 2, one line): the connect string,
//! lock paths, permits, and a lock path too long for CMD's environment.
//! Connecting first would turn a typo into "cannot connect" (69, which scripts
//! retry) or, for a path, into a wait of a whole connect timeout.

use lock_core::names::{
    node_prefix, rwlock_node_prefix, semaphore_lease_dir, semaphore_mutex_dir,
    semaphore_node_prefix,
};
use lock_core::{validate_lock_path, AttemptId, NameScheme, NodeKind};

/// The kernel's limit on one environment string (Linux's MAX_ARG_STRLEN,
/// 32 pages of 4 KiB), its terminating NUL included: `ZKLOCK_NODE=<path>` must
/// fit, or CMD cannot be started.
pub(crate) const MAX_ENV_STRING: usize = 32 * 4096;

/// The width of a sequence number in a node name (`%010d`; 11 when negative).
const SEQUENCE_WIDTH: usize = 11;

/// One server of the connect string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Server {
    /// `host:port` (`[host]:port` for IPv6), for messages.
    pub(crate) text: String,
    /// The host name or address (IPv6 without its brackets).
    pub(crate) host: String,
    /// The port (ZooKeeper's 2181 when not written).
    pub(crate) port: u16,
}

/// A connect string, parsed as the client library will (host[:port] entries
/// separated by commas, then an optional chroot).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ConnectString {
    pub(crate) servers: Vec<Server>,
    /// The chroot, if any (`None` for none or `/`).
    pub(crate) chroot: Option<String>,
}

/// Parses `--zk` / `ZKLOCK_ZK`.
pub(crate) fn connect_string(text: &str) -> Result<ConnectString, String> {
    const FORM: &str = "expected host:port[,host:port...][/chroot]";
    if text.trim().is_empty() {
        return Err(format!(
            "empty ZooKeeper connect string (--zk or ZKLOCK_ZK): {FORM}"
        ));
    }
    // The chroot follows the last server (as zookeeper-client reads it).
    let last = text.rfind(',').map_or(0, |i| i + 1);
    let scheme_end = ["tcp://", "tcp+tls://"]
        .iter()
        .find(|p| text[last..].starts_with(*p))
        .map_or(last, |p| last + p.len());
    let (hosts, chroot) = match text[scheme_end..].find('/') {
        Some(i) => text.split_at(scheme_end + i),
        None => (text, ""),
    };
    let chroot = (!chroot.is_empty()).then_some(chroot);
    let chroot = match chroot {
        None | Some("/") => None,
        Some(chroot) => {
            validate_lock_path(chroot)
                .map_err(|e| format!("invalid chroot in the connect string {text:?}: {e}"))?;
            Some(chroot.to_owned())
        }
    };
    if hosts.split(',').any(|entry| entry.trim().is_empty()) {
        return Err(format!(
            "empty server entry in the connect string {text:?}: {FORM}"
        ));
    }
    let servers = lock_nodelay::Peers::hosts(hosts)
        .into_iter()
        .map(|host| match host {
            Ok((host, port)) => Ok(Server {
                text: if host.contains(':') {
                    format!("[{host}]:{port}")
                } else {
                    format!("{host}:{port}")
                },
                host: host.to_owned(),
                port,
            }),
            Err(entry) => Err(format!(
                "malformed server {entry:?} in the connect string {text:?} (a host and a \
                 port from 1 to 65535): {FORM}"
            )),
        })
        .collect::<Result<_, _>>()?;
    Ok(ConnectString { servers, chroot })
}

/// A lock path as zklock's client will refuse it (ls, revoke, leader, exec...).
pub(crate) fn lock_path(path: &str) -> Result<(), String> {
    validate_lock_path(path).map_err(|e| e.to_string())
}

/// What kind of node `exec` (or `elect`) will create, for its name's length.
#[derive(Clone, Copy, Debug)]
pub(crate) enum NodeFor {
    /// A mutex.
    Write,
    /// The read side of a read/write lock.
    Read,
    /// One of `permits` permits of a semaphore.
    Semaphore { permits: u32 },
    /// An election's candidate.
    Leader,
}

/// Refuses a lock path whose participant node would not fit in the environment
/// string `ZKLOCK_NODE=<node>` CMD gets: found after acquiring, it would leave
/// the lock taken and CMD not run.
pub(crate) fn node_fits_in_env(
    path: &str,
    scheme: NameScheme,
    node: NodeFor,
) -> Result<(), String> {
    let id = AttemptId(u128::MAX);
    let (dir, prefix) = match node {
        NodeFor::Write => (path.len(), node_prefix(scheme, id, NodeKind::Write)),
        NodeFor::Read => (path.len(), rwlock_node_prefix(scheme, id, NodeKind::Read)),
        NodeFor::Leader => (path.len(), node_prefix(scheme, id, NodeKind::Leader)),
        // Curator's and kazoo's semaphores hold a lease in another directory
        // after queueing in a third: the longest of them (a few bytes too many
        // at worst, never too few).
        NodeFor::Semaphore { permits } => {
            let dirs = [
                Some(path.to_owned()),
                semaphore_lease_dir(scheme, path),
                semaphore_mutex_dir(scheme, path),
            ];
            let dir = dirs
                .iter()
                .flatten()
                .map(String::len)
                .max()
                .unwrap_or(path.len());
            let lease = semaphore_node_prefix(scheme, id, permits);
            let queued = node_prefix(scheme, id, NodeKind::Write);
            (
                dir,
                if lease.len() >= queued.len() {
                    lease
                } else {
                    queued
                },
            )
        }
    };
    let string = "ZKLOCK_NODE=".len() + dir + 1 + prefix.len() + SEQUENCE_WIDTH + 1;
    if string > MAX_ENV_STRING {
        return Err(format!(
            "lock path too long ({} bytes): CMD's ZKLOCK_NODE would be {string} bytes, \
             over the kernel's {MAX_ENV_STRING}-byte limit on one environment string",
            path.len()
        ));
    }
    Ok(())
}

/// `--semaphore N`: at least one permit.
pub(crate) fn permits(n: u32) -> Result<(), String> {
    if n == 0 {
        return Err("--semaphore needs at least 1 permit".to_owned());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_strings() {
        let parsed = connect_string("a:1,[::1]:2,b/app/x").unwrap();
        let hosts: Vec<(&str, u16)> = parsed
            .servers
            .iter()
            .map(|s| (s.host.as_str(), s.port))
            .collect();
        assert_eq!(hosts, [("a", 1), ("::1", 2), ("b", 2181)]);
        assert_eq!(parsed.chroot.as_deref(), Some("/app/x"));
        assert_eq!(connect_string("h:1/").unwrap().chroot, None);
        assert_eq!(connect_string("tcp://h:3").unwrap().servers[0].port, 3);
        let tls = connect_string("h:1,tcp+tls://g:4/c").unwrap();
        assert_eq!(
            (tls.servers[1].port, tls.chroot.as_deref()),
            (4, Some("/c"))
        );
        // More, with their one-line messages, through the binary:
        // tests/usage.rs::usage_errors_before_connecting.
        for bad in [" ", "h:70000", "h:1,", "[::1", "h:1//a"] {
            assert!(connect_string(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn env_string_limit() {
        // ZKLOCK_NODE=<path>/zkl-<32 hex>-write-<11> and the NUL: 68 bytes besides
        // the path.
        let fits = |len: usize| {
            let path = format!("/{}", "a".repeat(len - 1));
            node_fits_in_env(&path, NameScheme::Native, NodeFor::Write).is_ok()
        };
        assert!(fits(1000));
        assert!(fits(MAX_ENV_STRING - 68));
        assert!(!fits(MAX_ENV_STRING - 67));
        let path = format!("/{}", "a".repeat(130_999));
        let e = node_fits_in_env(&path, NameScheme::Curator, NodeFor::Read).unwrap_err();
        assert!(e.contains("ZKLOCK_NODE"), "{e}");
        // A Curator semaphore's lease is under <path>/leases: 7 bytes more.
        let path = format!("/{}", "a".repeat(MAX_ENV_STRING - 68 - 1));
        let semaphore = NodeFor::Semaphore { permits: 2 };
        assert!(node_fits_in_env(&path, NameScheme::Native, semaphore).is_ok());
        assert!(node_fits_in_env(&path, NameScheme::Curator, semaphore).is_err());
    }
}
