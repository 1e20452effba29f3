//! A connect string's chroot that does not exist on the server: inside it every
//! path is missing, so `exec` would fail with a bare "no node" and `ls` would
//! list nobody. When that happens, zklock looks the chroot up (a second, plain
//! session without the chroot) and says so.

use crate::{exit, say, ConnArgs};
use lock_zookeeper_client::{Error, ZkError};
use std::process::ExitCode;
use std::time::Duration;

/// How long the look-up may take.
const LOOKUP_BOUND: Duration = Duration::from_secs(5);

/// The chroot of the connect string, to check when something looks missing.
pub(crate) struct Chroot<'a> {
    conn: &'a ConnArgs,
    chroot: Option<String>,
}

impl<'a> Chroot<'a> {
    pub(crate) fn new(conn: &'a ConnArgs, chroot: Option<String>) -> Chroot<'a> {
        Chroot { conn, chroot }
    }

    /// If the chroot is known not to exist: says so and returns the exit code.
    pub(crate) async fn report_missing(&self) -> Option<ExitCode> {
        let chroot = self.chroot.as_deref()?;
        if self.exists(chroot).await != Some(false) {
            return None;
        }
        say(format_args!(
            "the chroot {chroot} of the connect string does not exist on the server \
             (create it, or fix --zk / ZKLOCK_ZK)"
        ));
        Some(ExitCode::from(exit::USAGE))
    }

    /// Reports `e`, as the missing chroot if that is what a "no node" means.
    pub(crate) async fn fail(&self, e: &Error) -> ExitCode {
        if matches!(e, Error::Zk(ZkError::NoNode)) {
            if let Some(code) = self.report_missing().await {
                return code;
            }
        }
        crate::fail(e)
    }

    /// Whether `chroot` exists (`None`: could not tell).
    async fn exists(&self, chroot: &str) -> Option<bool> {
        let hosts = self.conn.zk.strip_suffix(chroot)?;
        let lookup = async {
            let client = crate::raw::connect(self.conn, hosts, LOOKUP_BOUND).await?;
            // `exists` needs no permission on the node.
            let stat = client.check_stat(chroot).await.ok()?;
            Some(stat.is_some())
        };
        tokio::time::timeout(LOOKUP_BOUND, lookup).await.ok()?
    }
}
