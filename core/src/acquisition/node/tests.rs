use super::*;
use crate::ids::LockId;
use crate::proto::Op;

#[test]
fn forget_drops_the_read_and_watch_in_flight_and_keeps_the_node() {
    let mut session = crate::ctx::tests::CtxParts::default();
    let mut node = Node::new(AttemptId(7));
    node.own = Some(OwnNode::unread("/l/n-0000000001", 1));
    node.send_read(&mut session.cx(), LockId(1), true);
    assert!(node.own_watched && node.own_read.is_pending());
    node.forget();
    assert!(!node.own_watched && !node.own_read.is_pending());
    assert_eq!(
        node.path(),
        Some("/l/n-0000000001"),
        "the node itself is kept"
    );
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
    // A path that is not ours is never adopted: in another directory, or a
    // participant of another attempt in ours (both found by the fuzzers).
    for not_ours in ["/x/y-0000000001", "/l/m-0000000001"] {
        let mut other = Node::new(AttemptId(8));
        other.send_create(&mut session.cx(), lock, &spec, "/l/n-".into());
        let (request, _) = sent(&mut session).remove(0);
        let reply = created(not_ours);
        let outcome = other.on_create_reply(&mut session.cx(), lock, request, reply, "/l/n-");
        assert!(matches!(outcome, CreateOutcome::Unknown(_)), "{not_ours}");
        assert_eq!((other.path(), other.create), (None, Create::Unknown));
    }
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
fn a_revocation_is_reported_once() {
    let mut node = Node::new(AttemptId(7));
    assert!(node.note_revocation() && !node.note_revocation());
}
