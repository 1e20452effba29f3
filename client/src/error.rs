//! [`Error`]: why a call of the user API failed, whatever the binding.

use lock_core::{CycleNode, FailReason, LostReason, NodeKind, Participant, UsageError, ZkError};
pub use lock_nodelay::Reach;

/// One deadlock: its nodes in wait order (each waits for the next, the last for
/// the first), as [`Error::Deadlock`] and
/// [`LockClient::deadlocks`](crate::LockClient::deadlocks) report them.
pub type Cycle = Vec<CycleNode>;

/// Why a lock operation failed.
///
/// ```
/// use zklock::Error;
/// let e = Error::from(lock_core::validate_lock_path("relative").unwrap_err());
/// assert!(e.is_invalid_path());
/// assert!(!Error::Timeout.is_invalid_path());
/// ```
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Bad input, refused before anything was sent: an invalid lock path, a
    /// semaphore of 0 permits, oversized participant data.
    #[error(transparent)]
    Usage(UsageError),
    /// The binding's first connection to ZooKeeper failed: what failed, and the
    /// error underneath (the binding client's, an I/O error) when there is one.
    #[error("cannot connect to ZooKeeper: {failure}")]
    Connect {
        /// What failed.
        failure: ConnectFailure,
        /// The error underneath, if any.
        #[source]
        source: Option<Cause>,
    },
    /// The server refused the connection's credentials (an auth scheme it has no
    /// provider for, failed SASL): the session is closed. Digest credentials are
    /// never refused at connect; wrong ones get [`ZkError::NoAuth`] on nodes whose
    /// ACL they do not match ([`Error::is_auth`]).
    #[error("ZooKeeper refused the credentials")]
    AuthFailed {
        /// The binding client's refusal, if it gave one.
        #[source]
        source: Option<Cause>,
    },
    /// An invalid [`ConnectOptions`](crate::ConnectOptions) value (or a binding's
    /// own setting), refused before connecting: which option, and why.
    #[error("invalid connection option {option}: {reason}")]
    BadOption {
        /// The option (`acl`, `chroot`, `tls`, ...).
        option: &'static str,
        /// What is wrong with it.
        reason: &'static str,
        /// The error underneath (the path check, the TLS library's), if any.
        #[source]
        source: Option<Cause>,
    },
    /// The binding's client library cannot do what the options ask (e.g. TLS on
    /// the blocking `zookeeper` crate); nothing was connected.
    #[error("this binding cannot do {option}: {reason}")]
    Unsupported {
        /// What was asked for (`TLS`, `SASL`).
        option: &'static str,
        /// Why not, and what does it.
        reason: &'static str,
    },
    /// The binding found no async runtime to run on (lock-zookeeper-client: enable
    /// one of the features `tokio`, `async-std`, `smol`, and connect from inside a
    /// tokio runtime or pass it a runtime).
    #[error("no async runtime: enable a runtime feature (tokio, async-std, smol) or pass one")]
    NoRuntime,
    /// The deadline passed before the lock was acquired.
    #[error("timed out waiting for the lock")]
    Timeout,
    /// `try_lock` semantics: the lock was busy (only from
    /// [`LockClient::acquire`](crate::LockClient::acquire) with a try-only spec; the
    /// `try_lock` methods return `Ok(None)` instead).
    #[error("the lock is busy")]
    WouldBlock,
    /// The ZooKeeper session expired while waiting; a new session is opened
    /// automatically, so a retry may succeed.
    #[error("the ZooKeeper session expired")]
    SessionExpired,
    /// Our waiting node was deleted by someone else (an administrator).
    #[error("our lock node was deleted by someone else")]
    NodeDeleted,
    /// The acquisition was cancelled.
    #[error("cancelled")]
    Cancelled,
    /// A revocable waiter was asked to give up its place.
    #[error("the acquisition was revoked")]
    Revoked,
    /// Deadlock detection ([`Mutex::detect_deadlocks`](crate::Mutex::detect_deadlocks))
    /// found this acquisition in a cycle of waits and chose it as the cycle's one
    /// victim (the youngest waiting zklock node in it): its node is gone, the other
    /// members keep their places and one of them proceeds. The owner still holds
    /// its other locks: release some (or all) and retry, ideally in a canonical order.
    #[error("deadlock: this acquisition was chosen to break a cycle of {} nodes", cycle.len())]
    Deadlock {
        /// The cycle, in wait order (each node waits for the next, the last for the
        /// first, which is ours).
        cycle: Cycle,
    },
    /// Refused at once, before anything was sent: the acquisition's
    /// [owner](crate::Mutex::owner) already holds a lock on `path` that it would
    /// wait for forever (re-entering a mutex that is not
    /// [reentrant](crate::Mutex::reentrant), upgrading a read lock to write).
    /// Release the held lock first. Also the outcome of a downgrade (the read half
    /// taken while holding the write half, see [`RwLock`](crate::RwLock)) that found
    /// another writer queued between its two nodes: that writer waits for the
    /// owner's write, and the read would wait for that writer (failed at the first
    /// listing, its node removed).
    #[error("owner \"{owner}\" already holds a {held} lock on {path} that this acquisition would wait for forever")]
    SelfDeadlock {
        /// The lock path.
        path: String,
        /// The owner.
        owner: String,
        /// The kind of node the owner holds there.
        held: NodeKind,
    },
    /// The acquisition ended for another reason the core reports.
    #[error("the acquisition failed: {0}")]
    Failed(FailReason),
    /// The lock was lost before it could be released (the protected work may have
    /// overlapped another holder's).
    #[error("the lock was lost: {0}")]
    Lost(LostReason),
    /// The client was closed (explicitly, or every handle was dropped).
    #[error("the lock client is closed")]
    Closed,
    /// The lock is suspended (the connection is down), so the operation was not
    /// sent. Wait for [`LockEvent::Resumed`](lock_core::LockEvent::Resumed) and try
    /// again.
    #[error("the lock is suspended")]
    Suspended,
    /// [`LockClient::break_lock`](crate::LockClient::break_lock) broke nothing:
    /// why (nobody holds, several hold, no such participant, not forced).
    #[error(transparent)]
    Break(BreakError),
    /// ZooKeeper answered with an error the protocol cannot recover from.
    #[error("ZooKeeper error: {0}")]
    Zk(ZkError),
}

