//! The environment of a binding on real ZooKeeper: servers and ensembles from
//! lock-testkit, faults through its proxies, the administrator over the `zookeeper`
//! crate, watchers from `wchp` and request counts from `mntr`.

use crate::admin::ZkAdmin;
use crate::env::{Admin, Capability, Deployment, Ensemble, Env, Faults, Style, LONG, SHORT};
use lock_client::{ConnectOptions, Error, LockClient};
use lock_testkit::{Direction, FaultProxy, ZkEnsemble, ZkServer};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// How a binding connects: `(connect_string, session_timeout)` to a client whose
/// session is established.
pub type Connect = dyn Fn(&str, Duration) -> Result<LockClient, Error> + Send + Sync;

/// How a binding connects with lock-client's options: `(connect_string, options)`
/// to a client whose session is established.
type ConnectWithOptions = dyn Fn(&str, ConnectOptions) -> Result<LockClient, Error> + Send + Sync;

/// The standalone server shared by the tests of one binary (each test uses its own
/// lock paths). The testkit kills it when the test process exits.
///
/// ```no_run
/// let connect = lock_conformance::shared_server().connect_string();
/// # drop(connect);
/// ```
pub fn shared_server() -> &'static ZkServer {
    static SERVER: OnceLock<ZkServer> = OnceLock::new();
    SERVER.get_or_init(fresh_server)
}

/// A server of its own, for tests that count its packets or stop it.
pub fn fresh_server() -> ZkServer {
    ZkServer::start().expect("starting ZooKeeper (lock-testkit; see testkit/README.md)")
}

/// Sessions watching `path`, from the server's `wchp` (4-letter word).
pub fn watchers_of(server: &ZkServer, path: &str) -> Vec<i64> {
    let text = server.four_letter_word("wchp").unwrap_or_default();
    let mut out = Vec::new();
    let mut in_path = false;
    for line in text.lines() {
        if let Some(session) = line.strip_prefix('\t') {
            if in_path {
                if let Ok(id) = u64::from_str_radix(session.trim().trim_start_matches("0x"), 16) {
                    out.push(id as i64);
                }
            }
        } else {
            in_path = line.trim() == path;
        }
    }
    out
}

/// A binding on real ZooKeeper servers. It has every [`Capability`] but
/// [`Capability::Load`], which [`under_load`](ZkEnv::under_load) adds (the
/// load test takes a while: one runtime of a binding is enough), and
/// [`Capability::ConnectOptions`], which made [`with_options`](ZkEnv::with_options)
/// it has.
///
/// ```no_run
/// use lock_conformance::{Style, ZkEnv};
/// let env = ZkEnv::new("lock-zookeeper", Style::Blocking, 4, |cluster, timeout| {
///     // e.g. lock_zookeeper::builder(cluster).session_timeout(timeout).connect()
///     # let _ = (cluster, timeout);
///     # unimplemented!()
/// });
/// # drop(env);
/// ```
pub struct ZkEnv {
    name: String,
    style: Style,
    requests_per_cycle: u64,
    connect: Arc<Connect>,
    shared: ZkDeployment,
    under_load: bool,
    round_trips_per_acquire: u64,
    /// What the binding's client crate cannot do ([`ZkEnv::without`]).
    lacking: Vec<Capability>,
    /// [`ZkEnv::with_options`].
    connect_with_options: Option<Arc<ConnectWithOptions>>,
}

impl ZkEnv {
    /// The binding `name`, called in `style`, sending `requests_per_cycle` requests
    /// per uncontended acquire + release (see [`Env::requests_per_cycle`]),
    /// connecting with `connect`. Most tests run on [`shared_server`].
    pub fn new(
        name: impl Into<String>,
        style: Style,
        requests_per_cycle: u64,
        connect: impl Fn(&str, Duration) -> Result<LockClient, Error> + Send + Sync + 'static,
    ) -> ZkEnv {
        let connect: Arc<Connect> = Arc::new(connect);
        ZkEnv {
            name: name.into(),
            style,
            requests_per_cycle,
            shared: ZkDeployment {
                server: Server::Shared,
                connect: connect.clone(),
            },
            connect,
            under_load: false,
            round_trips_per_acquire: 1,
            lacking: Vec::new(),
            connect_with_options: None,
        }
    }

    /// Takes `capability` away: the binding's client crate cannot do it (no
    /// `multi`, say), so its tests say `not applicable` instead of failing.
    pub fn without(mut self, capability: Capability) -> ZkEnv {
        self.lacking.push(capability);
        self
    }

    /// Adds [`Capability::Load`]: the suite's load test runs here too.
    pub fn under_load(mut self) -> ZkEnv {
        self.under_load = true;
        self
    }

    /// As [`new`](ZkEnv::new), connecting with lock-client's `ConnectOptions`
    /// (the session timeout set in them): then the environment also has
    /// [`Capability::ConnectOptions`], for the suite's tests of auth, ACLs and
    /// chroot.
    pub fn with_options(
        name: impl Into<String>,
        style: Style,
        requests_per_cycle: u64,
        connect: impl Fn(&str, ConnectOptions) -> Result<LockClient, Error> + Send + Sync + 'static,
    ) -> ZkEnv {
        let connect: Arc<ConnectWithOptions> = Arc::new(connect);
        let plain = connect.clone();
        let mut env = ZkEnv::new(name, style, requests_per_cycle, move |cluster, timeout| {
            plain(cluster, ConnectOptions::new().session_timeout(timeout))
        });
        env.connect_with_options = Some(connect);
        env
    }

