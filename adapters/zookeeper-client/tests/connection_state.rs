//! The client-wide connection-state stream through a real ZooKeeper and a fault
//! proxy (the shared test in lock-conformance).

use lock_zookeeper_client::{Connect, LockClient};

#[test]
fn connection_state_through_faults() {
    let rt = tokio::runtime::Runtime::new().expect("tokio runtime");
    let connect = |cluster: &str, timeout| {
        rt.block_on(
            LockClient::builder(cluster)
                .session_timeout(timeout)
                .runtime(lock_zookeeper_client::Runtime::Tokio(rt.handle().clone()))
                .connect(),
        )
    };
    lock_conformance::connection::connection_state_through_faults(
        "lock-zookeeper-client",
        &connect,
    );
}
