//! One ZooKeeper server JVM: standalone, or a member of a [`ZkEnsemble`].

use std::ffi::OsString;
use std::fmt::Write as _;
use std::fs;
use std::io::Write as _;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::ensemble::ZkEnsemble;
use crate::error::{Error, Result};
use crate::fourlw::{check_serving, Metrics, Mode};
use crate::install::ZkInstall;
use crate::process::Jvm;
use crate::util::{self, lock, reserve_port, PortGuard, TempDir};

mod builder;

pub use builder::{ServerTls, ZkServerBuilder};

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
pub(crate) const JAAS_FILE: &str = "jaas.conf";

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
    launches: AtomicU32,
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
                format!("standalone server {}:{}", p.host, p.client_port),
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
            launches: AtomicU32::new(0),
            ports: Vec::new(),
            owned_dir: None,
            netns: p.netns.map(|n| n.name),
        })
    }

    /// Gives the server its ports and (a standalone server's) directory to own.
    pub(crate) fn owning(mut self, dir: Option<TempDir>, ports: Vec<PortGuard>) -> ZkServer {
        self.owned_dir = dir;
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
        let run = self.launches.fetch_add(1, Ordering::Relaxed) + 1;
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

    pub(crate) fn log_tail(&self, lines: usize) -> String {
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
        self.wait_serving(self.startup_timeout)
            .inspect_err(|_| self.kill())
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

    /// Waits until `srvr` reports a serving mode (`ruok` is not enough: a server
    /// answers `imok` before it serves); fails early if the JVM is not running.
    pub(crate) fn wait_serving(&self, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        let mut last = String::new();
        let serving = util::poll(timeout, POLL, || {
            match self.probe() {
                Probe::Running => {}
                Probe::Down => {
                    return Some(Err(Error::NotRunning {
                        server: self.name.clone(),
                    }))
                }
                Probe::Crashed(status) => return Some(Err(self.exited(status))),
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.ask("srvr", left.min(FOUR_LETTER_TIMEOUT)) {
                Ok(text) => match Mode::of_srvr(&text) {
                    mode if mode.is_serving() => return Some(Ok(())),
                    mode => last = format!("srvr says {mode:?}"),
                },
                Err(e) => last = e.to_string(),
            }
            None
        });
        serving.unwrap_or_else(|| {
            Err(Error::StartTimeout {
                what: self.name.clone(),
                timeout,
                detail: format!(
                    "{last}; log {}:\n{}",
                    self.log.display(),
                    self.log_tail(LOG_TAIL_LINES)
                ),
            })
        })
    }

    /// [`Error::Exited`] for this server, which exited with `status`.
    pub(crate) fn exited(&self, status: String) -> Error {
        Error::Exited {
            server: self.name.clone(),
            status,
            log: self.log.clone(),
            log_tail: self.log_tail(LOG_TAIL_LINES),
        }
    }

    /// Sends any four-letter word (2 s timeout) and returns the answer.
    pub fn four_letter_word(&self, command: &str) -> Result<String> {
        self.ask(command, FOUR_LETTER_TIMEOUT)
    }

    /// A four-letter word, asked from inside the server's network namespace if it
    /// has one (there its own address is reachable whatever the partitions).
    fn ask(&self, command: &str, timeout: Duration) -> Result<String> {
        let ask = || {
            lock_nodelay::four_letter_word(self.addr, command, timeout).map_err(|e| {
                Error::FourLetterWord {
                    command: command.to_string(),
                    addr: self.addr,
                    reason: e.to_string(),
                }
            })
        };
        match &self.netns {
            None => ask(),
            Some(netns) => crate::netns::run_in(netns, ask)?,
        }
    }

    /// `srvr`: the server's role; a server that is up but not serving yields
    /// [`Mode::NotServing`].
    pub fn srvr(&self) -> Result<Mode> {
        Ok(Mode::of_srvr(&self.four_letter_word("srvr")?))
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
