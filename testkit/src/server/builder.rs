//! Settings of a server or an ensemble ([`ZkServerBuilder`], [`ServerTls`]), and
//! what they make of a server's configuration file and JVM command line.

use super::*;

/// Settings for a [`ZkServer`] or a [`ZkEnsemble`], then `start()` or
/// `start_ensemble(n)`.
///
/// The defaults suit tests: `tickTime=100` ms (session expiry is checked every
/// tick), sessions from 200 ms to 60 s, `forceSync=no`, all four-letter words
/// enabled, no AdminServer, no per-IP connection limit, a 256 MiB heap and a
/// JVM tuned to start fast.
///
/// ```no_run
/// use std::time::Duration;
/// let server = lock_testkit::ZkServer::builder()
///     .tick_time(Duration::from_millis(50))
///     .config("extendedTypesEnabled", "true") // TTL nodes
///     .start()?;
/// # Ok::<(), lock_testkit::Error>(())
/// ```
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until start() or start_ensemble() is called"]
pub struct ZkServerBuilder {
    tick_time: Duration,
    min_session_timeout: Duration,
    max_session_timeout: Duration,
    init_limit: Option<u32>,
    sync_limit: Option<u32>,
    startup_timeout: Option<Duration>,
    max_heap_mb: u32,
    jvm_args: Vec<String>,
    config: Vec<(String, String)>,
    tls: Option<ServerTls>,
    pub(super) sasl_users: Vec<(String, String)>,
}

/// A secure client port for a standalone server ([`ZkServerBuilder::tls`]):
/// ZooKeeper's Netty connection factory with PEM key and trust stores.
#[derive(Debug, Clone)]
pub struct ServerTls {
    key_store: PathBuf,
    trust_store: PathBuf,
    client_auth: bool,
}

impl ServerTls {
    /// `key_store`: a PEM file with the server's private key (PKCS#8, not
    /// encrypted) and its certificate chain; `trust_store`: a PEM file with the
    /// CA certificates that client certificates must chain to. The server's
    /// certificate should name `127.0.0.1` (clients check it against the
    /// address they dial), and so should client certificates (ZooKeeper checks
    /// them against the client's address).
    pub fn new(key_store: impl Into<PathBuf>, trust_store: impl Into<PathBuf>) -> Self {
        ServerTls {
            key_store: key_store.into(),
            trust_store: trust_store.into(),
            client_auth: false,
        }
    }

    /// Requires a client certificate (`ssl.clientAuth=need`; default `none`).
    pub fn require_client_auth(mut self) -> Self {
        self.client_auth = true;
        self
    }
}

impl Default for ZkServerBuilder {
    fn default() -> Self {
        ZkServerBuilder {
            tick_time: Duration::from_millis(100),
            min_session_timeout: Duration::from_millis(200),
            max_session_timeout: Duration::from_secs(60),
            init_limit: None,
            sync_limit: None,
            startup_timeout: None,
            max_heap_mb: 256,
            jvm_args: Vec::new(),
            config: Vec::new(),
            tls: None,
            sasl_users: Vec::new(),
        }
    }
}

impl ZkServerBuilder {
    /// ZooKeeper's `tickTime` (default 100 ms). Sessions expire on tick
    /// boundaries, and ensemble timeouts are counted in ticks.
    pub fn tick_time(mut self, tick: Duration) -> Self {
        self.tick_time = tick;
        self
    }

    /// `minSessionTimeout` (default 200 ms): shorter requested session
    /// timeouts are raised to this.
    pub fn min_session_timeout(mut self, timeout: Duration) -> Self {
        self.min_session_timeout = timeout;
        self
    }

    /// `maxSessionTimeout` (default 60 s; ZooKeeper's own default would be
    /// 20 ticks, i.e. only 2 s with the testkit's tick).
    pub fn max_session_timeout(mut self, timeout: Duration) -> Self {
        self.max_session_timeout = timeout;
        self
    }

    /// Ensembles only: `initLimit` in ticks (default: 10 s worth).
    pub fn init_limit(mut self, ticks: u32) -> Self {
        self.init_limit = Some(ticks);
        self
    }

    /// Ensembles only: `syncLimit` in ticks (default: 3 s worth). A follower
    /// that cannot hear its leader for this long (e.g. a paused leader) drops
    /// out and a new election starts.
    pub fn sync_limit(mut self, ticks: u32) -> Self {
        self.sync_limit = Some(ticks);
        self
    }

    /// How long `start()`, `restart()` and `start_ensemble()` wait for
    /// readiness (default 30 s for a server, 60 s for an ensemble).
    pub fn startup_timeout(mut self, timeout: Duration) -> Self {
        self.startup_timeout = Some(timeout);
        self
    }

    /// The JVM's maximum heap in MiB (default 256).
    pub fn max_heap_mb(mut self, mib: u32) -> Self {
        self.max_heap_mb = mib;
        self
    }

