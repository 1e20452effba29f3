//! The fault proxy, against a plain echo server (in front of real ZooKeeper it
//! is exercised by every fault test of lock-conformance's suite).

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use lock_testkit::{Direction, FaultProxy};

mod common;

/// An echo server on a free port; runs until the test process ends.
fn echo_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    common::echo(listener);
    addr
}

fn connect(proxy: &FaultProxy) -> TcpStream {
    connect_to(proxy.addr(), Duration::from_millis(300))
}

fn connect_to(addr: SocketAddr, read_timeout: Duration) -> TcpStream {
    let stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(read_timeout)).unwrap();
    stream
}

/// Reads exactly `n` bytes, or fails on timeout/EOF.
fn read_n(stream: &mut TcpStream, n: usize) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0; n];
    stream.read_exact(&mut buf)?;
    Ok(buf)
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
}

/// Asserts that `stream` reports end-of-file or an error (not a timeout) soon.
fn assert_closed(stream: &mut TcpStream) {
    stream
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    let mut buf = [0u8; 64];
    match stream.read(&mut buf) {
        Ok(0) => {}
        Ok(n) => panic!("read {n} bytes from a cut connection"),
        Err(e) => assert!(!is_timeout(&e), "connection not closed: {e}"),
    }
}

fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn forwards_cuts_and_blackholes_bytes() {
    let proxy = FaultProxy::start(echo_server()).unwrap();
    assert_eq!(proxy.connect_string(), proxy.addr().to_string());

    // Forwarding, including a large transfer that must arrive intact.
    let mut a = connect(&proxy);
    a.write_all(b"hello").unwrap();
    assert_eq!(read_n(&mut a, 5).unwrap(), b"hello");
    let big: Vec<u8> = (0..1_000_000u32).map(|i| (i % 251) as u8).collect();
    let mut writer = a.try_clone().unwrap();
    let sent = big.clone();
    let w = thread::spawn(move || writer.write_all(&sent).unwrap());
    a.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    assert_eq!(read_n(&mut a, big.len()).unwrap(), big);
    w.join().unwrap();
    a.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();

    // Blackhole: nothing comes back, nothing is lost.
    proxy.blackhole();
    a.write_all(b"held").unwrap();
    let err = read_n(&mut a, 4).unwrap_err();
    assert!(is_timeout(&err), "{err}");
    // A new connection is accepted but goes nowhere.
    let mut b = connect(&proxy);
    b.write_all(b"later").unwrap();
    assert!(is_timeout(&read_n(&mut b, 5).unwrap_err()));
    wait_until("two accepted connections", || {
        proxy.accepted_connections() == 2
    });

    // Heal: held bytes are delivered in order, new connection works.
    proxy.heal();
    a.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    b.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    assert_eq!(read_n(&mut a, 4).unwrap(), b"held");
    assert_eq!(read_n(&mut b, 5).unwrap(), b"later");
    assert_eq!(proxy.active_connections(), 2);

    // Cut: both connections see EOF at once; new ones work.
    proxy.cut();
    assert_closed(&mut a);
    assert_closed(&mut b);
    assert_eq!(proxy.active_connections(), 0);
    let mut c = connect(&proxy);
    c.write_all(b"again").unwrap();
    assert_eq!(read_n(&mut c, 5).unwrap(), b"again");
    assert_eq!(proxy.accepted_connections(), 3);

    // A client's close is passed on, and the connection is forgotten.
    c.shutdown(Shutdown::Write).unwrap();
    assert_closed(&mut c);
    wait_until("the closed connection to be forgotten", || {
        proxy.active_connections() == 0
    });

    // Drop closes what is open and returns promptly.
    let mut d = connect(&proxy);
    d.write_all(b"x").unwrap();
    assert_eq!(read_n(&mut d, 1).unwrap(), b"x");
    proxy.blackhole();
    let _e = connect(&proxy);
    let t = Instant::now();
    drop(proxy);
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "drop took {:?}",
        t.elapsed()
    );
    assert_closed(&mut d);
}

/// Sends `payload` and returns how long its echo took to come back whole.
fn echo_time(stream: &mut TcpStream, payload: &[u8]) -> Duration {
    let t = Instant::now();
    stream.write_all(payload).unwrap();
    assert_eq!(read_n(stream, payload.len()).unwrap(), payload);
    t.elapsed()
}

#[test]
fn delay_per_direction_settable_while_running() {
    let proxy = FaultProxy::start(echo_server()).unwrap();
    let mut a = connect(&proxy);
    a.set_nodelay(true).unwrap();
    a.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    // Wide margins: the machine is shared; what matters is that the delay is
    // there (never less) and not multiplied.
    let slack = Duration::from_millis(1500);

    // Set while the connection is open, one direction at a time.
    let d = Duration::from_millis(300);
    proxy.set_delays(d, Duration::ZERO);
    let rtt = echo_time(&mut a, b"up");
    assert!(rtt >= d && rtt < d + slack, "upstream delay only: {rtt:?}");

    proxy.set_delays(Duration::ZERO, d);
    let rtt = echo_time(&mut a, b"down");
    assert!(
        rtt >= d && rtt < d + slack,
        "downstream delay only: {rtt:?}"
    );

    // Both add up, on a connection opened after the change too.
    proxy.set_delays(d, d);
    let mut b = connect(&proxy);
    b.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let rtt = echo_time(&mut b, b"both");
    assert!(rtt >= 2 * d && rtt < 2 * d + slack, "both delays: {rtt:?}");

    // Back to zero: fast again.
    proxy.set_delays(Duration::ZERO, Duration::ZERO);
    let rtt = echo_time(&mut a, b"none");
    assert!(rtt < d, "no delay: {rtt:?}");
}

