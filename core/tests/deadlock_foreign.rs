//! Deadlock detection across naming schemes: a cycle through a kazoo client,
//! which publishes nothing (kazoo's `Lock` writes only its identifier), is still
//! found by inferring the kazoo owner's wait (its waiting node on the same session,
//! under the same identifier), and the zklock member is the victim even when the
//! kazoo node is younger. The test plays the server with a fixed tree.
mod harness;

use harness::*;
use lock_core::*;
use std::collections::BTreeMap;
use std::time::Duration;

const AFTER: Duration = Duration::from_secs(1);
const KAZOO_SESSION: i64 = 77;

fn kazoo(n: u128, seq: i32) -> String {
    format!(
        "{}{}",
        names::node_prefix(NameScheme::Kazoo, AttemptId(n), NodeKind::Write),
        names::format_sequence(seq)
    )
}

/// A fixed tree: directory -> children, node -> (data, stat).
struct Tree {
    dirs: BTreeMap<String, Vec<String>>,
    nodes: BTreeMap<String, (Vec<u8>, Stat)>,
}

impl Tree {
    fn add(&mut self, dir: &str, name: &str, data: &[u8], czxid: i64, session: i64) {
        self.dirs.entry(dir.into()).or_default().push(name.into());
        let stat = Stat {
            czxid,
            mzxid: czxid,
            ephemeral_owner: session,
            ..Stat::default()
        };
        self.nodes
            .insert(format!("{dir}/{name}"), (data.to_vec(), stat));
    }

    /// Answers every request until none is left; returns the writes seen.
    fn serve(&self, h: &mut H) -> Vec<Op> {
        let mut writes = Vec::new();
        for _ in 0..100 {
            let Some(r) = h.reqs.pop_front() else {
                return writes;
            };
            let result = match &r.op {
                Op::GetChildren { path } => Ok(Reply::Children(self.dirs[path].clone())),
                Op::GetData { path, .. } => match self.nodes.get(path) {
                    Some((data, stat)) => Ok(Reply::Data {
                        data: data.clone(),
                        stat: *stat,
                    }),
                    None => Err(ZkError::NoNode),
                },
                other => {
                    writes.push(other.clone());
                    Err(ZkError::Other("read-only tree".into()))
                }
            };
            h.reply(r.id, result);
        }
        panic!("the chase does not end");
    }
}

/// Owner "Z" (this session, kazoo scheme) holds `/b` and waits at `/a` behind a
/// kazoo client "K" (another session), which holds `/a` and waits at `/b` behind Z.
/// Returns the harness, the tree, and Z's waiting node.
fn mixed_cycle(kazoo_b_czxid: i64) -> (H, Tree, String) {
    let mut h = H::new();
    let spec = |p: &str| LockSpec::exclusive(p).owner("Z").scheme(NameScheme::Kazoo);
    let (_, zb) = h.held_spec(spec("/b"), 2);
    h.acquire(spec("/a").detect_deadlocks(AFTER));
    let za = h.answer_create(5);
    let ka = kazoo(1, 1);
    h.answer_list(&[&ka, &name_of(&za)]);
    h.answer_watch(&za, SID);
    h.answer_watch(&format!("/a/{ka}"), KAZOO_SESSION);
    assert!(h.no_requests());
    let mut tree = Tree {
        dirs: BTreeMap::new(),
        nodes: BTreeMap::new(),
    };
    tree.add("/a", &ka, b"K", 10, KAZOO_SESSION);
    tree.add("/a", &name_of(&za), b"Z", 102, SID);
    tree.add("/b", &name_of(&zb), b"Z", 101, SID);
    tree.add("/b", &kazoo(2, 3), b"K", kazoo_b_czxid, KAZOO_SESSION);
    (h, tree, za)
}

#[test]
fn a_cycle_through_a_kazoo_client_is_found_and_the_zklock_member_is_the_victim() {
    // The kazoo waiting node is the youngest in the cycle, yet it cannot be the
    // victim: it could not be told to give up.
    let (mut h, tree, za) = mixed_cycle(500);
    h.advance(AFTER);
    let writes = tree.serve(&mut h);
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
    assert!(
        writes
            .iter()
            .all(|op| matches!(op, Op::Delete { path, .. } if *path == za)),
        "{writes:?}"
    );
}

#[test]
fn a_kazoo_holder_on_another_session_or_under_another_identifier_is_no_edge() {
    // The kazoo waiter at /b is of another session than the kazoo holder of /a:
    // not the same contender, so no cycle (no false deadlock).
    let (mut h, mut tree, _) = mixed_cycle(500);
    let kb = format!("/b/{}", kazoo(2, 3));
    tree.nodes.get_mut(&kb).unwrap().1.ephemeral_owner = KAZOO_SESSION + 1;
    h.advance(AFTER);
    tree.serve(&mut h);
    assert!(h.take_events().is_empty(), "still waiting");
    // The same session, another identifier: no edge either.
    let (mut h, mut tree, _) = mixed_cycle(500);
    tree.nodes.get_mut(&kb).unwrap().0 = b"K2".to_vec();
    h.advance(AFTER);
    tree.serve(&mut h);
    assert!(h.take_events().is_empty(), "still waiting");
}

#[test]
fn detection_on_the_kazoo_scheme_needs_the_owner_as_the_data() {
    let mut h = H::new();
    let with_data = h.s.acquire(
        LockSpec::exclusive("/a")
            .owner("Z")
            .scheme(NameScheme::Kazoo)
            .data("host-1")
            .detect_deadlocks(AFTER),
        h.now,
    );
    assert!(
        matches!(with_data, Err(UsageError::Unsupported(_))),
        "{with_data:?}"
    );
    // (Curator's scheme, whose nodes carry no owner, is refused outright:
    // tests/deadlock.rs, detection_needs_an_owner_and_the_native_scheme.)
}
