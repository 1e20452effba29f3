//! One ZooKeeper server JVM: standalone, or a member of a [`ZkEnsemble`].

use std::ffi::OsString;
use std::fmt::Write as _;
use std::fs;
use std::io::Write as _;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use crate::ensemble::ZkEnsemble;
use crate::error::{Error, Result};
use crate::fourlw::{check_serving, four_letter_word, Metrics, ServerStatus};
use crate::install::ZkInstall;
use crate::process::Jvm;
use crate::util::{self, lock, reserve_port, PortGuard, TempDir};

/// Timeout of each four-letter word sent by the [`ZkServer`] helpers.
pub(crate) const FOUR_LETTER_TIMEOUT: Duration = Duration::from_secs(2);
/// How long [`ZkServer::stop`] waits after SIGTERM before it sends SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(10);
/// How often readiness is polled.
pub(crate) const POLL: Duration = Duration::from_millis(25);
/// How many times a start is retried when the server lost a race for a port.
pub(crate) const START_ATTEMPTS: usize = 3;
const LOG_TAIL_LINES: usize = 30;
/// The JAAS file of a server with SASL users, in its directory.
const JAAS_FILE: &str = "jaas.conf";

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
    install: Option<ZkInstall>,
    tls: Option<ServerTls>,
    sasl_users: Vec<(String, String)>,
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
            install: None,
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

    /// Uses this installation instead of [`ZkInstall::locate`].
    pub fn install(mut self, install: ZkInstall) -> Self {
        self.install = Some(install);
        self
    }

    /// Starts a standalone server and waits until it serves requests.
    pub fn start(self) -> Result<ZkServer> {
        self.validate()?;
        let install = self.resolve_install()?;
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
            let mut server = server.owning(dir, ports);
            let started = server
                .spawn()
                .and_then(|()| server.wait_serving(timeout).map(drop));
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
    fn jaas(&self) -> String {
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

    pub(crate) fn resolve_install(&self) -> Result<ZkInstall> {
        match &self.install {
            Some(install) => Ok(install.clone()),
            None => ZkInstall::locate(),
        }
    }

    pub(crate) fn ensemble_startup_timeout(&self) -> Duration {
        self.startup_timeout.unwrap_or(Duration::from_secs(60))
    }

    fn ticks(&self, span: Duration) -> u64 {
        let tick = self.tick_time.as_millis().max(1);
        span.as_millis().div_ceil(tick).max(1) as u64
    }

    fn zoo_cfg(
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

    fn java_args(&self, install: &ZkInstall, dir: &Path, cfg: &Path, main: &str) -> Vec<OsString> {
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

/// What a server is.
pub(crate) enum Role {
    Standalone,
    /// Member `id` (1-based) of an ensemble whose members use these
    /// (host, quorum port, election port).
    Member {
        id: usize,
        servers: Vec<(Ipv4Addr, u16, u16)>,
    },
}

pub(crate) struct Prepare<'a> {
    pub(crate) builder: &'a ZkServerBuilder,
    pub(crate) install: &'a ZkInstall,
    pub(crate) role: Role,
    /// This server's own directory (config, log, data/).
    pub(crate) dir: PathBuf,
    /// The client address: `127.0.0.1`, or the server's own in a [`NetLab`](crate::NetLab).
    pub(crate) host: Ipv4Addr,
    pub(crate) client_port: u16,
    /// Runs the JVM inside this network namespace (and asks it four-letter words there).
    pub(crate) netns: Option<Netns>,
    /// The TLS client port, with [`ZkServerBuilder::tls`].
    pub(crate) secure_port: Option<u16>,
    /// Removed by the watchdog if the test process dies.
    pub(crate) cleanup: PathBuf,
    pub(crate) startup_timeout: Duration,
}

/// A network namespace a server runs in: its name and the `ip` program that enters it.
#[derive(Debug, Clone)]
pub(crate) struct Netns {
    pub(crate) name: String,
    pub(crate) ip_program: PathBuf,
}

/// What the testkit knows about a server without asking it.
pub(crate) enum Probe {
    /// Stopped or killed on purpose (or never started).
    Down,
    /// The JVM exited on its own.
    Crashed(String),
    /// The JVM runs.
    Running,
}

/// A real ZooKeeper server (a JVM) on `127.0.0.1`, in its own temporary
/// directory.
///
/// Start one with [`ZkServer::start`] or [`ZkServer::builder`]. Every method
/// takes `&self`, so a server can be shared (`Arc<ZkServer>`, a `static`)
/// and, say, killed by one thread while others use it. Dropping the server
/// kills the JVM and removes its directory. The JVM is also killed (and the
/// directory removed) if the test process dies without running destructors;
/// see the crate documentation.
///
/// The client port stays the same across [`stop`](ZkServer::stop),
/// [`kill`](ZkServer::kill) and [`restart`](ZkServer::restart), and so does
/// the data directory, so sessions and znodes survive a restart (subject to
/// session expiry).
#[derive(Debug)]
pub struct ZkServer {
    name: String,
    addr: SocketAddr,
    secure_addr: Option<SocketAddr>,
    dir: PathBuf,
    data_dir: PathBuf,
    log: PathBuf,
    cleanup: PathBuf,
    java: PathBuf,
    args: Vec<OsString>,
    startup_timeout: Duration,
    jvm: Mutex<Option<Jvm>>,
    launches: Mutex<u32>,
    ports: Vec<PortGuard>,
    owned_dir: Option<TempDir>,
    netns: Option<String>,
}

impl ZkServer {
    /// Starts a standalone server with the default settings and waits until
    /// it serves requests (typically well under 2 s).
    pub fn start() -> Result<ZkServer> {
        ZkServerBuilder::default().start()
    }

    /// A builder to change the settings.
    pub fn builder() -> ZkServerBuilder {
        ZkServerBuilder::default()
    }

    /// Writes the server's directory and `zoo.cfg`; does not start it.
    pub(crate) fn prepare(p: Prepare<'_>) -> Result<ZkServer> {
        let data_dir = p.dir.join("data");
        fs::create_dir_all(&data_dir)
            .map_err(|e| Error::io(format!("creating {}", data_dir.display()), e))?;
        let (name, main) = match &p.role {
            Role::Standalone => (
                format!("standalone server 127.0.0.1:{}", p.client_port),
                "org.apache.zookeeper.server.ZooKeeperServerMain",
            ),
            Role::Member { id, .. } => {
                let myid = data_dir.join("myid");
                fs::write(&myid, format!("{id}\n"))
                    .map_err(|e| Error::io(format!("writing {}", myid.display()), e))?;
                (
                    format!("ensemble member {id} ({}:{})", p.host, p.client_port),
                    "org.apache.zookeeper.server.quorum.QuorumPeerMain",
                )
            }
        };
        if !p.builder.sasl_users.is_empty() {
            let jaas = p.dir.join(JAAS_FILE);
            fs::write(&jaas, p.builder.jaas())
                .map_err(|e| Error::io(format!("writing {}", jaas.display()), e))?;
        }
        let cfg = p.dir.join("zoo.cfg");
        let addr = SocketAddr::from((p.host, p.client_port));
        let text = p.builder.zoo_cfg(&data_dir, addr, p.secure_port, &p.role);
        fs::write(&cfg, text).map_err(|e| Error::io(format!("writing {}", cfg.display()), e))?;
        let mut java = p.install.java().to_path_buf();
        let mut args = p.builder.java_args(p.install, &p.dir, &cfg, main);
        if let Some(netns) = &p.netns {
            // `ip netns exec` execs the JVM, so the watchdog's pid is still the JVM's.
            let mut prefixed: Vec<OsString> = vec![
                "netns".into(),
                "exec".into(),
                netns.name.clone().into(),
                java.into(),
            ];
            prefixed.append(&mut args);
            args = prefixed;
            java = netns.ip_program.clone();
        }
        Ok(ZkServer {
            name,
            addr,
            secure_addr: p
                .secure_port
                .map(|port| SocketAddr::from((Ipv4Addr::LOCALHOST, port))),
            log: p.dir.join("zookeeper.log"),
            args,
            java,
            dir: p.dir,
            data_dir,
            cleanup: p.cleanup,
            startup_timeout: p.startup_timeout,
            jvm: Mutex::new(None),
            launches: Mutex::new(0),
            ports: Vec::new(),
            owned_dir: None,
            netns: p.netns.map(|n| n.name),
        })
    }

    /// Gives the server ownership of its directory and ports.
    pub(crate) fn owning(mut self, dir: TempDir, ports: Vec<PortGuard>) -> ZkServer {
        self.owned_dir = Some(dir);
        self.ports = ports;
        self
    }

    pub(crate) fn with_ports(mut self, ports: Vec<PortGuard>) -> ZkServer {
        self.ports = ports;
        self
    }

    /// Keeps the directory for inspection after a failed start.
    pub(crate) fn keep_dir(&mut self) {
        if let Some(dir) = &mut self.owned_dir {
            dir.keep();
        }
    }

    /// Starts the JVM (if not running) without waiting for readiness.
    pub(crate) fn spawn(&self) -> Result<()> {
        let mut slot = lock(&self.jvm);
        if let Some(jvm) = slot.as_mut() {
            if jvm.exit_status().is_none() {
                return Ok(());
            }
        }
        let run = {
            let mut launches = lock(&self.launches);
            *launches += 1;
            *launches
        };
        if let Ok(mut log) = fs::File::options()
            .create(true)
            .append(true)
            .open(&self.log)
        {
            let _ = writeln!(log, "=== lock-testkit: launch {run} of {} ===", self.name);
        }
        let cleanup = (!util::keep_dirs()).then_some(self.cleanup.as_path());
        *slot = Some(Jvm::spawn(
            &self.java, &self.args, &self.dir, &self.log, cleanup,
        )?);
        Ok(())
    }

    pub(crate) fn probe(&self) -> Probe {
        match lock(&self.jvm).as_mut() {
            None => Probe::Down,
            Some(jvm) => match jvm.exit_status() {
                None => Probe::Running,
                Some(status) => Probe::Crashed(status.to_string()),
            },
        }
    }

    pub(crate) fn lost_port_race(&self) -> bool {
        util::log_shows_bind_failure(&self.log)
    }

    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The client address, `127.0.0.1:<port>`.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The client port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The connect string for clients, `"127.0.0.1:<port>"`.
    pub fn connect_string(&self) -> String {
        self.addr.to_string()
    }

    /// The TLS connect string, `"127.0.0.1:<secure port>"`, for a server started
    /// with [`ZkServerBuilder::tls`].
    pub fn secure_connect_string(&self) -> Option<String> {
        self.secure_addr.map(|a| a.to_string())
    }

    /// The server's `dataDir`.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// The server's log file (all runs of this server, appended).
    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// The last `lines` lines of the server's log.
    pub fn log_tail(&self, lines: usize) -> String {
        util::tail(&self.log, lines)
    }

    /// The JVM's process id while it runs.
    pub fn jvm_pid(&self) -> Option<u32> {
        let mut slot = lock(&self.jvm);
        let jvm = slot.as_mut()?;
        if jvm.exit_status().is_some() {
            return None;
        }
        jvm.wait_pid(Duration::from_secs(2))
    }

    /// Whether the JVM is running (it may still be starting, or be paused).
    pub fn is_running(&self) -> bool {
        matches!(self.probe(), Probe::Running)
    }

    /// Stops the server gracefully: SIGTERM, then SIGKILL if it has not
    /// exited after 10 s. Returns once the JVM is gone. Does nothing if it is
    /// not running.
    pub fn stop(&self) {
        if let Some(mut jvm) = lock(&self.jvm).take() {
            jvm.terminate(STOP_GRACE);
        }
    }

    /// Kills the server with SIGKILL (a crash: no shutdown at all). Returns
    /// once the JVM is gone. Does nothing if it is not running.
    pub fn kill(&self) {
        if let Some(mut jvm) = lock(&self.jvm).take() {
            jvm.kill();
        }
    }

    /// Starts the server again on the same port with the same data directory
    /// (stopping it gracefully first if it runs) and waits until it serves
    /// requests. An ensemble member serves once it has rejoined a quorum.
    /// On failure the server is left stopped.
    pub fn restart(&self) -> Result<()> {
        self.stop();
        self.spawn()?;
        match self.wait_serving(self.startup_timeout) {
            Ok(_) => Ok(()),
            Err(e) => {
                self.kill();
                Err(e)
            }
        }
    }

    /// Freezes the JVM with SIGSTOP: connections stay open but nothing is
    /// answered (not even four-letter words) until [`resume`](Self::resume).
    /// Clients see a hung server; an ensemble sees an unresponsive member.
    pub fn pause(&self) -> Result<()> {
        self.set_paused(true)
    }

    /// Undoes [`pause`](Self::pause) (SIGCONT).
    pub fn resume(&self) -> Result<()> {
        self.set_paused(false)
    }

    fn set_paused(&self, paused: bool) -> Result<()> {
        if let Some(jvm) = lock(&self.jvm).as_mut() {
            if jvm.exit_status().is_none() {
                jvm.set_paused(paused);
                return Ok(());
            }
        }
        Err(Error::NotRunning {
            server: self.name.clone(),
        })
    }

    /// Waits until the server answers `srvr` with a serving mode
    /// (standalone, leader, follower, ...), and returns that status.
    ///
    /// Fails early if the JVM exits, or if it is not running at all. (`ruok`
    /// is not enough: a server answers `imok` before it serves.)
    pub fn wait_serving(&self, timeout: Duration) -> Result<ServerStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            match self.probe() {
                Probe::Running => {}
                Probe::Down => {
                    return Err(Error::NotRunning {
                        server: self.name.clone(),
                    })
                }
                Probe::Crashed(status) => {
                    return Err(Error::Exited {
                        server: self.name.clone(),
                        status,
                        log: self.log.clone(),
                        log_tail: self.log_tail(LOG_TAIL_LINES),
                    })
                }
            }
            let left = deadline.saturating_duration_since(Instant::now());
            let last = match self.ask("srvr", left.min(FOUR_LETTER_TIMEOUT)) {
                Ok(text) => {
                    let status = ServerStatus::parse(&text);
                    if status.mode.is_serving() {
                        return Ok(status);
                    }
                    format!("srvr says {:?}", status.mode)
                }
                Err(e) => e.to_string(),
            };
            if Instant::now() >= deadline {
                return Err(Error::StartTimeout {
                    what: self.name.clone(),
                    timeout,
                    detail: format!(
                        "{last}; log {}:\n{}",
                        self.log.display(),
                        self.log_tail(LOG_TAIL_LINES)
                    ),
                });
            }
            thread::sleep(POLL);
        }
    }

    /// Sends any four-letter word (2 s timeout) and returns the answer.
    pub fn four_letter_word(&self, command: &str) -> Result<String> {
        self.ask(command, FOUR_LETTER_TIMEOUT)
    }

    /// A four-letter word, asked from inside the server's network namespace if it
    /// has one (there its own address is reachable whatever the partitions).
    fn ask(&self, command: &str, timeout: Duration) -> Result<String> {
        match &self.netns {
            None => four_letter_word(self.addr, command, timeout),
            Some(netns) => {
                crate::netns::run_in(netns, || four_letter_word(self.addr, command, timeout))?
            }
        }
    }

    /// `ruok`: `true` if the server answered `imok`. A server answers this as
    /// soon as its port is open, even when it does not serve requests.
    pub fn ruok(&self) -> Result<bool> {
        Ok(self.four_letter_word("ruok")?.trim() == "imok")
    }

    /// `srvr`: the server's mode, zxid, node count, ... A server that is up
    /// but not serving yields [`Mode::NotServing`](crate::Mode::NotServing).
    pub fn srvr(&self) -> Result<ServerStatus> {
        Ok(ServerStatus::parse(&self.four_letter_word("srvr")?))
    }

    /// `mntr`: the server's metrics (`zk_packets_received`,
    /// `zk_server_state`, `zk_znode_count`, ...).
    /// [`Error::NotServing`] if the server is not serving.
    pub fn mntr(&self) -> Result<Metrics> {
        let text = check_serving(self.addr, self.four_letter_word("mntr")?)?;
        Ok(Metrics::parse(&text))
    }

    /// `stat`: like `srvr`, plus the list of client connections (raw text).
    pub fn stat(&self) -> Result<String> {
        check_serving(self.addr, self.four_letter_word("stat")?)
    }

    /// `cons`: one line per client connection with its session and counters
    /// (raw text).
    pub fn cons(&self) -> Result<String> {
        check_serving(self.addr, self.four_letter_word("cons")?)
    }
}

impl Drop for ZkServer {
    fn drop(&mut self) {
        // Explicit for clarity: the JVM dies before the directory is removed
        // and the ports are released.
        self.kill();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secure_port_and_sasl_users_reach_the_configuration() {
        let builder = ZkServerBuilder::default()
            .tls(ServerTls::new("/k/server.pem", "/k/ca.pem").require_client_auth())
            .sasl_digest_user("carol", "pw");
        let client = SocketAddr::from((Ipv4Addr::LOCALHOST, 1));
        let cfg = builder.zoo_cfg(Path::new("/d"), client, Some(2), &Role::Standalone);
        for line in [
            "secureClientPort=2",
            "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
            "ssl.keyStore.location=/k/server.pem",
            "ssl.keyStore.type=PEM",
            "ssl.trustStore.location=/k/ca.pem",
            "ssl.trustStore.type=PEM",
            "ssl.clientAuth=need",
            "authProvider.sasl=org.apache.zookeeper.server.auth.SASLAuthenticationProvider",
        ] {
            assert!(cfg.lines().any(|l| l == line), "{line} missing from\n{cfg}");
        }
        assert!(builder.jaas().contains("user_carol=\"pw\""));
        let plain =
            ZkServerBuilder::default().zoo_cfg(Path::new("/d"), client, None, &Role::Standalone);
        assert!(!plain.contains("secureClientPort") && !plain.contains("authProvider"));
    }

    #[test]
    fn refuses_what_it_cannot_write() {
        let bad_user = ZkServerBuilder::default().sasl_digest_user("a b", "pw");
        assert!(matches!(bad_user.validate(), Err(Error::InvalidConfig(_))));
        let bad_password = ZkServerBuilder::default().sasl_digest_user("a", "p\"w");
        assert!(matches!(
            bad_password.validate(),
            Err(Error::InvalidConfig(_))
        ));
        let tls_ensemble = ZkServerBuilder::default()
            .tls(ServerTls::new("k", "t"))
            .start_ensemble(1);
        assert!(matches!(tls_ensemble, Err(Error::InvalidConfig(_))));
    }
}
