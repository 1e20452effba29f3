//! A real 3-node ensemble: one leader, and a new one when the leader dies.
//! Needs ZooKeeper installed (`scripts/install-zookeeper.sh`).

use std::time::{Duration, Instant};

use lock_testkit::{Error, Mode, ZkEnsemble};

fn modes(ensemble: &ZkEnsemble) -> Vec<Option<Mode>> {
    ensemble
        .members()
        .iter()
        .map(|m| m.is_running().then(|| m.srvr().unwrap()))
        .collect()
}

#[test]
fn ensemble_has_one_leader_and_elects_another_when_it_dies() {
    let ensemble = ZkEnsemble::start(3).unwrap_or_else(|e| panic!("{e}"));

    let members = ensemble.members();
    assert_eq!(members.len(), 3);
    let expected: Vec<String> = members.iter().map(|m| m.connect_string()).collect();
    assert_eq!(ensemble.connect_string(), expected.join(","));
    assert_eq!(ensemble.connect_string().split(',').count(), 3);
    let mut ports: Vec<u16> = members.iter().map(|m| m.port()).collect();
    ports.dedup();
    assert_eq!(ports.len(), 3);

    let leader = ensemble.leader_index().expect("a leader");
    let mut expected = vec![Some(Mode::Follower); 3];
    expected[leader] = Some(Mode::Leader);
    assert_eq!(modes(&ensemble), expected);
    let metrics = members[leader].mntr().unwrap();
    assert_eq!(metrics.get("zk_server_state"), Some("leader"));
    assert_eq!(
        metrics.get_u64("zk_synced_followers"),
        Some(2),
        "{metrics:?}"
    );

    // Kill the leader: the other two elect a new one.
    members[leader].kill();
    let new_leader = ensemble.wait_for_leader(Duration::from_secs(20)).unwrap();
    assert_ne!(new_leader, leader);
    let modes_now = modes(&ensemble);
    assert_eq!(modes_now[leader], None);
    assert_eq!(
        modes_now
            .iter()
            .filter(|m| **m == Some(Mode::Leader))
            .count(),
        1,
        "{modes_now:?}"
    );
    assert_eq!(
        ensemble.wait_ready(Duration::from_secs(20)).unwrap(),
        new_leader
    );

    // The old leader comes back, on the same port, as a follower.
    let old_port = members[leader].port();
    members[leader].restart().unwrap();
    assert_eq!(members[leader].port(), old_port);
    assert_eq!(members[leader].srvr().unwrap(), Mode::Follower);
    assert_eq!(
        ensemble.wait_ready(Duration::from_secs(20)).unwrap(),
        new_leader
    );

    // Without a quorum nobody serves; a member that is up says so.
    let survivor = (0..3).find(|i| *i != new_leader).unwrap();
    for i in (0..3).filter(|i| *i != survivor) {
        members[i].stop();
    }
    let t = Instant::now();
    while members[survivor].srvr().unwrap() != Mode::NotServing {
        assert!(t.elapsed() < Duration::from_secs(10), "still serving alone");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(matches!(
        members[survivor].mntr(),
        Err(Error::NotServing { .. })
    ));
    assert!(ensemble.leader_index().is_none());

    assert!(matches!(
        ensemble.member(3),
        Err(Error::NoSuchMember { index: 3, len: 3 })
    ));
    let root = ensemble.root_dir().to_path_buf();
    assert!(root.is_dir());
    drop(ensemble);
    assert!(!root.exists());
}
