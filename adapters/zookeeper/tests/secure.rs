//! Connection options on the blocking binding, against a real ZooKeeper 3.8
//! (lock-testkit): digest auth with creator-only ACLs (others refused with a typed
//! error, not a hang; the credentials sent again after a reconnect), chroot, and
//! TLS and SASL refused as unsupported.

use lock_testkit::{FaultProxy, ZkServer};
use lock_zookeeper::{
    Auth, Connect, ConnectOptions, Error, LockClient, LockEvent, NodeAcl, Tls, ZkError,
};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;
use zookeeper::{Acl, ZooKeeper};

/// Generous bound on any one wait: a refusal must come well before it.
const LOCK_WAIT: Duration = Duration::from_secs(20);

fn server() -> &'static ZkServer {
    static SERVER: OnceLock<ZkServer> = OnceLock::new();
    SERVER.get_or_init(|| {
        ZkServer::builder()
            .config("preAllocSize", "1024")
            .start()
            .expect("starting ZooKeeper (lock-testkit)")
    })
}

fn unique(name: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!("/secure-tests/{name}-{}", N.fetch_add(1, Ordering::Relaxed))
}

fn connect(cluster: &str, options: ConnectOptions) -> Result<LockClient, Error> {
    LockClient::builder(cluster).options(options).connect()
}

fn alice() -> ConnectOptions {
    ConnectOptions::new()
        .digest_auth("alice", "alice-secret")
        .acl(NodeAcl::CreatorAll)
        .session_timeout(Duration::from_secs(4))
}

/// A raw client of the `zookeeper` crate with digest `auth`, to look at the tree.
fn raw(auth: Option<&str>) -> ZooKeeper {
    let zk = ZooKeeper::connect(&server().connect_string(), Duration::from_secs(10), |_| {})
        .expect("raw client");
    if let Some(auth) = auth {
        zk.add_auth("digest", auth.as_bytes().to_vec()).unwrap();
    }
    zk
}

fn refused(locks: &LockClient, path: &str) {
    let err = locks
        .mutex(path)
        .lock_timeout_blocking(LOCK_WAIT)
        .expect_err("the lock must be refused");
    assert!(err.is_auth(), "expected an auth refusal, got {err:?}");
    assert_eq!(err, Error::Zk(ZkError::NoAuth));
}

#[test]
fn creator_acl_admits_its_user_and_refuses_others_with_a_typed_error() {
    let cluster = server().connect_string();
    let path = unique("creator");
    let owner = connect(&cluster, alice()).unwrap();
    let guard = owner.mutex(&path).lock_timeout_blocking(LOCK_WAIT).unwrap();

    let zk = raw(Some("alice:alice-secret"));
    let (acl, _) = zk.get_acl(&path).unwrap();
    assert_eq!(acl.len(), 1, "{acl:?}");
    assert_eq!(acl[0].scheme, "digest");
    assert!(acl[0].id.starts_with("alice:"), "{acl:?}");
    let children = zk.get_children(&path, false).unwrap();
    assert_eq!(children.len(), 1);
    assert_eq!(
        raw(None).get_children(&path, false).unwrap_err(),
        zookeeper::ZkError::NoAuth
    );

    let bob = connect(
        &cluster,
        ConnectOptions::new().digest_auth("bob", "bob-secret"),
    )
    .unwrap();
    refused(&bob, &path);
    let nobody = connect(&cluster, ConnectOptions::new()).unwrap();
    refused(&nobody, &path);
    let wrong = connect(
        &cluster,
        ConnectOptions::new().digest_auth("alice", "guess"),
    )
    .unwrap();
    refused(&wrong, &path);

    guard.release_blocking().unwrap();
    owner.wait_idle_blocking().unwrap();
    assert!(zk.get_children(&path, false).unwrap().is_empty());
    for locks in [owner, bob, nobody, wrong] {
        locks.close_blocking();
    }
}

