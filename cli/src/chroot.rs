//! A connect string's chroot that does not exist on the server: inside it every
//! path is missing, so `exec` would fail with a bare "no node" and `ls`, `top`,
//! `deadlocks`, `leader` and `revoke` would find nobody. When that happens,
//! zklock looks the chroot up and says so (exit 2, for every subcommand).
//!
//! Also a path that does not exist where that matters (`ls`, `revoke`,
//! `leader`, `deadlocks`, `top --once` found nobody there): zklock says so, and
//! which ancestor is the first missing one, as a likely typo is not "nobody".

use crate::{exit, say, ConnArgs};
use lock_zookeeper_client::zookeeper_client::Client;
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
        say(missing_chroot(chroot));
        Some(ExitCode::from(exit::USAGE))
    }

    /// Reports `e` about `path`, as the missing chroot if that is what a "no
    /// node" means.
    pub(crate) async fn fail(&self, path: &str, e: &Error) -> ExitCode {
        if matches!(e, Error::Zk(ZkError::NoNode)) {
            if let Some(code) = self.report_missing().await {
                return code;
            }
        }
        crate::fail_at(path, e)
    }

    /// After a read found nobody at `path`: `Err` with the exit code (said) if
    /// the chroot does not exist; else what is missing on the way to `path`, if
    /// anything (`None` also when the look-up failed: then nothing is claimed).
    /// Opens a look-up session; see [`Chroot::nothing_at_in`] to reuse one.
    pub(crate) async fn nothing_at(&self, path: &str) -> Result<Option<String>, ExitCode> {
        let lookup = async {
            let client = crate::raw::connect(self.conn, &self.conn.zk, LOOKUP_BOUND).await?;
            Some(self.nothing_at_in(&client, path).await)
        };
        tokio::time::timeout(LOOKUP_BOUND, lookup)
            .await
            .ok()
            .flatten()
            .unwrap_or(Ok(None))
    }

    /// [`Chroot::nothing_at`] on `client`, a session with the connect string's
    /// chroot (in which `/` is the chroot itself).
    pub(crate) async fn nothing_at_in(
        &self,
        client: &Client,
        path: &str,
    ) -> Result<Option<String>, ExitCode> {
        if let Some(code) = self.report_missing_in(client).await {
            return Err(code);
        }
        let lookup = missing_on_the_way(client, path);
        Ok(tokio::time::timeout(LOOKUP_BOUND, lookup)
            .await
            .ok()
            .flatten())
    }

    /// If the chroot does not exist as seen from `client` (a session with the
    /// chroot): says so and returns the exit code.
    pub(crate) async fn report_missing_in(&self, client: &Client) -> Option<ExitCode> {
        let chroot = self.chroot.as_deref()?;
        let stat = tokio::time::timeout(LOOKUP_BOUND, client.check_stat("/"))
            .await
            .ok()?
            .ok()?;
        if stat.is_some() {
            return None;
        }
        say(missing_chroot(chroot));
        Some(ExitCode::from(exit::USAGE))
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

/// The one line that names a missing chroot.
pub(crate) fn missing_chroot(chroot: &str) -> String {
    format!(
        "the chroot {chroot} of the connect string does not exist on the server \
         (create it, or fix --zk / ZKLOCK_ZK)"
    )
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

#[cfg(test)]
mod tests {
    #[test]
    fn ancestors_are_walked_from_the_top() {
        let path = "/a/b/c";
        let ancestors: Vec<&str> = path
            .match_indices('/')
            .skip(1)
            .map(|(i, _)| &path[..i])
            .collect();
        assert_eq!(ancestors, ["/a", "/a/b"]);
    }
}
