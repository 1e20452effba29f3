//! Semaphores in Curator's and kazoo's layouts, request by request: the internal
//! mutex first, then the lease as the peer takes it, then the mutex released and the
//! lease node held (see `acquisition::lease`).

mod harness;

use harness::*;
use lock_core::*;

/// A Curator semaphore's directories under `/s`.
const CURATOR: [&str; 2] = ["/s/locks", "/s/leases"];

/// A kazoo semaphore's lock directory beside `/s`.
const KAZOO_LOCK: &str = "/s-__lock__";

/// Takes the internal mutex in `dir` uncontended (its create and listing);
/// returns its node's path.
fn take_mutex(h: &mut H, dir: &str) -> String {
    h.serve_one();
    assert_eq!(h.serve_one().op, Op::GetChildren { path: dir.into() });
    h.ours(dir)[0].clone()
}

/// A kazoo pool `/s` whose stored permit count is `count`.
fn kazoo_pool(count: &[u8]) -> H {
    let mut h = H::served(&[KAZOO_LOCK, "/s"]);
    h.set_node_data("/s", count);
    h
}

#[test]
fn curator_layout_queues_in_locks_and_holds_a_lease() {
    let mut h = H::served(&CURATOR);
    h.peer_named("/s/leases", "_c_other-lease-");
    h.acquire(LockSpec::semaphore("/s", 2).scheme(NameScheme::Curator));
    let mutex = take_mutex(&mut h, "/s/locks");
    assert!(name_of(&mutex).contains("-lock-"), "{mutex}");
    assert!(h.take_events().is_empty(), "the mutex is no permit");
    // Holding the mutex: our lease node, then the pool, in one burst; the mutex
    // goes at once, as Curator releases it once leased.
    let served = ops(&h.serve());
    assert!(
        matches!(&served[0], Op::Create { path, mode: CreateMode::EphemeralSequential, .. } if path.starts_with("/s/leases/_c_")),
        "{served:?}"
    );
    assert_eq!(
        served[1..],
        [
            Op::WatchChildren {
                path: "/s/leases".into()
            },
            delete_of(&mutex)
        ]
    );
    let lease = h.ours("/s/leases")[0].clone();
    assert!(name_of(&lease).contains("-lease-0000000001"), "{lease}");
    let names::ParsedName { attempt, .. } = names::parse_name(&name_of(&lease)).unwrap();
    assert_eq!(
        names::parse_name(&name_of(&mutex)).unwrap().attempt,
        attempt
    );
    // Curator counts every lease node, its own included: 2 of 2 is in.
    let czxid = h.zk().model.stat(&lease).unwrap().czxid;
    let g = h.acquired();
    assert_eq!(&*g.path, lease);
    assert_eq!(g.sequence, 1);
    assert_eq!(g.token, FencingToken(czxid));
}

#[test]
fn curator_layout_waits_on_the_pool_with_the_mutex_held() {
    let mut h = H::served(&CURATOR);
    let other = h.peer_named(
        "/s/leases",
        "_c_a8a4cbf4-2d5a-4a3b-9f5c-0d1e2f3a4b5c-lease-",
    );
    let id = h.acquire(LockSpec::semaphore("/s", 1).scheme(NameScheme::Curator));
    let mutex = take_mutex(&mut h, "/s/locks");
    h.serve();
    assert!(
        h.take_events().is_empty(),
        "2 lease nodes of 1 permit: wait"
    );
    assert_eq!(h.s.state(id), Some(LockState::Waiting));
    assert!(h.exists(&mutex));
    // The holder leaves: the pool's children watch does the waiting.
    h.delete_node(&other);
    assert!(ops(&h.serve()).contains(&delete_of(&mutex)));
    h.acquired();
}

#[test]
fn curator_layout_try_only_gives_up_both_nodes_on_a_full_pool() {
    let mut h = H::served(&CURATOR);
    h.peer_named("/s/leases", "_c_x-lease-");
    h.acquire(
        LockSpec::semaphore("/s", 1)
            .scheme(NameScheme::Curator)
            .try_only(),
    );
    h.serve();
    h.expect_events([LockEvent::Failed(FailReason::WouldBlock)]);
    assert!(h.ours("/s/locks").is_empty() && h.ours("/s/leases").is_empty());
}

