//! [`Ctx`]: what a task (an acquisition, an inspection, a revocation, an observer,
//! a deadlock scan) may touch of its session besides itself, lent by the session
//! for one call.

use crate::contact::Contact;
use crate::event::LockEvent;
use crate::ids::LockId;
use crate::output::{Output, Progress};
use crate::path::ancestors;
use crate::proto::{CreateMode, Op, Request, RequestId};
use crate::requests::{Purpose, RequestBook};
use crate::spec::Config;
use crate::stats::Stats;
use crate::time::Timestamp;
use crate::timers::Timers;
use crate::watches::WatchIndex;
use std::collections::VecDeque;
use std::sync::Arc;

/// Everything a task may touch besides itself.
pub(crate) struct Ctx<'a> {
    pub now: Timestamp,
    pub connected: bool,
    pub session_id: Option<i64>,
    pub config: &'a Config,
    pub requests: &'a mut RequestBook,
    pub out: &'a mut VecDeque<Output>,
    pub timers: &'a mut Timers,
    pub stats: &'a mut Stats,
    pub watches: &'a mut WatchIndex,
    pub contact: &'a mut Contact,
}

impl Ctx<'_> {
    /// Queues a request, or does nothing while disconnected: recovery after the
    /// reconnect re-derives every request from the acquisition's state.
    pub(crate) fn send(&mut self, lock: LockId, purpose: Purpose, op: Op) -> Option<RequestId> {
        self.send_watching(lock, purpose, op, None)
    }

    /// As [`send`](Self::send); a watch `op` leaves is indexed under `shared`
    /// (its path, already allocated) rather than a copy of the path.
    pub(crate) fn send_watching(
        &mut self,
        lock: LockId,
        purpose: Purpose,
        op: Op,
        shared: Option<&Arc<str>>,
    ) -> Option<RequestId> {
        if !self.connected {
            return None;
        }
        let id = self.requests.insert(lock, purpose);
        self.stats.requests += 1;
        self.contact.on_sent(self.config, id, &op, self.now);
        match &op {
            Op::GetData { path, watch: true } | Op::WatchChildren { path } => {
                self.watches.add(lock, path, shared)
            }
            _ => {}
        }
        self.out.push_back(Output::Request(Request { id, op }));
        Some(id)
    }

    /// Creates the ancestors of `dir` as containers, and `dir` itself too if
    /// `with_dir` (a lock directory found missing), for `lock`.
    pub(crate) fn send_containers(&mut self, lock: LockId, dir: &str, with_dir: bool) {
        let mut dirs = ancestors(dir);
        dirs.extend(with_dir.then(|| dir.to_owned()));
        for path in dirs {
            let mode = CreateMode::Container;
            let op = Op::Create {
                path,
                data: Vec::new(),
                mode,
            };
            self.send(lock, Purpose::CreateParent, op);
        }
    }

    /// When held locks stop being trusted, if they already have: the leader's last
    /// proven contact is too old (see [`crate::contact`]).
    pub(crate) fn distrusted(&self) -> Option<Timestamp> {
        if self.contact.is_fresh(self.config, self.now) {
            return None;
        }
        self.contact.trusted_until(self.config)
    }

    /// Whether a lock granted now may be reported held: the proof of contact
    /// lasts until the session can renew it (see `Contact::lasts_until_renewed`).
    pub(crate) fn proof_lasts(&self) -> bool {
        self.contact.lasts_until_renewed(self.config, self.now)
    }

    pub(crate) fn emit(&mut self, lock: LockId, event: LockEvent) {
        self.out.push_back(Output::Event { lock, event });
    }

    pub(crate) fn progress(&mut self, lock: LockId, progress: Progress) {
        self.out.push_back(Output::Progress { lock, progress });
    }
}

// Here, not beside the `RequestBook`: it sends through the `Ctx`, which holds
// the book (an import circle otherwise).
/// One request of a kind that a part keeps at most one of in flight (a listing,
/// a read of our node, a delete): its reply is taken only if it answers the
/// request sent last, so no handler can forget that guard. The id's number, 0
/// for none (ids start at 1): half an `Option<RequestId>`, kept six times over
/// by every acquisition.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub(crate) struct InFlight(u64);

impl InFlight {
    /// Whether a request is in flight.
    pub(crate) fn is_pending(&self) -> bool {
        self.0 != 0
    }

    /// Sends `op` for `lock`, superseding whatever was in flight (its reply, if it
    /// comes, is no longer ours). Returns whether it went out (not while
    /// disconnected).
    pub(crate) fn send(&mut self, cx: &mut Ctx, lock: LockId, purpose: Purpose, op: Op) -> bool {
        self.0 = cx.send(lock, purpose, op).map_or(0, |id| id.0);
        self.is_pending()
    }

    /// As [`send`](Self::send), with [`Ctx::send_watching`]'s `shared` path.
    pub(crate) fn send_watching(
        &mut self,
        cx: &mut Ctx,
        lock: LockId,
        purpose: Purpose,
        op: Op,
        shared: &Arc<str>,
    ) -> bool {
        self.0 = (cx.send_watching(lock, purpose, op, Some(shared))).map_or(0, |id| id.0);
        self.is_pending()
    }

    /// Takes the reply to `request` if it is the one in flight (then nothing is).
    pub(crate) fn take_reply(&mut self, request: RequestId) -> bool {
        let ours = self.is_pending() && self.0 == request.0;
        if ours {
            self.0 = 0;
        }
        ours
    }

    /// Stops waiting for the request in flight (the connection dropped, or its
    /// answer no longer matters). Returns whether one was in flight.
    pub(crate) fn forget(&mut self) -> bool {
        std::mem::take(&mut self.0) != 0
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// What a [`Ctx`] borrows, owned, for unit tests of a part on its own.
    #[derive(Default)]
    pub(crate) struct CtxParts {
        pub config: Config,
        pub requests: RequestBook,
        pub out: VecDeque<Output>,
        pub timers: Timers,
        pub stats: Stats,
        pub watches: WatchIndex,
        pub contact: Contact,
    }

    impl CtxParts {
        /// A context connected at time zero, session 1.
        pub(crate) fn cx(&mut self) -> Ctx<'_> {
            Ctx {
                now: Timestamp::default(),
                connected: true,
                session_id: Some(1),
                config: &self.config,
                requests: &mut self.requests,
                out: &mut self.out,
                timers: &mut self.timers,
                stats: &mut self.stats,
                watches: &mut self.watches,
                contact: &mut self.contact,
            }
        }

        /// The requests queued so far, in order, drained.
        pub(crate) fn sent(&mut self) -> Vec<Request> {
            self.out
                .drain(..)
                .filter_map(|o| match o {
                    Output::Request(r) => Some(r),
                    _ => None,
                })
                .collect()
        }

        /// The operations of [`sent`](Self::sent).
        pub(crate) fn sent_ops(&mut self) -> Vec<Op> {
            self.sent().into_iter().map(|r| r.op).collect()
        }
    }
}
