//! Compile-time checks: every handle is `Send + Sync`, every future `Send`.

use crate::*;
use std::time::Duration;

fn send_sync<T: Send + Sync>() {}

#[test]
fn handles_are_send_and_sync() {
    send_sync::<LockClient>();
    send_sync::<Mutex>();
    send_sync::<RwLock>();
    send_sync::<Semaphore>();
    send_sync::<LockGuard>();
    send_sync::<Error>();
    send_sync::<Election>();
    send_sync::<Leadership>();
    send_sync::<ElectionObserver>();
    send_sync::<Writes>();
    send_sync::<MultiLock>();
    send_sync::<MultiGuard>();
    send_sync::<Link>();
    send_sync::<Notifier>();
    send_sync::<PendingLock>();
    send_sync::<Canceller>();
}

/// The futures can be spawned on multi-threaded runtimes (compile-time check).
#[allow(dead_code)]
fn futures_are_send(client: &LockClient, guard: LockGuard) {
    fn send<T: Send>(_: &T) {}
    let mutex = client.mutex("/a");
    send(&mutex.lock());
    send(&mutex.try_lock());
    send(&mutex.lock_timeout(Duration::ZERO));
    send(&client.wait_idle());
    send(&client.close());
    send(&guard.next_event());
    send(&guard.lost());
    send(&guard.revocation_requested());
    send(&guard.open_section());
    send(&guard.close_section());
    send(&guard.fenced_write(Writes::new()));
    send(&guard.release());
    send(&client.revoke("/a"));
    send(&client.observe_election("/a"));
    send(&client.participants("/a"));
    send(&client.deadlocks("/a"));
    let multi = client.multi(["/a", "/b"]);
    send(&multi.lock());
    send(&multi.try_lock());
}
