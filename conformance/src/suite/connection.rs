//! The client-wide connection state ([`LockClient::connection_state`] and its
//! stream) through faults.

use super::*;
use lock_client::{ConnectionEvent, ConnectionEvents, ConnectionState};

fn next_change(b: &Suite, events: &mut ConnectionEvents, what: &str) -> ConnectionEvent {
    events
        .next_timeout_blocking(SHORT)
        .unwrap_or_else(|| panic!("{}: no {what} within {SHORT:?}", b.name()))
}

/// The connection-state stream and the current state:
///
/// * a cut: `Suspended`, then `Reconnected` on the same session;
/// * a blackhole past the session timeout: `Suspended`; once the server has
///   expired the session (its lock node is gone) and the network heals,
///   `SessionLost` for the old session, then `Connected` on a new one that works;
/// * close: `Closed` (after a suspension a stalled machine may cause), then the
///   end of the stream.
pub fn connection_state_through_faults(b: &Suite) {
    let server = b.env().shared();
    let admin = server.admin();
    let (locks, net) = connect_with_faults(b, server);
    let session_id = locks.session_id().expect("a session");
    assert_eq!(
        locks.connection_state(),
        ConnectionState::Connected { session_id }
    );
    let mut events = locks.connection_events();

    net.cut();
    assert_eq!(
        next_change(b, &mut events, "Suspended"),
        ConnectionEvent::Suspended
    );
    assert_eq!(
        next_change(b, &mut events, "Reconnected"),
        ConnectionEvent::Reconnected { session_id }
    );
    assert_eq!(
        locks.connection_state(),
        ConnectionState::Connected { session_id }
    );

    // A lock node of the session tells when the server has expired it.
    let path = unique_path("connection-state");
    let guard = lock(b, &locks, Kind::Mutex, &path);
    let node = guard.path().to_owned();
    net.blackhole();
    assert_eq!(
        next_change(b, &mut events, "Suspended"),
        ConnectionEvent::Suspended
    );
    assert_eq!(
        locks.connection_state(),
        ConnectionState::Suspended { session_id }
    );
    admin.wait_deleted(&node, LONG);
    net.heal();
    assert_eq!(
        next_change(b, &mut events, "SessionLost"),
        ConnectionEvent::SessionLost { session_id }
    );
    let ConnectionEvent::Connected { session_id: new } = next_change(b, &mut events, "Connected")
    else {
        panic!("{}: expected Connected on a new session", b.name());
    };
    assert_ne!(new, session_id, "{}: a new session", b.name());
    assert_eq!(
        locks.connection_state(),
        ConnectionState::Connected { session_id: new }
    );
    drop(guard);
    let again = lock(b, &locks, Kind::Mutex, &path);
    b.release(again).expect("release on the new session");

    b.close(&locks);
    // With T = 2 s a request unanswered for T/3 makes the connection suspect: a
    // machine stalled that long (seen at load 14) suspends the session between the
    // release and the close, which is the client doing its job. What close must
    // give is `Closed` and then the end of the stream.
    loop {
        match next_change(b, &mut events, "Closed") {
            ConnectionEvent::Closed => break,
            ConnectionEvent::Suspended | ConnectionEvent::Reconnected { .. } => {}
            other => panic!("{}: {other:?} before Closed", b.name()),
        }
    }
    assert_eq!(events.next_timeout_blocking(Duration::ZERO), None);
    assert_eq!(locks.connection_state(), ConnectionState::Closed);
}
