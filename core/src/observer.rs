//! Election observers: follow who leads an election without taking part.
//!
//! An observer lists the election directory, reads the lowest participant's data
//! (its id) with a watch, and re-lists when that node goes. Observers are woken by
//! leader changes only, never by participants joining or leaving behind the leader;
//! a child watch is used only while nobody participates, and removed from the server
//! once someone does (else it would fire at the next join or leave: one leader
//! change would wake the observer twice, by the leader's data watch and by it).

use crate::ctx::{Ctx, InFlight};
use crate::event::{Leader, LockEvent};
use crate::ids::{FencingToken, LockId};
use crate::names::{parse_participant, sort_by_sequence};
use crate::oneshot::{OneShot, OneShotRun};
use crate::path::split_parent;
use crate::proto::{Op, Reply, RequestId, WatchKind, WatchType, ZkError};
use crate::requests::Purpose;
use crate::timers::TimerKind;

pub(crate) struct Observer {
    pub(crate) run: OneShotRun,
    path: String,
    list: InFlight,
    read: InFlight,
    /// The leader node whose data we watch.
    watching: Option<String>,
    /// Whether the session may still hold our child watch on the directory (set
    /// while nobody participated, not fired yet; a reconnect keeps it, as clients
    /// set their watches again on the same session).
    child_watch: bool,
    /// What we last reported, if anything.
    reported: Option<Option<Leader>>,
    participants: usize,
}

impl Observer {
    pub(crate) fn new(id: LockId, path: String) -> Self {
        Observer {
            run: OneShotRun::new(id),
            path,
            list: InFlight::default(),
            read: InFlight::default(),
            watching: None,
            child_watch: false,
            reported: None,
            participants: 0,
        }
    }

    fn send_list(&mut self, cx: &mut Ctx, watch: bool) {
        let path = self.path.clone();
        let op = if watch {
            self.child_watch = true;
            Op::WatchChildren { path }
        } else {
            Op::GetChildren { path }
        };
        self.list.send(cx, self.run.id, Purpose::List, op);
    }

    /// The leader we watched is gone (or nobody was): look again.
    fn relist(&mut self, cx: &mut Ctx) {
        self.watching = None;
        self.send_list(cx, false);
    }

    pub(crate) fn on_reply(
        &mut self,
        cx: &mut Ctx,
        request: RequestId,
        purpose: Purpose,
        result: Result<Reply, ZkError>,
    ) {
        match purpose {
            Purpose::List if self.list.take_reply(request) => self.on_list(cx, request, result),
            Purpose::WatchPeer { name } if self.read.take_reply(request) => {
                self.on_leader_data(cx, name, result)
            }
            _ => {}
        }
    }

    fn on_list(&mut self, cx: &mut Ctx, _request: RequestId, result: Result<Reply, ZkError>) {
        let children = match result {
            Ok(Reply::Children(c)) => c,
            Ok(_) => return self.trouble(cx, ZkError::unexpected_reply()),
            // No directory yet: nothing can be watched there; look again later.
            Err(ZkError::NoNode) => {
                self.report(cx, None);
                return cx.timers.set(
                    self.run.id,
                    TimerKind::Retry,
                    cx.now + cx.config.retry_interval,
                );
            }
            Err(e) => return self.trouble(cx, e),
        };
        let mut parts: Vec<(i32, String)> = children
            .iter()
            .filter_map(|n| {
                parse_participant(n)
                    .filter(|p| p.kind.is_exclusive())
                    .map(|p| (p.seq, n.clone()))
            })
            .collect();
        self.participants = parts.len();
        if parts.is_empty() {
            self.report(cx, None);
            // Nobody participates: a child watch tells us when someone joins (the
            // watched listing itself may already show them).
            if self.watching.is_none() {
                self.watching = Some(String::new());
                self.send_list(cx, true);
            }
            return;
        }
        self.drop_child_watch(cx);
        sort_by_sequence(&mut parts, |(s, _)| *s);
        let leader = format!("{}/{}", self.path, parts[0].1);
        if self.watching.as_deref() == Some(leader.as_str()) && !self.read.is_pending() {
            // Same leader, still watched: only the count may have changed.
            return;
        }
        self.watching = Some(leader.clone());
        let op = Op::GetData {
            path: leader,
            watch: true,
        };
        self.read.send(
            cx,
            self.run.id,
            Purpose::WatchPeer {
                name: parts[0].1.clone(),
            },
            op,
        );
    }

    /// Someone participates: the child watch goes (see the module docs).
    fn drop_child_watch(&mut self, cx: &mut Ctx) {
        if !std::mem::take(&mut self.child_watch) {
            return;
        }
        // Another task of this session may list the directory with a watch too.
        if cx.watches.remove(self.run.id, &self.path) {
            let op = Op::RemoveWatch {
                path: self.path.clone(),
                watch: WatchType::Children,
            };
            cx.send(self.run.id, Purpose::RemoveOwnWatch, op);
        }
    }

    fn on_leader_data(&mut self, cx: &mut Ctx, name: String, result: Result<Reply, ZkError>) {
        match result {
            Ok(Reply::Data { data, stat }) => {
                let path = format!("{}/{}", self.path, name);
                // A participant's id never changes: data written later (a revocation
                // request) is not a new leader.
                if matches!(&self.reported, Some(Some(l)) if l.path == path) {
                    return;
                }
                let leader = Leader {
                    path,
                    // The participant id, without an owner header.
                    id: crate::owner::user_data(&data).to_vec(),
                    token: FencingToken(stat.czxid),
                };
                self.report(cx, Some(leader));
            }
            Ok(_) => self.trouble(cx, ZkError::unexpected_reply()),
            Err(ZkError::NoNode) => self.relist(cx),
            Err(e) => self.trouble(cx, e),
        }
    }

    fn report(&mut self, cx: &mut Ctx, leader: Option<Leader>) {
        if self.reported.as_ref() == Some(&leader) {
            return;
        }
        self.reported = Some(leader.clone());
        let participants = self.participants;
        cx.emit(
            self.run.id,
            LockEvent::LeaderChanged {
                leader,
                participants,
            },
        );
    }

    pub(crate) fn on_watch(&mut self, cx: &mut Ctx, path: &str, kind: WatchKind) {
        if path == self.path {
            // A fired watch is gone from the server.
            self.child_watch = false;
        }
        match (self.watching.as_deref(), kind) {
            (Some(w), WatchKind::NodeDeleted) if w == path => self.relist(cx),
            (Some(w), WatchKind::NodeDataChanged) if w == path => {
                let op = Op::GetData {
                    path: w.to_owned(),
                    watch: true,
                };
                let name = split_parent(w).1.to_owned();
                self.read
                    .send(cx, self.run.id, Purpose::WatchPeer { name }, op);
            }
            (Some(""), WatchKind::NodeChildrenChanged | WatchKind::NodeDeleted)
                if path == self.path =>
            {
                self.relist(cx)
            }
            _ => {}
        }
    }
}

impl OneShot for Observer {
    fn run(&mut self) -> &mut OneShotRun {
        &mut self.run
    }

    fn restart(&mut self, cx: &mut Ctx) {
        self.read.forget();
        self.relist(cx);
    }
}
