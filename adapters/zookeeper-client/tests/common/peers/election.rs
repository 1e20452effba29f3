//! Leader election with peers of the other library.
use crate::common::Observer;
use crate::common::Runtime;
use futures::channel::oneshot;
use lock_core::NameScheme;
use lock_zookeeper_client::{LockClient, LockGuard, LockSpec, LockStatus};
use std::time::{Duration, Instant};
use zookeeper_client::{Acls, CreateMode};

use super::counter::start_fleet;
use super::process::{Library, Peer, REPLY_TIMEOUT};
use super::zklock_side::{delivered, received};

/// Two peer participants (two processes of `library`) and two zklock leader
/// participants (two sessions, the library's scheme) on `path`, joined alternately:
/// one leader at a time, in join order, leadership passing zklock -> peer -> zklock
/// -> peer as each resigns.
pub async fn mixed_election_in_turn(rt: &Runtime, library: Library, path: &str) {
    let connect = crate::common::server().connect_string();
    let (mut peers, zklock) = start_fleet(rt, library, &connect, 2, 2).await;
    let name = library.name();
    let mut election = MixedElection::new(rt, path, library.scheme()).await;
    let mut all = vec![election.join_zklock(rt, &zklock[0], "zklock-1", 1).await];
    election.elected(0, &mut all, &mut peers).await;
    all.push(
        election
            .join_peer(&mut peers, 0, "e", &format!("{name}-1"), 2)
            .await,
    );
    all.push(election.join_zklock(rt, &zklock[1], "zklock-2", 3).await);
    all.push(
        election
            .join_peer(&mut peers, 1, "e", &format!("{name}-2"), 4)
            .await,
    );
    election.check(0, &mut all, &mut peers).await;
    for who in 0..all.len() {
        if who > 0 {
            election.elected(who, &mut all, &mut peers).await;
        }
        election.resign(who, &mut all, &mut peers).await;
    }
    election.finish().await;
    for locks in zklock {
        locks.close().await;
    }
}

/// A participant in a mixed election.
pub enum Candidate {
    /// A zklock participant (a leader spec with the peer's scheme): the task delivers
    /// its leadership (and whether another leader was registered) when elected.
    Zklock {
        id: String,
        elected: Option<oneshot::Receiver<(LockGuard, bool)>>,
        leading: Option<LockGuard>,
    },
    /// A slot of a peer process (`peers[peer]`).
    Peer {
        id: String,
        peer: usize,
        slot: String,
    },
}

impl Candidate {
    pub fn id(&self) -> &str {
        match self {
            Candidate::Zklock { id, .. } | Candidate::Peer { id, .. } => id,
        }
    }
}

/// A mixed election on one path: zklock participants and peer participants take turns
/// in join order; at most one leader at any time (every leader registers under
/// `<root>/leaders` when elected and finds no one else there, and leaves before it
/// resigns), exactly one at each step (each participant's own view, and a zklock
/// election observer agrees on who leads).
pub struct MixedElection {
    pub path: String,
    root: String,
    connect: String,
    observer: Observer,
    watcher: lock_zookeeper_client::ElectionObserver,
    watcher_client: LockClient,
    scheme: NameScheme,
    leader_overlaps: u64,
}

impl MixedElection {
    pub async fn new(rt: &Runtime, path: &str, scheme: NameScheme) -> MixedElection {
        let connect = crate::common::server().connect_string();
        let observer = Observer::connect(&connect).await;
        let root = format!("{path}-data");
        observer.mkdir(&format!("{root}/leaders")).await;
        let watcher_client = crate::common::connect(rt, &connect, Duration::from_secs(10)).await;
        let watcher = watcher_client
            .observe_election(path)
            .await
            .expect("observing the election");
        MixedElection {
            path: path.to_owned(),
            root,
            connect,
            observer,
            watcher,
            watcher_client,
            scheme,
            leader_overlaps: 0,
        }
    }

    /// A zklock participant joins (on `locks`); returns once its node is in line
    /// (`position` participants in all). It is a `LockSpec::leader` with the peer's
    /// scheme run by `LockClient::acquire`: `LockClient::election` always names its
    /// nodes natively (`zkl-...-lead-`), which Curator's `LeaderLatch` sorts after its
    /// own and kazoo's `Election` does not see, so it cannot share their paths.
    pub async fn join_zklock(
        &self,
        rt: &Runtime,
        locks: &LockClient,
        id: &str,
        position: usize,
    ) -> Candidate {
        let spec = LockSpec::leader(self.path.as_str(), id).scheme(self.scheme);
        let (locks, root, connect, who) = (
            locks.clone(),
            self.root.clone(),
            self.connect.clone(),
            id.to_owned(),
        );
        let elected = crate::common::spawn(rt, async move {
            let guard = locks.acquire(spec, None).await.expect("zklock participant");
            let data = Observer::connect(&connect).await;
            let overlap = register_leader(&data.client, &root, &who).await;
            (guard, overlap)
        });
        self.observer.wait_children(&self.path, position).await;
        Candidate::Zklock {
            id: id.to_owned(),
            elected: Some(elected),
            leading: None,
        }
    }

