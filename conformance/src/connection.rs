//! The client-wide connection state of a binding's `LockClient`, through a real
//! ZooKeeper and a fault proxy: cut, blackhole past the session timeout, heal.
//!
//! Written against lock-client's API directly (every binding hands out the same
//! `LockClient`); a binding's test passes its connect function.

use crate::env::{wait_until, LONG, SESSION_TIMEOUT, SHORT};
use crate::zk::shared_server;
use lock_client::{ConnectionEvent, ConnectionEvents, ConnectionState, LockClient};
use lock_testkit::FaultProxy;
use std::time::Duration;

/// How a binding connects: to `connect_string`, with this session timeout.
pub type ConnectFn<'a> = &'a dyn Fn(&str, Duration) -> Result<LockClient, lock_client::Error>;

fn next(name: &str, events: &mut ConnectionEvents, what: &str) -> ConnectionEvent {
    events
        .next_timeout_blocking(SHORT)
        .unwrap_or_else(|| panic!("{name}: no {what} within {SHORT:?}"))
}

/// Whether the server still holds session `id` (its `dump` lists live sessions).
fn session_alive(server: &lock_testkit::ZkServer, id: i64) -> bool {
    let dump = server.four_letter_word("dump").unwrap_or_default();
    dump.contains(&format!("{id:#x}"))
}

/// The connection-state stream and the current state through faults:
///
/// * a cut (the connection reset): `Suspended`, then `Reconnected` on the same
///   session;
/// * a blackhole past the session timeout: `Suspended`; once the server has
///   expired the session and the network heals, `SessionLost` for the old session,
///   then `Connected` on a new one;
/// * close: `Closed`, then the end of the stream.
pub fn connection_state_through_faults(name: &str, connect: ConnectFn<'_>) {
    let server = shared_server();
    let proxy = FaultProxy::start(server.addr()).expect("proxy");
    let locks = connect(&proxy.connect_string(), SESSION_TIMEOUT)
        .unwrap_or_else(|e| panic!("{name}: connect: {e}"));
    let session_id = locks.session_id().expect("a session");
    assert_eq!(
        locks.connection_state(),
        ConnectionState::Connected { session_id }
    );
    let mut events = locks.connection_events();

    proxy.cut();
    assert_eq!(
        next(name, &mut events, "Suspended"),
        ConnectionEvent::Suspended
    );
    assert_eq!(
        next(name, &mut events, "Reconnected"),
        ConnectionEvent::Reconnected { session_id }
    );
    assert_eq!(
        locks.connection_state(),
        ConnectionState::Connected { session_id }
    );

    proxy.blackhole();
    assert_eq!(
        next(name, &mut events, "Suspended"),
        ConnectionEvent::Suspended
    );
    assert_eq!(
        locks.connection_state(),
        ConnectionState::Suspended { session_id }
    );
    wait_until("the server expires the session", LONG, || {
        (!session_alive(server, session_id)).then_some(())
    });
    proxy.heal();
    assert_eq!(
        next(name, &mut events, "SessionLost"),
        ConnectionEvent::SessionLost { session_id }
    );
    let ConnectionEvent::Connected { session_id: new } = next(name, &mut events, "Connected")
    else {
        panic!("{name}: expected Connected on a new session");
    };
    assert_ne!(new, session_id, "{name}: a new session");
    assert_eq!(
        locks.connection_state(),
        ConnectionState::Connected { session_id: new }
    );
    // The new session works.
    let guard = locks
        .mutex(crate::unique_path("connection-state"))
        .lock_timeout_blocking(SHORT)
        .expect("lock on the new session");
    guard.release_blocking().expect("release");

    locks.close_blocking();
    assert_eq!(next(name, &mut events, "Closed"), ConnectionEvent::Closed);
    assert_eq!(events.next_timeout_blocking(Duration::ZERO), None);
    assert_eq!(locks.connection_state(), ConnectionState::Closed);
}
