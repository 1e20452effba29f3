//! Lock-delay (`LockSpec::lock_delay`): the marker a holder keeps, the wait after an
//! unclean end (to the tick), no wait after a clean release, and the marker's cleanup.

mod harness;
use harness::*;
use lock_core::*;
use std::time::Duration;

const DELAY: Duration = Duration::from_secs(5);
const MARKER: &str = "/d/zkl-delay";

fn spec() -> LockSpec {
    LockSpec::write("/d").lock_delay(DELAY)
}

/// A marker left in the tree, naming the node `owner` (a crashed holder's).
fn marker_naming(h: &mut H, owner: &str) {
    h.peer_creates(MARKER, name_of(owner).as_bytes(), CreateMode::Persistent);
}

/// The node the marker names.
fn marker_owner(h: &mut H) -> String {
    String::from_utf8(h.zk().model.get(MARKER).unwrap().data).unwrap()
}

/// A lock-delay waiter behind the holder `p`, whose marker is in the tree;
/// returns (id, our node, p's path).
fn waiting_behind() -> (H, LockId, String, String) {
    let mut h = H::served(&["/d"]);
    let p = h.peer_joins("/d", NodeKind::Write, 1);
    marker_naming(&mut h, &p);
    let (id, node) = h.served_acquire(spec());
    assert!(h.take_events().is_empty());
    (h, id, node, p)
}

fn delays(h: &H) -> Vec<(String, Timestamp)> {
    h.progress
        .iter()
        .filter_map(|(_, p)| match p {
            Progress::LockDelay { node, until } => Some((node.clone(), *until)),
            _ => None,
        })
        .collect()
}

#[test]
fn uncontended_holder_creates_its_marker_before_the_grant_and_a_clean_release_deletes_it() {
    let mut h = H::served(&["/d"]);
    let id = h.acquire(spec());
    h.serve_one();
    h.serve_one();
    let node = h.ours("/d")[0].clone();
    assert!(h.take_events().is_empty(), "no grant before the marker");
    assert!(h.reqs.len() == 1 && matches!(h.reqs[0].op, Op::Multi(_)));
    h.serve();
    h.acquired();
    assert_eq!(marker_owner(&mut h), name_of(&node));
    assert!(delays(&h).is_empty());
    h.run(|s, now| s.release(id, now));
    assert_eq!(
        ops(&h.serve()),
        vec![Op::Multi(vec![
            multi_delete_of(MARKER),
            multi_delete_of(&node)
        ])],
        "a clean release deletes the marker with the node"
    );
    h.expect_events([LockEvent::Released]);
    assert!(!h.exists(MARKER));
}

#[test]
fn after_an_unclean_end_the_grant_comes_exactly_the_delay_after_the_waiter_saw_it() {
    let (mut h, _, node, p) = waiting_behind();
    h.advance(Duration::from_secs(30));
    let seen = h.now;
    // The holder's session expired: its node goes, its marker stays.
    h.delete_node(&p);
    h.serve_one();
    // The replies take time; the delay counts from the deletion seen.
    h.advance(Duration::from_millis(7));
    h.serve();
    assert_eq!(delays(&h), vec![(node.clone(), seen + DELAY)]);
    assert!(h.take_events().is_empty());
    assert!(h.no_requests(), "nothing is sent while the delay runs");
    assert_eq!(h.s.poll_timeout(), Some(seen + DELAY));
    h.advance(DELAY - Duration::from_millis(8));
    assert!(h.no_requests() && h.take_events().is_empty());
    h.advance(Duration::from_millis(1));
    assert_eq!(h.now, seen + DELAY);
    // The marker is taken over.
    assert!(matches!(&ops(&h.serve())[..], [Op::Multi(_)]));
    assert_eq!(marker_owner(&mut h), name_of(&node));
    h.acquired();
    assert_eq!(h.s.stats().lock_delays, 1);
}

#[test]
fn after_a_clean_release_the_grant_is_not_delayed() {
    let (mut h, _, node, p) = waiting_behind();
    // The holder's clean release deleted the marker with its node.
    h.delete_node(MARKER);
    h.delete_node(&p);
    assert_eq!(ops(&h.serve()).len(), 1, "the marker's create alone");
    h.acquired();
    assert_eq!(marker_owner(&mut h), name_of(&node));
    assert!(delays(&h).is_empty());
    assert_eq!(h.s.stats().lock_delays, 0);
}

