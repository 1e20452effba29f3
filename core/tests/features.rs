//! Revocation, election observers, crash-detecting sections, fenced writes, leases.

mod harness;
use harness::*;
use lock_core::*;
use std::time::Duration;

/// The revocation marker (Curator's word); the recipe doc's `unlock` works too.
const REVOKE: &[u8] = b"__REVOKE__";

/// The crash marker of a lock at `/s`.
const SECTION: &str = "/s/zkl-section";

#[test]
fn revocable_holder_is_asked_and_decides() {
    let (mut h, id, node) = H::holding(LockSpec::write("/v").revocable());
    h.set_node_data(&node, REVOKE);
    h.serve();
    h.expect_events([LockEvent::RevocationRequested]);
    assert_eq!(h.s.state(id), Some(LockState::Held), "the holder decides");
    // The recipe doc's `unlock` works too, once per change.
    h.set_node_data(&node, b"unlock");
    h.serve();
    h.expect_events([LockEvent::RevocationRequested]);
}

#[test]
fn non_revocable_holder_ignores_revocation() {
    // One that watches its node reads the marker and ignores it...
    let (mut h, _, node) = H::holding(LockSpec::write("/v").watch_node());
    h.set_node_data(&node, REVOKE);
    assert!(!h.serve().is_empty());
    assert!(h.take_events().is_empty());
    // ...a plain one set no watch: a firing handed to it is not its, and it reads
    // nothing.
    let (mut h, _, node) = H::holding(LockSpec::write("/v"));
    h.watch(&node, WatchKind::NodeDataChanged);
    assert!(h.take_events().is_empty());
    assert!(h.no_requests());
}

