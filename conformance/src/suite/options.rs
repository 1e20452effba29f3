//! lock-client's connection options, as each binding passes them to its client
//! crate ([`Capability::ConnectOptions`](crate::Capability::ConnectOptions)):
//! digest auth with creator-only ACLs (other users refused with a typed error,
//! not a hang; the credentials sent again after a reconnect), chroot (in the
//! options or in the connect string), and options that cannot work as typed
//! errors.

use super::*;
use crate::{Admin, ZkAdmin};
use lock_client::{Auth, ConnectOptions, NodeAcl, ZkError};

const ALICE: &str = "alice:alice-secret";

/// Alice's digest identity, on a session that must simply survive.
fn alice() -> ConnectOptions {
    ConnectOptions::new()
        .digest_auth("alice", "alice-secret")
        .session_timeout(BYSTANDER_SESSION_TIMEOUT)
}

/// A client of the binding at `cluster`, connected with `options`.
fn connect_with_options(b: &Suite, cluster: &str, options: ConnectOptions) -> LockClient {
    b.env()
        .client_with_options(cluster, options)
        .unwrap_or_else(|| panic!("{}: no Env::client_with_options", b.name()))
        .unwrap_or_else(|e| panic!("{}: connecting to {cluster}: {e}", b.name()))
}

/// The mutex at `path`, whose acquisition must be refused (not hang) as an
/// auth refusal.
fn refused(b: &Suite, locks: &LockClient, path: &str) {
    let err = b
        .lock(locks, Kind::Mutex, path, Wait::Timeout(LONG))
        .expect_err("the lock must be refused");
    assert!(err.is_auth(), "{}: not an auth refusal: {err:?}", b.name());
    assert_eq!(err, Error::Zk(ZkError::NoAuth), "{}", b.name());
}

/// A lock taken with `NodeAcl::CreatorAll` carries its creator's digest identity
/// (the directory and the lock node, all permissions); nobody else can read it;
/// another user, no user and the right user with a wrong password are refused
/// with `Error::Zk(NoAuth)`. The owner locks again after releasing, and a second
/// session of the same user shares the identity: it queues and gets the lock
/// once released.
pub fn creator_acl_admits_its_user_and_refuses_others_with_a_typed_error(b: &Suite) {
    let cluster = cluster(b);
    let path = unique_path("creator");
    let owner = connect_with_options(b, &cluster, alice().acl(NodeAcl::CreatorAll));
    let guard = lock(b, &owner, Kind::Mutex, &path);

    let zk = ZkAdmin::connect_as(&cluster, Some(ALICE));
    let (acl, _) = zk.zk().get_acl(&path).expect("the directory's ACL");
    assert_eq!(acl.len(), 1, "{}: {acl:?}", b.name());
    assert_eq!(acl[0].scheme, "digest");
    assert!(acl[0].id.starts_with("alice:"), "{}: {acl:?}", b.name());
    assert_eq!(acl[0].perms, zookeeper::Permission::ALL);
    let children = zk.children(&path);
    assert_eq!(children.len(), 1, "{}: {children:?}", b.name());
    let (node_acl, _) = zk
        .zk()
        .get_acl(&format!("{path}/{}", children[0]))
        .expect("the node's ACL");
    assert_eq!(node_acl, acl, "{}", b.name());
    // Without credentials, not even a read.
    assert_eq!(
        ZkAdmin::connect(&cluster)
            .zk()
            .get_children(&path, false)
            .unwrap_err(),
        zookeeper::ZkError::NoAuth
    );

    let others = [
        ConnectOptions::new().digest_auth("bob", "bob-secret"),
        ConnectOptions::new(),
        ConnectOptions::new().digest_auth("alice", "guess"),
    ]
    .map(|options| {
        let other = connect_with_options(b, &cluster, options);
        refused(b, &other, &path);
        other
    });

    b.release(guard).expect("release");
    let again = lock(b, &owner, Kind::Mutex, &path);
    let twin = connect_with_options(b, &cluster, alice().acl(NodeAcl::CreatorAll));
    let mut waiting = b.start(&twin, Kind::Mutex, &path).expect("start");
    assert!(
        b.still_pending(&mut waiting, Duration::from_millis(200)),
        "{}: the twin holds beside the owner",
        b.name()
    );
    b.release(again).expect("release");
    let granted = b
        .finish(waiting, SHORT)
        .unwrap_or_else(|e| panic!("{}: the twin gets the lock: {e}", b.name()));
    b.release(granted).expect("release");
    b.wait_idle(&twin).expect("idle");
    assert!(zk.children(&path).is_empty(), "{}", b.name());
    for locks in others.iter().chain([&owner, &twin]) {
        b.close(locks);
    }
}