#[test]
fn a_newcomer_finding_a_stale_marker_waits_from_its_own_look() {
    let mut h = H::served(&["/d"]);
    marker_naming(&mut h, &peer(NodeKind::Write, 9, 4));
    h.advance(Duration::from_secs(3));
    h.acquire(spec());
    h.serve_one();
    h.advance(Duration::from_millis(2));
    let looked = h.now;
    h.serve();
    let node = h.ours("/d")[0].clone();
    assert_eq!(delays(&h), vec![(node, looked + DELAY)]);
    assert_eq!(h.s.stats().foreign_children, 0, "the marker is not foreign");
    h.advance(DELAY - Duration::from_millis(1));
    assert!(h.no_requests() && h.take_events().is_empty());
    h.advance(Duration::from_millis(1));
    h.serve();
    h.acquired();
}

#[test]
fn a_marker_naming_our_own_node_is_ours() {
    // Our create of the marker went through but its reply was lost with the
    // connection: the marker names our node.
    let mut h = H::served(&["/d"]);
    h.acquire(spec());
    h.serve_one();
    h.serve_one();
    let marker_create = h.reqs[0].op.clone();
    h.apply(&marker_create).unwrap();
    h.serve();
    h.acquired();
    assert!(delays(&h).is_empty());
}

#[test]
fn cancel_during_the_delay_deletes_our_node_and_leaves_the_marker() {
    let (mut h, id, node, p) = waiting_behind();
    h.delete_node(&p);
    h.serve();
    h.advance(Duration::from_secs(1));
    h.run(|s, now| s.cancel(id, now));
    h.expect_events([LockEvent::Failed(FailReason::Cancelled)]);
    assert_eq!(
        ops(&h.serve()),
        vec![delete_of(&node)],
        "our node only: the crashed holder's marker stays for the next one"
    );
    assert!(h.exists(MARKER));
    assert_eq!(h.s.poll_timeout(), None, "the delay's timer is gone");
    h.advance(DELAY);
    assert!(h.no_requests() && h.take_events().is_empty());
}

#[test]
fn a_lost_holder_leaves_its_marker() {
    let mut h = H::served(&["/d"]);
    let (id, node) = h.held_on(spec());
    h.disconnect();
    h.advance(Duration::from_secs(60));
    h.expect_events([
        LockEvent::Suspended,
        LockEvent::Lost(LostReason::SuspendedTooLong),
    ]);
    // The session turns out alive: the stale node goes, the marker stays.
    h.connect(h.sid);
    assert_eq!(ops(&h.serve()), vec![delete_of(&node)]);
    assert!(h.exists(MARKER));
    assert_eq!(h.s.state(id), None);
}

#[test]
fn a_release_whose_marker_is_gone_deletes_the_node_alone() {
    let mut h = H::served(&["/d"]);
    let (id, node) = h.held_on(spec());
    h.delete_node(MARKER);
    h.run(|s, now| s.release(id, now));
    let served = ops(&h.serve());
    assert!(matches!(served[0], Op::Multi(_)));
    assert_eq!(served[1..], [delete_of(&node)]);
    h.expect_events([LockEvent::Released]);
}

#[test]
fn a_try_lock_that_would_wait_out_a_delay_would_block() {
    let mut h = H::served(&["/d"]);
    marker_naming(&mut h, &peer(NodeKind::Write, 9, 4));
    h.acquire(spec().try_only());
    let served = ops(&h.serve());
    h.expect_events([LockEvent::Failed(FailReason::WouldBlock)]);
    assert!(matches!(served.last(), Some(Op::Delete { .. })));
    assert!(h.ours("/d").is_empty());
}

#[test]
fn a_zero_delay_is_no_delay() {
    let mut h = H::served(&["/d"]);
    let spec = LockSpec::write("/d").lock_delay(Duration::ZERO);
    assert_eq!(spec.lock_delay_duration(), None);
    // Held at the listing, with no marker request.
    h.held_on(spec);
    assert_eq!(h.s.stats().requests, 2);
    assert!(!h.exists(MARKER));
}

#[test]
fn a_disconnect_during_the_delay_keeps_its_start() {
    let (mut h, _, node, p) = waiting_behind();
    let seen = h.now;
    h.delete_node(&p);
    h.serve();
    h.disconnect();
    h.advance(Duration::from_secs(1));
    h.connect(h.sid);
    // Our node is checked again; the delay still ends where it did.
    assert!(matches!(&h.serve()[..], [r] if r.op.path() == node));
    assert!(h.no_requests() && h.take_events().is_empty());
    h.advance(seen + DELAY - h.now - Duration::from_millis(1));
    assert!(h.no_requests() && h.take_events().is_empty());
    h.advance(Duration::from_millis(1));
    // (The own-node read after the reconnect set no watch: nothing to remove.)
    assert!(matches!(&ops(&h.serve())[..], [Op::Multi(_)]));
    h.acquired();
}
