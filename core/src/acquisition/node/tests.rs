use super::*;
use crate::ids::LockId;
use crate::proto::Op;
use crate::requests::Purpose;

#[test]
fn forget_leaves_what_may_have_been_applied_unknown() {
    let mut session = crate::ctx::tests::CtxParts::default();
    let lock = LockId(1);
    let mut node = Node::new(AttemptId(7));
    node.create = Create::InFlight(RequestId(1));
    node.own = Some(OwnNode {
        path: "/l/n-0000000001".into(),
        seq: 1,
        stat: None,
    });
    let read = Op::GetData {
        path: "/l/n-0000000001".into(),
        watch: true,
    };
    let delete = Op::Delete {
        path: "/l/n-0000000001".into(),
        version: None,
    };
    assert!(node
        .own_read
        .send(&mut session.cx(), lock, Purpose::OwnData, read));
    node.own_watched = true;
    assert!(node
        .delete
        .send(&mut session.cx(), lock, Purpose::DeleteOwn, delete));
    node.forget();
    assert_eq!(node.create, Create::Unknown);
    assert!(!node.own_read.is_pending() && !node.own_watched);
    assert!(!node.delete.is_pending());
    assert!(
        node.delete_maybe_applied,
        "a delete in flight may have been applied"
    );
    assert_eq!(
        node.path(),
        Some("/l/n-0000000001"),
        "the node itself is kept"
    );
    // Nothing in flight: forgetting again changes nothing.
    node.delete_maybe_applied = false;
    node.create = Create::Done;
    node.forget();
    assert!(!node.delete_maybe_applied);
    assert_eq!(node.create, Create::Done);
}

fn sent(session: &mut crate::ctx::tests::CtxParts) -> Vec<(RequestId, Op)> {
    session.sent().into_iter().map(|r| (r.id, r.op)).collect()
}

#[test]
fn a_create_reply_names_our_node_and_a_stale_or_strange_one_does_not() {
    let mut session = crate::ctx::tests::CtxParts::default();
    let lock = LockId(1);
    let spec = LockSpec::write("/l");
    let mut node = Node::new(AttemptId(7));
    assert!(node.send_create(&mut session.cx(), lock, &spec, "/l/n-".into()));
    let (request, op) = sent(&mut session).remove(0);
    assert!(matches!(
        op,
        Op::Create { ref path, mode: CreateMode::EphemeralSequential, .. } if path == "/l/n-"
    ));
    let created = |path: &str| {
        Ok(Reply::Created {
            path: path.into(),
            stat: None,
        })
    };
    let stale = node.on_create_reply(
        &mut session.cx(),
        lock,
        RequestId(0),
        created("/l/n-0000000001"),
        "/l/n-",
    );
    assert_eq!(stale, CreateOutcome::Stale);
    let outcome = node.on_create_reply(
        &mut session.cx(),
        lock,
        request,
        created("/l/n-0000000001"),
        "/l/n-",
    );
    assert_eq!(outcome, CreateOutcome::Created { stat: None });
    assert_eq!(node.path(), Some("/l/n-0000000001"));
    assert_eq!(node.create, Create::Done);
    // A path that is not ours is never adopted.
    let mut other = Node::new(AttemptId(8));
    other.send_create(&mut session.cx(), lock, &spec, "/l/n-".into());
    let (request, _) = sent(&mut session).remove(0);
    let outcome = other.on_create_reply(
        &mut session.cx(),
        lock,
        request,
        created("/x/y-0000000001"),
        "/l/n-",
    );
    assert!(matches!(outcome, CreateOutcome::Unknown(_)));
    assert_eq!((other.path(), other.create), (None, Create::Unknown));
}

#[test]
fn a_missing_directory_is_created_as_containers_within_the_tries() {
    let mut session = crate::ctx::tests::CtxParts::default();
    session.config.max_parent_retries = 1;
    let lock = LockId(1);
    let spec = LockSpec::write("/a/l");
    let mut node = Node::new(AttemptId(7));
    node.send_create(&mut session.cx(), lock, &spec, "/a/l/n-".into());
    let (request, _) = sent(&mut session).remove(0);
    let outcome = node.on_create_reply(
        &mut session.cx(),
        lock,
        request,
        Err(ZkError::NoNode),
        "/a/l/n-",
    );
    assert_eq!(outcome, CreateOutcome::NoParent);
    assert_eq!(node.create, Create::NotSent);
    assert!(node.send_parents(&mut session.cx(), lock, "/a/l"));
    let dirs: Vec<String> = sent(&mut session)
        .into_iter()
        .map(|(_, op)| match op {
            Op::Create {
                path,
                mode: CreateMode::Container,
                ..
            } => path,
            other => panic!("not a container: {other:?}"),
        })
        .collect();
    assert_eq!(dirs, ["/a", "/a/l"]);
    assert!(
        !node.send_parents(&mut session.cx(), lock, "/a/l"),
        "no tries left"
    );
    assert!(sent(&mut session).is_empty());
}

#[test]
fn a_read_of_our_node_checks_its_owner_and_a_delete_tells_whose_it_was() {
    let mut session = crate::ctx::tests::CtxParts::default();
    let lock = LockId(1);
    let mut node = Node::new(AttemptId(7));
    node.own = Some(OwnNode {
        path: "/l/n-0000000001".into(),
        seq: 1,
        stat: None,
    });
    node.send_read(&mut session.cx(), lock, true);
    assert!(node.own_watched && node.is_reading());
    let (request, _) = sent(&mut session).remove(0);
    assert!(node.take_read_reply(request));
    let stat = Stat {
        czxid: 9,
        ephemeral_owner: 1,
        ..Stat::default()
    };
    let data = Ok(Reply::Data {
        data: b"unlock".to_vec(),
        stat,
    });
    let outcome = node.on_read_reply(Some(1), data.clone());
    assert!(matches!(outcome, ReadOutcome::Identity { .. }));
    assert_eq!(node.own.as_ref().unwrap().stat, Some(stat.into()));
    assert_eq!(
        node.on_read_reply(Some(2), data),
        ReadOutcome::Gone(LostReason::NodeNotOwned)
    );
    let revocable = LockSpec::write("/l").revocable();
    assert!(Node::is_revocation(&revocable, b"unlock"));
    assert!(!Node::is_revocation(&LockSpec::write("/l"), b"unlock"));
    assert!(
        node.note_revocation() && !node.note_revocation(),
        "reported once"
    );
    // A NoNode after no delete of ours can have applied: someone else's.
    node.send_delete(&mut session.cx(), lock, Vec::new());
    let (request, op) = sent(&mut session).remove(0);
    assert_eq!(op, delete_op("/l/n-0000000001"));
    assert!(node.take_delete_reply(request));
    assert_eq!(
        node.on_delete_reply(Err(ZkError::NoNode)),
        DeleteOutcome::DeletedByOther
    );
    assert_eq!(node.path(), None);
    // After a delete whose answer was lost, it may have been ours.
    node.own = Some(OwnNode {
        path: "/l/n-0000000001".into(),
        seq: 1,
        stat: None,
    });
    assert_eq!(
        node.on_delete_reply(Err(ZkError::ConnectionLoss)),
        DeleteOutcome::Trouble(ZkError::ConnectionLoss)
    );
    assert_eq!(
        node.on_delete_reply(Err(ZkError::NoNode)),
        DeleteOutcome::Deleted
    );
}