/// The server keeps credentials per connection and the `zookeeper` crate does not
/// send them again after a reconnect: the binding does, before the lock is
/// verified (which reads the creator-only directory) and released.
#[test]
fn credentials_survive_a_reconnect() {
    let proxy = FaultProxy::start(server().addr()).expect("proxy");
    let locks = connect(&proxy.connect_string(), alice()).unwrap();
    let path = unique("reconnect");
    let guard = locks.mutex(&path).lock_timeout_blocking(LOCK_WAIT).unwrap();
    proxy.cut();
    let mut events = Vec::new();
    while events.last() != Some(&LockEvent::Resumed) {
        match guard.next_event_timeout_blocking(LOCK_WAIT) {
            Some(event) => events.push(event),
            None => panic!("no Resumed after the cut: {events:?}"),
        }
        assert!(
            !matches!(events.last(), Some(LockEvent::Lost(_))),
            "{events:?}"
        );
    }
    guard.release_blocking().unwrap();
    let again = locks.mutex(&path).lock_timeout_blocking(LOCK_WAIT).unwrap();
    again.release_blocking().unwrap();
    locks.close_blocking();
}

#[test]
fn chroot_puts_every_node_under_it() {
    let chroot = unique("chroot");
    let zk = raw(None);
    for dir in ["/secure-tests", chroot.as_str()] {
        match zk.create(
            dir,
            Vec::new(),
            Acl::open_unsafe().clone(),
            zookeeper::CreateMode::Persistent,
        ) {
            Ok(_) | Err(zookeeper::ZkError::NodeExists) => {}
            Err(e) => panic!("creating {dir}: {e:?}"),
        }
    }
    let cluster = server().connect_string();
    let by_option = connect(&cluster, ConnectOptions::new().chroot(&chroot)).unwrap();
    let by_string = LockClient::connect(&format!("{cluster}{chroot}")).unwrap();
    let held = by_option
        .mutex("/app/job")
        .lock_timeout_blocking(LOCK_WAIT)
        .unwrap();
    let inside = zk
        .get_children(&format!("{chroot}/app/job"), false)
        .unwrap();
    assert_eq!(inside.len(), 1, "{inside:?}");
    assert_eq!(
        zk.get_children("/app/job", false).unwrap_err(),
        zookeeper::ZkError::NoNode
    );
    assert!(by_string
        .mutex("/app/job")
        .try_lock_blocking()
        .unwrap()
        .is_none());
    held.release_blocking().unwrap();
    by_string
        .mutex("/app/job")
        .try_lock_blocking()
        .unwrap()
        .expect("free after the release")
        .release_blocking()
        .unwrap();
    by_option.close_blocking();
    by_string.close_blocking();
}

#[test]
fn unsupported_and_bad_options_are_typed_errors() {
    let cluster = server().connect_string();
    let tls = connect(&cluster, ConnectOptions::new().tls(Tls::new("CA")));
    assert!(
        matches!(tls, Err(Error::Unsupported { option: "TLS", .. })),
        "{tls:?}"
    );
    let sasl = connect(
        &cluster,
        ConnectOptions::new().sasl_digest_md5("carol", "pw"),
    );
    assert!(
        matches!(sasl, Err(Error::Unsupported { option: "SASL", .. })),
        "{sasl:?}"
    );
    let creator = connect(&cluster, ConnectOptions::new().acl(NodeAcl::CreatorAll));
    assert!(
        matches!(creator, Err(Error::BadOption { option: "acl", .. })),
        "{creator:?}"
    );
    let malformed = connect(
        &cluster,
        ConnectOptions::new().auth(Auth::new("digest", b"nocolon".to_vec())),
    );
    assert!(
        matches!(
            malformed,
            Err(Error::BadOption {
                option: "digest auth",
                ..
            })
        ),
        "{malformed:?}"
    );
    let both = connect(&format!("{cluster}/x"), ConnectOptions::new().chroot("/y"));
    assert!(
        matches!(
            both,
            Err(Error::BadOption {
                option: "chroot",
                ..
            })
        ),
        "{both:?}"
    );
    // A scheme the server has no provider for: refused, not a hang.
    let unknown = connect(
        &cluster,
        ConnectOptions::new()
            .auth(Auth::new("kerberos-ish", b"x".to_vec()))
            .connect_timeout(Duration::from_secs(5)),
    );
    match unknown {
        Err(e @ Error::AuthFailed { .. }) => assert!(e.is_auth()),
        other => panic!("expected AuthFailed, got {other:?}"),
    }
}
