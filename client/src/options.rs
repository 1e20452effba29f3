//! [`ConnectOptions`]: how a binding connects to a production ensemble (auth, ACLs
//! of the nodes zklock creates, chroot, timeouts, TLS), defined once for every
//! binding. Each binding's builder takes them with `.options(..)` and passes through
//! what its client library allows; anything it cannot honour is refused at
//! `connect` with [`Error::Unsupported`], never silently dropped.

use crate::Error;
use std::fmt;
use std::time::Duration;

/// Connection options shared by every binding (lock-zookeeper-client,
/// lock-zookeeper): digest auth, the ACL of every node zklock creates, chroot,
/// session and connect timeouts, TLS.
///
/// ```
/// use zklock::{ConnectOptions, NodeAcl};
/// use std::time::Duration;
/// let options = ConnectOptions::new()
///     .digest_auth("alice", "secret")
///     .acl(NodeAcl::CreatorAll)
///     .chroot("/apps/billing")
///     .session_timeout(Duration::from_secs(6))
///     .connect_timeout(Duration::from_secs(20));
/// assert!(options.validate().is_ok());
/// // A creator-only ACL without any credentials would be refused by the server.
/// assert!(ConnectOptions::new().acl(NodeAcl::CreatorAll).validate().is_err());
/// ```
#[derive(Clone, Default, PartialEq, Eq, Debug)]
#[must_use]
pub struct ConnectOptions {
    auth: Vec<Auth>,
    acl: NodeAcl,
    chroot: Option<String>,
    session_timeout: Option<Duration>,
    connect_timeout: Option<Duration>,
    tls: Option<Tls>,
    sasl: Option<SaslDigest>,
    suspended_grace: Option<Duration>,
    expiry_margin: Option<Duration>,
    /// `None`: the default (a tenth of the session timeout); `Some(None)`: off.
    sync_interval: Option<Option<Duration>>,
    pub(crate) metrics_path_prefix: Option<usize>,
}

/// SASL DIGEST-MD5 credentials ([`ConnectOptions::sasl_digest_md5`]).
#[derive(Clone, PartialEq, Eq)]
pub struct SaslDigest {
    /// The user, as in the server's JAAS `user_<name>` entry.
    pub user: String,
    /// The password.
    pub password: String,
}

impl fmt::Debug for SaslDigest {
    // The password stays out of logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SaslDigest")
            .field("user", &self.user)
            .finish_non_exhaustive()
    }
}

impl ConnectOptions {
    /// No auth, open ACL ([`NodeAcl::Open`]), no chroot, the binding's default
    /// timeouts, plain TCP.
    pub fn new() -> Self {
        Self::default()
    }

    /// How long a held lock may stay suspended (connection down) before it is
    /// reported lost (default: the session timeout). Whatever the grace, a held lock
    /// is reported lost a margin before the server could expire the session: see
    /// [`expiry_margin`](Self::expiry_margin) and
    /// [`LockStatus::Lost`](crate::LockStatus::Lost).
    pub fn suspended_grace(mut self, grace: Duration) -> Self {
        self.suspended_grace = Some(grace);
        self
    }

    /// How long before the server could expire a cut-off session its held locks
    /// are reported lost (default: a tenth of the session timeout, at most 2 s):
    /// room for the delay between that moment and the user's code reacting to
    /// `Lost`. See [`lock_core::Config::expiry_margin`].
    pub fn expiry_margin(mut self, margin: Duration) -> Self {
        self.expiry_margin = Some(margin);
        self
    }

    /// How often, at most, the session proves that the ensemble's leader still hears
    /// it, with a `sync` (default: a tenth of the session timeout; any write sent
    /// in between counts, so a busy session sends fewer). `None` turns it off.
    ///
    /// A follower cut off from the leader keeps answering reads and pings for up to
    /// `syncLimit x tickTime` while the leader expires the session and grants its
    /// locks to others; with proven contact a held lock is `Suspended`, then `Lost`
    /// a margin before that could happen, whatever the follower answers. Off, a
    /// lock relies on the connection's state alone, as Curator's and kazoo's do.
    /// See [`lock_core::contact`] for the argument and its cost.
    pub fn sync_interval(mut self, interval: Option<Duration>) -> Self {
        self.sync_interval = Some(interval);
        self
    }

