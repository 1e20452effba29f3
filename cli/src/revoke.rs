//! `zklock revoke`.

use crate::chroot::Chroot;
use crate::{error_code, fail_at, say};
use lock_zookeeper_client::{Error, LockClient, ZkError};
use std::process::ExitCode;

/// `zklock revoke`: asks the holders at `target` (or its one node) to let go.
pub(crate) async fn run(locks: &LockClient, target: String, chroot: &Chroot<'_>) -> ExitCode {
    match locks.revoke(target.clone()).await {
        Ok(nodes) => {
            if nodes.is_empty() {
                // Nobody there: a missing path is said.
                let hint = chroot.nothing_at(&target).await;
                let hint = hint.map(|h| format!(": {h}")).unwrap_or_default();
                say(format_args!("nobody to revoke at {target}{hint}"));
            }
            for node in nodes {
                println!("{node}");
            }
            ExitCode::SUCCESS
        }
        Err(e @ Error::Zk(ZkError::NoNode)) => match chroot.nothing_at(&target).await {
            Some(hint) => {
                say(format_args!("cannot revoke {target}: {hint}"));
                ExitCode::from(error_code(&e))
            }
            None => fail_at(&target, &e),
        },
        Err(e) => fail_at(&target, &e),
    }
}