#[test]
fn revoke_by_lock_path_writes_the_marker_to_the_current_holders() {
    let mut h = H::served(&["/rw"]);
    let r1 = h.peer_joins("/rw", NodeKind::Read, 1);
    let r2 = h.peer_joins("/rw", NodeKind::Read, 2);
    let w = h.peer_joins("/rw", NodeKind::Write, 3);
    let r3 = h.peer_joins("/rw", NodeKind::Read, 4);
    let id = h.run(|s, now| s.revoke("/rw", now));
    h.serve();
    let marked = |h: &mut H, path: &str| h.zk().model.get(path).unwrap().data == REVOKE;
    assert!(
        marked(&mut h, &r1) && marked(&mut h, &r2),
        "both leading readers"
    );
    assert!(
        !marked(&mut h, &w) && !marked(&mut h, &r3),
        "not the writer or later reader"
    );
    match &h.events[..] {
        [(i, LockEvent::RevocationSent { nodes })] => {
            assert_eq!(*i, id);
            assert_eq!(nodes.len(), 2);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn revoke_by_node_path_targets_that_node() {
    let mut h = H::served(&["/l"]);
    let target = format!("/l/{}", peer(NodeKind::Write, 1, 7));
    h.run(|s, now| s.revoke(&target, now));
    assert!(matches!(&h.serve()[0].op, Op::SetData { path, .. } if *path == target));
    h.expect_events([LockEvent::RevocationSent { nodes: vec![] }]);
}

/// The leader's participant node in `/election`, with `id` as its data.
fn candidate(h: &mut H, n: u128, id: &[u8]) -> String {
    let prefix = names::node_prefix(NameScheme::Native, AttemptId(n), NodeKind::Leader);
    let peers = h.zk().peers;
    h.named_of(peers, "/election", &prefix, id)
}

/// An observer of `/election`, which is empty: it reports no leader, then lists
/// again with a child watch.
fn observing_empty_election() -> H {
    let mut h = H::served(&["/election"]);
    h.run(|s, now| s.observe("/election", now));
    h.serve_one();
    h.expect_events([LockEvent::LeaderChanged {
        leader: None,
        participants: 0,
    }]);
    // Nobody participates: the observer watches the children.
    assert_eq!(
        h.reqs[0].op,
        Op::WatchChildren {
            path: "/election".into()
        }
    );
    h
}

#[test]
fn observer_follows_leader_changes_and_waits_for_first_participant() {
    let mut h = observing_empty_election();
    h.serve();
    // Two join; the first one's firing brings a listing that shows both.
    let a = candidate(&mut h, 1, b"alpha");
    candidate(&mut h, 2, b"beta");
    let served = h.serve();
    assert_eq!(served[1].op, read_of(&a, true));
    let czxid = h.zk().model.stat(&a).unwrap().czxid;
    match &h.take_events()[..] {
        [LockEvent::LeaderChanged {
            leader: Some(l),
            participants: 2,
        }] => {
            assert_eq!(l.id, b"alpha");
            assert_eq!(l.token, FencingToken(czxid));
        }
        other => panic!("{other:?}"),
    }
    // The leader goes: re-list, b leads.
    h.delete_node(&a);
    h.serve();
    assert!(
        matches!(&h.take_events()[..], [LockEvent::LeaderChanged { leader: Some(l), .. }] if l.id == b"beta")
    );
    // A participant joining behind the leader wakes nobody: no watch covers it.
    candidate(&mut h, 3, b"gamma");
    assert!(h.no_requests());
}

/// The child watch an observer of an empty election set is removed once its
/// listing shows a participant, else one leader change would wake it twice.
#[test]
fn observer_removes_its_child_watch_once_someone_participates() {
    let mut h = observing_empty_election();
    let a = candidate(&mut h, 1, b"alpha");
    h.serve_one();
    assert_eq!(
        ops(&h.serve()),
        vec![
            Op::RemoveWatch {
                path: "/election".into(),
                watch: WatchType::Children
            },
            read_of(a, true)
        ]
    );
    let sid = h.sid;
    let child_watches = h.zk().model.watches_of(sid);
    assert!(
        !child_watches.contains(&(lock_sim::WatchType::Child, "/election".into())),
        "{child_watches:?}"
    );
}

/// Revoking a leader overwrites its node's data, its participant id; an id never
/// changes, so the observer ignores the data read again (no `LeaderChanged`).
#[test]
fn observer_keeps_the_leader_id_when_the_leader_is_asked_to_revoke() {
    let mut h = H::served(&["/election"]);
    let leader = candidate(&mut h, 7, b"alpha");
    h.run(|s, now| s.observe("/election", now));
    h.serve();
    assert!(
        matches!(&h.take_events()[..], [LockEvent::LeaderChanged { leader: Some(l), .. }] if l.id == b"alpha")
    );
    h.set_node_data(&leader, REVOKE);
    assert!(!h.serve().is_empty(), "the observer reads the data again");
    assert!(h.take_events().is_empty(), "the leader did not change");
}

#[test]
fn uncontended_grant_reports_a_crashed_section_for_free() {
    let mut h = H::served(&["/s", SECTION]);
    let (id, node) = h.served_acquire(LockSpec::write("/s").detect_crashes());
    let g = h.acquired();
    assert!(g.previous_holder_crashed);
    assert_eq!(h.s.stats().foreign_children, 0, "the marker is not foreign");
    assert_eq!(
        h.s.stats().requests,
        2,
        "no extra request on the uncontended path"
    );
    // The crashed holder's section is taken over (a create, then a set).
    h.run(|s, now| s.open_section(id, now));
    assert_eq!(h.serve().len(), 2);
    h.expect_events([LockEvent::SectionOpened]);
    // A clean release closes the section in the same multi as the delete.
    h.run(|s, now| s.release(id, now));
    assert_eq!(
        ops(&h.serve()),
        vec![Op::Multi(vec![
            multi_delete_of(SECTION),
            multi_delete_of(&node)
        ])]
    );
    h.expect_events([LockEvent::Released]);
    assert!(!h.exists(SECTION));
}

#[test]
fn contended_grant_checks_the_marker_before_reporting() {
    let mut h = H::served(&["/s"]);
    let p = h.peer_joins("/s", NodeKind::Write, 1);
    // The marker in this listing belongs to the live holder p: it says nothing yet.
    h.peer_creates(SECTION, &[], CreateMode::Persistent);
    h.served_acquire(LockSpec::write("/s").detect_crashes());
    // p releases cleanly: its marker goes with its node.
    h.delete_node(SECTION);
    h.delete_node(&p);
    assert!(
        h.take_events().is_empty(),
        "grant waits for the marker check"
    );
    assert_eq!(ops(&h.serve()), vec![read_of(SECTION, false)]);
    let g = h.acquired();
    assert!(!g.previous_holder_crashed);
}

#[test]
fn fenced_write_applies_while_held_and_reports_not_held_when_the_check_fails() {
    let mut h = H::served(&["/f", "/data"]);
    let (id, node) = h.held_on(LockSpec::write("/f"));
    let set = |version| MultiOp::SetData {
        path: "/data".into(),
        data: b"x".to_vec(),
        version,
    };
    let w = h.run(|s, now| s.fenced_write(id, vec![set(None)], now));
    assert_eq!(
        ops(&h.serve()),
        vec![Op::Multi(vec![
            MultiOp::Check {
                path: node.clone(),
                version: None
            },
            set(None)
        ])]
    );
    let stat = h.zk().model.stat("/data").unwrap();
    h.expect_events([LockEvent::FencedWrite {
        write: w,
        result: Ok(vec![MultiResult::SetData { stat }]),
    }]);
    // A failing user op is reported by its own index.
    let w = h.s.fenced_write(id, vec![set(Some(99))], h.now).unwrap();
    h.drain();
    h.serve();
    h.expect_events([LockEvent::FencedWrite {
        write: w,
        result: Err(FencedError::Write {
            index: 0,
            error: ZkError::BadVersion,
        }),
    }]);
    // The node is gone (an admin): the check fails, nothing written, the lock is lost.
    h.delete_node(&node);
    let w = h.run(|s, now| s.fenced_write(id, vec![set(None)], now));
    h.serve();
    h.expect_events([
        LockEvent::FencedWrite {
            write: w,
            result: Err(FencedError::NotHeld),
        },
        LockEvent::Lost(LostReason::NodeDeleted),
    ]);
    assert_eq!(h.zk().model.stat("/data").unwrap(), stat, "nothing written");
}

/// An `open_section` in flight at a disconnect is sent again (idempotent,
/// fenced) once the node is verified, and a release meanwhile treats the section
/// as possibly open: else the marker stays and the next grant reports a crash.
#[test]
fn section_call_in_flight_at_a_disconnect_is_not_forgotten() {
    let (mut h, id, _) = H::holding(LockSpec::write("/s").detect_crashes());
    h.run(|s, now| s.open_section(id, now));
    // The server applies the open; its reply is lost with the connection.
    assert!(matches!(&h.apply_unanswered().op, Op::Multi(ops) if ops.len() == 2));
    h.reconnect();
    h.serve();
    h.expect_events([
        LockEvent::Suspended,
        LockEvent::Resumed,
        LockEvent::SectionOpened,
    ]);
    // A clean release closes the section in the same multi as the delete.
    h.run(|s, now| s.release(id, now));
    let release = ops(&h.serve());
    assert!(
        matches!(&release[..], [Op::Multi(ops)] if ops.iter().any(
            |o| matches!(o, MultiOp::Delete { path, .. } if path == SECTION))),
        "the marker stays, the next grant reports a crash: {release:?}"
    );
    h.expect_events([LockEvent::Released]);
    assert!(!h.exists(SECTION));
}

/// A fenced write unanswered when the own-node watch reports the node deleted
/// could not have applied (a session's replies and firings come in one stream:
/// its `check` failed): `NotHeld`.
#[test]
fn write_in_flight_when_the_node_is_deleted_is_reported_not_held() {
    let mut h = H::served(&["/f", "/data"]);
    let (id, node) = h.held_on(LockSpec::write("/f").watch_node());
    let set = MultiOp::SetData {
        path: "/data".into(),
        data: b"100".to_vec(),
        version: None,
    };
    let w = h.run(|s, now| s.fenced_write(id, vec![set], now));
    // An administrator deletes our node; the firing comes before the write's reply.
    h.delete_node(&node);
    h.expect_events([
        LockEvent::FencedWrite {
            write: w,
            result: Err(FencedError::NotHeld),
        },
        LockEvent::Lost(LostReason::NodeDeleted),
    ]);
}

#[test]
fn writes_in_flight_when_the_connection_drops_are_reported_unknown() {
    let (mut h, id, _) = H::holding(LockSpec::write("/f"));
    let w = h.run(|s, now| s.fenced_write(id, vec![], now));
    h.disconnect();
    h.expect_events([
        LockEvent::FencedWrite {
            write: w,
            result: Err(FencedError::Unknown(ZkError::ConnectionLoss)),
        },
        LockEvent::Suspended,
    ]);
}

#[test]
fn lease_expires_after_max_hold_and_deletes_the_node() {
    let (mut h, _, node) = H::holding(LockSpec::write("/lease").max_hold(Duration::from_secs(5)));
    h.advance(Duration::from_millis(4999));
    assert!(h.take_events().is_empty());
    h.advance(Duration::from_millis(1));
    h.expect_events([LockEvent::Lost(LostReason::LeaseExpired)]);
    assert_eq!(ops(&h.serve()), vec![delete_of(&node)]);
}

#[test]
fn a_lasting_section_refusal_is_reported_not_retried_forever() {
    let (mut h, id, _) = H::holding(LockSpec::write("/f").detect_crashes());
    h.run(|s, now| s.open_section(id, now));
    let r = h.next_req();
    assert!(matches!(r.op, Op::Multi(_)));
    h.reply(
        r.id,
        Err(ZkError::MultiFailed {
            index: 1,
            error: Box::new(ZkError::NoAuth),
        }),
    );
    h.expect_events([LockEvent::SectionFailed(ZkError::NoAuth)]);
    h.advance(Duration::from_secs(5));
    assert!(h.no_requests(), "no retry loop");
}

/// Letting go inside an open section (a guard dropped there) deletes the node
/// alone: the marker stays for the next holder, as after a crash. Outside a
/// section, abandoning is a release.
#[test]
fn abandon_inside_a_section_leaves_the_marker() {
    for in_section in [true, false] {
        let (mut h, id, node) = H::holding(LockSpec::write("/s").detect_crashes());
        if in_section {
            h.run(|s, now| s.open_section(id, now));
            h.serve();
            h.expect_events([LockEvent::SectionOpened]);
        }
        h.run(|s, now| s.abandon(id, now));
        assert_eq!(
            ops(&h.serve()),
            vec![delete_of(&node)],
            "in section: {in_section}"
        );
        h.expect_events([LockEvent::Released]);
        assert_eq!(h.exists(SECTION), in_section, "the marker is left alone");
        assert_eq!(h.s.abandon(id, h.now), Err(UsageError::UnknownLock(id)));
    }
}
