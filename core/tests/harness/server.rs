//! The server's side of a scenario, written once: lock-sim's [`ZkModel`] (the
//! project's one ZooKeeper model) answers the core's requests, and fires the
//! watches our session left. A scenario states only what differs from an honest,
//! prompt server: a reply held back or lost, a disconnect, an expiry, a peer or an
//! administrator changing the tree.

use super::H;
use lock_core::*;
use lock_sim::ZkModel;
use std::time::Duration;

/// The model server behind an [`H`] made by [`H::served`].
pub struct Zk {
    /// The tree, its sessions and watches.
    pub model: ZkModel,
    /// The session the peers' nodes (and an administrator's changes) belong to.
    pub peers: i64,
    /// Whether our client is connected: firings for our session wait while not.
    connected: bool,
}

impl H {
    /// A session connected to a model server whose tree holds `dirs` (persistent).
    pub fn served(dirs: &[&str]) -> H {
        H::served_with(Config::new(Duration::from_secs(10), 1), dirs)
    }

    /// [`H::served`] with this session configuration.
    pub fn served_with(config: Config, dirs: &[&str]) -> H {
        let mut h = H::served_unconnected(config, dirs);
        h.connect(h.sid);
        h
    }

    /// [`H::served_with`] before the session's first `Connected` ([`H::connect`]).
    pub fn served_unconnected(config: Config, dirs: &[&str]) -> H {
        let mut model = ZkModel::new();
        let peers = model.create_session();
        for dir in dirs {
            // With its parents, as `mkdir -p` would.
            for (end, _) in dir.match_indices('/').skip(1).chain([(dir.len(), "")]) {
                if !model.contains(&dir[..end]) {
                    model
                        .create(peers, &dir[..end], &[], CreateMode::Persistent)
                        .expect("a directory of the scenario");
                }
            }
        }
        let sid = model.create_session();
        let mut h = H::unconnected();
        h.s = Session::new(config);
        h.sid = sid;
        h.zk = Some(Zk {
            model,
            peers,
            connected: false,
        });
        h
    }

    /// The model server (the scenario was made by [`H::served`]).
    pub fn zk(&mut self) -> &mut Zk {
        self.zk.as_mut().expect("a served scenario")
    }

    /// Connected (again) as `sid`; firings held while disconnected are delivered.
    pub fn connect(&mut self, sid: i64) {
        self.zk().connected = true;
        self.session(SessionEvent::Connected { session_id: sid });
        self.deliver();
    }

    /// The connection drops: the requests in flight are lost unanswered (neither
    /// applied nor replied), the server drops our watches (the core sets again
    /// what it still needs), and the session hears `Disconnected`.
    pub fn disconnect(&mut self) {
        self.disconnect_after(Duration::ZERO);
    }

    /// [`H::disconnect`], reported `since_contact` after the server last heard us.
    pub fn disconnect_after(&mut self, since_contact: Duration) {
        self.reqs.clear();
        let sid = self.sid;
        self.zk().model.remove_watches(sid);
        self.zk().connected = false;
        self.session(SessionEvent::Disconnected { since_contact });
    }

    /// Disconnected, then connected again on the same session.
    pub fn reconnect(&mut self) {
        self.disconnect();
        self.connect(self.sid);
    }

    /// The server expires our session (its nodes go); the session hears `Expired`.
    pub fn expire(&mut self) {
        let sid = self.sid;
        self.zk().model.expire_session(sid);
        self.zk().connected = false;
        self.reqs.clear();
        self.session(SessionEvent::Expired);
    }

    /// A new session on the server, connected; returns its id.
    pub fn new_session(&mut self) -> i64 {
        let sid = self.zk().model.create_session();
        self.sid = sid;
        self.connect(sid);
        sid
    }

    /// Applies the front request to the tree and returns the server's answer,
    /// without handing it to the core (a reply held back or lost on the way).
    pub fn apply_front(&mut self) -> (Request, Result<Reply, ZkError>) {
        let r = self.next_req();
        let sid = self.sid;
        let result = self.zk().model.apply(sid, &r.op);
        (r, result)
    }

    /// The front request is applied, and its reply never comes (lost with the
    /// connection that follows).
    pub fn apply_unanswered(&mut self) -> Request {
        self.apply_front().0
    }

    /// Applies `op` to the tree as our session, as if sent again.
    pub fn apply(&mut self, op: &Op) -> Result<Reply, ZkError> {
        let sid = self.sid;
        self.zk().model.apply(sid, op)
    }

