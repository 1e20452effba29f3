//! Jepsen-style partitions of a 3-server ensemble in network namespaces, with
//! zklock (both bindings), Curator and kazoo contending on shared lock paths;
//! each client in a namespace of its own, talking to one server.
//!
//! Shapes: the leader and its clients isolated, a follower and its clients
//! isolated, one client cut off, and a bridge (leader and a follower cannot
//! see each other, the third server sees both). Each fault targets a zklock
//! holder of one binding: the test asks it to keep its next hold until lost,
//! cuts the network as soon as it is granted, waits for its `Lost` and for
//! another contender's grant, then heals and waits for progress. The merged
//! history must show at most one trusted holder at any instant, tokens rising
//! with grant order, every cut-off zklock holder told `Lost` before anyone
//! else's grant, and grants after every heal.
//!
//! Runs as root with iproute2, nftables, ZooKeeper, a JDK with Curator and
//! python3-kazoo (scripts/test.sh installs them all). Settings: session timeout
//! 4 s, tickTime 500 ms, syncLimit 4 (a follower gives up on a silent leader
//! after 2 s). `ZKLOCK_PARTITION_ROUNDS=n` repeats every shape and binding n
//! times (default 1: 8 faults); `ZKLOCK_PARTITION_WORK=idle|reads|writes` says
//! what zklock holders do while holding (default `reads`: the lock's participants
//! every 200 ms, which a follower cut off from its leader goes on answering;
//! `writes` adds a fenced write, which waits for the leader, and so does
//! everything the session sends after it). The margins between
//! each cut-off holder's `Lost` and the next grant are printed per shape and
//! binding; the history is written to `<target tmp>/partition-history.txt`.

mod common;

use std::collections::BTreeSet;

use common::{Cluster, CURATOR_LOCK, KAZOO_LOCK, LAYOUT, STEP};
use lock_partition::check::Fault;
use lock_partition::contenders::Kind;
use lock_partition::history::EventKind;
use lock_testkit::exclusion::monotonic_ns;

#[derive(Clone, Copy, Debug)]
enum Shape {
    LeaderIsolated,
    FollowerIsolated,
    ClientCut,
    Bridge,
}

impl Shape {
    const ALL: [Shape; 4] = [
        Shape::LeaderIsolated,
        Shape::FollowerIsolated,
        Shape::ClientCut,
        Shape::Bridge,
    ];

    fn name(self) -> &'static str {
        match self {
            Shape::LeaderIsolated => "leader-isolated",
            Shape::FollowerIsolated => "follower-isolated",
            Shape::ClientCut => "client-cut",
            Shape::Bridge => "bridge",
        }
    }
}

#[test]
fn partitions_keep_one_trusted_holder_and_tell_lost_before_the_next_grant() {
    let rounds = lock_testkit::measure::env_usize("ZKLOCK_PARTITION_ROUNDS", 1);
    let busy = match std::env::var("ZKLOCK_PARTITION_WORK").as_deref() {
        Err(_) | Ok("reads") => Some("reads"),
        Ok("writes") => Some("writes"),
        Ok("idle") => None,
        Ok(other) => panic!("ZKLOCK_PARTITION_WORK={other:?}: idle, reads or writes"),
    };
    let mut cluster = Cluster::start(busy);
    let Cluster {
        contenders,
        histories,
        zk,
        lab,
    } = &mut cluster;
    let ensemble = zk.ensemble();

    let mut faults = Vec::new();
    for round in 0..rounds {
        for shape in Shape::ALL {
            for kind in [Kind::Async, Kind::Blocking] {
                let leader = ensemble
                    .wait_for_leader(STEP)
                    .unwrap_or_else(|e| panic!("{e}"));
                let follower = (leader + 1 + (round + faults.len()) % 2) % 3;
                let server = match shape {
                    Shape::LeaderIsolated => leader,
                    Shape::FollowerIsolated | Shape::Bridge => follower,
                    Shape::ClientCut => (round + faults.len()) % 3,
                };
                let target = contenders
                    .iter()
                    .position(|(s, c)| *s == server && c.kind == kind)
                    .expect("every server has a contender of each binding");
                let name = contenders[target].1.name.clone();
                let asked = monotonic_ns();
                contenders[target].1.stick();
                let granted = histories.wait_for(STEP, |e| {
                    e.client == name && e.at > asked && matches!(e.kind, EventKind::Granted(_))
                });
                assert!(
                    granted.is_some(),
                    "{name} was never granted the lock to be cut off with"
                );
                let lock = LAYOUT[target].2;

                let start = monotonic_ns();
                let on_server = || contenders.iter().filter(|(s, _)| *s == server);
                let cut_off: BTreeSet<String> = match shape {
                    Shape::ClientCut => {
                        lab.isolate(&[contenders[target].1.node]).unwrap();
                        BTreeSet::from([name.clone()])
                    }
                    Shape::Bridge => {
                        lab.bridge(zk.node(leader), zk.node(server)).unwrap();
                        on_server().map(|(_, c)| c.name.clone()).collect()
                    }
                    Shape::LeaderIsolated | Shape::FollowerIsolated => {
                        let mut side = vec![zk.node(server)];
                        side.extend(on_server().map(|(_, c)| c.node));
                        lab.isolate(&side).unwrap();
                        on_server().map(|(_, c)| c.name.clone()).collect()
                    }
                };
                eprintln!(
                    "fault {}: {} with {name} holding {lock} (leader zk{}, cut zk{})",
                    faults.len() + 1,
                    shape.name(),
                    leader + 1,
                    server + 1
                );
                let lost = histories.wait_for(STEP, |e| {
                    e.client == name && e.at > start && matches!(e.kind, EventKind::Lost(_))
                });
                let next = histories.wait_for(STEP, |e| {
                    e.lock == lock
                        && e.client != name
                        && e.at > start
                        && matches!(e.kind, EventKind::Granted(_))
                });
                eprintln!("  lost: {lost:?}, next grant: {next:?}");
                lab.heal().unwrap();
                let heal = monotonic_ns();
                faults.push(Fault {
                    shape: shape.name().to_string(),
                    start,
                    heal,
                    cut_off,
                });
                ensemble.wait_ready(STEP).unwrap_or_else(|e| panic!("{e}"));
                for lock in [CURATOR_LOCK, KAZOO_LOCK] {
                    histories.wait_for(STEP, |e| {
                        e.lock == lock && e.at > heal && matches!(e.kind, EventKind::Granted(_))
                    });
                }
            }
        }
    }
    let report = cluster.finish(&faults, "partition-history.txt");
    // Every fault cut off the holder it targeted: one margin each at least.
    for fault in &faults {
        assert!(
            report
                .margins
                .iter()
                .any(|m| m.shape == fault.shape && m.next_grant.is_some()),
            "{}: no cut-off hold was followed by another grant",
            fault.shape
        );
    }
}