    /// Round trips an uncontended acquisition takes (see
    /// [`Env::round_trips_per_acquire`]; 1 unless set).
    pub fn round_trips_per_acquire(mut self, round_trips: u64) -> ZkEnv {
        self.round_trips_per_acquire = round_trips;
        self
    }
}

impl Env for ZkEnv {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn style(&self) -> Style {
        self.style
    }

    fn capabilities(&self) -> Vec<Capability> {
        let mut has = vec![
            Capability::HoldReplies,
            Capability::Watchers,
            Capability::RequestCount,
            Capability::Ensemble,
            Capability::Processes,
            Capability::ConnectFailures,
            Capability::Nodelay,
            Capability::FullTolerance,
            Capability::ServerChecks,
            Capability::Multi,
        ];
        has.extend(self.under_load.then_some(Capability::Load));
        has.extend(
            self.connect_with_options
                .is_some()
                .then_some(Capability::ConnectOptions),
        );
        has.retain(|c| !self.lacking.contains(c));
        has
    }

    fn client_at(
        &self,
        connect_string: &str,
        session_timeout: Duration,
    ) -> Option<Result<LockClient, Error>> {
        Some((self.connect)(connect_string, session_timeout))
    }

    fn client_with_options(
        &self,
        connect_string: &str,
        options: ConnectOptions,
    ) -> Option<Result<LockClient, Error>> {
        let connect = self.connect_with_options.as_ref()?;
        Some(connect(connect_string, options))
    }

    fn requests_per_cycle(&self) -> u64 {
        self.requests_per_cycle
    }

    fn round_trips_per_acquire(&self) -> u64 {
        self.round_trips_per_acquire
    }

    fn shared(&self) -> &dyn Deployment {
        &self.shared
    }

    fn fresh(&self) -> Box<dyn Deployment> {
        Box::new(ZkDeployment {
            server: Server::Own(Box::new(fresh_server())),
            connect: self.connect.clone(),
        })
    }

    fn ensemble(&self, tick_time: Duration) -> Option<Box<dyn Ensemble>> {
        let ensemble = ZkEnsemble::builder()
            .tick_time(tick_time)
            .start_ensemble(3)
            .expect("starting a 3-node ensemble");
        Some(Box::new(ZkEnsembleEnv {
            ensemble,
            connect: self.connect.clone(),
        }))
    }
}

enum Server {
    /// [`shared_server`], started at its first use: a child process running
    /// a test of this environment again (see [`Capability::Processes`]) uses
    /// its parent's server and starts none.
    Shared,
    Own(Box<ZkServer>),
}

struct ZkDeployment {
    server: Server,
    connect: Arc<Connect>,
}

impl ZkDeployment {
    fn server(&self) -> &ZkServer {
        match &self.server {
            Server::Shared => shared_server(),
            Server::Own(s) => s,
        }
    }
}

impl Deployment for ZkDeployment {
    fn client(&self, session_timeout: Duration) -> Result<LockClient, Error> {
        (self.connect)(&self.server().connect_string(), session_timeout)
    }

    fn client_with_faults(
        &self,
        session_timeout: Duration,
    ) -> Result<(LockClient, Box<dyn Faults>), Error> {
        let proxy = FaultProxy::start(self.server().addr()).expect("fault proxy");
        let client = (self.connect)(&proxy.connect_string(), session_timeout)?;
        Ok((client, Box::new(proxy)))
    }

    fn admin(&self) -> Box<dyn Admin> {
        Box::new(ZkAdmin::connect(&self.server().connect_string()))
    }

    fn watchers_of(&self, path: &str) -> Option<Vec<i64>> {
        Some(watchers_of(self.server(), path))
    }

    fn requests_received(&self) -> Option<u64> {
        let mntr = self.server().mntr().expect("mntr");
        Some(
            mntr.get_u64("zk_packets_received")
                .expect("zk_packets_received"),
        )
    }

    fn connect_string(&self) -> Option<String> {
        Some(self.server().connect_string())
    }
}

impl Faults for FaultProxy {
    fn cut(&self) {
        FaultProxy::cut(self);
    }

    fn blackhole(&self) {
        FaultProxy::blackhole(self);
    }

    fn heal(&self) {
        FaultProxy::heal(self);
    }

    fn hold_replies(&self) {
        FaultProxy::hold(self, Direction::Downstream);
    }
}

struct ZkEnsembleEnv {
    ensemble: ZkEnsemble,
    connect: Arc<Connect>,
}

impl Ensemble for ZkEnsembleEnv {
    fn client(&self, session_timeout: Duration) -> Result<LockClient, Error> {
        (self.connect)(&self.ensemble.connect_string(), session_timeout)
    }

    fn lose_leader(&self) {
        let leader = self
            .ensemble
            .wait_for_leader(SHORT)
            .expect("the ensemble has a leader");
        self.ensemble.members()[leader].kill();
        self.ensemble
            .wait_for_leader(LONG)
            .expect("a new leader is elected");
    }
}