    /// A peer participant joins in `slot`; returns once its node is in line.
    pub async fn join_peer(
        &self,
        peers: &mut [Peer],
        peer: usize,
        slot: &str,
        id: &str,
        position: usize,
    ) -> Candidate {
        peers[peer].send(slot, &format!("elect {} {id} {}", self.path, self.root));
        self.observer.wait_children(&self.path, position).await;
        Candidate::Peer {
            id: id.to_owned(),
            peer,
            slot: slot.to_owned(),
        }
    }

    /// Waits until `who` is elected, then [checks](Self::check) that it is the only
    /// leader.
    pub async fn elected(&mut self, who: usize, all: &mut [Candidate], peers: &mut [Peer]) {
        match &mut all[who] {
            Candidate::Zklock {
                id,
                elected,
                leading,
            } => {
                let rx = elected.take().expect("a zklock participant elected once");
                let (guard, overlap) = received(rx, &format!("zklock participant {id}")).await;
                self.leader_overlaps += u64::from(overlap);
                *leading = Some(guard);
            }
            Candidate::Peer { peer, slot, .. } => {
                let words = peers[*peer].expect(slot, "LEADER").await;
                self.leader_overlaps += words[0].parse::<u64>().expect("LEADER <overlaps>");
            }
        }
        self.check(who, all, peers).await;
    }

    /// Checks that `who` is the only leader: in each participant's own view, and for
    /// a zklock observer of the election; and that no two leaders ever registered at
    /// once.
    pub async fn check(&mut self, who: usize, all: &mut [Candidate], peers: &mut [Peer]) {
        let expected = all[who].id().to_owned();
        // Each participant's own view: only `who` leads.
        for (i, candidate) in all.iter_mut().enumerate() {
            let leads = match candidate {
                Candidate::Zklock {
                    elected, leading, ..
                } => {
                    leading
                        .as_ref()
                        .is_some_and(|g| g.status() == LockStatus::Held)
                        || elected.as_mut().is_some_and(delivered)
                }
                Candidate::Peer { peer, slot, .. } => {
                    let peer = &mut peers[*peer];
                    if i != who && !peer.quiet(slot) {
                        let said = peer.reply(slot).await;
                        panic!(
                            "participant {} said {said:?} while {expected} was elected",
                            candidate.id()
                        );
                    }
                    peer.status(slot).await == "leader"
                }
            };
            assert_eq!(
                leads,
                i == who,
                "participant {} {} while {expected} was elected",
                candidate.id(),
                if leads { "leads too" } else { "does not lead" }
            );
        }
        // A zklock observer names the same leader (its node data is the id).
        let deadline = Instant::now() + REPLY_TIMEOUT;
        while self.watcher.leader().map(|l| l.id.as_slice()) != Some(expected.as_bytes()) {
            assert!(
                Instant::now() < deadline,
                "the zklock observer never saw {expected} lead"
            );
            self.watcher.changed().await.expect("observer");
        }
        assert_eq!(self.leader_overlaps, 0, "two leaders registered at once");
    }

    /// The leader `who` resigns (leaves `<root>/leaders` first).
    pub async fn resign(&mut self, who: usize, all: &mut [Candidate], peers: &mut [Peer]) {
        match &mut all[who] {
            Candidate::Zklock { id, leading, .. } => {
                let guard = leading.take().expect("resigning a zklock leader");
                self.observer
                    .client
                    .delete(&format!("{}/leaders/{id}", self.root), None)
                    .await
                    .expect("leaving");
                guard.release().await.expect("zklock resign");
            }
            Candidate::Peer { peer, slot, .. } => {
                peers[*peer].send(slot, "resign");
                peers[*peer].expect(slot, "RESIGNED").await;
            }
        }
    }

    pub async fn finish(self) {
        self.observer.wait_children(&self.path, 0).await;
        assert_eq!(self.leader_overlaps, 0, "two leaders registered at once");
        self.watcher_client.close().await;
    }
}

/// Registers `who` as the leader under `<root>/leaders`; true if another was there.
async fn register_leader(client: &zookeeper_client::Client, root: &str, who: &str) -> bool {
    let leaders = format!("{root}/leaders");
    client
        .create(
            &format!("{leaders}/{who}"),
            b"",
            &CreateMode::Persistent.with_acls(Acls::anyone_all()),
        )
        .await
        .expect("registering the leader");
    client
        .list_children(&leaders)
        .await
        .expect("listing leaders")
        .len()
        > 1
}
