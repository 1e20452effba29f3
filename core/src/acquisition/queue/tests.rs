use super::*;

fn name(kind: &str, seq: i32) -> String {
    format!("zkl-{:032x}-{kind}-{seq:010}", seq as u128 + 1)
}

fn queue(lower: &[String]) -> Queue {
    Queue {
        lower: lower
            .iter()
            .enumerate()
            .map(|(i, n)| (i as i32 - lower.len() as i32, n.clone()))
            .collect(),
        ..Queue::default()
    }
}

#[test]
fn the_place_counts_who_must_leave_first() {
    let mutex = queue(&[name("write", 1), name("write", 2), name("write", 3)]);
    assert_eq!(mutex.place(Recipe::Write), QueuePlace::new(3, None));
    assert_eq!(queue(&[]).place(Recipe::Write), QueuePlace::new(0, None));
    // Three permits, four taking a permit below us: one must leave.
    let sem = Recipe::Semaphore { permits: 3 };
    let sharing: Vec<String> = (1..=4).map(|i| name("sem3", i)).collect();
    assert_eq!(queue(&sharing).place(sem), QueuePlace::new(2, Some(3)));
    assert_eq!(queue(&sharing[..3]).place(sem), QueuePlace::new(1, Some(3)));
    assert_eq!(queue(&sharing[..1]).place(sem), QueuePlace::new(0, Some(1)));
    // A writer below: it must go, whatever the permits; it takes none.
    let with_writer = [name("write", 1), name("sem3", 2)];
    assert_eq!(queue(&with_writer).place(sem), QueuePlace::new(1, Some(1)));
}

#[test]
fn a_place_is_reported_once_until_it_changes() {
    let mut q = queue(&[name("write", 1), name("write", 2)]);
    assert_eq!(
        q.report_place(Recipe::Write),
        Some(QueuePlace::new(2, None))
    );
    assert_eq!(q.report_place(Recipe::Write), None);
    q.drop_blocker(&name("write", 2), 1);
    assert_eq!(
        q.report_place(Recipe::Write),
        Some(QueuePlace::new(1, None))
    );
}

#[test]
fn a_gone_blocker_shrinks_the_cache_and_the_window() {
    let blockers = [name("write", 1), name("write", 2)];
    let mut q = queue(&blockers);
    let path = format!("/l/{}", blockers[1]);
    q.watched.insert(path.into(), Watch::Pending(RequestId(5)));
    assert!(q.blocks_with(&blockers[1]));
    assert!(q.take_watch_reply(&blockers[1], RequestId(5)));
    assert!(!q.take_watch_reply(&blockers[1], RequestId(4)));
    assert!(q.drop_blocker(&blockers[1], 1), "one blocker still cached");
    assert!(q.watched.is_empty());
    assert!(!q.blocks_with(&blockers[1]));
    assert_eq!(
        q.narrow_to(vec![blockers[0].clone()]),
        vec![blockers[0].clone()]
    );
    assert!(!q.drop_blocker(&blockers[0], 1), "nothing left to block us");
}

#[test]
fn forget_drops_watches_and_the_listing_but_keeps_the_cache() {
    let blockers = [name("write", 1)];
    let mut q = queue(&blockers);
    q.watched
        .insert(format!("/l/{}", blockers[0]).into(), Watch::Armed);
    let mut session = crate::ctx::tests::CtxParts::default();
    let op = crate::proto::Op::GetChildren { path: "/l".into() };
    q.list.send(
        &mut session.cx(),
        crate::ids::LockId(1),
        crate::requests::Purpose::List,
        op,
    );
    q.forget();
    assert!(q.watched.is_empty());
    assert!(!q.list.is_pending());
    assert_eq!(q.lower.len(), 1);
}

#[test]
fn a_listing_is_sorted_into_ours_others_and_the_marker() {
    let mut session = crate::ctx::tests::CtxParts::default();
    let ours = name("write", 3);
    let attempt = parse_participant(&ours).unwrap().attempt;
    let children = vec![
        name("write", 1),
        ours.clone(),
        SECTION_MARKER.to_owned(),
        DELAY_MARKER.to_owned(),
        "README".to_owned(),
    ];
    let listing = Queue::sort_listing(&mut session.cx(), children, attempt);
    assert_eq!(listing.mine, [(3, ours)]);
    assert_eq!(listing.others.len(), 1);
    assert!(listing.marker_seen);
    assert_eq!(
        session.stats.foreign_children, 1,
        "the markers are not foreign"
    );
}

#[test]
fn only_lower_blockers_are_cached_and_a_downgrade_skips_its_own_write() {
    let parsed = |n: &String| (parse_participant(n).unwrap(), n.clone());
    let (w1, r2, w4) = (name("write", 1), name("read", 2), name("write", 4));
    let others = vec![parsed(&w1), parsed(&r2), parsed(&w4)];
    let mut q = Queue::default();
    assert!(!q.set_lower(others.clone(), 3, Recipe::Read, &[]));
    assert_eq!(
        q.lower,
        [(-2, w1.clone())],
        "a read is blocked by lower writes only"
    );
    assert!(q.set_lower(others, 3, Recipe::Write, std::slice::from_ref(&w1)));
    assert_eq!(q.lower, [(-1, r2)]);
}

#[test]
fn a_watch_reply_arms_it_and_a_gone_blocker_lists_again_or_decides() {
    let mut session = crate::ctx::tests::CtxParts::default();
    let lock = crate::ids::LockId(1);
    let blockers = [name("write", 1), name("write", 2)];
    let mut q = queue(&blockers);
    q.watch_window(&mut session.cx(), lock, "/l", vec![blockers[1].clone()]);
    let request = match session.out.pop_front() {
        Some(crate::output::Output::Request(r)) => {
            let path = format!("/l/{}", blockers[1]);
            assert_eq!(r.op, Op::GetData { path, watch: true });
            r.id
        }
        other => panic!("no watch: {other:?}"),
    };
    let ok = Ok(Reply::Data {
        data: Vec::new(),
        stat: Default::default(),
    });
    assert_eq!(
        q.on_peer_reply(RequestId(0), &blockers[1], ok.clone()),
        PeerOutcome::Done
    );
    assert_eq!(q.watched[blockers[1].as_str()], Watch::Pending(request));
    assert_eq!(
        q.on_peer_reply(request, &blockers[1], ok),
        PeerOutcome::Done
    );
    assert_eq!(q.watched[blockers[1].as_str()], Watch::Armed);
    session.out.clear();
    // One blocker left below: list again (once).
    assert!(!q.on_blocker_gone(&mut session.cx(), lock, "/l", &blockers[1], 1));
    assert!(q.list.is_pending());
    assert!(!q.on_blocker_gone(&mut session.cx(), lock, "/l", &blockers[1], 1));
    assert_eq!(session.out.len(), 1, "one listing");
    // None left: decide from the cache, no request.
    assert!(q.on_blocker_gone(&mut session.cx(), lock, "/l", &blockers[0], 1));
    assert_eq!(session.out.len(), 1);
}
