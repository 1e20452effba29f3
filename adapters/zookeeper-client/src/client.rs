//! Connecting: [`Builder`] and the [`Connect`] shorthands on [`LockClient`].

use crate::dial::Dial;
pub use crate::dial::DEFAULT_SESSION_TIMEOUT;
use crate::driver::Driver;
use crate::runtime::{default_runtime, in_runtime, Runtime};
use lock_client::{ConnectOptions, Error, LockClient};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// Settings for a [`LockClient`] on zookeeper-client; finish with
/// [`connect`](Builder::connect).
///
/// ```no_run
/// # async fn demo() -> Result<(), zklock::Error> {
/// use zklock::{Connect, LockClient};
/// use std::time::Duration;
/// let locks = LockClient::builder("127.0.0.1:2181")
///     .session_timeout(Duration::from_secs(6))
///     .suspended_grace(Duration::from_secs(3))
///     .connect()
///     .await?;
/// # drop(locks); Ok(()) }
/// ```
///
/// Secured ensembles: digest auth, SASL DIGEST-MD5, the ACL of the nodes zklock
/// creates, chroot, timeouts and TLS come as lock-client's [`ConnectOptions`] (the
/// same for every binding). This binding supports all of them: TLS with the `tls`
/// feature and SASL with the `sasl` feature (without them, those options are
/// refused with [`Error::Unsupported`]).
///
/// ```no_run
/// # async fn demo(ca_pem: String) -> Result<(), zklock::Error> {
/// use zklock::{Connect, ConnectOptions, LockClient, NodeAcl, Tls};
/// let options = ConnectOptions::new()
///     .digest_auth("billing", "s3cret")
///     .acl(NodeAcl::CreatorAll)
///     .tls(Tls::new(ca_pem));
/// let locks = LockClient::builder("zk1:2281,zk2:2281/billing")
///     .options(options)
///     .connect()
///     .await?;
/// # drop(locks); Ok(()) }
/// ```
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until connect() is awaited"]
pub struct Builder {
    cluster: String,
    options: ConnectOptions,
    runtime: Option<Arc<dyn Runtime>>,
    shared: Option<zookeeper_client::Client>,
}

/// Settings for a connection to `cluster` (a ZooKeeper connect string:
/// `host:port[,host:port...][/chroot]`).
///
/// ```
/// let builder = zklock::builder("127.0.0.1:2181");
/// # drop(builder);
/// ```
pub fn builder(cluster: &str) -> Builder {
    Builder {
        cluster: cluster.to_owned(),
        options: ConnectOptions::new(),
        runtime: None,
        shared: None,
    }
}

/// Connects to `cluster` with default settings (see [`Builder`]).
///
/// # Errors
/// As for [`Builder::connect`].
pub async fn connect(cluster: &str) -> Result<LockClient, Error> {
    builder(cluster).connect().await
}

/// `LockClient::connect` and `LockClient::builder` for this binding (bring the
/// trait into scope: `use zklock::Connect;`).
///
/// ```no_run
/// # async fn demo() -> Result<(), zklock::Error> {
/// use zklock::{Connect, LockClient};
/// let locks = LockClient::connect("127.0.0.1:2181").await?;
/// # drop(locks); Ok(()) }
/// ```
pub trait Connect {
    /// Connects to `cluster` with default settings, like [`connect`].
    fn connect(cluster: &str) -> impl Future<Output = Result<LockClient, Error>> + Send;
    /// Settings for a connection to `cluster`, like [`builder`].
    fn builder(cluster: &str) -> Builder;
}

/// The async binding's `LockClient::connect` / `LockClient::builder`
/// (`zklock::Connect`, over `zookeeper-client`); the blocking binding's twin
/// is `zklock::blocking::Connect`.
impl Connect for LockClient {
    fn connect(cluster: &str) -> impl Future<Output = Result<LockClient, Error>> + Send {
        builder(cluster).connect()
    }

    fn builder(cluster: &str) -> Builder {
        builder(cluster)
    }
}

impl Builder {
    /// The session timeout to ask the server for (default 10 s). The server clamps
    /// it to its `minSessionTimeout..=maxSessionTimeout`; the negotiated value is
    /// what counts (see [`LockClient::session_timeout`]). Same as
    /// [`ConnectOptions::session_timeout`].
    pub fn session_timeout(mut self, timeout: Duration) -> Self {
        self.options = self.options.session_timeout(timeout);
        self
    }

