//! What this binding refuses, and that it refuses it with a typed error and
//! writes nothing (see the crate docs): `multi` and what needs it, TLS, SASL, and
//! session timeouts too short for zookeeper-async's read timeout. (A break, its
//! record's `multi` refused, goes unrecorded: lock-core's `tests/break_lock.rs`.)

use lock_conformance::{shared_server, unique_path};
use lock_zookeeper_async::{
    builder, ConnectOptions, Error, FencedError, LockClient, Tls, Writes, ZkError,
};
use std::time::Duration;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

async fn connect() -> LockClient {
    let cluster = shared_server().connect_string();
    builder(&cluster)
        .session_timeout(Duration::from_secs(4))
        .connect()
        .await
        .expect("connect")
}

fn multi_refused(e: &ZkError) -> bool {
    *e == ZkError::Unimplemented
}

/// A fenced write is a `multi` (a check on the lock node, then the writes):
/// refused whole, nothing written, and the lock still held and released cleanly.
#[test]
fn fenced_writes_are_refused_and_write_nothing() {
    runtime().block_on(async {
        let locks = connect().await;
        let (path, target) = (unique_path("refused-fenced"), unique_path("refused-target"));
        let guard = locks.mutex(&path).lock().await.expect("lock");
        let e = guard
            .fenced_write(Writes::new().create(&target, b"x"))
            .await
            .unwrap_err();
        match &e {
            FencedError::Write { error, .. } | FencedError::Unknown(error) => {
                assert!(multi_refused(error), "{e:?}")
            }
            other => panic!("expected the multi refusal, got {other:?}"),
        }
        let admin = lock_conformance::ZkAdmin::connect(&shared_server().connect_string());
        assert_eq!(
            lock_conformance::Admin::czxid(&admin, &target),
            None,
            "a refused multi wrote"
        );
        assert!(guard.is_trusted());
        guard.release().await.expect("release");
        locks.close().await;
    });
}

/// A crash-detecting lock works without a section (its release is a plain
/// delete); opening a section needs a `multi` and is refused.
#[test]
fn sections_are_refused_but_crash_detecting_locks_work() {
    runtime().block_on(async {
        let locks = connect().await;
        let path = unique_path("refused-section");
        let guard = locks
            .mutex(&path)
            .detect_crashes()
            .lock()
            .await
            .expect("lock");
        match guard.open_section().await {
            Err(Error::Zk(e)) => assert!(multi_refused(&e), "{e:?}"),
            other => panic!("expected the multi refusal, got {other:?}"),
        }
        guard.release().await.expect("release");
        let again = locks
            .mutex(&path)
            .detect_crashes()
            .lock()
            .await
            .expect("lock again");
        again.release().await.expect("release");
        locks.close().await;
    });
}

/// TLS and SASL: zookeeper-async's I/O is a plain TCP stream.
#[test]
fn tls_sasl_and_short_timeouts_are_refused_at_connect() {
    runtime().block_on(async {
        let cluster = shared_server().connect_string();
        let tls = ConnectOptions::new().tls(Tls::new("-----BEGIN CERTIFICATE-----"));
        let sasl = ConnectOptions::new().sasl_digest_md5("user", "password");
        for (options, name) in [(tls, "TLS"), (sasl, "SASL")] {
            match builder(&cluster).options(options).connect().await {
                Err(Error::Unsupported { option, .. }) => assert_eq!(option, name),
                other => panic!("{name}: expected Unsupported, got {other:?}"),
            }
        }
        let short = builder(&cluster)
            .session_timeout(Duration::from_secs(1))
            .connect()
            .await;
        assert!(matches!(short, Err(Error::BadOption { .. })), "{short:?}");
    });
}

/// Lock-delay writes its marker with a `multi` before the grant: refused
/// (`Unimplemented`, final), the acquisition fails at once instead of waiting
/// to its deadline, and leaves no node in the way of the next one.
#[test]
fn lock_delay_fails_at_once_with_a_typed_error() {
    runtime().block_on(async {
        let locks = connect().await;
        let path = unique_path("refused-delay");
        let delayed = locks.mutex(&path).lock_delay(Duration::from_secs(1));
        let outcome = delayed.lock_timeout(Duration::from_secs(30)).await;
        assert!(
            matches!(outcome, Err(Error::Zk(ZkError::Unimplemented))),
            "{:?}",
            outcome.map(|g| g.path().to_owned())
        );
        let next = locks
            .mutex(&path)
            .lock_timeout(Duration::from_secs(10))
            .await;
        next.expect("the next lock")
            .release()
            .await
            .expect("release");
        locks.close().await;
    });
}
