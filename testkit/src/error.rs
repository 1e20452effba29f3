//! The testkit's error type.

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Everything that can go wrong while running ZooKeeper for a test.
///
/// The messages are meant to be read in a failed test's output: they say what
/// happened, and for startup failures they carry the tail of the server's log.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No ZooKeeper installation was found (or the one named by an environment
    /// variable is unusable). The message names the fix.
    #[error(
        "ZooKeeper is not installed: {searched}.\n\
         Fix: run `scripts/install-zookeeper.sh` (or `apt-get install -y --no-install-recommends zookeeper`), \
         or set ZOOKEEPER_HOME to an Apache ZooKeeper distribution, \
         or set ZOOKEEPER_CLASSPATH to a complete server classpath"
    )]
    NotInstalled {
        /// What was looked at, and why it did not qualify.
        searched: String,
    },

    /// No `java` executable was found.
    #[error(
        "no Java runtime found: {searched}.\n\
         Fix: install one (`apt-get install -y --no-install-recommends default-jre-headless`) \
         or set JAVA_HOME"
    )]
    JavaNotFound {
        /// Where `java` was looked for.
        searched: String,
    },

    /// An I/O operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What the testkit was doing.
        context: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },

    /// A ZooKeeper JVM exited while the testkit waited for it to become ready.
    #[error(
        "ZooKeeper {server} exited during startup ({status}); log {}:\n{log_tail}",
        .log.display()
    )]
    Exited {
        /// Which server (standalone, or ensemble member N, with its client port).
        server: String,
        /// The exit status as reported by the OS.
        status: String,
        /// The server's log file (kept on disk after a startup failure).
        log: PathBuf,
        /// The last lines of the log.
        log_tail: String,
    },

    /// A server or ensemble did not become ready in time.
    #[error("{what} was not ready within {timeout:?}: {detail}")]
    StartTimeout {
        /// What was being waited for.
        what: String,
        /// How long the testkit waited.
        timeout: Duration,
        /// The last observed state, with the tail of the relevant logs.
        detail: String,
    },

    /// A four-letter-word command could not be completed.
    #[error("four-letter word `{command}` to {addr} failed: {reason}")]
    FourLetterWord {
        /// The command (`ruok`, `srvr`, ...).
        command: String,
        /// The address it was sent to.
        addr: SocketAddr,
        /// What went wrong (connect refused, timed out, ...).
        reason: String,
    },

    /// The server answered, but reported that it is not serving requests
    /// (typically: an ensemble member without a quorum).
    #[error("ZooKeeper at {addr} is not currently serving requests")]
    NotServing {
        /// The server's client address.
        addr: SocketAddr,
    },

    /// The operation needs a running server, but it is stopped or killed.
    #[error("ZooKeeper {server} is not running")]
    NotRunning {
        /// Which server.
        server: String,
    },

    /// No ensemble member reported itself leader in time.
    #[error("no ZooKeeper leader within {timeout:?}: {detail}")]
    NoLeader {
        /// How long the testkit waited.
        timeout: Duration,
        /// What each member reported.
        detail: String,
    },

    /// An ensemble member index was out of range.
    #[error("ensemble member index {index} out of range: the ensemble has {len} members")]
    NoSuchMember {
        /// The index asked for.
        index: usize,
        /// The ensemble's size.
        len: usize,
    },

    /// Network namespaces cannot be made here ([`NetLab`](crate::NetLab)): the
    /// message says what is missing and how to get it.
    #[error(
        "network namespaces are not available: {missing}.\n\
         Needed: root (or CAP_NET_ADMIN and CAP_SYS_ADMIN), `ip` from iproute2 and `nft` from \
         nftables (`scripts/test.sh` installs both: apt-get install -y iproute2 nftables)"
    )]
    NamespacesUnavailable {
        /// What is missing (a program, a capability, the kernel refusing).
        missing: String,
    },

    /// A network setup command (`ip`, `nft`) failed.
    #[error("`{command}` failed ({status}): {stderr}")]
    NetworkCommand {
        /// The command line.
        command: String,
        /// Its exit status.
        status: String,
        /// What it printed on stderr.
        stderr: String,
    },

    /// A Java peer cannot be built ([`curator_peer`](crate::curator_peer)): what
    /// is missing and the fix.
    #[error("cannot build a Java peer: {what}")]
    JavaPeer {
        /// What went wrong.
        what: String,
    },

    /// The Go peer cannot be built ([`go_peer`](crate::go_peer)): what is missing
    /// and the fix.
    #[error("cannot build the Go peer: {what}")]
    GoPeer {
        /// What went wrong.
        what: String,
    },

    /// A builder setting or argument was invalid.
    #[error("invalid testkit configuration: {0}")]
    InvalidConfig(String),

    /// PostgreSQL's programs were not found (or, as root, no unprivileged
    /// account to run them as). The message names the fix.
    #[error(
        "PostgreSQL is not installed: {searched}.\n\
         Fix: run `scripts/test.sh` (or `apt-get install -y --no-install-recommends postgresql`), \
         or set PG_BINDIR to a directory with postgres, initdb, pg_isready and psql"
    )]
    PostgresNotInstalled {
        /// What was looked at, and why it did not qualify.
        searched: String,
    },

    /// A PostgreSQL program failed: `initdb`, the server while starting, `psql`.
    #[error("PostgreSQL: {context}:\n{detail}")]
    Postgres {
        /// What was being done.
        context: String,
        /// What the program said (its output, or the server log's tail).
        detail: String,
    },
}

/// `Result` with the testkit's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn io(context: impl Into<String>, source: io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }
}