#[test]
fn delayed_chunks_overlap_and_keep_their_order_through_changes_and_blackholes() {
    let proxy = FaultProxy::start(echo_server()).unwrap();
    let d = Duration::from_millis(400);
    proxy.set_delays(d, Duration::ZERO);
    let mut a = connect(&proxy);
    a.set_nodelay(true).unwrap();
    a.set_read_timeout(Some(Duration::from_secs(10))).unwrap();

    // Two chunks 100 ms apart: each is released `d` after it was read, so the
    // second arrives about 100 ms after the first, not `d` after it (chunks are
    // not delayed one after the other).
    let t0 = Instant::now();
    a.write_all(b"first").unwrap();
    thread::sleep(Duration::from_millis(100));
    a.write_all(b"second").unwrap();
    assert_eq!(read_n(&mut a, 5).unwrap(), b"first");
    let first = t0.elapsed();
    assert_eq!(read_n(&mut a, 6).unwrap(), b"second");
    let second = t0.elapsed();
    assert!(first >= d, "first chunk after {first:?}");
    assert!(
        second >= d + Duration::from_millis(100),
        "second chunk after {second:?}"
    );
    assert!(
        second < 2 * d - Duration::from_millis(50),
        "the second chunk waited for the first one's delay: {second:?}"
    );

    // Many chunks of varying sizes, with the delay changed (shortened, then
    // lengthened) while they are in the line: the bytes come back in order.
    let mut writer = a.try_clone().unwrap();
    let sent: Vec<u8> = (0..200_000u32).map(|i| (i % 253) as u8).collect();
    let expected = sent.clone();
    let w = thread::spawn(move || {
        let mut offset = 0;
        let mut size = 1;
        while offset < sent.len() {
            let end = (offset + size).min(sent.len());
            writer.write_all(&sent[offset..end]).unwrap();
            offset = end;
            size = size * 7 % 5003 + 1;
            if offset % 5 == 0 {
                thread::sleep(Duration::from_millis(1));
            }
        }
    });
    let p = &proxy;
    let received = thread::scope(|s| {
        s.spawn(move || {
            thread::sleep(Duration::from_millis(50));
            let ms = Duration::from_millis;
            p.set_delays(ms(10), Duration::ZERO);
            thread::sleep(ms(50));
            p.set_delays(ms(10), ms(30));
            thread::sleep(ms(50));
            p.set_delays(ms(200), ms(30));
        });
        read_n(&mut a, expected.len()).unwrap()
    });
    w.join().unwrap();
    assert!(received == expected, "bytes reordered or lost");

    // A chunk waiting out its delay when the proxy is blackholed is held, and
    // delivered after the heal, in order with what followed it.
    proxy.set_delays(d, Duration::ZERO);
    a.write_all(b"held").unwrap();
    thread::sleep(Duration::from_millis(20));
    proxy.blackhole();
    a.write_all(b"more").unwrap();
    a.set_read_timeout(Some(Duration::from_millis(600)))
        .unwrap();
    let err = read_n(&mut a, 4).unwrap_err();
    assert!(is_timeout(&err), "{err}");
    proxy.heal();
    a.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    assert_eq!(read_n(&mut a, 8).unwrap(), b"heldmore");

    // A cut discards what waits in the line and closes both sides.
    proxy.set_delays(Duration::from_secs(30), Duration::ZERO);
    a.write_all(b"never").unwrap();
    thread::sleep(Duration::from_millis(50));
    proxy.cut();
    assert_closed(&mut a);
}

#[test]
fn unreachable_upstream_closes_the_client() {
    // A port nobody listens on.
    let addr = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let proxy = FaultProxy::start(addr).unwrap();
    let mut client = connect(&proxy);
    assert_closed(&mut client);
    assert_eq!(proxy.accepted_connections(), 1);
}

#[test]
fn held_replies_are_delivered_on_release_and_lost_on_cut() {
    let proxy = FaultProxy::start(echo_server()).unwrap();
    let mut conn = connect_to(proxy.addr(), Duration::from_secs(10));
    proxy.hold(Direction::Downstream);
    conn.write_all(b"ab").unwrap();
    // The request reached the upstream; its echo waits in the proxy.
    proxy.wait_forwarded(Direction::Upstream, 2);
    proxy.wait_holding(Direction::Downstream);
    assert_eq!(proxy.forwarded(Direction::Downstream), 0);
    proxy.release(Direction::Downstream);
    assert_eq!(read_n(&mut conn, 2).unwrap(), b"ab");
    // Counted once the write returned, which can be a moment after the read.
    proxy.wait_forwarded(Direction::Downstream, 2);

    proxy.hold(Direction::Downstream);
    conn.write_all(b"c").unwrap();
    proxy.wait_holding(Direction::Downstream);
    proxy.cut();
    // The held echo died with the connection: end of stream, no byte.
    assert_closed(&mut conn);
    assert_eq!(proxy.forwarded(Direction::Downstream), 2);

    // New connections flow both ways.
    let mut conn = connect_to(proxy.addr(), Duration::from_secs(10));
    conn.write_all(b"d").unwrap();
    assert_eq!(read_n(&mut conn, 1).unwrap(), b"d");
}