    /// Answers `r` (taken earlier, a reply held back) from the tree now, then
    /// delivers the firings.
    pub fn answer(&mut self, r: &Request) {
        let result = self.apply(&r.op);
        self.reply(r.id, result);
        self.deliver();
    }

    /// Answers the front request from the tree, then delivers the firings.
    pub fn serve_one(&mut self) -> Request {
        let r = self.next_req();
        self.answer(&r);
        r
    }

    /// Answers the queued requests whose op `pick`s (one pass: not those the
    /// answers lead to); the others stay queued, in order. Returns those answered.
    pub fn serve_where(&mut self, pick: impl Fn(&Op) -> bool) -> Vec<Request> {
        let (picked, rest): (Vec<Request>, Vec<Request>) =
            self.reqs.drain(..).partition(|r| pick(&r.op));
        self.reqs.extend(rest);
        for r in &picked {
            self.answer(r);
        }
        picked
    }

    /// Answers every request, including those the answers lead to, until none is
    /// left; returns them in the order served.
    pub fn serve(&mut self) -> Vec<Request> {
        let mut served = Vec::new();
        while !self.reqs.is_empty() {
            served.push(self.serve_one());
        }
        served
    }

    /// The front request is applied, but its reply is a connection loss.
    pub fn lose_reply(&mut self) -> Request {
        let (r, _) = self.apply_front();
        self.reply(r.id, Err(ZkError::ConnectionLoss));
        r
    }

    /// Hands our session the firings of its watches (while connected).
    pub fn deliver(&mut self) {
        let sid = self.sid;
        let zk = self.zk();
        if !zk.connected {
            return;
        }
        let fired = zk.model.take_notifications();
        for n in fired.into_iter().filter(|n| n.session == sid) {
            self.watch(&n.path, n.kind);
        }
    }

    /// A peer's participant node under `dir`, made by attempt `n`; returns its path.
    pub fn peer_joins(&mut self, dir: &str, kind: NodeKind, n: u128) -> String {
        let prefix = names::node_prefix(NameScheme::Native, AttemptId(n), kind);
        self.peer_named(dir, &prefix)
    }

    /// A peer's sequential node under `dir` named `prefix` (any library's
    /// scheme, or none); returns its path.
    pub fn peer_named(&mut self, dir: &str, prefix: &str) -> String {
        let peers = self.zk().peers;
        self.named_of(peers, dir, prefix, &[])
    }

    /// [`H::peer_named`] of `session` (another client's), with this node data.
    pub fn named_of(&mut self, session: i64, dir: &str, prefix: &str, data: &[u8]) -> String {
        let (path, _) = self
            .zk()
            .model
            .create(
                session,
                &format!("{dir}/{prefix}"),
                data,
                CreateMode::EphemeralSequential,
            )
            .expect("a peer's node");
        self.deliver();
        path
    }

    /// The paths our session has a data watch on, sorted.
    pub fn watched(&mut self) -> Vec<String> {
        let sid = self.sid;
        let mut paths: Vec<String> = self
            .zk()
            .model
            .watches_of(sid)
            .into_iter()
            .filter(|(ty, _)| *ty == lock_sim::WatchType::Data)
            .map(|(_, path)| path)
            .collect();
        paths.sort();
        paths
    }

    /// A node of another client's `session` at exactly `path` (ephemeral), with `data`.
    pub fn node_of(&mut self, session: i64, path: &str, data: &[u8]) {
        let zk = self.zk();
        zk.model
            .create(session, path, data, CreateMode::Ephemeral)
            .expect("a node of another client");
    }

    /// The peers' session (or an administrator) creates `path`, with `data`.
    pub fn peer_creates(&mut self, path: &str, data: &[u8], mode: CreateMode) {
        let zk = self.zk();
        zk.model
            .create(zk.peers, path, data, mode)
            .expect("a node of someone else");
    }

    /// `N` sessions of other clients.
    pub fn sessions<const N: usize>(&mut self) -> [i64; N] {
        [0; N].map(|_| self.zk().model.create_session())
    }

    /// Someone else (a peer leaving, an administrator) deletes `path`.
    pub fn delete_node(&mut self, path: &str) {
        let zk = self.zk();
        zk.model
            .delete(zk.peers, path, None)
            .expect("a node to delete");
        self.deliver();
    }

