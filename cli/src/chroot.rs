//! A connect string's chroot that does not exist on the server: the library
//! refuses to connect into it (`ConnectFailure::NoChroot`, exit 2 for every
//! subcommand); `doctor`, which connects on its own, looks the chroot up here.
//!
//! Also a path that does not exist where that matters (`ls`, `revoke`,
//! `leader`, `deadlocks`, `top --once`, `break` found nobody there): zklock says
//! so, and which ancestor is the first missing one, as a likely typo is not
//! "nobody".

use crate::{exit, say, ConnArgs};
use lock_zookeeper_client::zookeeper_client::Client;
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
        say(crate::explain::missing_chroot(chroot));
        Some(ExitCode::from(exit::USAGE))
    }

    /// After a read found nobody at `path`: what is missing on the way to
    /// `path`, if anything (`None` also when the look-up failed: then nothing is
    /// claimed). Opens a look-up session; see [`Chroot::nothing_at_in`] to
    /// reuse one.
    pub(crate) async fn nothing_at(&self, path: &str) -> Option<String> {
        let lookup = async {
            let client = crate::raw::connect(self.conn, &self.conn.zk, LOOKUP_BOUND).await?;
            self.nothing_at_in(&client, path).await
        };
        tokio::time::timeout(LOOKUP_BOUND, lookup)
            .await
            .ok()
            .flatten()
    }

    /// [`Chroot::nothing_at`] on `client`, a session with the connect string's
    /// chroot.
    pub(crate) async fn nothing_at_in(&self, client: &Client, path: &str) -> Option<String> {
        let lookup = missing_on_the_way(client, path);
        tokio::time::timeout(LOOKUP_BOUND, lookup)
            .await
            .ok()
            .flatten()
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

/// `None` if `path` exists (or could not be looked up); else a sentence saying
/// that it does not, and whether its parent exists or which ancestor is the
/// first one missing (where the path went wrong).
async fn missing_on_the_way(client: &Client, path: &str) -> Option<String> {
    if client.check_stat(path).await.ok()?.is_some() {
        return None;
    }
    let parent = match path.rsplit_once('/') {
        Some(("", _)) | None => return Some(format!("{path} does not exist")),
        Some((parent, _)) => parent,
    };
    // The ancestors from the top: the first one missing is where it went wrong.
    let mut first_missing = None;
    for (i, _) in path.match_indices('/').skip(1) {
        let ancestor = &path[..i];
        if client.check_stat(ancestor).await.ok()?.is_none() {
            first_missing = Some(ancestor);
            break;
        }
    }
    Some(match first_missing {
        None => format!("{path} does not exist (its parent {parent} does)"),
        Some(a) if a == parent => {
            format!("{path} does not exist, nor does its parent {parent}")
        }
        Some(a) => format!("{path} does not exist: its ancestor {a} is missing"),
    })
}
