//! Connection options against a real ZooKeeper 3.8 (lock-testkit): the ACL presets
//! other than creator-only, SASL DIGEST-MD5, timeouts, TLS (certificates generated
//! here, TLS on one side only, bad certificates) and a `LockClient` on the
//! application's own zookeeper-client session. What every binding passes (digest
//! auth with creator-only ACLs, chroot, bad options) is the conformance suite's
//! (lock-conformance's `suite/options.rs`).

mod common;

use common::run_tokio;
use lock_testkit::{Pki, ZkServer};
use lock_zookeeper_client::zookeeper_client::{self, Client};
use lock_zookeeper_client::{
    AclEntry, Connect, ConnectFailure, ConnectOptions, Error, LockClient, NodeAcl, Perms, Reach,
    Tls, ZkError,
};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Generous bound on any one wait: a refusal must come well before it.
const LOCK_WAIT: Duration = Duration::from_secs(20);

fn client_tls(pki: &Pki) -> zookeeper_client::TlsOptions {
    zookeeper_client::TlsOptions::new()
        .with_pem_ca(&pki.ca)
        .unwrap()
        .with_pem_identity(&pki.client_cert, &pki.client_key)
        .unwrap()
}

/// One server for the binary: plain client port, a TLS port that requires a
/// client certificate, and a SASL DIGEST-MD5 user `carol`.
fn setup() -> &'static (ZkServer, Pki) {
    static SETUP: OnceLock<(ZkServer, Pki)> = OnceLock::new();
    SETUP.get_or_init(|| {
        let pki = Pki::generate();
        let dir = std::env::temp_dir().join(format!("zklock-pki-{}", std::process::id()));
        let tls = pki.server_tls(&dir).unwrap().require_client_auth();
        let server = ZkServer::builder()
            .config("preAllocSize", "1024")
            .tls(tls)
            .sasl_digest_user("carol", "carol-secret")
            .start()
            .expect("starting ZooKeeper with TLS (lock-testkit)");
        // ZooKeeper reads its stores at the first TLS connection and keeps them:
        // make it now, on a thread (the first test calls this from its runtime),
        // then remove the files.
        let secure = server.secure_connect_string().unwrap();
        let tls = client_tls(&pki);
        std::thread::spawn(move || {
            let warm_up = Client::connector()
                .with_session_timeout(LOCK_WAIT)
                .with_tls(tls)
                .secure_connect(&secure);
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(warm_up)
                .map(drop)
        })
        .join()
        .unwrap()
        .expect("a first TLS connection");
        std::fs::remove_dir_all(&dir).unwrap();
        (server, pki)
    })
}

fn cluster() -> String {
    setup().0.connect_string()
}

/// A lock path right under the root: a parent shared by the tests would carry
/// the ACL of whichever test created it first (zklock creates missing parents
/// with its own ACL), and refuse the others.
fn unique(name: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!("/secure-tests-{name}-{}", N.fetch_add(1, Ordering::Relaxed))
}

/// A `LockClient` on the plain port. The connect timeout, unless the test sets
/// one, is as generous as the other waits: the server is shared by tests running
/// in parallel on a loaded machine.
async fn connect(mut options: ConnectOptions) -> Result<LockClient, Error> {
    if options.connect_timeout_option().is_none() {
        options = options.connect_timeout(LOCK_WAIT);
    }
    LockClient::builder(&cluster())
        .options(options)
        .connect()
        .await
}

fn alice() -> ConnectOptions {
    ConnectOptions::new().digest_auth("alice", "alice-secret")
}

/// A raw client with `auth` (scheme digest), to look at what zklock created. Its
/// session timeout, after which zookeeper-client gives up connecting, is the
/// generous bound: its default (6 s) is too short on a loaded machine.
async fn raw(auth: Option<&str>) -> Client {
    let mut connector = Client::connector().with_session_timeout(LOCK_WAIT);
    if let Some(auth) = auth {
        connector = connector.with_auth("digest", auth.as_bytes());
    }
    connector.connect(&cluster()).await.unwrap()
}

