//! Revocation, election observers, crash-detecting sections, fenced writes, leases.

mod harness;
use harness::*;
use lock_core::*;
use std::time::Duration;

fn own_data(h: &mut H, node: &str, data: &[u8]) {
    h.watch(node, WatchKind::NodeDataChanged);
    let r = h.next_req();
    assert_eq!(
        r.op,
        Op::GetData {
            path: node.to_owned(),
            watch: true
        }
    );
    let stat = Stat {
        ephemeral_owner: SID,
        ..Stat::default()
    };
    h.reply(
        r.id,
        Ok(Reply::Data {
            data: data.to_vec(),
            stat,
        }),
    );
}

#[test]
fn revocable_holder_is_asked_and_decides() {
    let mut h = H::new();
    let (id, node) = h.held_spec(LockSpec::write("/v").revocable(), 0);
    own_data(&mut h, &node, b"__REVOKE__");
    assert_eq!(h.take_events(), vec![LockEvent::RevocationRequested]);
    assert_eq!(h.s.state(id), Some(LockState::Held), "the holder decides");
    // The recipe doc's `unlock` works too, once per change.
    own_data(&mut h, &node, b"unlock");
    assert_eq!(h.take_events(), vec![LockEvent::RevocationRequested]);
}

#[test]
fn non_revocable_holder_ignores_revocation() {
    // One that watches its node reads the marker and ignores it...
    let mut h = H::new();
    let (_, node) = h.held_spec(LockSpec::write("/v").watch_node(), 0);
    own_data(&mut h, &node, b"__REVOKE__");
    assert!(h.take_events().is_empty());
    // ...a plain one set no watch: the firing is not its, and it reads nothing.
    let mut h = H::new();
    let (_, node) = h.held_spec(LockSpec::write("/v"), 0);
    h.watch(&node, WatchKind::NodeDataChanged);
    assert!(h.take_events().is_empty());
    assert!(h.no_requests());
}

