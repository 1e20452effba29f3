//! Connects that cannot succeed fail promptly, cheaply and with a typed error
//! naming what is wrong ([`Capability::ConnectFailures`](crate::Capability)).

use super::*;
use lock_client::{ConnectFailure, Reach};
use lock_testkit::measure::cpu_time;
use std::io::Write;
use std::net::TcpListener;

/// The session timeout asked for: the binding's connect timeout derives from it
/// (several seconds), which a failure known at once must not wait out.
const TIMEOUT: Duration = Duration::from_secs(4);

/// A generous bound for a failure known in a round trip, far below the connect
/// timeout: room for a loaded machine, not a speed test.
const PROMPT: Duration = Duration::from_secs(2);

/// Connects to `cluster`, expecting a failure within 2 s; returns it.
fn failed_connect(b: &Suite, cluster: &str) -> (ConnectFailure, String) {
    let start = Instant::now();
    let result = b
        .env()
        .client_at(cluster, TIMEOUT)
        .expect("the environment connects anywhere");
    let took = start.elapsed();
    let e = match result {
        Ok(_) => panic!("{}: connected to {cluster}", b.name()),
        Err(e) => e,
    };
    assert!(
        took < PROMPT,
        "{}: {cluster} failed after {took:?}: {e}",
        b.name()
    );
    let Error::Connect { failure, .. } = &e else {
        panic!("{}: not a connect failure: {e:?}", b.name());
    };
    (failure.clone(), e.to_string())
}

/// The servers of an [`ConnectFailure::Unreachable`].
fn servers(b: &Suite, failure: ConnectFailure) -> Vec<(String, Reach)> {
    match failure {
        ConnectFailure::Unreachable { servers } => servers,
        other => panic!("{}: expected Unreachable, got {other:?}", b.name()),
    }
}

/// A port nothing listens on (bound, then closed).
fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("its address").port()
}

/// Every server refusing: [`Reach::Refused`] for each, named, within 2 s, and
/// at almost no CPU: no busy loop retrying them. The whole process is counted
/// (other tests of the binary may add a little), against a bound far below the
/// several-second connect timeout a spinning client would burn.
pub fn connect_refused_is_prompt_and_named(b: &Suite) {
    let (one, two) = (closed_port(), closed_port());
    let cluster = format!("127.0.0.1:{one},127.0.0.1:{two}");
    let (cpu, wall) = (cpu_time(None), Instant::now());
    let (failure, message) = failed_connect(b, &cluster);
    let (cpu, wall) = (cpu_time(None).saturating_sub(cpu), wall.elapsed());
    assert!(
        cpu < Duration::from_millis(300),
        "{}: a refused connect cost {cpu:?} of CPU in {wall:?}",
        b.name()
    );
    let want = |port| (format!("127.0.0.1:{port}"), Reach::Refused);
    assert_eq!(servers(b, failure), vec![want(one), want(two)]);
    assert!(
        message.contains(&format!(
            "127.0.0.1:{one}: connection refused (nothing listens there)"
        )),
        "{}: {message}",
        b.name()
    );
}

/// A host that does not resolve: [`Reach::Unresolved`], named, within 2 s.
pub fn connect_unresolvable_is_prompt_and_named(b: &Suite) {
    let host = "no-such-host.invalid:2181";
    let (failure, message) = failed_connect(b, host);
    let servers = servers(b, failure);
    assert!(
        matches!(&servers[..], [(h, Reach::Unresolved(_))] if h == host),
        "{}: {servers:?}",
        b.name()
    );
    assert!(
        message.contains(&format!("{host}: cannot resolve the host")),
        "{}: {message}",
        b.name()
    );
}

/// Servers that accept TCP connections but are not ZooKeeper, one speaking
/// another protocol, one closing at once: [`Reach::NotZooKeeper`] for each,
/// named, within 2 s.
pub fn connect_not_zookeeper_is_prompt_and_named(b: &Suite) {
    let speaker = TcpListener::bind("127.0.0.1:0").expect("a listener");
    let closer = TcpListener::bind("127.0.0.1:0").expect("a listener");
    let ports = [&speaker, &closer].map(|l| l.local_addr().expect("its address").port());
    // Detached: they end with the test process.
    thread::spawn(move || {
        for stream in speaker.incoming().flatten() {
            let _ = (&stream).write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n");
        }
    });
    thread::spawn(move || closer.incoming().for_each(drop));
    let cluster = format!("127.0.0.1:{},127.0.0.1:{}", ports[0], ports[1]);
    let (failure, message) = failed_connect(b, &cluster);
    let want = |port| (format!("127.0.0.1:{port}"), Reach::NotZooKeeper);
    assert_eq!(servers(b, failure), vec![want(ports[0]), want(ports[1])]);
    assert!(
        message.contains(&format!(
            "127.0.0.1:{}: accepts TCP connections but does not answer as ZooKeeper",
            ports[0]
        )),
        "{}: {message}",
        b.name()
    );
}

/// A connect string whose chroot does not exist: [`ConnectFailure::NoChroot`]
/// naming it, at connect rather than on the first lock.
pub fn connect_missing_chroot_is_named(b: &Suite) {
    let chroot = unique_path("no-chroot").replace("/conformance/", "/");
    let cluster = cluster(b) + &chroot;
    let (failure, message) = failed_connect(b, &cluster);
    assert_eq!(
        failure,
        ConnectFailure::NoChroot {
            chroot: chroot.clone()
        }
    );
    assert!(
        message.contains(&format!("the chroot {chroot} of the connect string")),
        "{}: {message}",
        b.name()
    );
}
