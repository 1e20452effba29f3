//! Connecting: [`Builder`] and the [`Connect`] shorthands on [`LockClient`].

use crate::driver::Driver;
use crate::glue::seed;
use crate::runtime::Runtime;
use lock_client::{Error, LockClient};
use lock_core::Config;
use std::future::Future;
use std::time::Duration;

/// Default requested session timeout.
pub const DEFAULT_SESSION_TIMEOUT: Duration = Duration::from_secs(10);

/// Settings for a [`LockClient`] on zookeeper-client; finish with
/// [`connect`](Builder::connect).
///
/// ```no_run
/// # async fn demo() -> Result<(), lock_zookeeper_client::Error> {
/// use lock_zookeeper_client::{Connect, LockClient};
/// use std::time::Duration;
/// let locks = LockClient::builder("127.0.0.1:2181")
///     .session_timeout(Duration::from_secs(6))
///     .suspended_grace(Duration::from_secs(3))
///     .connect()
///     .await?;
/// # drop(locks); Ok(()) }
/// ```
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until connect() is awaited"]
pub struct Builder {
    cluster: String,
    session_timeout: Duration,
    grace: Option<Duration>,
    runtime: Option<Runtime>,
}

/// Settings for a connection to `cluster` (a ZooKeeper connect string:
/// `host:port[,host:port...][/chroot]`).
///
/// ```
/// let builder = lock_zookeeper_client::builder("127.0.0.1:2181");
/// # drop(builder);
/// ```
pub fn builder(cluster: &str) -> Builder {
    Builder {
        cluster: cluster.to_owned(),
        session_timeout: DEFAULT_SESSION_TIMEOUT,
        grace: None,
        runtime: None,
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
/// trait into scope: `use lock_zookeeper_client::Connect;`).
///
/// ```no_run
/// # async fn demo() -> Result<(), lock_zookeeper_client::Error> {
/// use lock_zookeeper_client::{Connect, LockClient};
/// let locks = LockClient::connect("127.0.0.1:2181").await?;
/// # drop(locks); Ok(()) }
/// ```
pub trait Connect {
    /// Connects to `cluster` with default settings, like [`connect`].
    fn connect(cluster: &str) -> impl Future<Output = Result<LockClient, Error>> + Send;
    /// Settings for a connection to `cluster`, like [`builder`].
    fn builder(cluster: &str) -> Builder;
}

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
    /// what counts (see [`LockClient::session_timeout`]).
    pub fn session_timeout(mut self, timeout: Duration) -> Self {
        self.session_timeout = timeout;
        self
    }

    /// How long a held lock may stay suspended (connection down) before it is
    /// reported lost (default: the session timeout). Whatever the grace, a held lock
    /// is reported lost a margin before the server could expire the session (one
    /// session timeout after the server last heard from us): see
    /// [`LockStatus::Lost`](lock_client::LockStatus::Lost).
    pub fn suspended_grace(mut self, grace: Duration) -> Self {
        self.grace = Some(grace);
        self
    }

    /// Runs the driver and zookeeper-client's session task on `runtime` (default:
    /// [`Runtime::current`]).
    pub fn runtime(mut self, runtime: Runtime) -> Self {
        self.runtime = Some(runtime);
        self
    }

    /// Connects (waits until the session is established and its connection has
    /// TCP_NODELAY) and starts the driver.
    ///
    /// # Errors
    /// [`Error::NoRuntime`] without a runtime, [`Error::Connect`] if no session could be
    /// established (zookeeper-client gives up after about the session timeout).
    pub async fn connect(self) -> Result<LockClient, Error> {
        let runtime = self
            .runtime
            .or_else(Runtime::current)
            .ok_or(Error::NoRuntime)?;
        let connector =
            zookeeper_client::Client::connector().with_session_timeout(self.session_timeout);
        let cluster = self.cluster.clone();
        let client = runtime
            .scope(async move { connector.connect(&cluster).await })
            .await
            .map_err(|e| Error::Connect(e.to_string()))?;
        let mut config = Config::new(client.session_timeout(), seed(client.session_id().0));
        config.suspended_grace = self.grace;
        let (locks, link) = lock_client::pair(config);
        let mut driver = Driver::new(
            runtime.clone(),
            self.cluster,
            self.session_timeout,
            client,
            link,
        );
        let nodelay = driver.nodelay_ready();
        runtime.spawn(driver.run());
        // The first requests must not meet Nagle's algorithm either: return once
        // the connection has TCP_NODELAY (or could not get it; see the driver's
        // `set_nodelay`).
        let _ = nodelay.await;
        Ok(locks)
    }
}
