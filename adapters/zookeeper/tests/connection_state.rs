//! The client-wide connection-state stream through a real ZooKeeper and a fault
//! proxy (the shared test in lock-conformance).

#[test]
fn connection_state_through_faults() {
    let connect = |cluster: &str, timeout| {
        lock_zookeeper::builder(cluster)
            .session_timeout(timeout)
            .connect()
    };
    lock_conformance::connection::connection_state_through_faults("lock-zookeeper", &connect);
}
