//! Publishing where an owner waits, in the header of the nodes it holds.

use crate::ctx::Ctx;
use crate::ids::LockId;
use crate::owner::{self, NodeData};
use crate::proto::{Op, Reply, RequestId, Stat, ZkError};
use crate::requests::Purpose;

/// The publication state of one held node.
#[derive(Default, Debug)]
pub(crate) struct Publication {
    /// What the node's header says (as far as we know) and at which version.
    data: Option<NodeData>,
    version: Option<i32>,
    /// What should be published.
    wanted: Vec<String>,
    /// The `setData` in flight, and what it writes.
    request: Option<(RequestId, Vec<String>)>,
    /// Someone else wrote the node (a revocation marker): never write it again.
    pub(crate) foreign: bool,
}

impl Publication {
    /// The node as created (or as read back): our header at `stat.version`.
    pub(crate) fn observe(
        &mut self,
        data: &[u8],
        stat: &Stat,
        scheme: crate::NameScheme,
        owner: Option<&str>,
    ) {
        let d = owner::parse(scheme, data);
        if d.header && d.owner.as_deref() == owner && owner.is_some() {
            self.data = Some(d);
            self.version = Some(stat.version);
        } else {
            // Not our header any more: a revocation marker or someone's write.
            self.foreign = true;
        }
    }

    /// Our create's reply: the node holds our header, version `stat.version`.
    pub(crate) fn created(
        &mut self,
        data: Vec<u8>,
        stat: &Stat,
        scheme: crate::NameScheme,
        owner: Option<&str>,
    ) {
        if self.data.is_none() && !self.foreign {
            self.observe(&data, stat, scheme, owner);
        }
    }

    /// Whether anything is published on the node, or wanted there.
    pub(crate) fn active(&self) -> bool {
        !self.wanted.is_empty()
            || self.request.is_some()
            || self.data.as_ref().is_some_and(|d| !d.waits.is_empty())
    }

    /// Publishes `waits` (sorted) on `path`, unless that is already done or the
    /// node is someone else's now.
    pub(crate) fn publish(&mut self, cx: &mut Ctx, lock: LockId, path: &str, waits: Vec<String>) {
        self.wanted = waits;
        self.send(cx, lock, path);
    }

    fn send(&mut self, cx: &mut Ctx, lock: LockId, path: &str) {
        if self.foreign || self.request.is_some() {
            return;
        }
        let (Some(data), Some(version)) = (&self.data, self.version) else {
            return;
        };
        if data.waits == self.wanted {
            return;
        }
        let op = Op::SetData {
            path: path.to_owned(),
            data: owner::with_waits(data, &self.wanted),
            version: Some(version),
        };
        if crate::limits::check_request(cx.config.max_packet, &op).is_err() {
            return; // too many waits to publish: the chase will not see them
        }
        if let Some(r) = cx.send(lock, Purpose::Publish, op) {
            self.request = Some((r, self.wanted.clone()));
        }
    }

    /// The reply to our `setData`, if `request` is it. Returns whether it was.
    pub(crate) fn on_reply(
        &mut self,
        cx: &mut Ctx,
        lock: LockId,
        path: &str,
        request: RequestId,
        result: &Result<Reply, ZkError>,
    ) -> bool {
        if !matches!(&self.request, Some((r, _)) if *r == request) {
            return false;
        }
        let Some((r, sent)) = self.request.take() else {
            return false;
        };
        debug_assert_eq!(r, request);
        match result {
            Ok(Reply::Stat(stat)) => {
                if let Some(d) = &mut self.data {
                    d.waits = sent;
                }
                self.version = Some(stat.version);
                self.send(cx, lock, path);
            }
            // Someone else wrote the node since we read it: leave it alone.
            Err(ZkError::BadVersion) => self.foreign = true,
            // Lost with the connection (the write may or may not have applied): the
            // read of our node after the reconnect tells.
            _ => {
                self.version = None;
            }
        }
        true
    }

    /// The connection dropped: whatever was in flight may have applied.
    pub(crate) fn forget(&mut self) {
        if self.request.take().is_some() {
            self.version = None;
        }
    }
}
