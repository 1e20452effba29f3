//! Revocation requests: ask holders (or a waiter) to let go by writing Curator's
//! `__REVOKE__` marker into their node's data. Revocable locks watch their own node
//! and react; the others ignore it.

use crate::ctx::{Ctx, InFlight};
use crate::event::LockEvent;
use crate::ids::LockId;
use crate::names::{parse_name, parse_participant, sort_by_sequence, NameScheme, NodeKind};
use crate::oneshot::{OneShot, OneShotRun};
use crate::path::split_parent;
use crate::proto::{Op, Reply, RequestId, ZkError};
use crate::requests::Purpose;

/// Curator's revocation marker.
pub(crate) const REVOKE: &[u8] = b"__REVOKE__";

pub(crate) struct Revoke {
    pub(crate) run: OneShotRun,
    /// A lock directory (revoke its current holders) or one participant node.
    target: String,
    target_is_node: bool,
    pending: Vec<(RequestId, String)>,
    list: InFlight,
    revoked: Vec<String>,
}

impl Revoke {
    pub(crate) fn new(id: LockId, target: String) -> Self {
        let target_is_node = parse_name(split_parent(&target).1).is_some();
        Revoke {
            run: OneShotRun::new(id),
            target,
            target_is_node,
            pending: Vec::new(),
            list: InFlight::default(),
            revoked: Vec::new(),
        }
    }

    fn send_set(&mut self, cx: &mut Ctx, path: String) {
        let op = Op::SetData {
            path: path.clone(),
            data: REVOKE.to_vec(),
            version: None,
        };
        if let Some(r) = cx.send(self.run.id, Purpose::WatchPeer { name: path.clone() }, op) {
            self.pending.push((r, path));
        }
    }

    pub(crate) fn on_reply(
        &mut self,
        cx: &mut Ctx,
        request: RequestId,
        purpose: Purpose,
        result: Result<Reply, ZkError>,
    ) {
        match purpose {
            Purpose::List if self.list.take_reply(request) => match result {
                Ok(Reply::Children(children)) => {
                    for name in current_holders(&children) {
                        let path = format!("{}/{}", self.target, name);
                        self.send_set(cx, path);
                    }
                }
                Err(ZkError::NoNode) => {}
                Ok(_) => return self.trouble(cx, ZkError::unexpected_reply()),
                Err(e) => return self.trouble(cx, e),
            },
            Purpose::WatchPeer { .. } => {
                let Some(pos) = self.pending.iter().position(|(r, _)| *r == request) else {
                    return;
                };
                let (_, path) = self.pending.remove(pos);
                match result {
                    Ok(_) => self.revoked.push(path),
                    Err(ZkError::NoNode) => {}
                    Err(e) => return self.trouble(cx, e),
                }
            }
            _ => return,
        }
        if self.pending.is_empty()
            && !self.list.is_pending()
            && !self.run.done
            && !self.run.retry_due
        {
            self.run.done = true;
            let nodes = std::mem::take(&mut self.revoked);
            cx.emit(self.run.id, LockEvent::RevocationSent { nodes });
        }
    }
}

impl OneShot for Revoke {
    fn run(&mut self) -> &mut OneShotRun {
        &mut self.run
    }

    fn restart(&mut self, cx: &mut Ctx) {
        self.pending.clear();
        self.revoked.clear();
        if self.target_is_node {
            let t = self.target.clone();
            self.send_set(cx, t);
        } else {
            let op = Op::GetChildren {
                path: self.target.clone(),
            };
            self.list.send(cx, self.run.id, Purpose::List, op);
        }
    }
}

/// The participants holding the lock now, from a listing: the lowest one, and if it
/// is a reader, every reader before the first exclusive participant. A holder of an
/// unknown scheme ([`NameScheme::Other`]) holds, but is not asked: its client would
/// not read the marker, and its data is not ours to overwrite.
pub(crate) fn current_holders(children: &[String]) -> Vec<String> {
    let mut parts: Vec<_> = children
        .iter()
        .filter_map(|n| parse_participant(n).map(|p| (p, n.clone())))
        .collect();
    if parts.is_empty() {
        return Vec::new();
    }
    sort_by_sequence(&mut parts, |(p, _)| p.seq);
    match parts[0].0.kind {
        NodeKind::Read => parts
            .iter()
            .take_while(|(p, _)| p.kind == NodeKind::Read)
            .map(|(_, n)| n.clone())
            .collect(),
        _ if parts[0].0.scheme == NameScheme::Other => Vec::new(),
        _ => vec![parts[0].1.clone()],
    }
}