/// The acquisition's error, which must come (not a hang) and be an auth refusal.
async fn refused(locks: &LockClient, path: &str) -> Error {
    let err = locks
        .mutex(path)
        .lock_timeout(LOCK_WAIT)
        .await
        .expect_err("the lock must be refused");
    assert!(err.is_auth(), "expected an auth refusal, got {err:?}");
    assert_eq!(err, Error::Zk(ZkError::NoAuth));
    err
}

#[test]
fn world_readable_and_custom_acls_are_applied() {
    run_tokio(|_| async {
        let path = unique("world-read");
        let owner = connect(alice().acl(NodeAcl::CreatorAllWorldRead))
            .await
            .unwrap();
        let guard = owner.mutex(&path).lock_timeout(LOCK_WAIT).await.unwrap();
        // Anyone may look (e.g. monitoring) but not take part.
        let anonymous = raw(None).await;
        assert_eq!(anonymous.list_children(&path).await.unwrap().len(), 1);
        let (acl, _) = anonymous.get_acl(&path).await.unwrap();
        assert_eq!(acl.len(), 2, "{acl:?}");
        assert!(
            acl.contains(&zookeeper_client::Acls::anyone_read()[0]),
            "{acl:?}"
        );
        let nobody = connect(ConnectOptions::new()).await.unwrap();
        refused(&nobody, &path).await;
        guard.release().await.unwrap();

        // A custom list: read/write/create/delete for an ip identity, nothing else.
        let path = unique("custom");
        let entry = AclEntry::new(
            Perms::READ | Perms::WRITE | Perms::CREATE | Perms::DELETE,
            "ip",
            "127.0.0.1",
        );
        let custom = connect(ConnectOptions::new().acl(NodeAcl::Custom(vec![entry])))
            .await
            .unwrap();
        let guard = custom.mutex(&path).lock_timeout(LOCK_WAIT).await.unwrap();
        let (acl, _) = anonymous.get_acl(&path).await.unwrap();
        assert_eq!(acl.len(), 1);
        assert_eq!((acl[0].scheme(), acl[0].id()), ("ip", "127.0.0.1"));
        assert!(!acl[0].permission().has(zookeeper_client::Permission::ADMIN));
        guard.release().await.unwrap();
        for locks in [owner, nobody, custom] {
            locks.close().await;
        }
    });
}

#[test]
fn timeouts_are_passed_through() {
    run_tokio(|_| async {
        let locks = connect(ConnectOptions::new().session_timeout(Duration::from_secs(4)))
            .await
            .unwrap();
        assert_eq!(locks.session_timeout(), Duration::from_secs(4));
        locks.close().await;

        // A port that accepts TCP connections (the kernel does, into the
        // backlog) and answers nothing: the connect timeout ends the attempts,
        // and the failure says what the server did.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = silent.local_addr().unwrap().to_string();
        let gave_up = LockClient::builder(&addr)
            .options(ConnectOptions::new().connect_timeout(Duration::from_secs(1)))
            .connect()
            .await;
        let Err(Error::Connect {
            failure: ConnectFailure::Unreachable { servers },
            source: Some(source),
        }) = &gave_up
        else {
            panic!("{gave_up:?}");
        };
        assert_eq!(servers, &vec![(addr, Reach::NoAnswer)]);
        assert!(
            matches!(
                source.downcast_ref::<Error>(),
                Some(Error::Connect {
                    failure: ConnectFailure::NoSession { connect_timeout },
                    ..
                }) if *connect_timeout == Duration::from_secs(1)
            ),
            "{source:?}"
        );
        drop(silent);
    });
}

