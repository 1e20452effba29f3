//! Who each client library takes for the holder when a lock directory mixes
//! naming schemes. zklock reads every scheme; the others do not: kazoo's Lock
//! (ReadLock, WriteLock) counts only kazoo's `__lock__`/`__rlock__` nodes,
//! Curator sorts the others behind its own (their names carry none of its
//! markers), and go-zookeeper's Lock counts every child as an exclusive
//! participant (its sequence: the text after the last `-`), so each can take
//! the lock while a participant of another scheme holds it. `zklock ls` shows each library's view when they differ in what they
//! see.

use crate::render::in_queue_order;
use lock_core::Recipe;
use lock_zookeeper_client::{NameScheme, NodeKind, Participant, Participants};

/// One library's view of the queue.
pub(crate) struct LibraryView {
    /// `zklock`, `curator` or `kazoo`.
    pub(crate) library: &'static str,
    /// The nodes it takes for holders, in queue order.
    pub(crate) holders: Vec<String>,
}

/// The views of zklock and of every other library whose scheme has participants
/// here; `None` when all participants follow one scheme (everyone agrees).
pub(crate) fn views(who: &Participants) -> Option<Vec<LibraryView>> {
    let all = in_queue_order(who);
    let present = |scheme: NameScheme| all.iter().any(|(p, _)| p.scheme == scheme);
    let schemes = [
        NameScheme::Native,
        NameScheme::Curator,
        NameScheme::Kazoo,
        NameScheme::Go,
    ];
    if schemes.iter().filter(|s| present(**s)).count() < 2 {
        return None;
    }
    let mut views = vec![LibraryView {
        library: "zklock",
        holders: all
            .iter()
            .filter(|(_, holds)| *holds)
            .map(|(p, _)| p.node.clone())
            .collect(),
    }];
    for (library, scheme) in [
        ("curator", NameScheme::Curator),
        ("kazoo", NameScheme::Kazoo),
        ("go-zookeeper", NameScheme::Go),
    ] {
        if present(scheme) {
            let seen: Vec<&Participant> = all
                .iter()
                .map(|(p, _)| *p)
                .filter(|p| p.scheme == scheme || scheme == NameScheme::Go)
                .collect();
            // Go's Lock takes the lowest sequence of all, whatever its kind.
            let holders = match scheme {
                NameScheme::Go => seen
                    .iter()
                    .min_by_key(|p| p.sequence)
                    .map(|p| p.node.clone())
                    .into_iter()
                    .collect(),
                _ => holders_among(&seen),
            };
            views.push(LibraryView { library, holders });
        }
    }
    Some(views)
}

/// The holders of a queue made of `queue` alone (in queue order), by the recipe
/// rules of each node's kind.
fn holders_among(queue: &[&Participant]) -> Vec<String> {
    queue
        .iter()
        .enumerate()
        .filter(|(i, p)| {
            let recipe = recipe(p);
            let blockers = queue[..*i]
                .iter()
                .filter(|q| recipe.is_blocked_by(q.kind))
                .count();
            blockers < recipe.permits()
        })
        .map(|(_, p)| p.node.clone())
        .collect()
}

fn recipe(p: &Participant) -> Recipe {
    match p.kind {
        NodeKind::Read => Recipe::Read,
        NodeKind::Semaphore => Recipe::Semaphore {
            permits: p.permits.unwrap_or(1).max(1),
        },
        NodeKind::Leader => Recipe::Leader,
        _ => Recipe::Write,
    }
}

/// The warning lines for the text output (`position` maps a node to its row).
pub(crate) fn describe(
    path: &str,
    views: &[LibraryView],
    position: impl Fn(&str) -> Option<usize>,
) -> Vec<String> {
    let mut lines = vec![format!(
        "{path} mixes naming schemes whose clients ignore each other's nodes \
         (kazoo counts only kazoo's, Curator only Curator's; zklock and \
         go-zookeeper all): each may take the lock while another holds it"
    )];
    for view in views {
        let holders: Vec<String> = view
            .holders
            .iter()
            .map(|node| position(node).map_or_else(|| node.clone(), |i| format!("#{i}")))
            .collect();
        let holders = if holders.is_empty() {
            "nobody".to_owned()
        } else {
            holders.join(",")
        };
        lines.push(format!(
            "  {} takes for the holder: {holders}",
            view.library
        ));
    }
    lines
}
