//! Running code inside a network namespace without leaving this process: a
//! short-lived thread joins the namespace (`setns` changes only the calling
//! thread's) and runs the closure. Sockets it opens belong to that namespace for
//! their whole life, whichever thread uses them afterwards.

use std::fs::File;
use std::os::fd::AsFd;
use std::thread;

use rustix::thread::{move_into_link_name_space, LinkNameSpaceType};

use crate::error::{Error, Result};

/// Where `ip netns add` pins named namespaces.
pub(crate) const NETNS_DIR: &str = "/run/netns";

/// Runs `f` on a thread inside the named network namespace and returns its result.
pub(crate) fn run_in<T: Send>(netns: &str, f: impl FnOnce() -> T + Send) -> Result<T> {
    let path = format!("{NETNS_DIR}/{netns}");
    let handle = File::open(&path).map_err(|e| Error::io(format!("opening {path}"), e))?;
    thread::scope(|scope| {
        scope
            .spawn(move || {
                move_into_link_name_space(handle.as_fd(), Some(LinkNameSpaceType::Network))
                    .map_err(|e| {
                        Error::io(format!("entering network namespace {netns}"), e.into())
                    })?;
                Ok(f())
            })
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}
