//! The public API on real loopback connections (Linux: elsewhere `apply` reports
//! `Unsupported`).
#![cfg(target_os = "linux")]

use lock_nodelay::{apply, apply_in_background, connections, Peers};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::Duration;

#[test]
fn sets_the_option_on_connections_to_the_servers_only() {
    let a = TcpListener::bind("127.0.0.1:0").unwrap();
    let b = TcpListener::bind("127.0.0.1:0").unwrap();
    let other = TcpListener::bind("127.0.0.1:0").unwrap();
    let to_a = TcpStream::connect(a.local_addr().unwrap()).unwrap();
    let to_b = TcpStream::connect(b.local_addr().unwrap()).unwrap();
    let to_other = TcpStream::connect(other.local_addr().unwrap()).unwrap();
    let connect_string = format!(
        "{},{}/chroot",
        a.local_addr().unwrap(),
        b.local_addr().unwrap()
    );
    let peers = Peers::resolve(&connect_string).unwrap();

    assert!(connections(&peers).unwrap().iter().all(|c| !c.nodelay));
    let applied = apply(&peers).unwrap();
    assert_eq!(
        (applied.connections, applied.changed),
        (2, 2),
        "{applied:?}"
    );
    assert!(to_a.nodelay().unwrap());
    assert!(to_b.nodelay().unwrap());
    assert!(!to_other.nodelay().unwrap());
    let seen = connections(&peers).unwrap();
    assert_eq!(seen.len(), 2);
    assert!(seen.iter().all(|c| c.nodelay));

    // A new connection (a reconnect) needs another call.
    let again = TcpStream::connect(a.local_addr().unwrap()).unwrap();
    assert!(!again.nodelay().unwrap());
    let (tx, rx) = mpsc::channel();
    apply_in_background(connect_string, move |outcome| tx.send(outcome).unwrap()).unwrap();
    let applied = rx.recv_timeout(Duration::from_secs(10)).unwrap().unwrap();
    assert_eq!(
        (applied.connections, applied.changed),
        (3, 1),
        "{applied:?}"
    );
    assert!(again.nodelay().unwrap());
}

#[test]
fn unresolvable_connect_strings_are_reported() {
    let (tx, rx) = mpsc::channel();
    apply_in_background(",,".into(), move |outcome| tx.send(outcome).unwrap()).unwrap();
    let err = rx
        .recv_timeout(Duration::from_secs(10))
        .unwrap()
        .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
}