    /// The connection options (auth, ACL of created nodes, chroot, timeouts, TLS);
    /// replaces any set before, including [`session_timeout`](Self::session_timeout).
    ///
    /// The connect timeout bounds [`connect`](Self::connect): zookeeper-client gives
    /// up on one attempt after about the session timeout, and `connect` tries again
    /// until the connect timeout (default: one attempt). It is not
    /// zookeeper-client's own connection timeout, which the binding leaves at its
    /// default because it derives the detection of a silent network from it (see
    /// the crate docs).
    pub fn options(mut self, options: ConnectOptions) -> Self {
        self.options = options;
        self
    }

    /// How long a held lock may stay suspended (connection down) before it is
    /// reported lost: [`ConnectOptions::suspended_grace`].
    pub fn suspended_grace(mut self, grace: Duration) -> Self {
        self.options = self.options.suspended_grace(grace);
        self
    }

    /// Runs the driver and zookeeper-client's session task on `runtime` (default:
    /// [`default_runtime`](crate::default_runtime)): a shipped one
    /// (`TokioRuntime`, `AsyncStdRuntime`, `SmolRuntime`) or the application's own
    /// [`Runtime`].
    pub fn runtime(mut self, runtime: impl Runtime) -> Self {
        self.runtime = Some(Arc::new(runtime));
        self
    }

    /// Uses the application's own zookeeper-client `client` (its session, its
    /// credentials, its chroot) instead of opening a session: locks are ephemeral
    /// nodes of that session. The builder's connect string and options still say
    /// where the nodes go after that session ends (and the ACL of the nodes zklock
    /// creates): after an expiry, the `LockClient` opens a session of its own
    /// with them, as it would after its own session expired. Give the options the
    /// credentials `client` has: a creator ACL is refused without them, and the
    /// later sessions need them.
    ///
    /// While the `LockClient` uses the session, the application must not:
    ///
    /// * close `client` (or any clone): that ends the session, every held lock is
    ///   lost ([`LostReason::SessionExpired`](lock_core::LostReason)) and the
    ///   `LockClient` moves to a session of its own;
    /// * delete or modify the nodes zklock creates under the lock paths (it would
    ///   lose the locks, or break them for everyone);
    /// * rely on the session's state for lock safety: the `LockClient` follows the
    ///   session through its own state watcher and reports suspension and loss on
    ///   its guards; the application's own watchers see the same session events
    ///   but do not see lock state;
    /// * expect [`LockClient::close`] to end the session: it does not. Release the
    ///   guards (and await [`LockClient::wait_idle`]) before closing the
    ///   `LockClient`, or held locks stay until the application's session ends.
    ///
    /// TCP_NODELAY is set on the session's connection, as for a session of
    /// the binding's own (zookeeper-client leaves Nagle's algorithm on).
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// use zklock::{Connect, LockClient};
    /// let zk = zklock::zookeeper_client::Client::connect("127.0.0.1:2181").await?;
    /// let locks = LockClient::builder("127.0.0.1:2181").client(zk.clone()).connect().await?;
    /// let guard = locks.mutex("/locks/job").lock().await?;
    /// guard.release().await?;
    /// locks.wait_idle().await?;
    /// locks.close().await; // `zk` is still open
    /// # Ok(()) }
    /// ```
    pub fn client(mut self, client: zookeeper_client::Client) -> Self {
        self.shared = Some(client);
        self
    }

    /// Connects (waits until the session is established and its connection has
    /// TCP_NODELAY) and starts the driver.
    ///
    /// # Errors
    /// [`Error::NoRuntime`] without a runtime; [`Error::BadOption`] for invalid
    /// options, [`Error::Unsupported`] for TLS (SASL) without the `tls` (`sasl`)
    /// feature;
    /// [`Error::AuthFailed`] if the server refused the credentials;
    /// [`Error::Connect`] if no session could be established within the connect
    /// timeout.
    pub async fn connect(self) -> Result<LockClient, Error> {
        let runtime = self
            .runtime
            .or_else(default_runtime)
            .ok_or(Error::NoRuntime)?;
        let dial = Dial::new(&self.cluster, &self.options)?;
        let shared = self.shared.is_some();
        let client = match self.shared {
            Some(client) => client,
            None => dial.first_session(&runtime).await?,
        };
        let config = self
            .options
            .lock_config(client.session_timeout(), lock_client::random_seed());
        let (locks, link) = lock_client::pair(config);
        link.apply_options(&self.options);
        let (nodelay_ready, nodelay) = futures::channel::oneshot::channel();
        let driver = Driver::new(runtime.clone(), dial, client, shared, link, nodelay_ready);
        // Scoped: whatever zookeeper-client spawns from the driver's calls goes to
        // the same runtime.
        runtime.spawn(Box::pin(in_runtime(&runtime, driver.run())));
        // The first requests must not meet Nagle's algorithm either: return once
        // the connection has TCP_NODELAY (or could not get it; see the driver's
        // `set_nodelay`).
        let _ = nodelay.await;
        Ok(locks)
    }
}