#[test]
fn revoked_waiter_gives_up_with_a_typed_error_and_leaves() {
    let mut h = H::new();
    h.acquire(LockSpec::write("/v").revocable());
    let node = h.answer_create(2);
    let p = peer(NodeKind::Write, 1, 1);
    h.answer_list(&[&p, &name_of(&node)]);
    h.answer_data(&node, SID);
    h.answer_data(&format!("/v/{p}"), 3);
    own_data(&mut h, &node, b"__REVOKE__");
    assert_eq!(
        h.take_events(),
        vec![LockEvent::Failed(FailReason::Revoked)]
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
fn revoke_by_lock_path_writes_the_marker_to_the_current_holders() {
    let mut h = H::new();
    let id = h.s.revoke("/rw", h.now).unwrap();
    h.drain();
    let r1 = peer(NodeKind::Read, 1, 1);
    let r2 = peer(NodeKind::Read, 2, 2);
    let w = peer(NodeKind::Write, 3, 3);
    let r3 = peer(NodeKind::Read, 4, 4);
    h.answer_list(&[&w, &r3, &r2, &r1]);
    let mut set = vec![];
    while let Some(r) = h.reqs.pop_front() {
        let Op::SetData { path, data, .. } = &r.op else {
            panic!("{:?}", r.op)
        };
        assert_eq!(data, b"__REVOKE__");
        set.push(path.clone());
        h.reply(r.id, Ok(Reply::Stat(Stat::default())));
    }
    set.sort();
    let mut expect = vec![format!("/rw/{r1}"), format!("/rw/{r2}")];
    expect.sort();
    assert_eq!(
        set, expect,
        "both leading readers, not the writer or later reader"
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
    let mut h = H::new();
    let target = format!("/l/{}", peer(NodeKind::Write, 1, 7));
    h.s.revoke(&target, h.now).unwrap();
    h.drain();
    let r = h.next_req();
    assert!(matches!(&r.op, Op::SetData { path, .. } if *path == target));
    h.reply(r.id, Err(ZkError::NoNode));
    assert_eq!(
        h.take_events(),
        vec![LockEvent::RevocationSent { nodes: vec![] }]
    );
}

/// An observer of `/election`, which is empty: it reports no leader and lists with
/// a child watch (the request returned).
fn observing_empty_election(h: &mut H) -> Request {
    h.s.observe("/election", h.now).unwrap();
    h.drain();
    h.answer_list(&[]);
    assert_eq!(
        h.take_events(),
        vec![LockEvent::LeaderChanged {
            leader: None,
            participants: 0
        }]
    );
    // Nobody participates: the observer watches the children.
    let r = h.next_req();
    assert_eq!(
        r.op,
        Op::WatchChildren {
            path: "/election".into()
        }
    );
    r
}

#[test]
fn observer_follows_leader_changes_and_waits_for_first_participant() {
    let mut h = H::new();
    let r = observing_empty_election(&mut h);
    h.reply(r.id, Ok(Reply::Children(vec![])));
    assert!(h.no_requests());
    h.watch("/election", WatchKind::NodeChildrenChanged);
    let a = peer(NodeKind::Leader, 1, 4);
    let b = peer(NodeKind::Leader, 2, 5);
    h.answer_list(&[&b, &a]);
    let r = h.next_req();
    assert_eq!(
        r.op,
        Op::GetData {
            path: format!("/election/{a}"),
            watch: true
        }
    );
    let stat = Stat {
        czxid: 9,
        ..Stat::default()
    };
    h.reply(
        r.id,
        Ok(Reply::Data {
            data: b"alpha".to_vec(),
            stat,
        }),
    );
    match &h.take_events()[..] {
        [LockEvent::LeaderChanged {
            leader: Some(l),
            participants: 2,
        }] => {
            assert_eq!(l.id, b"alpha");
            assert_eq!(l.token, FencingToken(9));
        }
        other => panic!("{other:?}"),
    }
    // The leader goes: re-list, b leads.
    h.watch(&format!("/election/{a}"), WatchKind::NodeDeleted);
    h.answer_list(&[&b]);
    let r = h.next_req();
    h.reply(
        r.id,
        Ok(Reply::Data {
            data: b"beta".to_vec(),
            stat,
        }),
    );
    assert!(
        matches!(&h.take_events()[..], [LockEvent::LeaderChanged { leader: Some(l), .. }] if l.id == b"beta")
    );
    // A participant joining behind the leader wakes nobody: no watch covers it.
    assert!(h.no_requests());
}

/// The directory was empty, so the observer set a child watch; the watched listing
/// already shows a participant: the child watch is removed from the server, else
/// it would fire at the next join or leave, and one leader change would wake the
/// observer twice (lock-sim's seed 410246 of `election_with_observers`).
#[test]
fn observer_removes_its_child_watch_once_someone_participates() {
    let mut h = H::new();
    let r = observing_empty_election(&mut h);
    let a = peer(NodeKind::Leader, 1, 4);
    h.reply(r.id, Ok(Reply::Children(vec![a.clone()])));
    let remove = h.next_req();
    assert_eq!(
        remove.op,
        Op::RemoveWatch {
            path: "/election".into(),
            watch: WatchType::Children
        }
    );
    let read = h.next_req();
    assert_eq!(
        read.op,
        Op::GetData {
            path: format!("/election/{a}"),
            watch: true
        }
    );
    h.reply(remove.id, Ok(Reply::WatchRemoved));
    assert!(h.no_requests());
}

#[test]
fn uncontended_grant_reports_a_crashed_section_for_free() {
    let mut h = H::new();
    let id = h.acquire(LockSpec::write("/s").detect_crashes());
    let node = h.answer_create(3);
    h.answer_list(&["zkl-section", &name_of(&node)]);
    match &h.take_events()[..] {
        [LockEvent::Acquired(g)] => assert!(g.previous_holder_crashed),
        other => panic!("{other:?}"),
    }
    assert_eq!(h.s.stats().foreign_children, 0, "the marker is not foreign");
    assert!(h.no_requests(), "no extra request on the uncontended path");
    // Take over the crashed holder's section: create fails, set it instead.
    h.s.open_section(id, h.now).unwrap();
    h.drain();
    let r = h.next_req();
    let Op::Multi(ops) = &r.op else { panic!() };
    assert!(matches!(&ops[0], MultiOp::Check { path, .. } if *path == node));
    assert!(
        matches!(&ops[1], MultiOp::Create { path, mode: CreateMode::Persistent, .. } if path == "/s/zkl-section")
    );
    h.reply(
        r.id,
        Err(ZkError::MultiFailed {
            index: 1,
            error: Box::new(ZkError::NodeExists),
        }),
    );
    let r = h.next_req();
    let Op::Multi(ops) = &r.op else { panic!() };
    assert!(matches!(&ops[1], MultiOp::SetData { .. }));
    h.reply(
        r.id,
        Ok(Reply::Multi(vec![
            MultiResult::Checked,
            MultiResult::SetData {
                stat: Stat::default(),
            },
        ])),
    );
    assert_eq!(h.take_events(), vec![LockEvent::SectionOpened]);
    // A clean release closes the section in the same multi as the delete.
    h.s.release(id, h.now).unwrap();
    h.drain();
    let r = h.next_req();
    assert_eq!(
        r.op,
        Op::Multi(vec![
            MultiOp::Delete {
                path: "/s/zkl-section".into(),
                version: None
            },
            MultiOp::Delete {
                path: node,
                version: None
            },
        ])
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
fn contended_grant_checks_the_marker_before_reporting() {
    let mut h = H::new();
    h.acquire(LockSpec::write("/s").detect_crashes());
    let node = h.answer_create(3);
    let p = peer(NodeKind::Write, 1, 1);
    // The marker in this listing belongs to the live holder p: it says nothing yet.
    h.answer_list(&[&p, "zkl-section", &name_of(&node)]);
    h.answer_data(&node, SID);
    h.answer_data(&format!("/s/{p}"), 4);
    h.watch(&format!("/s/{p}"), WatchKind::NodeDeleted);
    assert!(
        h.take_events().is_empty(),
        "grant waits for the marker check"
    );
    let r = h.next_req();
    assert_eq!(
        r.op,
        Op::GetData {
            path: "/s/zkl-section".into(),
            watch: false
        }
    );
    h.reply(r.id, Err(ZkError::NoNode)); // p released cleanly
    match &h.take_events()[..] {
        [LockEvent::Acquired(g)] => assert!(!g.previous_holder_crashed),
        other => panic!("{other:?}"),
    }
}

#[test]
fn crash_detection_is_refused_on_shared_recipes() {
    let mut h = H::new();
    assert!(matches!(
        h.s.acquire(LockSpec::read("/s").detect_crashes(), h.now),
        Err(UsageError::Unsupported(_))
    ));
}

#[test]
fn fenced_write_applies_while_held_and_reports_not_held_when_the_check_fails() {
    let mut h = H::new();
    let (id, node) = h.held_spec(LockSpec::write("/f"), 0);
    let set = MultiOp::SetData {
        path: "/data".into(),
        data: b"x".to_vec(),
        version: None,
    };
    let w = h.s.fenced_write(id, vec![set.clone()], h.now).unwrap();
    h.drain();
    let r = h.next_req();
    assert_eq!(
        r.op,
        Op::Multi(vec![
            MultiOp::Check {
                path: node.clone(),
                version: None
            },
            set.clone()
        ])
    );
    let st = MultiResult::SetData {
        stat: Stat::default(),
    };
    h.reply(
        r.id,
        Ok(Reply::Multi(vec![MultiResult::Checked, st.clone()])),
    );
    assert_eq!(
        h.take_events(),
        vec![LockEvent::FencedWrite {
            write: w,
            result: Ok(vec![st])
        }]
    );
    // A failing user op is reported by its own index.
    let w = h.s.fenced_write(id, vec![set.clone()], h.now).unwrap();
    h.drain();
    let r = h.next_req();
    h.reply(
        r.id,
        Err(ZkError::MultiFailed {
            index: 1,
            error: Box::new(ZkError::BadVersion),
        }),
    );
    assert_eq!(
        h.take_events(),
        vec![LockEvent::FencedWrite {
            write: w,
            result: Err(FencedError::Write {
                index: 0,
                error: ZkError::BadVersion
            })
        }]
    );
    // The node is gone (an admin): the check fails, nothing written, the lock is lost.
    let w = h.s.fenced_write(id, vec![set], h.now).unwrap();
    h.drain();
    let r = h.next_req();
    h.reply(
        r.id,
        Err(ZkError::MultiFailed {
            index: 0,
            error: Box::new(ZkError::NoNode),
        }),
    );
    assert_eq!(
        h.take_events(),
        vec![
            LockEvent::FencedWrite {
                write: w,
                result: Err(FencedError::NotHeld)
            },
            LockEvent::Lost(LostReason::NodeDeleted)
        ]
    );
}

#[test]
fn fenced_write_is_refused_unless_held_and_connected() {
    let mut h = H::new();
    let (id, _) = h.held_spec(LockSpec::write("/f"), 0);
    h.session(SessionEvent::Disconnected {
        since_contact: Duration::ZERO,
    });
    assert_eq!(
        h.s.fenced_write(id, vec![], h.now),
        Err(UsageError::NotHeld(id))
    );
}

#[test]
fn writes_in_flight_when_the_connection_drops_are_reported_unknown() {
    let mut h = H::new();
    let (id, _) = h.held_spec(LockSpec::write("/f"), 0);
    let w = h.s.fenced_write(id, vec![], h.now).unwrap();
    h.drain();
    h.session(SessionEvent::Disconnected {
        since_contact: Duration::ZERO,
    });
    assert_eq!(
        h.take_events(),
        vec![
            LockEvent::FencedWrite {
                write: w,
                result: Err(FencedError::Unknown(ZkError::ConnectionLoss))
            },
            LockEvent::Suspended
        ]
    );
}

#[test]
fn lease_expires_after_max_hold_and_deletes_the_node() {
    let mut h = H::new();
    let (_, node) = h.held_spec(
        LockSpec::write("/lease").max_hold(Duration::from_secs(5)),
        0,
    );
    h.advance(Duration::from_millis(4999));
    assert!(h.take_events().is_empty());
    h.advance(Duration::from_millis(1));
    assert_eq!(
        h.take_events(),
        vec![LockEvent::Lost(LostReason::LeaseExpired)]
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
fn a_lasting_section_refusal_is_reported_not_retried_forever() {
    let mut h = H::new();
    let (id, _) = h.held_spec(LockSpec::write("/f").detect_crashes(), 0);
    h.s.open_section(id, h.now).unwrap();
    h.drain();
    let r = h.next_req();
    assert!(matches!(r.op, Op::Multi(_)));
    h.reply(
        r.id,
        Err(ZkError::MultiFailed {
            index: 1,
            error: Box::new(ZkError::NoAuth),
        }),
    );
    assert_eq!(
        h.take_events(),
        vec![LockEvent::SectionFailed(ZkError::NoAuth)]
    );
    h.advance(Duration::from_secs(5));
    assert!(h.no_requests(), "no retry loop");
}

/// Letting go inside an open section (a guard dropped there) deletes the node
/// alone: the marker stays for the next holder, as after a crash. Outside a
/// section, abandoning is a release.
#[test]
fn abandon_inside_a_section_leaves_the_marker() {
    for in_section in [true, false] {
        let mut h = H::new();
        let (id, node) = h.held_spec(LockSpec::write("/s").detect_crashes(), 3);
        if in_section {
            h.s.open_section(id, h.now).unwrap();
            h.drain();
            let r = h.next_req();
            h.reply(
                r.id,
                Ok(Reply::Multi(vec![
                    MultiResult::Checked,
                    MultiResult::Created {
                        path: "/s/zkl-section".into(),
                    },
                ])),
            );
            assert_eq!(h.take_events(), vec![LockEvent::SectionOpened]);
        }
        h.s.abandon(id, h.now).unwrap();
        h.drain();
        let r = h.next_req();
        assert_eq!(
            r.op,
            Op::Delete {
                path: node,
                version: None
            },
            "in section: {in_section}"
        );
        h.reply(r.id, Ok(Reply::Deleted));
        assert_eq!(h.take_events(), vec![LockEvent::Released]);
        assert!(h.no_requests(), "the marker is left alone");
        assert_eq!(h.s.abandon(id, h.now), Err(UsageError::UnknownLock(id)));
    }
}
