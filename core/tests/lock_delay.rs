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

/// Expects the marker's create (checking `node`) and answers it with `result`.
fn answer_marker_create(h: &mut H, node: &str, result: Result<Reply, ZkError>) {
    let r = h.next_req();
    assert_eq!(
        r.op,
        Op::Multi(vec![
            MultiOp::Check {
                path: node.to_owned(),
                version: None
            },
            MultiOp::Create {
                path: MARKER.into(),
                data: name_of(node).into_bytes(),
                mode: CreateMode::Persistent
            },
        ])
    );
    h.reply(r.id, result);
}

fn created() -> Result<Reply, ZkError> {
    Ok(Reply::Multi(vec![
        MultiResult::Checked,
        MultiResult::Created {
            path: MARKER.into(),
        },
    ]))
}

fn exists() -> Result<Reply, ZkError> {
    Err(ZkError::MultiFailed {
        index: 1,
        error: Box::new(ZkError::NodeExists),
    })
}

/// Expects the marker's read and answers it with `owner` (a node name) as data.
fn answer_marker_read(h: &mut H, owner: &str) {
    let r = h.next_req();
    assert_eq!(
        r.op,
        Op::GetData {
            path: MARKER.into(),
            watch: false
        }
    );
    h.reply(
        r.id,
        Ok(Reply::Data {
            data: owner.as_bytes().to_vec(),
            stat: Stat::default(),
        }),
    );
}

/// Expects the take-over of the marker (checking `node`) and answers it.
fn answer_take_over(h: &mut H, node: &str) {
    let r = h.next_req();
    assert_eq!(
        r.op,
        Op::Multi(vec![
            MultiOp::Check {
                path: node.to_owned(),
                version: None
            },
            MultiOp::SetData {
                path: MARKER.into(),
                data: name_of(node).into_bytes(),
                version: None
            },
        ])
    );
    h.reply(
        r.id,
        Ok(Reply::Multi(vec![
            MultiResult::Checked,
            MultiResult::SetData {
                stat: Stat::default(),
            },
        ])),
    );
}

/// A lock-delay waiter (seq 3) behind the holder `p` (seq 1); returns (id, our node, p's path).
fn waiting_behind(h: &mut H) -> (LockId, String, String) {
    let id = h.acquire(spec());
    let node = h.answer_create(3);
    let p = peer(NodeKind::Write, 1, 1);
    h.answer_list(&[&p, "zkl-delay", &name_of(&node)]);
    h.answer_data(&node, SID);
    let ppath = format!("/d/{p}");
    h.answer_data(&ppath, 4);
    assert!(h.take_events().is_empty());
    assert!(h.no_requests());
    (id, node, ppath)
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
    let mut h = H::new();
    let id = h.acquire(spec());
    let node = h.answer_create(0);
    h.answer_list(&[&name_of(&node)]);
    assert!(h.take_events().is_empty(), "no grant before the marker");
    answer_marker_create(&mut h, &node, created());
    assert!(matches!(h.take_events()[..], [LockEvent::Acquired(_)]));
    assert!(delays(&h).is_empty());
    assert!(h.no_requests());
    h.s.release(id, h.now).unwrap();
    h.drain();
    let r = h.next_req();
    assert_eq!(
        r.op,
        Op::Multi(vec![
            MultiOp::Delete {
                path: MARKER.into(),
                version: None
            },
            MultiOp::Delete {
                path: node,
                version: None
            },
        ]),
        "a clean release deletes the marker with the node"
    );
    h.reply(
        r.id,
        Ok(Reply::Multi(vec![
            MultiResult::Deleted,
            MultiResult::Deleted,
        ])),
    );
    assert_eq!(h.take_events(), vec![LockEvent::Released]);
}

#[test]
fn after_an_unclean_end_the_grant_comes_exactly_the_delay_after_the_waiter_saw_it() {
    let mut h = H::new();
    let (_, node, ppath) = waiting_behind(&mut h);
    h.advance(Duration::from_secs(30));
    let seen = h.now;
    // The holder's session expired: its node goes, its marker stays.
    h.watch(&ppath, WatchKind::NodeDeleted);
    answer_marker_create(&mut h, &node, exists());
    // The replies take time; the delay counts from the deletion seen.
    h.advance(Duration::from_millis(7));
    answer_marker_read(&mut h, &name_of(&ppath));
    assert_eq!(delays(&h), vec![(node.clone(), seen + DELAY)]);
    assert!(h.take_events().is_empty());
    assert!(h.no_requests(), "nothing is sent while the delay runs");
    assert_eq!(h.s.poll_timeout(), Some(seen + DELAY));
    h.advance(DELAY - Duration::from_millis(8));
    assert!(h.no_requests() && h.take_events().is_empty());
    h.advance(Duration::from_millis(1));
    assert_eq!(h.now, seen + DELAY);
    answer_take_over(&mut h, &node);
    assert!(h.no_requests(), "{:?} ({node})", h.reqs);
    assert!(matches!(h.take_events()[..], [LockEvent::Acquired(_)]));
    assert_eq!(h.s.stats().lock_delays, 1);
}

