//! `zklock leader`.

use crate::chroot::Chroot;
use crate::signals::Signals;
use crate::{exit, fail_at, say};
use lock_zookeeper_client::{Leader, LockClient};
use std::process::ExitCode;

/// One line for `leader` (`-` for nobody).
fn leader_line(leader: Option<&Leader>) -> String {
    match leader {
        Some(l) => format!(
            "{}\t{}\t{}",
            String::from_utf8_lossy(&l.id),
            l.path,
            l.token
        ),
        None => "-".to_owned(),
    }
}

/// `zklock leader`: the leader of the election at `path`, once or at every
/// change (`watch`).
pub(crate) async fn run(
    locks: &LockClient,
    path: String,
    watch: bool,
    signals: &mut Signals,
    chroot: &Chroot<'_>,
) -> ExitCode {
    let mut observer = match locks.observe_election(path.clone()).await {
        Ok(observer) => observer,
        Err(e) => return crate::fail_at(&path, &e),
    };
    // Nobody leads: a missing path is said (a typo, most likely).
    let absent = match observer.leader() {
        Some(_) => None,
        None => chroot.nothing_at(&path).await,
    };
    if !watch {
        return match observer.leader() {
            Some(l) => {
                println!("{}", leader_line(Some(l)));
                ExitCode::SUCCESS
            }
            None => {
                let hint = absent.map(|h| format!(": {h}")).unwrap_or_default();
                say(format_args!("no leader at {path}{hint}"));
                ExitCode::from(exit::NO_LEADER)
            }
        };
    }
    if let Some(hint) = absent {
        // Watched all the same: the election may start later.
        say(hint);
    }
    println!("{}", leader_line(observer.leader()));
    loop {
        tokio::select! {
            changed = observer.changed() => match changed {
                Ok(leader) => println!("{}", leader_line(leader.as_ref())),
                Err(e) => return fail_at(&path, &e),
            },
            _ = signals.next() => return ExitCode::SUCCESS,
        }
    }
}
