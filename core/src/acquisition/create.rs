//! Our node's create: one pipelined burst with the listing that follows it, and
//! the lock directory's containers first when it is missing.

use super::{Acquisition, Create, OwnNode, State};
use crate::ctx::Ctx;
use crate::event::FailReason;
use crate::names::parse_sequence;
use crate::output::Progress;
use crate::path::ancestors;
use crate::proto::{CreateMode, Op, Reply, RequestId, ZkError};
use crate::requests::Purpose;

impl Acquisition {
    pub(super) fn send_create(&mut self, cx: &mut Ctx) {
        let op = Op::Create {
            path: self.node.create_path.clone(),
            data: crate::owner::node_data(
                self.spec.scheme,
                self.spec.owner.as_deref(),
                &self.spec.data,
            ),
            mode: CreateMode::EphemeralSequential,
        };
        if let Some(id) = cx.send(self.id, Purpose::CreateNode, op) {
            self.node.create = Create::InFlight(id);
            // Pipelined: per-session FIFO means this listing already holds our node.
            self.send_list(cx);
        }
    }

    fn send_parents_then_create(&mut self, cx: &mut Ctx) {
        let mut dirs = ancestors(&self.queue.dir);
        dirs.push(self.queue.dir.clone());
        for dir in dirs {
            let op = Op::Create {
                path: dir,
                data: Vec::new(),
                mode: CreateMode::Container,
            };
            cx.send(self.id, Purpose::CreateParent, op);
        }
        self.send_create(cx);
    }

    pub(super) fn on_create(
        &mut self,
        cx: &mut Ctx,
        request: RequestId,
        result: Result<Reply, ZkError>,
    ) {
        if self.node.create != Create::InFlight(request) {
            return;
        }
        match result {
            Ok(Reply::Created { path, stat }) => {
                let seq = path
                    .strip_prefix(self.node.create_path.as_str())
                    .and_then(parse_sequence);
                let Some(seq) = seq else {
                    // Not the node we asked for (a confused adapter or server): never
                    // adopt, hold or delete it. Ours, if created, is found by attempt
                    // id and removed, as after a connection loss.
                    self.node.create = Create::Unknown;
                    if self.state == State::Cleanup {
                        return self.continue_cleanup(cx);
                    }
                    return self.fail(
                        cx,
                        FailReason::Zk(ZkError::Other(format!("unexpected created path {path:?}"))),
                    );
                };
                self.node.create = Create::Done;
                if let Some(stat) = &stat {
                    let data = crate::owner::node_data(
                        self.spec.scheme,
                        self.spec.owner.as_deref(),
                        &self.spec.data,
                    );
                    self.detection.node_created(&self.spec, data, stat);
                }
                cx.progress(self.id, Progress::Created { node: path.clone() });
                self.node.own = Some(OwnNode { path, seq, stat });
                match self.state {
                    // The listing came first and found us free: the stat was missing.
                    State::Granting => {
                        self.state = State::Waiting;
                        self.grant(cx);
                    }
                    State::Waiting => {
                        self.ensure_own_read(cx);
                        if std::mem::take(&mut self.queue.relist_after_create)
                            && !self.queue.list.is_pending()
                        {
                            self.send_list(cx);
                        }
                    }
                    State::Cleanup => self.continue_cleanup(cx),
                    _ => {}
                }
            }
            Ok(other) => {
                // Not a create's reply: whether our node exists is unknown, so look for
                // it by attempt id (as after a connection loss) rather than forget it.
                self.node.create = Create::Unknown;
                if self.state == State::Cleanup {
                    return self.continue_cleanup(cx);
                }
                self.fail(
                    cx,
                    FailReason::Zk(ZkError::Other(format!("unexpected reply {other:?}"))),
                );
            }
            Err(ZkError::NoNode) => {
                // The lock directory (or an ancestor) is missing: create the containers,
                // then our node, in one pipelined burst.
                self.node.create = Create::NotSent;
                self.queue.list.forget();
                if self.state == State::Cleanup {
                    return self.continue_cleanup(cx);
                }
                self.node.parent_tries += 1;
                if self.node.parent_tries > cx.config.max_parent_retries {
                    return self.fail(cx, FailReason::Zk(ZkError::NoNode));
                }
                self.send_parents_then_create(cx);
            }
            Err(e) if e.is_connection_loss() => {
                self.node.create = Create::Unknown;
                self.trouble(cx, e);
            }
            Err(e) => {
                self.node.create = Create::NotSent;
                self.queue.list.forget();
                if self.state == State::Cleanup {
                    return self.continue_cleanup(cx);
                }
                self.fail(cx, FailReason::Zk(e));
            }
        }
    }
}
