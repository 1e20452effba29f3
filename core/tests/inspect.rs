//! Owners in node data and inspection (`Session::inspect`) of a tree on a model
//! server.
mod harness;

use harness::*;
use lock_core::*;

#[test]
fn an_owner_goes_into_a_native_nodes_data_and_plain_data_stays_as_it_was() {
    let payload = || b"payload".to_vec();
    let mine = LockSpec::exclusive("/l").owner("w-1");
    for (spec, data) in [
        (LockSpec::write("/l").data(payload()), payload()),
        // A leader's data is its participant id.
        (LockSpec::leader("/l", "node-7"), b"node-7".to_vec()),
        (
            LockSpec::write("/l").owner("job-1").data(payload()),
            [owner::header(Some("job-1"), &[]), payload()].concat(),
        ),
        // kazoo: the owner is the identifier; Curator: the data as given.
        (mine.clone().scheme(NameScheme::Kazoo), b"w-1".to_vec()),
        (
            mine.scheme(NameScheme::Curator).data(b"10.0.0.1".to_vec()),
            b"10.0.0.1".to_vec(),
        ),
    ] {
        let mut h = H::new();
        h.acquire(spec.clone());
        assert_eq!(h.next_create().1, data, "{spec:?}");
    }
}

#[test]
fn the_owner_header_counts_toward_the_data_limit() {
    let mut h = H::new();
    let room = h.s.config().max_data_len("/l").unwrap();
    let full = vec![7u8; room];
    assert!(h
        .s
        .acquire(LockSpec::write("/l").data(full.clone()), h.now)
        .is_ok());
    let err =
        h.s.acquire(LockSpec::write("/l").data(full).owner("o"), h.now)
            .unwrap_err();
    assert!(
        matches!(err, UsageError::DataTooLarge { len, max } if len == room + 9 && max == room),
        "{err:?}"
    );
}

/// Serves the listings of the semaphore layouts' directories that every
/// inspection of `path` sends after its own: none of them exists.
fn serve_no_layouts(h: &mut H, path: &str) {
    for dir in [
        format!("{path}/locks"),
        format!("{path}/leases"),
        format!("{path}-__lock__"),
    ] {
        assert_eq!(h.serve_one().op, Op::GetChildren { path: dir });
    }
}

#[test]
fn inspect_lists_holders_and_waiters_in_queue_order_with_owners_and_what_they_wait_for() {
    let mut h = H::served(&["/l", "/l/junk"]);
    let r1 = peer(NodeKind::Read, 1, 1);
    let w2 = peer(NodeKind::Write, 2, 2);
    let r3 = peer(NodeKind::Read, 3, 3);
    let gone = peer(NodeKind::Read, 4, 4);
    let kazoo = format!("{:032x}__lock__0000000005", 5);
    let sessions: [i64; 5] = h.sessions();
    // Created out of queue order, beside a foreign child.
    for (i, (name, data)) in [
        (&r3, b"plain".to_vec()),
        (&kazoo, b"kazoo-id".to_vec()),
        (&w2, owner::header(Some("writer-2"), &[])),
        (&gone, Vec::new()),
        (&r1, owner::header(Some("reader-1"), &["/m/zkl-x".into()])),
    ]
    .into_iter()
    .enumerate()
    {
        h.node_of(sessions[i], &format!("/l/{name}"), &data);
    }
    h.run(|s, now| s.inspect("/l", now));
    h.serve_one();
    serve_no_layouts(&mut h, "/l");
    // One read per participant, pipelined, in queue order, no watches.
    let expect: Vec<Op> = [&r1, &w2, &r3, &gone, &kazoo]
        .iter()
        .map(|n| read_of(format!("/l/{n}"), false))
        .collect();
    assert_eq!(ops(&h.reqs), expect);
    h.delete_node(&format!("/l/{gone}")); // vanished since the listing: skipped
    while h.reqs.len() > 1 {
        h.serve_one();
        assert!(
            h.take_events().is_empty(),
            "no event before every read is in"
        );
    }
    h.serve_one();
    let p = h.participants();
    assert_eq!(p.path, "/l");
    assert_eq!(p.foreign, 1);
    assert_eq!(p.holders.len(), 1);
    let r1p = &p.holders[0];
    assert_eq!(
        (
            r1p.node.as_str(),
            r1p.kind,
            r1p.owner.as_deref(),
            r1p.session
        ),
        (r1.as_str(), NodeKind::Read, Some("reader-1"), sessions[4])
    );
    let stat = h.zk().model.stat(&format!("/l/{r1}")).unwrap();
    assert_eq!(
        (r1p.token, r1p.ctime),
        (FencingToken(stat.czxid), stat.ctime)
    );
    assert_eq!(r1p.owner_waits_at, vec!["/m/zkl-x".to_owned()]);
    assert!(r1p.waits_for.is_empty() && r1p.data.is_empty());
    let names: Vec<&str> = p.waiters.iter().map(|w| w.node.as_str()).collect();
    assert_eq!(names, [w2.as_str(), r3.as_str(), kazoo.as_str()]);
    assert_eq!(p.waiters[0].waits_for, vec![r1.clone()]);
    assert_eq!(p.waiters[0].owner.as_deref(), Some("writer-2"));
    assert_eq!(
        p.waiters[1].waits_for,
        vec![w2.clone()],
        "a read waits for the write"
    );
    assert_eq!(
        (p.waiters[1].owner.as_deref(), &p.waiters[1].data[..]),
        (None, &b"plain"[..])
    );
    assert_eq!(p.waiters[2].scheme, NameScheme::Kazoo);
    assert_eq!(p.waiters[2].owner.as_deref(), Some("kazoo-id"));
    assert_eq!(p.waiters[2].waits_for, vec![r1, w2, r3]);
    assert!(h.s.is_idle());
}

#[test]
fn inspecting_a_missing_lock_reports_nobody() {
    let mut h = H::served(&[]);
    let p = h.inspected("/none");
    assert!(p.holders.is_empty() && p.waiters.is_empty(), "{p:?}");
}

#[test]
fn an_inspection_cut_by_a_disconnect_starts_over_after_the_reconnect() {
    let mut h = H::served(&["/l"]);
    let [holder] = h.sessions();
    h.node_of(holder, &format!("/l/{}", peer(NodeKind::Write, 1, 1)), &[]);
    h.run(|s, now| s.inspect("/l", now));
    h.serve_one();
    h.reconnect();
    assert_eq!(ops(&h.serve())[0], Op::GetChildren { path: "/l".into() });
    let p = h.participants();
    assert!(
        p.holders.len() == 1 && p.holders[0].session == holder,
        "{p:?}"
    );
}

#[test]
fn inspect_gives_a_semaphore_nodes_permit_count_from_its_name() {
    let mut h = H::served(&["/s"]);
    let sem = |n| names::semaphore_node_prefix(NameScheme::Native, AttemptId(n), 3);
    let a = name_of(&h.peer_named("/s", &sem(1)));
    let b = name_of(&h.peer_named("/s", &sem(2)));
    let w = name_of(&h.peer_joins("/s", NodeKind::Write, 3));
    let p = h.inspected("/s");
    let all: Vec<(&str, NodeKind, Option<u32>)> = p
        .holders
        .iter()
        .chain(&p.waiters)
        .map(|p| (p.node.as_str(), p.kind, p.permits))
        .collect();
    assert_eq!(
        all,
        [
            (a.as_str(), NodeKind::Semaphore, Some(3)),
            (b.as_str(), NodeKind::Semaphore, Some(3)),
            (w.as_str(), NodeKind::Write, None),
        ]
    );
}