    /// The core's settings for a session with this (negotiated) timeout and seed,
    /// with this grace and margin: what a binding passes to [`pair`](crate::pair).
    ///
    /// ```
    /// use zklock::ConnectOptions;
    /// use std::time::Duration;
    /// let options = ConnectOptions::new().expiry_margin(Duration::from_millis(500));
    /// let config = options.lock_config(Duration::from_secs(2), 1);
    /// // Cut off right after the last contact: lost 1.5 s later.
    /// assert_eq!(config.lost_window(Duration::ZERO), Duration::from_millis(1500));
    /// ```
    pub fn lock_config(&self, session_timeout: Duration, seed: u64) -> lock_core::Config {
        let mut config = lock_core::Config::new(session_timeout, seed);
        config.suspended_grace = self.suspended_grace;
        config.expiry_margin = self.expiry_margin;
        config.sync_interval =
            self.sync_interval
                .unwrap_or(Some(lock_core::Config::default_sync_interval(
                    session_timeout,
                )));
        config
    }

    /// Adds a `prefix` label to the lock metrics (see the crate's
    /// [metrics table](crate#metrics)): the first `depth` components of the lock
    /// path (`/app/orders/42`, 2: `/app/orders`). Off by default, as lock paths are
    /// unbounded; choose a depth whose prefixes are few.
    pub fn metrics_path_prefix(mut self, depth: usize) -> Self {
        self.metrics_path_prefix = Some(depth);
        self
    }

    /// Authenticates every connection of the session with ZooKeeper's `digest`
    /// scheme (zkCli's `addauth digest user:password`). Bindings send it again on
    /// every reconnect, before any lock request. ZooKeeper accepts any digest
    /// credentials; wrong ones show as [`ZkError::NoAuth`](crate::ZkError::NoAuth)
    /// on nodes whose ACL names the right ones.
    pub fn digest_auth(self, user: &str, password: &str) -> Self {
        self.auth(Auth::new(
            "digest",
            format!("{user}:{password}").into_bytes(),
        ))
    }

    /// Adds credentials of any scheme (ZooKeeper's `addauth scheme auth`).
    pub fn auth(mut self, auth: Auth) -> Self {
        self.auth.push(auth);
        self
    }

    /// The ACL of every node zklock creates: lock and semaphore nodes, their parent
    /// containers, section markers, election nodes, session markers (default
    /// [`NodeAcl::Open`]).
    pub fn acl(mut self, acl: NodeAcl) -> Self {
        self.acl = acl;
        self
    }

    /// Puts every path under `chroot` (like a connect string ending in
    /// `/chroot`; give one or the other, not both). The chroot node must exist.
    pub fn chroot(mut self, chroot: &str) -> Self {
        self.chroot = Some(chroot.to_owned());
        self
    }

    /// The session timeout to ask the server for (default:
    /// [`lock_core::DEFAULT_SESSION_TIMEOUT`], 10 s).
    pub fn session_timeout(mut self, timeout: Duration) -> Self {
        self.session_timeout = Some(timeout);
        self
    }

