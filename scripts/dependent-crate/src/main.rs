//! A user's program against the packaged zklock: with the feature set it is built
//! with, takes a lock, sees a second session refused while it is held, hands it
//! over and releases it, on a real ZooKeeper (the connect string, argument 1) and,
//! with `sim`, on the in-process server.

use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);

fn main() {
    let zk = std::env::args()
        .nth(1)
        .expect("usage: zklock-user ZOOKEEPER_CONNECT_STRING");
    let mut checked = 0;
    #[cfg(feature = "sim")]
    {
        let server = zklock::sim::Server::new();
        check_blocking(&server.client(), &server.client(), "sim");
        checked += 1;
    }
    #[cfg(feature = "blocking")]
    {
        let a = zklock::blocking::connect(&zk).expect("blocking: connect");
        let b = zklock::blocking::connect(&zk).expect("blocking: connect");
        check_blocking(&a, &b, "blocking");
        a.close_blocking();
        b.close_blocking();
        checked += 1;
    }
    #[cfg(feature = "tokio")]
    {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime")
            .block_on(check_async(&zk, "tokio"));
        checked += 1;
    }
    #[cfg(feature = "async-std")]
    {
        async_std::task::block_on(check_async(&zk, "async-std"));
        checked += 1;
    }
    #[cfg(feature = "smol")]
    {
        smol::block_on(check_async(&zk, "smol"));
        checked += 1;
    }
    assert!(
        checked > 0,
        "built without a feature that gives a LockClient"
    );
    let _ = zk;
}

#[cfg(any(
    feature = "sim",
    feature = "blocking",
    feature = "tokio",
    feature = "async-std",
    feature = "smol"
))]
fn path(binding: &str) -> String {
    format!("/zklock-user/{binding}-{}", std::process::id())
}

#[cfg(any(feature = "sim", feature = "blocking"))]
fn check_blocking(a: &zklock::LockClient, b: &zklock::LockClient, binding: &str) {
    let path = path(binding);
    let guard = a.mutex(&path).lock_timeout_blocking(WAIT).expect("lock");
    assert_eq!(guard.status(), zklock::LockStatus::Held);
    assert!(
        b.mutex(&path)
            .try_lock_blocking()
            .expect("try_lock")
            .is_none(),
        "{binding}: a second session took a held lock"
    );
    let token = guard.token();
    guard.release_blocking().expect("release");
    let next = b
        .mutex(&path)
        .lock_timeout_blocking(WAIT)
        .expect("lock after the release");
    assert!(
        next.token() > token,
        "{binding}: fencing tokens must increase"
    );
    next.release_blocking().expect("release");
    println!("{binding}: took, handed over and released {path}");
}

#[cfg(any(feature = "tokio", feature = "async-std", feature = "smol"))]
async fn check_async(zk: &str, binding: &str) {
    let a = zklock::connect(zk).await.expect("connect");
    let b = zklock::connect(zk).await.expect("connect");
    let path = path(binding);
    let guard = a.mutex(&path).lock_timeout(WAIT).await.expect("lock");
    assert_eq!(guard.status(), zklock::LockStatus::Held);
    assert!(
        b.mutex(&path).try_lock().await.expect("try_lock").is_none(),
        "{binding}: a second session took a held lock"
    );
    let token = guard.token();
    guard.release().await.expect("release");
    let next = b
        .mutex(&path)
        .lock_timeout(WAIT)
        .await
        .expect("lock after the release");
    assert!(
        next.token() > token,
        "{binding}: fencing tokens must increase"
    );
    next.release().await.expect("release");
    a.close().await;
    b.close().await;
    println!("{binding}: took, handed over and released {path}");
}