#[test]
fn tls_with_a_client_certificate_locks_and_bad_certificates_are_typed_errors() {
    run_tokio(|_| async {
        let (server, pki) = setup();
        let secure = server.secure_connect_string().unwrap();
        let tls =
            Tls::new(pki.ca.clone()).identity(pki.client_cert.clone(), pki.client_key.clone());
        let locks = LockClient::builder(&secure)
            .options(
                alice()
                    .acl(NodeAcl::CreatorAll)
                    .tls(tls)
                    .connect_timeout(LOCK_WAIT),
            )
            .connect()
            .await
            .unwrap();
        let path = unique("tls");
        let guard = locks.mutex(&path).lock_timeout(LOCK_WAIT).await.unwrap();
        let zk = raw(Some("alice:alice-secret")).await;
        assert_eq!(zk.list_children(&path).await.unwrap().len(), 1);
        guard.release().await.unwrap();
        locks.wait_idle().await.unwrap();
        assert!(zk.list_children(&path).await.unwrap().is_empty());
        locks.close().await;

        // A CA that did not sign the server's certificate: no session, a typed error.
        let stranger = Pki::generate();
        let untrusted = LockClient::builder(&secure)
            .options(
                ConnectOptions::new()
                    .tls(
                        Tls::new(stranger.ca)
                            .identity(pki.client_cert.clone(), pki.client_key.clone()),
                    )
                    .connect_timeout(Duration::from_secs(2)),
            )
            .connect()
            .await;
        assert!(
            matches!(untrusted, Err(Error::Connect { .. })),
            "{untrusted:?}"
        );

        // A certificate that does not parse: zookeeper-client's error behind the option's.
        let bad_pem = connect(ConnectOptions::new().tls(Tls::new("not a certificate"))).await;
        assert!(
            matches!(&bad_pem, Err(Error::BadOption { option: "tls", source: Some(why), .. })
                if why.downcast_ref::<zookeeper_client::Error>().is_some()),
            "{bad_pem:?}"
        );
    });
}

/// TLS on one side only, typed and named at once rather than after the connect
/// timeout: a plain client on the TLS port ([`Reach::TlsExpected`]), a TLS
/// client on the plain port ([`Reach::PlainText`]).
#[test]
fn tls_on_one_side_only_is_named_at_once() {
    run_tokio(|_| async {
        let (server, pki) = setup();
        let tls =
            Tls::new(pki.ca.clone()).identity(pki.client_cert.clone(), pki.client_key.clone());
        let secure = server.secure_connect_string().unwrap();
        for (cluster, options, reach) in [
            (secure, ConnectOptions::new(), Reach::TlsExpected),
            (cluster(), ConnectOptions::new().tls(tls), Reach::PlainText),
        ] {
            let start = Instant::now();
            let options = options.connect_timeout(LOCK_WAIT);
            let failed = LockClient::builder(&cluster)
                .options(options)
                .connect()
                .await;
            let took = start.elapsed();
            let Err(Error::Connect {
                failure: ConnectFailure::Unreachable { servers },
                ..
            }) = &failed
            else {
                panic!("{cluster}: {failed:?}");
            };
            assert_eq!(servers, &vec![(cluster.clone(), reach.clone())]);
            let message = failed.unwrap_err().to_string();
            assert!(
                message.contains(&format!("{cluster}: {reach}")),
                "{message}"
            );
            assert!(took < Duration::from_secs(2), "{cluster}: {took:?}");
        }
    });
}

#[test]
fn lock_client_on_the_applications_own_session() {
    run_tokio(|_| async {
        let zk = raw(Some("alice:alice-secret")).await;
        let locks = LockClient::builder(&cluster())
            .options(alice().acl(NodeAcl::CreatorAll))
            .client(zk.clone())
            .connect()
            .await
            .unwrap();
        assert_eq!(locks.session_id(), Some(zk.session_id().0));
        let path = unique("shared");
        let guard = locks.mutex(&path).lock_timeout(LOCK_WAIT).await.unwrap();
        // The lock node is an ephemeral of the application's session.
        let children = zk.list_children(&path).await.unwrap();
        let (_, stat) = zk
            .get_data(&format!("{path}/{}", children[0]))
            .await
            .unwrap();
        assert_eq!(stat.ephemeral_owner, zk.session_id().0);
        guard.release().await.unwrap();
        locks.wait_idle().await.unwrap();
        locks.close().await;
        // Closing the LockClient left the application's session open.
        assert!(zk.list_children(&path).await.unwrap().is_empty());
        assert_eq!(zk.state(), zookeeper_client::SessionState::SyncConnected);
    });
}