    /// How long `connect` tries to establish the first session before it fails
    /// with [`Error::Connect`] (default: the binding's, about the session timeout
    /// for lock-zookeeper-client, twice it plus 4 s for lock-zookeeper).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = Some(timeout);
        self
    }

    /// Connects over TLS (ZooKeeper's `secureClientPort`).
    pub fn tls(mut self, tls: Tls) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Authenticates with SASL DIGEST-MD5 (the server's `SASLAuthenticationProvider`
    /// with a JAAS `DigestLoginModule`); the identity is `sasl:<user>`. A refusal
    /// (unknown user, wrong password) fails `connect` with [`Error::AuthFailed`].
    pub fn sasl_digest_md5(mut self, user: &str, password: &str) -> Self {
        self.sasl = Some(SaslDigest {
            user: user.to_owned(),
            password: password.to_owned(),
        });
        self
    }

    /// The SASL DIGEST-MD5 credentials, if set.
    pub fn sasl_option(&self) -> Option<&SaslDigest> {
        self.sasl.as_ref()
    }

    /// The credentials, in the order given.
    pub fn auth_list(&self) -> &[Auth] {
        &self.auth
    }

    /// The ACL of created nodes.
    pub fn node_acl(&self) -> &NodeAcl {
        &self.acl
    }

    /// The session timeout to ask the server for: the one set, or
    /// [`lock_core::DEFAULT_SESSION_TIMEOUT`].
    ///
    /// ```
    /// use std::time::Duration;
    /// use zklock::ConnectOptions;
    /// assert_eq!(ConnectOptions::new().requested_session_timeout(), lock_core::DEFAULT_SESSION_TIMEOUT);
    /// let six = ConnectOptions::new().session_timeout(Duration::from_secs(6));
    /// assert_eq!(six.requested_session_timeout(), Duration::from_secs(6));
    /// ```
    pub fn requested_session_timeout(&self) -> Duration {
        self.session_timeout
            .unwrap_or(lock_core::DEFAULT_SESSION_TIMEOUT)
    }

    /// The connect timeout, if set.
    pub fn connect_timeout_option(&self) -> Option<Duration> {
        self.connect_timeout
    }

    /// The TLS settings, if set.
    pub fn tls_option(&self) -> Option<&Tls> {
        self.tls.as_ref()
    }

    /// Checks what can be checked before connecting: a digest user without `:`,
    /// a creator ACL with credentials to name the creator, a non-empty custom ACL,
    /// a valid chroot, non-zero timeouts.
    ///
    /// # Errors
    /// [`Error::BadOption`] naming the option.
    pub fn validate(&self) -> Result<(), Error> {
        for auth in &self.auth {
            if auth.scheme.is_empty() {
                return Err(Error::bad_option("auth", "empty scheme"));
            }
            let text = std::str::from_utf8(&auth.credentials).unwrap_or("");
            let user = text.split_once(':').map_or("", |(user, _)| user);
            if auth.scheme == "digest" && user.is_empty() {
                return Err(Error::bad_option(
                    "digest auth",
                    "the credentials must be user:password",
                ));
            }
        }
        let creator = self
            .acl
            .entries()
            .iter()
            .any(|e| e.scheme == "auth" && e.id.is_empty());
        if creator && self.auth.is_empty() && self.sasl.is_none() {
            return Err(Error::bad_option(
                "acl",
                "a creator ACL needs credentials (digest_auth or sasl) to name the creator",
            ));
        }
        if let NodeAcl::Custom(entries) = &self.acl {
            if entries.is_empty() {
                return Err(Error::bad_option(
                    "acl",
                    "a custom ACL needs at least one entry",
                ));
            }
        }
        if let Some(chroot) = &self.chroot {
            if chroot != "/" {
                lock_core::validate_lock_path(chroot)
                    .map_err(|e| Error::bad_option_caused_by("chroot", "not a valid path", e))?;
            }
        }
        if self.sasl.as_ref().is_some_and(|s| s.user.is_empty()) {
            return Err(Error::bad_option("sasl", "empty user"));
        }
        if self.session_timeout == Some(Duration::ZERO) {
            return Err(Error::bad_option("session timeout", "must be positive"));
        }
        if self.connect_timeout == Some(Duration::ZERO) {
            return Err(Error::bad_option("connect timeout", "must be positive"));
        }
        Ok(())
    }

    /// `cluster` with the [`chroot`](Self::chroot) option appended, after
    /// [`validate`](Self::validate).
    ///
    /// # Errors
    /// [`Error::BadOption`] for invalid options, or a chroot given both in
    /// `cluster` and as an option.
    ///
    /// ```
    /// use zklock::ConnectOptions;
    /// let options = ConnectOptions::new().chroot("/app");
    /// assert_eq!(options.connect_string("h:1,h:2").unwrap(), "h:1,h:2/app");
    /// assert!(options.connect_string("h:1/other").is_err());
    /// ```
    pub fn connect_string(&self, cluster: &str) -> Result<String, Error> {
        self.validate()?;
        match self.chroot.as_deref() {
            None | Some("/") => Ok(cluster.to_owned()),
            Some(_) if cluster.contains('/') => Err(Error::bad_option(
                "chroot",
                "given both in the connect string and as an option",
            )),
            Some(chroot) => Ok(format!("{cluster}{chroot}")),
        }
    }
}