#[test]
fn kazoo_layout_checks_the_count_then_counts_before_creating() {
    let mut h = H::served(&[KAZOO_LOCK]);
    h.acquire(LockSpec::semaphore("/s", 2).scheme(NameScheme::Kazoo));
    let mutex = take_mutex(&mut h, KAZOO_LOCK);
    assert!(name_of(&mutex).contains("__lock__"), "{mutex}");
    // The pool's permit count: missing, so the pool is created carrying ours.
    assert_eq!(
        ops(&[h.serve_one(), h.serve_one()]),
        [
            read_of("/s", false),
            Op::Create {
                path: "/s".into(),
                data: b"2".to_vec(),
                mode: CreateMode::Persistent
            }
        ]
    );
    // kazoo counts first: one lease of 2, room.
    let peers = h.zk().peers;
    h.node_of(peers, "/s/0123456789abcdef0123456789abcdef", &[]);
    let served = ops(&h.serve());
    assert!(
        matches!(
            &served[..],
            [
                Op::WatchChildren { .. },
                Op::Create {
                    mode: CreateMode::Ephemeral,
                    ..
                },
                _
            ]
        ),
        "{served:?}"
    );
    let lease = h.ours("/s")[0].clone();
    let attempt = names::parse_kazoo_lease(&name_of(&lease)).expect("a kazoo lease name");
    assert_eq!(
        names::parse_name(&name_of(&mutex)).unwrap().attempt,
        attempt
    );
    let g = h.acquired();
    assert_eq!(&*g.path, lease);
    assert_eq!(served[2], delete_of(&mutex));
}

#[test]
fn kazoo_layout_refuses_another_stored_count_and_leaves_nothing() {
    let mut h = kazoo_pool(b"3");
    h.acquire(LockSpec::semaphore("/s", 2).scheme(NameScheme::Kazoo));
    let mutex = take_mutex(&mut h, KAZOO_LOCK);
    assert_eq!(ops(&h.serve())[1..], [delete_of(&mutex)]);
    h.expect_events([LockEvent::Failed(FailReason::PermitsMismatch {
        ours: 2,
        theirs: 3,
    })]);
}

#[test]
fn kazoo_layout_full_pool_waits_without_creating() {
    let mut h = kazoo_pool(b"1");
    let lease = "/s/0123456789abcdef0123456789abcdef";
    let peers = h.zk().peers;
    h.node_of(peers, lease, &[]);
    h.acquire(LockSpec::semaphore("/s", 1).scheme(NameScheme::Kazoo));
    h.serve();
    assert!(h.take_events().is_empty() && h.ours("/s").is_empty());
    h.delete_node(lease);
    h.serve();
    h.acquired();
}

#[test]
fn a_reconnect_in_the_lease_step_finds_the_lease_again() {
    let mut h = H::served(&CURATOR);
    h.acquire(LockSpec::semaphore("/s", 1).scheme(NameScheme::Curator));
    let mutex = take_mutex(&mut h, "/s/locks");
    // Our lease create is applied, the connection drops before its reply.
    h.apply_unanswered();
    let lease = h.ours("/s/leases")[0].clone();
    h.reconnect();
    // The mutex is confirmed ours, then the pool listed (not a second create).
    assert_eq!(
        ops(&[h.serve_one(), h.serve_one()]),
        [
            Op::GetChildren {
                path: "/s/locks".into()
            },
            Op::WatchChildren {
                path: "/s/leases".into()
            }
        ]
    );
    // Ours: the mutex goes, and the lease, adopted from the listing, is granted
    // once its stat (the token, the owning session) is read.
    assert_eq!(h.serve_one().op, delete_of(&mutex));
    assert!(h.take_events().is_empty());
    assert!(matches!(&ops(&h.serve())[..], [Op::GetData { path, .. }] if *path == lease));
    let g = h.acquired();
    assert_eq!(&*g.path, lease);
}

#[test]
fn session_expiry_in_the_lease_step_fails_and_deletes_nothing() {
    let mut h = kazoo_pool(b"1");
    let id = h.acquire(LockSpec::semaphore("/s", 1).scheme(NameScheme::Kazoo));
    take_mutex(&mut h, KAZOO_LOCK);
    h.expire();
    h.expect_events([LockEvent::Failed(FailReason::SessionExpired)]);
    h.new_session();
    assert!(h.no_requests(), "the expired session's nodes are gone");
    assert_eq!(h.s.state(id), None);
}