#[test]
fn after_a_clean_release_the_grant_is_not_delayed() {
    let mut h = H::new();
    let (_, node, ppath) = waiting_behind(&mut h);
    // The holder's clean release deleted the marker with its node.
    h.watch(&ppath, WatchKind::NodeDeleted);
    answer_marker_create(&mut h, &node, created());
    assert!(h.no_requests(), "{:?} ({node})", h.reqs);
    assert!(matches!(h.take_events()[..], [LockEvent::Acquired(_)]));
    assert!(delays(&h).is_empty());
    assert_eq!(h.s.stats().lock_delays, 0);
}

#[test]
fn a_newcomer_finding_a_stale_marker_waits_from_its_own_look() {
    let mut h = H::new();
    h.advance(Duration::from_secs(3));
    h.acquire(spec());
    let node = h.answer_create(5);
    h.advance(Duration::from_millis(2));
    let looked = h.now;
    h.answer_list(&["zkl-delay", &name_of(&node)]);
    answer_marker_create(&mut h, &node, exists());
    answer_marker_read(&mut h, &peer(NodeKind::Write, 9, 4));
    assert_eq!(delays(&h), vec![(node.clone(), looked + DELAY)]);
    assert_eq!(h.s.stats().foreign_children, 0, "the marker is not foreign");
    h.advance(DELAY - Duration::from_millis(1));
    assert!(h.no_requests() && h.take_events().is_empty());
    h.advance(Duration::from_millis(1));
    answer_take_over(&mut h, &node);
    assert!(matches!(h.take_events()[..], [LockEvent::Acquired(_)]));
}

#[test]
fn a_marker_naming_our_own_node_is_ours() {
    // Our create of the marker went through but its reply was lost with the
    // connection: after the reconnect the marker names our node.
    let mut h = H::new();
    h.acquire(spec());
    let node = h.answer_create(0);
    h.answer_list(&[&name_of(&node)]);
    answer_marker_create(&mut h, &node, exists());
    answer_marker_read(&mut h, &name_of(&node));
    assert!(matches!(h.take_events()[..], [LockEvent::Acquired(_)]));
    assert!(delays(&h).is_empty());
}

#[test]
fn cancel_during_the_delay_deletes_our_node_and_leaves_the_marker() {
    let mut h = H::new();
    let (id, node, ppath) = waiting_behind(&mut h);
    h.watch(&ppath, WatchKind::NodeDeleted);
    answer_marker_create(&mut h, &node, exists());
    answer_marker_read(&mut h, &name_of(&ppath));
    h.advance(Duration::from_secs(1));
    h.s.cancel(id, h.now).unwrap();
    h.drain();
    assert_eq!(
        h.take_events(),
        vec![LockEvent::Failed(FailReason::Cancelled)]
    );
    let r = h.next_req();
    assert_eq!(
        r.op,
        Op::Delete {
            path: node,
            version: None
        },
        "our node only: the crashed holder's marker stays for the next one"
    );
    h.reply(r.id, Ok(Reply::Deleted));
    assert!(h.no_requests());
    assert_eq!(h.s.poll_timeout(), None, "the delay's timer is gone");
    h.advance(DELAY);
    assert!(h.no_requests() && h.take_events().is_empty());
}

#[test]
fn a_lost_holder_leaves_its_marker() {
    let mut h = H::new();
    let id = h.acquire(spec());
    let node = h.answer_create(0);
    h.answer_list(&[&name_of(&node)]);
    answer_marker_create(&mut h, &node, created());
    assert!(matches!(h.take_events()[..], [LockEvent::Acquired(_)]));
    h.session(SessionEvent::Disconnected {
        since_contact: Duration::ZERO,
    });
    h.advance(Duration::from_secs(60));
    assert_eq!(
        h.take_events(),
        vec![
            LockEvent::Suspended,
            LockEvent::Lost(LostReason::SuspendedTooLong)
        ]
    );
    // The session turns out alive: the stale node goes, the marker stays.
    h.session(SessionEvent::Connected { session_id: SID });
    let r = h.next_req();
    assert_eq!(
        r.op,
        Op::Delete {
            path: node,
            version: None
        }
    );
    h.reply(r.id, Ok(Reply::Deleted));
    assert_eq!(h.s.state(id), None);
}

