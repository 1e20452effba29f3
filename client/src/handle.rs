//! [`LockClient`], the handle every lock object, guard, pending acquisition,
//! election and stream holds.
//!
//! Only the type is here: its methods live in `client`, by concept. They make the
//! lock objects, elections and guards that hold a `LockClient`, so with the type
//! beside them every one of those modules and `client` would import each other.

use crate::shared::Shared;
use std::sync::Arc;

/// What every user handle holds: when the last one goes, the link hears of it.
pub(crate) struct Handles {
    pub(crate) shared: Arc<Shared>,
}

impl Drop for Handles {
    fn drop(&mut self) {
        self.shared.with(|s| {
            s.closing.handle_handles_gone();
            s.mark_link();
        });
    }
}

/// A handle on one ZooKeeper session that drives every lock taken through it.
///
/// Cheap to clone (an `Arc`), `Send + Sync`. Handles, lock objects and guards share
/// one state with the binding's [`Link`](crate::Link) (the core
/// [`Session`](lock_core::Session) and a slot per lock); a call locks it, asks the
/// core, and wakes the link, which sends the requests. The session stays open while
/// any handle, lock object or guard exists, or until [`close`](Self::close).
///
/// # Session loss
/// When the session expires, held locks report
/// [`LostReason::SessionExpired`](lock_core::LostReason::SessionExpired), waiting
/// acquisitions fail with [`Error::SessionExpired`](crate::Error::SessionExpired), and a binding that reconnects
/// (lock-zookeeper-client does) opens a **new session** by itself: later
/// acquisitions (and ones made while no session exists) run on it. The handle is
/// dead only after [`close`](Self::close), or when every clone is dropped, or when
/// the binding stops; then every call returns [`Error::Closed`](crate::Error::Closed).
///
/// # Blocking
/// Every async method has a `*_blocking` twin (see [`blocking`](crate::blocking)).
///
/// ```
/// # async fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
/// let job = locks.mutex("/locks/job");
/// let guard = job.lock().await?;
/// println!("holding {} with fencing token {}", guard.path(), guard.token());
/// guard.release().await?;
/// locks.close().await;
/// # Ok(()) }
/// # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
/// ```
#[derive(Clone)]
pub struct LockClient {
    pub(crate) inner: Arc<Handles>,
    /// The default owner of the lock objects made through this handle
    /// ([`with_owner`](Self::with_owner)).
    pub(crate) owner: Option<Arc<str>>,
}

impl std::fmt::Debug for LockClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockClient")
            .field("session_id", &self.session_id())
            .field("connected", &self.is_connected())
            .field("owner", &self.owner)
            .finish()
    }
}

impl LockClient {
    /// The state it shares with every other handle and the link.
    pub(crate) fn shared(&self) -> &Shared {
        &self.inner.shared
    }
}
