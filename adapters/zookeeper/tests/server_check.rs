//! The blocking binding learns its server again after a reconnect. That every
//! binding reads its server's settings and reports an unsafe session timeout
//! is in the conformance suite (lock-conformance's `suite/server_check.rs`).

use lock_client::{ConnectionState, LockClient};
use std::time::{Duration, Instant};

/// The bound on waiting for a connection state.
const STATE_WITHIN: Duration = Duration::from_secs(20);

/// The trust window of `guard` once settled (in session timeouts): the widest
/// over half a timeout, from one timeout on (when the contact a connect itself
/// proves has aged out, and the proofs renewed every T/10 decide).
fn settled_window(guard: &lock_client::LockGuard, timeout: Duration) -> f64 {
    std::thread::sleep(timeout);
    let end = Instant::now() + timeout / 2;
    let mut widest: f64 = 0.0;
    while Instant::now() < end {
        let trusted = guard.trusted_until().expect("a held lock has a deadline");
        let window = trusted.saturating_duration_since(Instant::now());
        widest = widest.max(window.as_secs_f64() / timeout.as_secs_f64());
        std::thread::sleep(Duration::from_millis(10));
    }
    widest
}

/// Waits until the connection state satisfies `condition`.
fn wait_state(locks: &LockClient, what: &str, condition: impl Fn(&ConnectionState) -> bool) {
    let deadline = Instant::now() + STATE_WITHIN;
    while !condition(&locks.connection_state()) {
        assert!(
            Instant::now() < deadline,
            "not {what} within {STATE_WITHIN:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The blocking binding learns its server again after a reconnect, as the
/// async one does: silenced until it suspends the session (the core then
/// forgets its server), then back on the same connection to the same
/// standalone server, a held lock's trust window settles in the known-server
/// regime again (every answer a proof: about 0.9 T here) rather than in the
/// unknown-server one (proofs a third of T older: about 0.55 T).
#[test]
fn blocking_binding_relearns_its_server_after_a_reconnect() {
    const T: Duration = Duration::from_secs(4);
    const KNOWN: f64 = 0.7;
    let server = lock_testkit::ZkServer::start().expect("a server");
    let proxy = lock_testkit::FaultProxy::start(server.addr()).expect("a proxy");
    let locks = lock_zookeeper::builder(&proxy.connect_string())
        .session_timeout(T)
        .connect()
        .expect("connects");
    let session = locks.session_id();
    let guard = locks.mutex("/relearn").lock_blocking().expect("locked");
    let first = settled_window(&guard, T);
    assert!(first >= KNOWN, "the server learned at first: {first:.2} T");
    // A silence the driver notices (a pause of the network) until it suspends
    // the session, then the same connection back.
    proxy.blackhole();
    wait_state(&locks, "suspended", |s| {
        matches!(s, ConnectionState::Suspended { .. })
    });
    proxy.heal();
    wait_state(&locks, "connected", |s| {
        matches!(s, ConnectionState::Connected { .. })
    });
    assert_eq!(locks.session_id(), session, "the same session");
    let again = settled_window(&guard, T);
    assert!(again >= KNOWN, "the server learned again: {again:.2} T");
    guard.release_blocking().expect("released");
    locks.close_blocking();
}