#[test]
fn sasl_digest_md5_user_locks_and_a_wrong_password_is_refused() {
    run_tokio(|_| async {
        let carol = || ConnectOptions::new().sasl_digest_md5("carol", "carol-secret");
        let locks = connect(carol().acl(NodeAcl::CreatorAll)).await.unwrap();
        let path = unique("sasl");
        let guard = locks.mutex(&path).lock_timeout(LOCK_WAIT).await.unwrap();
        // The creator ACL names the SASL identity.
        let sasl_reader = Client::connector()
            .with_session_timeout(LOCK_WAIT)
            .with_sasl(zookeeper_client::SaslOptions::digest_md5(
                "carol",
                "carol-secret",
            ))
            .connect(&cluster())
            .await
            .unwrap();
        let (acl, _) = sasl_reader.get_acl(&path).await.unwrap();
        assert_eq!((acl[0].scheme(), acl[0].id()), ("sasl", "carol"), "{acl:?}");
        let nobody = connect(ConnectOptions::new()).await.unwrap();
        refused(&nobody, &path).await;
        guard.release().await.unwrap();
        locks.close().await;
        nobody.close().await;

        // The server refuses the login: a typed error at connect, not a hang.
        let wrong = connect(
            ConnectOptions::new()
                .sasl_digest_md5("carol", "guess")
                .connect_timeout(Duration::from_secs(10)),
        )
        .await;
        match wrong {
            Err(e @ Error::AuthFailed { .. }) => {
                assert!(e.is_auth());
                let source = std::error::Error::source(&e).expect("the client's refusal");
                assert!(matches!(
                    source.downcast_ref::<zookeeper_client::Error>(),
                    Some(zookeeper_client::Error::AuthFailed)
                ));
            }
            other => panic!("expected AuthFailed, got {other:?}"),
        }
    });
}

#[test]
fn creator_acl_covers_section_markers_and_election_nodes() {
    run_tokio(|_| async {
        let locks = connect(alice().acl(NodeAcl::CreatorAll)).await.unwrap();
        let zk = raw(Some("alice:alice-secret")).await;
        let only_alice = |acl: &[zookeeper_client::Acl]| {
            acl.len() == 1 && acl[0].scheme() == "digest" && acl[0].id().starts_with("alice:")
        };

        // The section marker is created inside a multi.
        let path = unique("section");
        let guard = locks
            .mutex(&path)
            .detect_crashes()
            .lock_timeout(LOCK_WAIT)
            .await
            .unwrap();
        guard.open_section().await.unwrap();
        let (acl, _) = zk.get_acl(&format!("{path}/zkl-section")).await.unwrap();
        assert!(only_alice(&acl), "{acl:?}");
        guard.release().await.unwrap();

        let path = unique("election");
        let mut election = locks.election(&path, "node-1");
        let leadership = election.leadership().await.unwrap();
        let children = zk.list_children(&path).await.unwrap();
        assert_eq!(children.len(), 1);
        let (acl, _) = zk
            .get_acl(&format!("{path}/{}", children[0]))
            .await
            .unwrap();
        assert!(only_alice(&acl), "{acl:?}");
        let (acl, _) = zk.get_acl(&path).await.unwrap();
        assert!(only_alice(&acl), "{acl:?}");
        leadership.resign().await.unwrap();
        locks.close().await;
    });
}