impl Error {
    /// Whether this acquisition was refused or failed because of a deadlock:
    /// [`Error::Deadlock`] (chosen as a cycle's victim) or [`Error::SelfDeadlock`]
    /// (its owner holds what it would wait for).
    pub fn is_deadlock(&self) -> bool {
        matches!(self, Error::Deadlock { .. } | Error::SelfDeadlock { .. })
    }

    /// Whether the server refused this client: credentials refused at connect
    /// ([`Error::AuthFailed`]) or an ACL that does not let it touch a node
    /// ([`ZkError::NoAuth`], also inside a failed acquisition).
    ///
    /// ```
    /// use zklock::{Error, ZkError};
    /// assert!(Error::Zk(ZkError::NoAuth).is_auth());
    /// assert!(!Error::Timeout.is_auth());
    /// ```
    pub fn is_auth(&self) -> bool {
        matches!(self, Error::AuthFailed { .. } | Error::Zk(ZkError::NoAuth))
    }

    /// A [`Error::Connect`] for `failure`, with no error underneath.
    pub fn connect(failure: ConnectFailure) -> Error {
        Error::Connect {
            failure,
            source: None,
        }
    }

    /// A [`Error::Connect`] for `failure`, caused by `source`.
    pub fn connect_caused_by(
        failure: ConnectFailure,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Error {
        Error::Connect {
            failure,
            source: Some(Cause::new(source)),
        }
    }

    /// A connect the client gave up on, explained by what each server did when
    /// probed afterwards: [`ConnectFailure::Unreachable`] caused by `self` when
    /// no server answered as ZooKeeper; else `self`, unchanged.
    pub fn explained_by(self, servers: Vec<(String, Reach)>) -> Error {
        if servers.is_empty() || servers.iter().any(|(_, r)| *r == Reach::ZooKeeper) {
            return self;
        }
        Error::connect_caused_by(ConnectFailure::Unreachable { servers }, self)
    }

    /// A [`Error::BadOption`]: `option` is invalid for `reason`.
    pub fn bad_option(option: &'static str, reason: &'static str) -> Error {
        Error::BadOption {
            option,
            reason,
            source: None,
        }
    }

    /// A [`Error::BadOption`]: `option` is invalid for `reason`, as `source` found.
    pub fn bad_option_caused_by(
        option: &'static str,
        reason: &'static str,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Error {
        Error::BadOption {
            option,
            reason,
            source: Some(Cause::new(source)),
        }
    }

    /// Whether this is an invalid lock path.
    pub fn is_invalid_path(&self) -> bool {
        matches!(self, Error::Usage(UsageError::InvalidPath { .. }))
    }
}

/// What failed when connecting ([`Error::Connect`]); the error underneath, if
/// any, is the [`Error::Connect`]'s source.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectFailure {
    /// The connect string names no host.
    #[error("the connect string \"{connect_string}\" names no host")]
    NoHost {
        /// The connect string.
        connect_string: String,
    },
    /// The chroot at the end of the connect string is not a valid path (the
    /// source says why).
    #[error("the chroot of the connect string \"{connect_string}\" is not a valid path")]
    BadChroot {
        /// The connect string.
        connect_string: String,
    },
    /// The binding's ZooKeeper client failed to open a session (its error is the
    /// source).
    #[error("the ZooKeeper client failed to open a session")]
    Client,
    /// No session within the connect timeout (the source, if any, says how far
    /// the attempts got).
    #[error("no session within the connect timeout of {} ms", connect_timeout.as_millis())]
    NoSession {
        /// The connect timeout.
        connect_timeout: std::time::Duration,
    },
    /// No server of the connect string can give a session: what each did when
    /// probed (refused, no such host, not ZooKeeper, TLS on one side only, ...;
    /// see [`Reach`]). Reported as soon as every server is known to refuse for
    /// good, else when the client gave up (its error is then the source).
    #[error("no server can be reached: {}", describe(servers))]
    Unreachable {
        /// Each server, as written in the connect string (`host:port`), and what
        /// it did.
        servers: Vec<(String, Reach)>,
    },
    /// The chroot of the connect string does not exist on the server (inside it,
    /// every path would be missing).
    #[error(
        "the chroot {chroot} of the connect string does not exist on the server \
         (create it, or fix the connect string)"
    )]
    NoChroot {
        /// The chroot (`/app`).
        chroot: String,
    },
    /// The binding could not start the thread or task that drives the session
    /// (the source says why).
    #[error("the binding could not start its driver")]
    DriverStart,
    /// The binding's driver stopped before a session was established.
    #[error("the binding's driver stopped before a session was established")]
    DriverStopped,
    /// The session's marker node could not be created (the source is
    /// ZooKeeper's answer).
    #[error("the session marker under {prefix} could not be created")]
    SessionMarker {
        /// The marker's path prefix.
        prefix: String,
    },
}