#[test]
fn a_release_whose_marker_is_gone_deletes_the_node_alone() {
    let mut h = H::new();
    let id = h.acquire(spec());
    let node = h.answer_create(0);
    h.answer_list(&[&name_of(&node)]);
    answer_marker_create(&mut h, &node, created());
    h.take_events();
    h.s.release(id, h.now).unwrap();
    h.drain();
    let r = h.next_req();
    h.reply(
        r.id,
        Err(ZkError::MultiFailed {
            index: 0,
            error: Box::new(ZkError::NoNode),
        }),
    );
    let r = h.next_req();
    assert_eq!(
        r.op,
        Op::Delete {
            path: node,
            version: None
        }
    );
    h.reply(r.id, Ok(Reply::Deleted));
    assert_eq!(h.take_events(), vec![LockEvent::Released]);
}

#[test]
fn a_try_lock_that_would_wait_out_a_delay_would_block() {
    let mut h = H::new();
    h.acquire(spec().try_only());
    let node = h.answer_create(0);
    h.answer_list(&["zkl-delay", &name_of(&node)]);
    answer_marker_create(&mut h, &node, exists());
    answer_marker_read(&mut h, &peer(NodeKind::Write, 9, 4));
    assert_eq!(
        h.take_events(),
        vec![LockEvent::Failed(FailReason::WouldBlock)]
    );
    let r = h.next_req();
    assert_eq!(
        r.op,
        Op::Delete {
            path: node,
            version: None
        }
    );
}

#[test]
fn a_zero_delay_is_no_delay() {
    let mut h = H::new();
    let spec = LockSpec::write("/d").lock_delay(Duration::ZERO);
    assert_eq!(spec.lock_delay_duration(), None);
    // Held at the listing, with no marker request.
    h.held_spec(spec, 0);
}

#[test]
fn lock_delay_is_refused_on_shared_recipes() {
    let mut h = H::new();
    for spec in [LockSpec::read("/d"), LockSpec::semaphore("/d", 3)] {
        assert!(matches!(
            h.s.acquire(spec.lock_delay(DELAY), h.now),
            Err(UsageError::Unsupported(_))
        ));
    }
}

/// go-zookeeper's `Lock` fails on a child whose name does not end in a number,
/// so the markers of lock-delay and crash detection are refused in its layout.
#[test]
fn markers_are_refused_in_go_zookeepers_layout() {
    let mut h = H::new();
    let go = LockSpec::exclusive("/d").scheme(NameScheme::Go);
    for spec in [go.clone().lock_delay(DELAY), go.clone().detect_crashes()] {
        assert!(matches!(
            h.s.acquire(spec, h.now),
            Err(UsageError::Unsupported(why)) if why.contains("go-zookeeper")
        ));
    }
    assert!(h.s.acquire(go, h.now).is_ok(), "the plain mutex is fine");
}

#[test]
fn a_disconnect_during_the_delay_keeps_its_start() {
    let mut h = H::new();
    let (_, node, ppath) = waiting_behind(&mut h);
    let seen = h.now;
    h.watch(&ppath, WatchKind::NodeDeleted);
    answer_marker_create(&mut h, &node, exists());
    answer_marker_read(&mut h, &name_of(&ppath));
    h.session(SessionEvent::Disconnected {
        since_contact: Duration::ZERO,
    });
    h.advance(Duration::from_secs(1));
    h.session(SessionEvent::Connected { session_id: SID });
    // Our node is checked again; the delay still ends where it did.
    h.answer_data(&node, SID);
    assert!(h.no_requests() && h.take_events().is_empty());
    h.advance(seen + DELAY - h.now - Duration::from_millis(1));
    assert!(h.no_requests() && h.take_events().is_empty());
    h.advance(Duration::from_millis(1));
    // (The own-node read after the reconnect set no watch: nothing to remove.)
    answer_take_over(&mut h, &node);
    assert!(matches!(h.take_events()[..], [LockEvent::Acquired(_)]));
}