/// A seed for the core's random choices (attempt ids, node name suffixes),
/// different in every call: this process's std hasher keys (random per process), a
/// counter, the wall clock and the process id, mixed. For a binding's
/// [`ConnectOptions::lock_config`]; the simulator passes its own seeds instead.
///
/// ```
/// assert_ne!(zklock::random_seed(), zklock::random_seed());
/// ```
pub fn random_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static CALLS: AtomicU64 = AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(CALLS.fetch_add(1, Ordering::Relaxed));
    let wall = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    hasher.write_u128(wall.map(|d| d.as_nanos()).unwrap_or_default());
    hasher.write_u32(std::process::id());
    hasher.finish()
}

/// Credentials of one ZooKeeper auth scheme (`addauth scheme credentials`).
#[derive(Clone, PartialEq, Eq)]
pub struct Auth {
    /// The scheme (`digest`, or one the server has a provider for).
    pub scheme: String,
    /// The credentials (for `digest`: `user:password`).
    pub credentials: Vec<u8>,
}

impl Auth {
    /// Credentials `credentials` of scheme `scheme`.
    pub fn new(scheme: &str, credentials: Vec<u8>) -> Self {
        Auth {
            scheme: scheme.to_owned(),
            credentials,
        }
    }
}

impl fmt::Debug for Auth {
    // Credentials stay out of logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Auth")
            .field("scheme", &self.scheme)
            .finish_non_exhaustive()
    }
}

/// The ACL of the nodes zklock creates.
#[derive(Clone, Default, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum NodeAcl {
    /// Anyone may do anything (`world:anyone` all; ZooKeeper's `OPEN_ACL_UNSAFE`).
    #[default]
    Open,
    /// Only the creator's authenticated identities (`auth` scheme, all permissions;
    /// ZooKeeper's `CREATOR_ALL_ACL`). Needs credentials.
    CreatorAll,
    /// The creator may do anything, everyone may read (lock holders and queues are
    /// visible to monitoring, e.g. `zklock` CLI's `inspect`). Needs credentials.
    CreatorAllWorldRead,
    /// Exactly these entries.
    Custom(Vec<AclEntry>),
}

impl NodeAcl {
    /// The entries this ACL stands for.
    ///
    /// ```
    /// use zklock::{NodeAcl, Perms};
    /// let entries = NodeAcl::CreatorAllWorldRead.entries();
    /// assert_eq!(entries[0].perms, Perms::ALL);
    /// assert_eq!((entries[1].scheme.as_str(), entries[1].perms), ("world", Perms::READ));
    /// ```
    pub fn entries(&self) -> Vec<AclEntry> {
        match self {
            NodeAcl::Open => vec![AclEntry::new(Perms::ALL, "world", "anyone")],
            NodeAcl::CreatorAll => vec![AclEntry::new(Perms::ALL, "auth", "")],
            NodeAcl::CreatorAllWorldRead => vec![
                AclEntry::new(Perms::ALL, "auth", ""),
                AclEntry::new(Perms::READ, "world", "anyone"),
            ],
            NodeAcl::Custom(entries) => entries.clone(),
        }
    }
}

/// One ACL entry: permissions for an identity (`scheme:id`).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct AclEntry {
    /// What the identity may do.
    pub perms: Perms,
    /// The identity's scheme (`world`, `auth`, `digest`, `ip`, `sasl`, `x509`, ...).
    pub scheme: String,
    /// The identity (for `digest`: `user:base64(sha1(user:password))`).
    pub id: String,
}

