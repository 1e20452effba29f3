//! Deadlock detection in the core (`LockSpec::detect_deadlocks`), against a model
//! server: what is refused, when requests start, how waits are published. Whole cycles across sessions run in lock-sim (tests/deadlock.rs).
mod harness;

use harness::*;
use lock_core::*;
use std::time::Duration;

const AFTER: Duration = Duration::from_secs(1);

/// The owner holds `/a` and waits at `/b` behind a peer: returns the held node,
/// the waiting node and the peer's.
fn holding_and_waiting(h: &mut H) -> (String, String, String) {
    let (_, held) = h.held_on(LockSpec::write("/a").owner("O").detect_deadlocks(AFTER));
    let peer = h.peer_joins("/b", NodeKind::Write, 9);
    let (_, waiting) = h.served_acquire(LockSpec::write("/b").owner("O").detect_deadlocks(AFTER));
    (held, waiting, peer)
}

/// The `setData`s queued.
fn set_data(h: &H) -> Vec<Op> {
    ops(h.reqs.iter().filter(|r| matches!(r.op, Op::SetData { .. })))
}

#[test]
fn nothing_is_sent_before_detect_after_then_the_wait_is_published_at_the_known_version() {
    let mut h = H::served(&["/a", "/b"]);
    let (held, waiting, peer) = holding_and_waiting(&mut h);
    h.advance(AFTER - Duration::from_millis(1));
    assert!(
        h.no_requests(),
        "no request before detect_after: {:?}",
        h.reqs
    );
    h.advance(Duration::from_millis(1));
    let sets = set_data(&h);
    let [Op::SetData {
        path,
        data,
        version,
    }] = &sets[..]
    else {
        panic!("{sets:?}")
    };
    assert_eq!((path, *version), (&held, Some(0)));
    assert_eq!(data, &owner::header(Some("O"), &[waiting]));
    // The chase went out too: the listing of /b and the reads of what it reaches.
    assert!(
        h.reqs
            .iter()
            .any(|r| r.op == Op::GetChildren { path: "/b".into() }),
        "{:?}",
        h.reqs
    );
    h.serve();
    // Granted: the wait is withdrawn, at the version the first write left.
    h.delete_node(&peer);
    assert_eq!(
        set_data(&h),
        [Op::SetData {
            path: held,
            data: owner::header(Some("O"), &[]),
            version: Some(1)
        }]
    );
}

#[test]
fn a_revocation_marker_written_meanwhile_is_never_overwritten() {
    let mut h = H::served(&["/a", "/b"]);
    let (held, _, _) = holding_and_waiting(&mut h);
    h.advance(AFTER);
    assert_eq!(set_data(&h).len(), 1);
    // Someone wrote `__REVOKE__` since our create: the versioned write fails.
    h.set_node_data(&held, b"__REVOKE__");
    h.serve();
    // Later periods chase again but never write that node.
    for _ in 0..3 {
        h.advance(AFTER);
        assert!(set_data(&h).is_empty());
        h.serve();
    }
    assert_eq!(h.zk().model.get(&held).unwrap().data, b"__REVOKE__");
    assert!(h.s.stats().deadlock_chases >= 1);
}
