//! The contenders on their own, no fault: zklock over both bindings, Curator and
//! kazoo, each in a network namespace of its own and talking to one server of a
//! 3-server ensemble, share two lock paths; the merged history shows at most one
//! trusted holder at a time, tokens rising with grant order, and every contender
//! granted several times. Needs what `tests/partition.rs` needs.

mod common;

use std::time::{Duration, Instant};

use common::{Cluster, STEP};
use lock_partition::history::EventKind;

#[test]
fn contenders_of_every_library_take_turns_on_shared_locks() {
    let cluster = Cluster::start(Some("writes"));
    let deadline = Instant::now() + STEP;
    for (_, contender) in &cluster.contenders {
        let name = &contender.name;
        loop {
            let grants = cluster
                .histories
                .snapshot()
                .iter()
                .filter(|e| &e.client == name && matches!(e.kind, EventKind::Granted(_)))
                .count();
            if grants >= 3 {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{name} was granted {grants} times in {STEP:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    let report = cluster.finish(&[], "contenders-history.txt");
    assert!(report.grants >= 24, "{} grants", report.grants);
}