impl ConnectFailure {
    /// [`ConnectFailure::Unreachable`] if every server of `servers` (as
    /// [`probe_all`](lock_nodelay::probe_all) found them) refuses for good
    /// ([`Reach::is_definite`]): waiting would not give a session.
    pub fn if_unreachable(servers: Vec<(String, Reach)>) -> Option<ConnectFailure> {
        let definite = !servers.is_empty() && servers.iter().all(|(_, r)| r.is_definite());
        definite.then_some(ConnectFailure::Unreachable { servers })
    }
}

/// `server: what it did; ...`.
fn describe(servers: &[(String, Reach)]) -> String {
    let each: Vec<String> = servers.iter().map(|(s, r)| format!("{s}: {r}")).collect();
    each.join("; ")
}

/// The error underneath an [`Error`]: a binding client's, an I/O error, a core
/// [`UsageError`]. Shared, so that [`Error`] stays `Clone`; it dereferences to
/// the error itself (`cause.downcast_ref::<T>()`), which is also what
/// [`std::error::Error::source`] returns. Two causes are equal when their
/// messages are (the errors underneath have no common equality).
#[derive(Clone)]
pub struct Cause(std::sync::Arc<dyn std::error::Error + Send + Sync + 'static>);

impl Cause {
    /// Wraps `error`.
    pub fn new(error: impl std::error::Error + Send + Sync + 'static) -> Cause {
        Cause(std::sync::Arc::new(error))
    }
}

impl std::ops::Deref for Cause {
    type Target = dyn std::error::Error + Send + Sync + 'static;

    fn deref(&self) -> &Self::Target {
        &*self.0
    }
}

impl std::fmt::Debug for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&*self.0, f)
    }
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&*self.0, f)
    }
}

impl PartialEq for Cause {
    fn eq(&self, other: &Cause) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0) || self.0.to_string() == other.0.to_string()
    }
}

impl Eq for Cause {}

impl From<UsageError> for Error {
    fn from(e: UsageError) -> Self {
        match e {
            UsageError::Closed => Error::Closed,
            UsageError::SelfDeadlock { path, owner, held } => {
                Error::SelfDeadlock { path, owner, held }
            }
            other => Error::Usage(other),
        }
    }
}

impl From<FailReason> for Error {
    fn from(reason: FailReason) -> Self {
        match reason {
            FailReason::Timeout => Error::Timeout,
            FailReason::Cancelled => Error::Cancelled,
            FailReason::SessionExpired => Error::SessionExpired,
            FailReason::NodeDeleted => Error::NodeDeleted,
            FailReason::Closed => Error::Closed,
            FailReason::Zk(e) => Error::Zk(e),
            FailReason::WouldBlock => Error::WouldBlock,
            FailReason::Revoked => Error::Revoked,
            FailReason::Deadlock { cycle } => Error::Deadlock { cycle },
            FailReason::SelfDeadlock { path, owner, held } => {
                Error::SelfDeadlock { path, owner, held }
            }
            other => Error::Failed(other),
        }
    }
}

