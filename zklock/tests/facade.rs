//! The facade hands out the same `LockClient` whichever way it was made.

use std::time::Duration;

#[test]
fn the_sim_servers_client_is_the_user_api() {
    let server = zklock::sim::Server::new();
    let locks: zklock::LockClient = server.client();
    let other = server.client();
    let guard = locks.mutex("/locks/facade").lock_blocking().expect("lock");
    let first = guard.token();
    assert!(other
        .mutex("/locks/facade")
        .try_lock_blocking()
        .expect("try")
        .is_none());
    guard.release_blocking().expect("release");
    let next = other
        .mutex("/locks/facade")
        .lock_timeout_blocking(Duration::from_secs(5))
        .expect("free now");
    assert!(next.token() > first, "fencing tokens grow");
    next.release_blocking().expect("release");
}

#[test]
fn the_blocking_binding_refuses_bad_and_unsupported_options() {
    // Refused before anything is dialled: options lock-client checks for every
    // binding, and TLS, which the blocking binding's crate cannot do.
    let creator_without_credentials =
        zklock::ConnectOptions::new().acl(zklock::NodeAcl::CreatorAll);
    let blocking = zklock::blocking::builder("127.0.0.1:1")
        .options(creator_without_credentials)
        .connect();
    assert!(
        matches!(
            blocking,
            Err(zklock::Error::BadOption { option: "acl", .. })
        ),
        "{blocking:?}"
    );
    let tls = zklock::ConnectOptions::new().tls(zklock::Tls::new("CA"));
    let blocking = zklock::blocking::builder("127.0.0.1:1")
        .options(tls)
        .connect();
    assert!(
        matches!(
            blocking,
            Err(zklock::Error::Unsupported { option: "TLS", .. })
        ),
        "{blocking:?}"
    );
}