/// The server keeps credentials per connection, and client crates need not send
/// them again after a reconnect (the `zookeeper` crate and zookeeper-async do
/// not): the binding does, before the lock is verified (which reads the
/// creator-only directory). The holder resumes after a cut, never lost, and
/// releases and locks again.
pub fn credentials_survive_a_reconnect(b: &Suite) {
    let proxy = proxy_to_shared(b);
    let options = alice().acl(NodeAcl::CreatorAll);
    let locks = connect_with_options(b, &proxy.connect_string(), options);
    let path = unique_path("reconnect");
    let mut guard = lock(b, &locks, Kind::Mutex, &path);
    proxy.cut();
    let mut events = Vec::new();
    while events.last() != Some(&LockEvent::Resumed) {
        let event = b
            .next_event(&mut guard, LONG)
            .unwrap_or_else(|| panic!("{}: no Resumed after the cut: {events:?}", b.name()));
        events.push(event);
        assert!(
            !matches!(events.last(), Some(LockEvent::Lost(_))),
            "{}: {events:?}",
            b.name()
        );
    }
    b.release(guard).expect("release");
    let again = lock(b, &locks, Kind::Mutex, &path);
    b.release(again).expect("release");
    b.close(&locks);
}

/// A chroot, given as an option or in the connect string, puts every node under
/// it (nothing outside): two clients, one of each, contend on the same lock.
/// Both at once is a `BadOption` naming `chroot`.
pub fn chroot_puts_every_node_under_it(b: &Suite) {
    let cluster = cluster(b);
    let chroot = unique_path("chroot");
    let zk = ZkAdmin::connect(&cluster);
    zk.create_dirs(&chroot);
    let options = || ConnectOptions::new().session_timeout(BYSTANDER_SESSION_TIMEOUT);
    let by_option = connect_with_options(b, &cluster, options().chroot(&chroot));
    let by_string = connect_with_options(b, &format!("{cluster}{chroot}"), options());
    let held = lock(b, &by_option, Kind::Mutex, "/app/job");
    let inside = zk.children(&format!("{chroot}/app/job"));
    assert_eq!(inside.len(), 1, "{}: {inside:?}", b.name());
    assert_eq!(
        zk.zk().get_children("/app/job", false).unwrap_err(),
        zookeeper::ZkError::NoNode,
        "{}: nothing outside the chroot",
        b.name()
    );
    // The other client sees the same lock: the same chroot.
    assert_eq!(
        b.lock(&by_string, Kind::Mutex, "/app/job", Wait::Try)
            .map(|_| ()),
        Err(Error::WouldBlock),
        "{}",
        b.name()
    );
    b.release(held).expect("release");
    let second = b
        .lock(&by_string, Kind::Mutex, "/app/job", Wait::Try)
        .unwrap_or_else(|e| panic!("{}: free after the release: {e}", b.name()));
    b.release(second).expect("release");

    let both = b
        .env()
        .client_with_options(&format!("{cluster}/x"), options().chroot("/y"))
        .expect("Env::client_with_options");
    assert!(
        matches!(
            both,
            Err(Error::BadOption {
                option: "chroot",
                ..
            })
        ),
        "{}: {both:?}",
        b.name()
    );
    b.close(&by_option);
    b.close(&by_string);
}

/// Options that cannot work are typed errors: found before connecting, a
/// creator-only ACL without credentials (`BadOption` naming `acl`) and digest
/// auth that is not `user:password` (naming `digest auth`); from the server, an
/// auth scheme it does not know (`AuthFailed`, `is_auth()`).
pub fn bad_options_are_typed_errors(b: &Suite) {
    let cluster = cluster(b);
    let connect = |options: ConnectOptions| {
        b.env()
            .client_with_options(&cluster, options)
            .expect("Env::client_with_options")
    };
    let creator = connect(ConnectOptions::new().acl(NodeAcl::CreatorAll));
    assert!(
        matches!(creator, Err(Error::BadOption { option: "acl", .. })),
        "{}: {creator:?}",
        b.name()
    );
    let malformed = connect(ConnectOptions::new().auth(Auth::new("digest", b"nocolon".to_vec())));
    assert!(
        matches!(
            malformed,
            Err(Error::BadOption {
                option: "digest auth",
                ..
            })
        ),
        "{}: {malformed:?}",
        b.name()
    );
    let unknown = connect(ConnectOptions::new().auth(Auth::new("kerberos-ish", b"x".to_vec())));
    assert!(
        matches!(&unknown, Err(e @ Error::AuthFailed { .. }) if e.is_auth()),
        "{}: {unknown:?}",
        b.name()
    );
}