// Defined here, beside the `Error::Break` that carries it, rather than with
// `LockClient::break_lock`: the errors are a leaf every module imports.
/// Why [`LockClient::break_lock`](crate::LockClient::break_lock) broke nothing (in [`Error::Break`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BreakError {
    /// Nobody holds the lock (and no node was named).
    #[error("nobody holds {path}")]
    NobodyHolds {
        /// The lock path.
        path: String,
    },
    /// Several participants hold the lock (readers, a semaphore's permits):
    /// name the one to break.
    #[error("{} participants hold {path} ({}): name the one to break", holders.len(), holders.join(", "))]
    SeveralHolders {
        /// The lock path.
        path: String,
        /// The holders' node names.
        holders: Vec<String>,
    },
    /// No participant of the lock has the node named.
    #[error("{node} is no participant of {path}{}", if participants.is_empty() { String::new() } else { format!(" (participants: {})", participants.join(", ")) })]
    NoSuchNode {
        /// The lock path.
        path: String,
        /// The node named.
        node: String,
        /// The participants' node names, in queue order.
        participants: Vec<String>,
    },
    /// Not [`force`](crate::BreakLock::force)d: its owner's session is alive (its node
    /// exists), and whether it would let go if asked is not recorded anywhere.
    #[error("{} {} and its session is alive: not broken without force", target.node, if *held { "holds the lock" } else { "waits" })]
    NotForced {
        /// The participant it would break.
        target: Box<Participant>,
        /// Whether it holds (else it waits).
        held: bool,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (The mappings of a timeout, a deadlock, a self-deadlock and a server's
    /// error are the conformance suite's: its tests expect those errors.)
    #[test]
    fn maps_core_reasons() {
        assert_eq!(Error::from(UsageError::Closed), Error::Closed);
        let own = Error::SelfDeadlock {
            path: "/l".into(),
            owner: "o".into(),
            held: NodeKind::Read,
        };
        assert!(own.is_deadlock() && Error::Deadlock { cycle: vec![] }.is_deadlock());
        assert!(!Error::Timeout.is_deadlock());
    }

    #[test]
    fn explains_a_connect_by_what_the_servers_did() {
        use std::error::Error as _;
        let gave_up = Error::connect(ConnectFailure::Client);
        let silent = vec![("h:1".to_owned(), Reach::Silent)];
        let e = gave_up.clone().explained_by(silent.clone());
        assert_eq!(
            e.to_string(),
            "cannot connect to ZooKeeper: no server can be reached: h:1: no answer within 1s"
        );
        let source = e.source().and_then(|s| s.downcast_ref::<Error>());
        assert_eq!(source, Some(&gave_up));
        // A server answering as ZooKeeper explains nothing.
        let mixed = [silent, vec![("h:2".to_owned(), Reach::ZooKeeper)]].concat();
        assert_eq!(gave_up.clone().explained_by(mixed), gave_up);
        // Only definite refusals give up early.
        let refused = vec![("h:1".to_owned(), Reach::Refused)];
        assert!(ConnectFailure::if_unreachable(refused).is_some());
        assert!(ConnectFailure::if_unreachable(vec![("h:1".into(), Reach::NoAnswer)]).is_none());
        assert!(ConnectFailure::if_unreachable(Vec::new()).is_none());
    }

    #[test]
    fn keeps_the_error_underneath() {
        use std::error::Error as _;
        let io = std::io::Error::other("no threads left");
        let e = Error::connect_caused_by(ConnectFailure::DriverStart, io);
        assert_eq!(
            e.to_string(),
            "cannot connect to ZooKeeper: the binding could not start its driver"
        );
        let source = e.source().expect("the io error is kept");
        assert_eq!(source.to_string(), "no threads left");
        let io = source.downcast_ref::<std::io::Error>().expect("typed");
        assert_eq!(io.kind(), std::io::ErrorKind::Other);
        assert_eq!(e.clone(), e);
        assert_ne!(e, Error::connect(ConnectFailure::DriverStart));

        let path = lock_core::validate_lock_path("x").unwrap_err();
        let e = Error::bad_option_caused_by("chroot", "not a valid path", path.clone());
        assert!(matches!(
            e,
            Error::BadOption {
                option: "chroot",
                ..
            }
        ));
        let source = e.source().and_then(|s| s.downcast_ref::<UsageError>());
        assert_eq!(source, Some(&path));
        assert!(Error::AuthFailed { source: None }.is_auth());
    }
}