    /// An extra JVM argument (e.g. `-Dzookeeper.foo=bar`), placed before `-cp`.
    pub fn jvm_arg(mut self, arg: impl Into<String>) -> Self {
        self.jvm_args.push(arg.into());
        self
    }

    /// An extra `zoo.cfg` line `key=value`, written after the testkit's own
    /// lines (so it overrides them). Keys ZooKeeper does not know become
    /// system properties `zookeeper.<key>`.
    pub fn config(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.config.push((key.into(), value.into()));
        self
    }

    /// Standalone servers only: also serve TLS on a second client port
    /// ([`ZkServer::secure_connect_string`]); the plain port stays (the testkit's
    /// readiness checks use it). Switches the server to the Netty connection
    /// factory, which ZooKeeper needs for TLS.
    pub fn tls(mut self, tls: ServerTls) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Accepts SASL DIGEST-MD5 logins of `user` with `password`
    /// (`SASLAuthenticationProvider` and a JAAS `DigestLoginModule` section
    /// `Server`, written to the server's directory); their identity is
    /// `sasl:<user>`. Call once per user.
    pub fn sasl_digest_user(
        mut self,
        user: impl Into<String>,
        password: impl Into<String>,
    ) -> Self {
        self.sasl_users.push((user.into(), password.into()));
        self
    }

    /// Starts a standalone server and waits until it serves requests.
    pub fn start(self) -> Result<ZkServer> {
        self.validate()?;
        let install = ZkInstall::locate()?;
        let timeout = self.startup_timeout.unwrap_or(Duration::from_secs(30));
        let mut attempt = 0;
        loop {
            attempt += 1;
            let dir = TempDir::new("zk-testkit")
                .map_err(|e| Error::io("creating a temporary directory", e))?;
            let port = reserve_port()?;
            let mut ports = vec![port];
            if self.tls.is_some() {
                ports.push(reserve_port()?);
            }
            let server = ZkServer::prepare(Prepare {
                builder: &self,
                install: &install,
                role: Role::Standalone,
                dir: dir.path().to_path_buf(),
                host: Ipv4Addr::LOCALHOST,
                client_port: ports[0].port(),
                netns: None,
                secure_port: ports.get(1).map(PortGuard::port),
                cleanup: dir.path().to_path_buf(),
                startup_timeout: timeout,
            })?;
            let mut server = server.owning(Some(dir), ports);
            let started = server.spawn().and_then(|()| server.wait_serving(timeout));
            match started {
                Ok(()) => return Ok(server),
                Err(_) if attempt < START_ATTEMPTS && server.lost_port_race() => continue,
                Err(e) => {
                    server.kill();
                    server.keep_dir();
                    return Err(e);
                }
            }
        }
    }

    /// Starts an ensemble of `size` members (see [`ZkEnsemble`]).
    pub fn start_ensemble(self, size: usize) -> Result<ZkEnsemble> {
        ZkEnsemble::start_with(self, size)
    }

    pub(crate) fn validate(&self) -> Result<()> {
        let bad = |msg: String| Err(Error::InvalidConfig(msg));
        if self.tick_time < Duration::from_millis(1) {
            return bad(format!("tick_time {:?} is below 1 ms", self.tick_time));
        }
        if self.min_session_timeout > self.max_session_timeout {
            return bad(format!(
                "min_session_timeout {:?} exceeds max_session_timeout {:?}",
                self.min_session_timeout, self.max_session_timeout
            ));
        }
        for (user, password) in &self.sasl_users {
            let plain = |s: &str| {
                !s.is_empty()
                    && s.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            };
            if !plain(user) || password.contains(['"', '\\', '\n']) {
                return bad(format!("sasl user {user:?}: letters, digits, - _ . only (and a password without quotes)"));
            }
        }
        if self.max_heap_mb < 16 {
            return bad(format!("max_heap_mb {} is below 16", self.max_heap_mb));
        }
        for (key, value) in &self.config {
            let invalid = |s: &str| s.contains(['\n', '\r']);
            if key.is_empty() || key.contains('=') || invalid(key) || invalid(value) {
                return bad(format!(
                    "config line {key:?}={value:?} is not a key=value line"
                ));
            }
        }
        Ok(())
    }

    /// The JAAS configuration of [`sasl_digest_user`](Self::sasl_digest_user).
    pub(super) fn jaas(&self) -> String {
        let mut text =
            String::from("Server {\n  org.apache.zookeeper.server.auth.DigestLoginModule required");
        for (user, password) in &self.sasl_users {
            let _ = write!(text, "\n  user_{user}=\"{password}\"");
        }
        text.push_str(";\n};\n");
        text
    }

    pub(crate) fn has_tls(&self) -> bool {
        self.tls.is_some()
    }