impl AclEntry {
    /// `perms` for `scheme:id`.
    pub fn new(perms: Perms, scheme: &str, id: &str) -> Self {
        AclEntry {
            perms,
            scheme: scheme.to_owned(),
            id: id.to_owned(),
        }
    }
}

/// ZooKeeper's permission bits; combine with `|`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Perms(u8);

impl Perms {
    /// Read data and list children.
    pub const READ: Perms = Perms(1);
    /// Set data.
    pub const WRITE: Perms = Perms(2);
    /// Create children.
    pub const CREATE: Perms = Perms(4);
    /// Delete children.
    pub const DELETE: Perms = Perms(8);
    /// Set the ACL.
    pub const ADMIN: Perms = Perms(16);
    /// Everything.
    pub const ALL: Perms = Perms(31);

    /// The bits, as ZooKeeper's wire format has them.
    pub fn bits(self) -> u8 {
        self.0
    }

    /// Whether every permission of `other` is in `self`.
    pub fn contains(self, other: Perms) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for Perms {
    type Output = Perms;
    fn bitor(self, rhs: Perms) -> Perms {
        Perms(self.0 | rhs.0)
    }
}

/// TLS settings (PEM): the CA that signed the servers' certificates and an
/// optional client certificate. Servers are verified against the CA and their
/// host name (or IP address) in the connect string.
#[derive(Clone, PartialEq, Eq)]
pub struct Tls {
    ca_pem: String,
    identity: Option<(String, String)>,
}

impl Tls {
    /// Trusts the certificates in `ca_pem` (PEM, one or more).
    pub fn new(ca_pem: impl Into<String>) -> Self {
        Tls {
            ca_pem: ca_pem.into(),
            identity: None,
        }
    }

    /// Presents `cert_pem` (with its chain) and its private key `key_pem` to the
    /// server (needed when the server requires client authentication).
    pub fn identity(mut self, cert_pem: impl Into<String>, key_pem: impl Into<String>) -> Self {
        self.identity = Some((cert_pem.into(), key_pem.into()));
        self
    }

    /// The trusted CA certificates (PEM).
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The client certificate and key (PEM), if any.
    pub fn identity_pem(&self) -> Option<(&str, &str)> {
        self.identity
            .as_ref()
            .map(|(c, k)| (c.as_str(), k.as_str()))
    }
}

impl fmt::Debug for Tls {
    // The private key stays out of logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tls")
            .field("client_identity", &self.identity.is_some())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_bad_options() {
        let err = |o: ConnectOptions| match o.validate() {
            Err(Error::BadOption { option, reason, .. }) => format!("{option}: {reason}"),
            other => panic!("expected BadOption, got {other:?}"),
        };
        assert!(
            err(ConnectOptions::new().auth(Auth::new("digest", b"nocolon".to_vec())))
                .contains("user:password")
        );
        assert!(err(ConnectOptions::new().acl(NodeAcl::CreatorAllWorldRead)).contains("creator"));
        assert!(err(ConnectOptions::new().acl(NodeAcl::Custom(vec![]))).contains("custom"));
        assert!(err(ConnectOptions::new().chroot("no-slash")).contains("chroot"));
        assert!(err(ConnectOptions::new().session_timeout(Duration::ZERO)).contains("session"));
        let ok = ConnectOptions::new()
            .digest_auth("a", "b")
            .acl(NodeAcl::CreatorAll)
            .chroot("/");
        assert_eq!(ok.connect_string("h:1/x").unwrap(), "h:1/x");
    }

    #[test]
    fn secrets_stay_out_of_debug() {
        let o = ConnectOptions::new()
            .digest_auth("alice", "hunter2")
            .sasl_digest_md5("alice", "hunter3")
            .tls(Tls::new("CA").identity("CERT", "KEY"));
        let text = format!("{o:?}");
        assert!(!text.contains("hunter") && !text.contains("KEY"), "{text}");
        assert!(text.contains("digest"));
    }

    #[test]
    fn perms_combine() {
        let rw = Perms::READ | Perms::WRITE;
        assert_eq!(rw.bits(), 3);
        assert!(Perms::ALL.contains(rw) && !rw.contains(Perms::ADMIN));
    }
}
