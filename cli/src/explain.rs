//! Errors as sentences for an operator: what happened, at which path, and the
//! flag that fixes it (the lock client's own sentences name no flags).

use crate::{exit, Scheme};
use lock_zookeeper_client::{ConnectFailure, Error, LostReason, ZkError};

/// `e` as one sentence (no path: see [`at`]).
pub(crate) fn error(e: &Error) -> String {
    match e {
        // lock-client turns every reason it knows into an error of its own
        // (Timeout, WouldBlock, ...): what is left is said by the core's
        // sentence, except a permit count, said by `exec` (`permits_mismatch`).
        Error::Failed(reason) => format!("the acquisition failed: {reason}"),
        Error::Lost(reason) => format!("the lock was lost: {}", lost(reason)),
        Error::Connect {
            failure: ConnectFailure::NoChroot { chroot },
            ..
        } => missing_chroot(chroot),
        // The likely cause, since zklock's own nodes are only refused by the
        // ACL another identity created them with (`exec --acl creator`).
        Error::Zk(ZkError::NoAuth) => {
            "ZooKeeper refused: not authorised by the node's ACL (another --auth identity's?)"
                .to_owned()
        }
        other => with_sources(other),
    }
}

/// `e` and the errors underneath it, outermost first, joined by colons (a
/// connect failure's own sentence names what failed; its sources say why).
fn with_sources(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut next = e.source();
    while let Some(source) = next {
        text.push_str(": ");
        text.push_str(&source.to_string());
        next = source.source();
    }
    text
}

/// `e` as one sentence naming `path`, where the error does not already (an
/// invalid path names itself).
pub(crate) fn at(path: &str, e: &Error) -> String {
    match e {
        Error::Usage(_) | Error::SelfDeadlock { .. } => error(e),
        _ => format!("{path}: {}", error(e)),
    }
}

/// Why a held lock was lost, in words.
pub(crate) fn lost(reason: &LostReason) -> String {
    match reason {
        LostReason::SessionExpired => "the ZooKeeper session expired".to_owned(),
        LostReason::SuspendedTooLong => {
            "the connection to ZooKeeper stayed down too long".to_owned()
        }
        LostReason::NodeDeleted => {
            "its node was deleted by someone else (an administrator, `zklock break`, a revoker)"
                .to_owned()
        }
        LostReason::NodeNotOwned => "its node now belongs to another session".to_owned(),
        LostReason::Closed => "the lock client was closed".to_owned(),
        LostReason::LeaseExpired => "its maximum hold time passed".to_owned(),
        // Non-exhaustive: one added later is still shown.
        other => other.to_string(),
    }
}

/// `exec --semaphore N` against a semaphore of another count at `path`: the
/// sentence, naming the peer's layout (`scheme`) and the flag that fits, and
/// its exit code (a usage error: the remedy is a different command line).
pub(crate) fn permits_mismatch(path: &str, scheme: Scheme, ours: u32, theirs: u32) -> (String, u8) {
    let whose = match scheme {
        Scheme::Native => "",
        Scheme::Curator => " (Curator)",
        Scheme::Kazoo => " (kazoo)",
        // go-zookeeper has no semaphore: `--scheme go` is refused before this.
        Scheme::Go => " (go-zookeeper)",
    };
    (
        format!(
            "{path} is a semaphore of {theirs} permits{whose}; asked for {ours}: \
             use --semaphore {theirs}"
        ),
        exit::USAGE,
    )
}

/// The one line that names a missing chroot (the library's refusal, and
/// `doctor`'s own look-up).
pub(crate) fn missing_chroot(chroot: &str) -> String {
    format!(
        "the chroot {chroot} of the connect string does not exist on the server \
         (create it, or fix --zk / ZKLOCK_ZK)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences_name_the_path_and_no_rust_values() {
        let said = at("/p", &Error::Lost(LostReason::NodeDeleted));
        assert!(
            said.starts_with("/p: the lock was lost: its node was deleted"),
            "{said}"
        );
        let said = error(&Error::Lost(LostReason::SuspendedTooLong));
        assert!(!said.contains("SuspendedTooLong"), "{said}");
    }
}
