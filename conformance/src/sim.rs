//! The environment of lock-sim's in-process server (`lock_sim::Server`): its
//! clients are the same `LockClient`, its fault knobs stand in for the proxies, its
//! tree for the administrator.

use crate::env::{wait_until, Admin, Capability, Deployment, Ensemble, Env, Faults, Style, SHORT};
use lock_client::{Error, LockClient};
use lock_sim::Server;
use std::time::Duration;

/// lock-sim's in-process server. Each environment has a server of its own (so
/// [`Env::shared`] is private to one test). It has every [`Capability`] but
/// [`Capability::Ensemble`]: it is one server, with no replication to lose.
///
/// ```
/// use lock_conformance::{Env, SimEnv, Style};
/// let env = SimEnv::new(Style::Blocking);
/// let client = env.shared().client(std::time::Duration::from_secs(2)).unwrap();
/// assert!(client.session_id().is_some());
/// ```
pub struct SimEnv {
    style: Style,
    shared: SimDeployment,
}

impl SimEnv {
    /// A new server, the suite calling lock-client in `style`.
    pub fn new(style: Style) -> SimEnv {
        SimEnv {
            style,
            shared: SimDeployment(Server::new()),
        }
    }
}

impl Env for SimEnv {
    fn name(&self) -> String {
        format!("lock-sim server ({:?})", self.style)
    }

    fn style(&self) -> Style {
        self.style
    }

    fn capabilities(&self) -> Vec<Capability> {
        vec![
            Capability::HoldReplies,
            Capability::Watchers,
            Capability::RequestCount,
            Capability::Multi,
        ]
    }

    fn requests_per_cycle(&self) -> u64 {
        // create (its reply carries the Stat) + getChildren, then delete.
        3
    }

    fn shared(&self) -> &dyn Deployment {
        &self.shared
    }

    fn fresh(&self) -> Box<dyn Deployment> {
        Box::new(SimDeployment(Server::new()))
    }

    fn ensemble(&self, _tick_time: Duration) -> Option<Box<dyn Ensemble>> {
        None
    }

    fn client_at(&self, _: &str, _: Duration) -> Option<Result<LockClient, Error>> {
        // Its server lives in this process: no other reaches it.
        None
    }
}

struct SimDeployment(Server);

impl SimDeployment {
    /// A client whose session is established, as a real binding's `connect` returns
    /// (before that, a fault knob would hold or cut the session's own start).
    fn connected(&self, session_timeout: Duration) -> LockClient {
        let client = self.0.client_with_timeout(session_timeout);
        wait_until("the session", SHORT, || client.session_id());
        client
    }
}

/// A partition that only [`Faults::heal`] ends.
const FOREVER: Duration = Duration::from_secs(24 * 3600);

struct SimFaults {
    server: Server,
    client: LockClient,
}

impl Faults for SimFaults {
    fn cut(&self) {
        self.server.disconnect(&self.client, Duration::ZERO);
    }

    fn blackhole(&self) {
        self.server.partition(&self.client, FOREVER);
    }

    fn heal(&self) {
        self.server.heal(&self.client);
    }

    fn hold_replies(&self) {
        self.server.hold_replies(&self.client);
    }
}

impl Deployment for SimDeployment {
    fn client(&self, session_timeout: Duration) -> Result<LockClient, Error> {
        Ok(self.connected(session_timeout))
    }

    fn client_with_faults(
        &self,
        session_timeout: Duration,
    ) -> Result<(LockClient, Box<dyn Faults>), Error> {
        let client = self.connected(session_timeout);
        let faults = SimFaults {
            server: self.0.clone(),
            client: client.clone(),
        };
        Ok((client, Box::new(faults)))
    }

    fn admin(&self) -> Box<dyn Admin> {
        Box::new(SimAdmin(self.0.clone()))
    }

    fn watchers_of(&self, path: &str) -> Option<Vec<i64>> {
        Some(self.0.watchers(path))
    }

    fn requests_received(&self) -> Option<u64> {
        Some(self.0.requests_received())
    }

    fn connect_string(&self) -> Option<String> {
        // In-process only.
        None
    }
}

/// The administrator of the in-process server: reads its tree directly.
struct SimAdmin(Server);

impl Admin for SimAdmin {
    fn children(&self, path: &str) -> Vec<String> {
        self.0.children(path).unwrap_or_default()
    }

    fn delete(&self, path: &str) -> bool {
        self.0.admin_delete(path)
    }

    fn czxid(&self, path: &str) -> Option<i64> {
        self.0.stat(path).map(|s| s.czxid)
    }

    fn data(&self, path: &str) -> Option<(Vec<u8>, i32)> {
        let version = self.0.stat(path)?.version;
        Some((self.0.data(path)?, version))
    }
}
