//! The kit, as a binding author runs it: one call, what the client cannot do
//! declared, the rest against a real ZooKeeper.

use lock_conformance::{Capability, Style, ZkEnv};

fn env() -> ZkEnv {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    ZkEnv::new("binding author's copy", Style::Async, 3, move |cluster, timeout| {
        rt.block_on(
            lock_zookeeper_async::builder(cluster)
                .session_timeout(timeout)
                .connect(),
        )
    })
    .without(Capability::Multi)
    .without(Capability::Nodelay)
    .without(Capability::FullTolerance)
    .without(Capability::ServerChecks)
}

lock_conformance::conformance_tests!(env());