    pub(crate) fn ensemble_startup_timeout(&self) -> Duration {
        self.startup_timeout.unwrap_or(Duration::from_secs(60))
    }

    fn ticks(&self, span: Duration) -> u64 {
        let tick = self.tick_time.as_millis().max(1);
        span.as_millis().div_ceil(tick).max(1) as u64
    }

    pub(super) fn zoo_cfg(
        &self,
        data_dir: &Path,
        client: SocketAddr,
        secure_port: Option<u16>,
        role: &Role,
    ) -> String {
        let mut cfg = String::from("# written by lock-testkit\n");
        let mut line = |key: &str, value: &dyn std::fmt::Display| {
            let _ = writeln!(cfg, "{key}={value}");
        };
        line("tickTime", &self.tick_time.as_millis().max(1));
        line("dataDir", &data_dir.display());
        line("clientPort", &client.port());
        line("clientPortAddress", &client.ip());
        line("admin.enableServer", &"false");
        line("4lw.commands.whitelist", &"*");
        line("forceSync", &"no");
        line("maxClientCnxns", &0);
        line("minSessionTimeout", &self.min_session_timeout.as_millis());
        line("maxSessionTimeout", &self.max_session_timeout.as_millis());
        if let Role::Member { servers, .. } = role {
            let init = self
                .init_limit
                .map_or_else(|| self.ticks(Duration::from_secs(10)), u64::from);
            let sync = self
                .sync_limit
                .map_or_else(|| self.ticks(Duration::from_secs(3)), u64::from);
            line("initLimit", &init);
            line("syncLimit", &sync);
            if servers.len() == 1 {
                line("standaloneEnabled", &"false");
            }
            for (i, (host, quorum, election)) in servers.iter().enumerate() {
                line(
                    &format!("server.{}", i + 1),
                    &format!("{host}:{quorum}:{election}"),
                );
            }
        }
        if let (Some(tls), Some(port)) = (&self.tls, secure_port) {
            line("secureClientPort", &port);
            line("secureClientPortAddress", &Ipv4Addr::LOCALHOST);
            line(
                "serverCnxnFactory",
                &"org.apache.zookeeper.server.NettyServerCnxnFactory",
            );
            line("ssl.keyStore.location", &tls.key_store.display());
            line("ssl.keyStore.type", &"PEM");
            line("ssl.trustStore.location", &tls.trust_store.display());
            line("ssl.trustStore.type", &"PEM");
            let client_auth = if tls.client_auth { "need" } else { "none" };
            line("ssl.clientAuth", &client_auth);
        }
        if !self.sasl_users.is_empty() {
            line(
                "authProvider.sasl",
                &"org.apache.zookeeper.server.auth.SASLAuthenticationProvider",
            );
        }
        for (key, value) in &self.config {
            line(key, value);
        }
        cfg
    }

    pub(super) fn java_args(
        &self,
        install: &ZkInstall,
        dir: &Path,
        cfg: &Path,
        main: &str,
    ) -> Vec<OsString> {
        let mut args: Vec<OsString> = [
            format!("-Xmx{}m", self.max_heap_mb),
            "-XX:+UseSerialGC".into(),
            "-XX:TieredStopAtLevel=1".into(),
            "-Xshare:auto".into(),
            "-XX:-UsePerfData".into(),
            "-Djava.awt.headless=true".into(),
            // Transaction log files are preallocated in steps of this many KiB.
            "-Dzookeeper.preAllocSize=4096".into(),
            "-Dzookeeper.jmx.log4j.disable=true".into(),
            // Fast failover for ensembles: leader election retries its notifications
            // at most every second (default: doubling up to 60 s, which made a lost
            // leader take ~30 s to replace on a loaded machine, past test sessions'
            // timeouts), and gives up on a dead peer's socket after 1 s (default 5 s).
            "-Dzookeeper.fastleader.maxNotificationInterval=1000".into(),
            "-Dzookeeper.cnxTimeout=1000".into(),
            // slf4j-simple (Debian): to stderr, i.e. the log file.
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=info".into(),
            "-Dorg.slf4j.simpleLogger.showDateTime=true".into(),
            "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS".into(),
            // logback / log4j configurations of a ZOOKEEPER_HOME distribution.
            format!("-Dzookeeper.log.dir={}", dir.display()),
            "-Dzookeeper.console.threshold=INFO".into(),
        ]
        .into_iter()
        .map(OsString::from)
        .collect();
        if !self.sasl_users.is_empty() {
            let jaas = dir.join(JAAS_FILE);
            args.push(format!("-Djava.security.auth.login.config={}", jaas.display()).into());
        }
        args.extend(self.jvm_args.iter().map(OsString::from));
        args.push("-cp".into());
        args.push(install.classpath().into());
        args.push(main.into());
        args.push(cfg.as_os_str().to_owned());
        args
    }
}