fn curator_name(n: u32, marker: &str, seq: i32) -> String {
    format!("_c_{n:08x}-0000-4000-8000-000000000000-{marker}{seq:010}")
}

#[test]
fn inspection_shows_a_curator_semaphores_leases_and_queue() {
    let mut h = H::served(&CURATOR);
    let (l1, l2, l3) = (
        curator_name(1, "lease-", 1),
        curator_name(2, "lease-", 2),
        curator_name(3, "lease-", 3),
    );
    let (q1, q2) = (curator_name(4, "lock-", 5), curator_name(5, "lock-", 6));
    // Two holders; the queue head (its session) has added its lease and waits
    // for room; another waits behind it.
    let [s1, s2, head, behind] = h.sessions();
    for (session, path) in [
        (s1, format!("/s/leases/{l1}")),
        (s2, format!("/s/leases/{l2}")),
        (head, format!("/s/leases/{l3}")),
        (head, format!("/s/locks/{q1}")),
        (behind, format!("/s/locks/{q2}")),
    ] {
        h.node_of(session, &path, &[]);
    }
    let p = h.inspected("/s");
    let names = |v: &[Participant]| v.iter().map(|p| p.node.clone()).collect::<Vec<_>>();
    assert_eq!(names(&p.holders), [l1.clone(), l2.clone()]);
    assert_eq!(names(&p.waiters), [l3.clone(), q2.clone()]);
    assert_eq!(p.waiters[0].waits_for, [l1, l2]);
    assert_eq!(p.waiters[1].waits_for, [l3]);
    assert_eq!(p.waiters[1].dir, "/s/locks");
    assert!(p
        .holders
        .iter()
        .all(|h| h.dir == "/s/leases" && h.kind == NodeKind::Semaphore));
    assert_eq!(p.foreign, 0, "the layout's directories are not foreign");
}

#[test]
fn inspection_shows_a_kazoo_semaphores_leases_queue_and_count() {
    let mut h = kazoo_pool(b"1");
    let lease = "0123456789abcdef0123456789abcdef";
    let queued = "fedcba9876543210fedcba9876543210__lock__0000000004";
    let [holder, waiter] = h.sessions();
    h.node_of(holder, &format!("/s/{lease}"), b"worker-1");
    h.node_of(waiter, &format!("{KAZOO_LOCK}/{queued}"), b"worker-2");
    let p = h.inspected("/s");
    assert_eq!(p.holders.len(), 1);
    assert_eq!(
        (
            p.holders[0].node.as_str(),
            p.holders[0].owner.as_deref(),
            p.holders[0].permits
        ),
        (lease, Some("worker-1"), Some(1))
    );
    assert_eq!(p.waiters.len(), 1);
    assert_eq!(p.waiters[0].dir, KAZOO_LOCK);
    assert_eq!(p.waiters[0].waits_for, [lease]);
    assert_eq!(p.foreign, 0);
}

/// A binding may hand over a listing before the reply of a create the server
/// answered first: the listing shows our kazoo lease, we hold it, and the create's
/// late reply (the same fixed path) must not make us delete the node we hold.
#[test]
fn a_late_create_reply_never_deletes_the_held_kazoo_lease() {
    let mut h = kazoo_pool(b"2");
    h.acquire(LockSpec::semaphore("/s", 2).scheme(NameScheme::Kazoo));
    let mutex = take_mutex(&mut h, KAZOO_LOCK);
    h.serve_one(); // the count
    h.serve_one(); // the pool, empty
    let (create, created) = h.apply_front();
    // Our own create fires the pool's children watch: a new listing goes out.
    h.deliver();
    assert_eq!(h.reqs[0].op, Op::WatchChildren { path: "/s".into() });
    // Delivered first: the listing, showing our lease; adopted from it, its
    // stat is read before the grant.
    let served = ops(&h.serve());
    assert!(served.contains(&delete_of(&mutex)), "{served:?}");
    h.acquired();
    // Then the create's reply.
    h.reply(create.id, created);
    assert!(h.no_requests(), "the held lease must stay: {:?}", h.reqs);
}
