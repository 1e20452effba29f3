//! How zklock reports a failure: a sentence on stderr, and the exit code that
//! goes with the error.

use crate::{exit, explain};
use lock_zookeeper_client::{ConnectFailure, Error};
use std::process::ExitCode;

/// Prints `zklock: <message>` on stderr.
pub(crate) fn say(message: impl std::fmt::Display) {
    eprintln!("zklock: {message}");
}

/// The exit code for a failed lock-client call.
pub(crate) fn error_code(e: &Error) -> u8 {
    match e {
        Error::Usage(_) | Error::BadOption { .. } => exit::USAGE,
        // As a chroot found missing later: nothing could lock under it.
        Error::Connect {
            failure: ConnectFailure::NoChroot { .. },
            ..
        } => exit::USAGE,
        Error::Connect { .. } | Error::NoRuntime => exit::CONNECT,
        Error::Timeout | Error::WouldBlock | Error::Revoked => exit::BUSY,
        Error::Lost(_) => exit::LOST,
        // The command line asks for another count than the semaphore's.
        Error::Failed(lock_zookeeper_client::FailReason::PermitsMismatch { .. }) => exit::USAGE,
        _ => exit::FAILURE,
    }
}

/// Reports `e` (a sentence) and returns its exit code.
pub(crate) fn fail(e: &Error) -> ExitCode {
    say(explain::error(e));
    ExitCode::from(error_code(e))
}

/// Reports `e` as about `path` (a sentence naming it) and returns its exit code.
pub(crate) fn fail_at(path: &str, e: &Error) -> ExitCode {
    say(explain::at(path, e));
    ExitCode::from(error_code(e))
}
