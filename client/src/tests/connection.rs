//! Connection events: following the session, waking a waiting stream, and a
//! stream that does not keep the client open.

use super::connected;
use crate::*;
use lock_core::{Config, SessionEvent};
use std::time::{Duration, Instant};

#[test]
fn connection_events_follow_the_session() {
    let (locks, mut link) = pair(Config::new(Duration::from_secs(10), 1));
    let mut events = locks.connection_events();
    let mut late = None;
    let now = Instant::now();
    let disconnected = super::DISCONNECTED;
    // A session (re)connecting, and the state that follows.
    let connected = |session_id| {
        let state = ConnectionState::Connected { session_id };
        (SessionEvent::Connected { session_id }, state)
    };
    let suspended = (disconnected, ConnectionState::Suspended { session_id: 1 });
    let script = [
        connected(1),
        suspended,
        suspended,
        connected(1),
        connected(1),
        suspended,
        (SessionEvent::Expired, ConnectionState::Connecting),
        connected(2),
        // A new id without an expiry first (a client that moved on by itself).
        connected(3),
        (SessionEvent::Abandoned, ConnectionState::Connecting),
        connected(4),
    ];
    for (i, (event, state)) in script.into_iter().enumerate() {
        link.handle_session(event, now);
        assert_eq!(locks.connection_state(), state, "after step {i}: {event:?}");
        if i == 5 {
            late = Some(locks.connection_events());
        }
    }
    let mut seen = Vec::new();
    while let Some(e) = events.next_timeout_blocking(Duration::ZERO) {
        seen.push(e);
    }
    use ConnectionEvent::*;
    assert_eq!(
        seen,
        vec![
            Connected { session_id: 1 },
            Suspended,
            Reconnected { session_id: 1 },
            Suspended,
            SessionLost { session_id: 1 },
            Connected { session_id: 2 },
            SessionLost { session_id: 2 },
            Connected { session_id: 3 },
            SessionLost { session_id: 3 },
            Connected { session_id: 4 },
        ]
    );
    // A stream sees what happens after it was made.
    let mut late = late.unwrap();
    assert_eq!(late.next_blocking(), Some(SessionLost { session_id: 1 }));
    drop(link); // the binding is gone: closed, then the end of the streams
    assert_eq!(locks.connection_state(), ConnectionState::Closed);
    assert_eq!(events.next_blocking(), Some(Closed));
    assert_eq!(events.next_blocking(), None);
    let rest: Vec<_> = std::iter::from_fn(|| late.next_blocking()).collect();
    assert_eq!(rest.len(), 6, "{rest:?}");
    assert_eq!(rest.last(), Some(&Closed));
}

#[test]
fn a_waiting_connection_stream_is_woken() {
    let (locks, mut link) = connected();
    let mut events = locks.connection_events();
    let waiter = std::thread::spawn(move || events.next_blocking());
    std::thread::sleep(Duration::from_millis(20));
    link.handle_session(super::DISCONNECTED, Instant::now());
    assert_eq!(waiter.join().unwrap(), Some(ConnectionEvent::Suspended));
}

#[test]
fn a_connection_stream_does_not_keep_the_client_open() {
    let (locks, link) = connected();
    let mut events = locks.connection_events();
    drop(locks);
    assert!(link.is_closed(), "the stream is not a user handle");
    drop(link);
    assert_eq!(events.next_blocking(), Some(ConnectionEvent::Closed));
}
