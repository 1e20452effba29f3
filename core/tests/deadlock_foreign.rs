//! Deadlock detection across naming schemes: a cycle through a kazoo client,
//! which publishes nothing (kazoo's `Lock` writes only its identifier), is still
//! found by inferring the kazoo owner's wait (its waiting node on the same session,
//! under the same identifier), and the zklock member is the victim even when the
//! kazoo node is younger.
mod harness;

use harness::*;
use lock_core::*;
use std::time::Duration;

const AFTER: Duration = Duration::from_secs(1);

/// A kazoo client's node in `dir` (attempt `n`, identifier `data`), of `session`.
fn kazoo_node(h: &mut H, session: i64, dir: &str, n: u128, data: &[u8]) {
    let prefix = names::node_prefix(NameScheme::Kazoo, AttemptId(n), NodeKind::Write);
    h.named_of(session, dir, &prefix, data);
}

/// Owner "Z" (this session, kazoo scheme) holds `/b` and waits at `/a` behind a
/// kazoo client "K", which holds `/a` and waits at `/b` behind Z with the node
/// (the youngest) of identifier `k_b_data`, on K's session unless
/// `another_session`. Returns the harness and Z's waiting node.
fn mixed_cycle(another_session: bool, k_b_data: &[u8]) -> (H, String) {
    let mut h = H::served(&["/a", "/b"]);
    let [k, other] = h.sessions();
    kazoo_node(&mut h, k, "/a", 1, b"K");
    let spec = |p: &str| LockSpec::exclusive(p).owner("Z").scheme(NameScheme::Kazoo);
    h.held_on(spec("/b"));
    let (_, za) = h.served_acquire(spec("/a").detect_deadlocks(AFTER));
    kazoo_node(
        &mut h,
        if another_session { other } else { k },
        "/b",
        2,
        k_b_data,
    );
    (h, za)
}

#[test]
fn a_cycle_through_a_kazoo_client_is_found_and_the_zklock_member_is_the_victim() {
    // The kazoo waiting node is the youngest in the cycle, yet it cannot be the
    // victim: it could not be told to give up.
    let (mut h, za) = mixed_cycle(false, b"K");
    h.advance(AFTER);
    let served = h.serve();
    let failed = h.events.iter().find_map(|(_, e)| match e {
        LockEvent::Failed(FailReason::Deadlock { cycle }) => Some(cycle.clone()),
        _ => None,
    });
    let cycle = failed.unwrap_or_else(|| panic!("no victim: {:?}", h.events));
    let nodes: Vec<_> = cycle.iter().map(|c| c.node.as_str()).collect();
    assert_eq!(nodes[0], za, "ours first: {nodes:?}");
    assert_eq!(cycle.len(), 4, "{nodes:?}");
    let owners: Vec<_> = cycle.iter().map(|c| c.owner.as_deref()).collect();
    assert_eq!(owners, [Some("Z"), Some("K"), Some("K"), Some("Z")]);
    assert_eq!(
        cycle.iter().map(|c| c.holds).collect::<Vec<_>>(),
        [false, true, false, true]
    );
    // Nothing is published in kazoo nodes (their data is kazoo's identifier); the
    // only write is the victim's delete.
    let writes: Vec<Op> = ops(&served)
        .into_iter()
        .filter(|op| !matches!(op, Op::GetChildren { .. } | Op::GetData { .. }))
        .collect();
    assert_eq!(writes, [delete_of(&za)]);
}

/// The kazoo waiter at /b of another session than the kazoo holder of /a, or
/// under another identifier, is not the same contender: no cycle (no false
/// deadlock).
#[test]
fn a_kazoo_holder_on_another_session_or_under_another_identifier_is_no_edge() {
    for (another_session, identifier) in [(true, b"K" as &[u8]), (false, b"K2")] {
        let (mut h, _) = mixed_cycle(another_session, identifier);
        h.advance(AFTER);
        h.serve();
        assert!(h.take_events().is_empty(), "still waiting: {identifier:?}");
    }
}