    /// Someone else writes `data` to `path`.
    pub fn set_node_data(&mut self, path: &str, data: &[u8]) {
        let zk = self.zk();
        zk.model
            .set_data(zk.peers, path, data, None)
            .expect("a node to write");
        self.deliver();
    }

    /// The children of `dir` on the server, in sequence order.
    pub fn children(&mut self, dir: &str) -> Vec<String> {
        let mut names = self.zk().model.children(dir).unwrap_or_default();
        names.sort_by_key(|name| name[name.len().saturating_sub(10)..].to_owned());
        names
    }

    /// The paths of our session's nodes under `dir`, in sequence order.
    pub fn ours(&mut self, dir: &str) -> Vec<String> {
        let sid = self.sid;
        let mut paths: Vec<String> = self
            .zk()
            .model
            .ephemerals(sid)
            .into_iter()
            .filter(|p| p.starts_with(&format!("{dir}/")))
            .collect();
        paths.sort_by_key(|p| p[p.len().saturating_sub(10)..].to_owned());
        paths
    }

    /// An acquisition of `spec` served to Held (the `Acquired` event checked and
    /// consumed); returns the id and our node's path.
    pub fn held_on(&mut self, spec: LockSpec) -> (LockId, String) {
        let (id, node) = self.served_acquire(spec);
        self.acquired();
        assert!(
            self.no_requests(),
            "held with requests left: {:?}",
            self.reqs
        );
        (id, node)
    }

    /// A served scenario whose session holds `spec` (its directory made first);
    /// returns it, the lock's id and our node's path.
    pub fn holding(spec: LockSpec) -> (H, LockId, String) {
        let mut h = H::served(&[spec.path()]);
        let (id, node) = h.held_on(spec);
        (h, id, node)
    }

    /// A served scenario whose session waits at `dir` ([`H::waiting_on`]);
    /// returns it, the id, our node's path and the peer's.
    pub fn queued(dir: &str) -> (H, LockId, String, String) {
        let mut h = H::served(&[dir]);
        let (id, node, peer) = h.waiting_on(dir);
        (h, id, node, peer)
    }

    /// A write lock on `dir` waiting behind a peer's write node (that joined
    /// first); returns the id, our node's path and the peer's.
    pub fn waiting_on(&mut self, dir: &str) -> (LockId, String, String) {
        let peer = self.peer_joins(dir, NodeKind::Write, 1);
        let (id, node) = self.served_acquire(LockSpec::write(dir));
        assert!(self.take_events().is_empty());
        assert_eq!(self.s.state(id), Some(LockState::Waiting));
        (id, node, peer)
    }

    /// Whether the server holds `path`.
    pub fn exists(&mut self, path: &str) -> bool {
        self.zk().model.contains(path)
    }

    /// Acquires `spec` against the server and serves it to the end; returns the
    /// id and our node's path (the last node our session owns under the lock path).
    pub fn served_acquire(&mut self, spec: LockSpec) -> (LockId, String) {
        let dir = spec.path().to_owned();
        let id = self.acquire(spec);
        self.serve();
        let node = self.ours(&dir).pop().expect("our node");
        (id, node)
    }

    /// Checks that the one event since the last look is `Participants`; returns them.
    #[track_caller]
    pub fn participants(&mut self) -> Participants {
        let mut events = self.take_events();
        match events.pop() {
            Some(LockEvent::Participants(p)) if events.is_empty() => p,
            last => panic!("expected Participants, got {events:?} then {last:?}"),
        }
    }

    /// Inspects `path`, served to the end: what the inspection reports.
    #[track_caller]
    pub fn inspected(&mut self, path: &str) -> Participants {
        self.run(|s, now| s.inspect(path, now));
        self.serve();
        self.participants()
    }
}

/// The operations of `requests`, in order.
pub fn ops<'a>(requests: impl IntoIterator<Item = &'a Request>) -> Vec<Op> {
    requests.into_iter().map(|r| r.op.clone()).collect()
}

/// The `Delete` the core sends for `path` (any version).
pub fn delete_of(path: &str) -> Op {
    Op::Delete {
        path: path.to_owned(),
        version: None,
    }
}

/// A read of `path`'s data, setting a watch on it or not.
pub fn read_of(path: impl Into<String>, watch: bool) -> Op {
    Op::GetData {
        path: path.into(),
        watch,
    }
}

/// A multi's delete of `path` (any version).
pub fn multi_delete_of(path: &str) -> MultiOp {
    MultiOp::Delete {
        path: path.to_owned(),
        version: None,
    }
}
