//! What a user asks lock-client besides locks: revocation requests, inspections,
//! deadlock scans (each answered once) and election observers (an answer per
//! change of leader), each answer seen by the checker as the core's event.
//!
//! The user API has no handle naming these tasks, so the harness names them from
//! the top half of the id space (the core counts its own ids up from 1): the name
//! is the checker's key and the one [`Sim::cancel`](crate::Sim::cancel) takes, which
//! stops the task as a user does, by dropping its future (or observer).

use crate::sim::user_face::{fail_reason, lost_wake_up, take_woken, Drained, TaskWaker};
use lock_client::{ElectionObserver, Error, LockClient};
use lock_core::{FailReason, LockEvent, LockId, UsageError};
use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

/// The first id the harness names a query with.
const FIRST_QUERY_ID: u64 = 1 << 62;

/// Which query, with its path (for [`Queries::start`]).
#[derive(Clone, Debug)]
pub(crate) enum Ask {
    Revoke(String),
    Inspect(String),
    Deadlocks(String),
    Observe(String),
}

type Answer = Pin<Box<dyn Future<Output = Result<LockEvent, Error>> + Send>>;
type Observing = Pin<Box<dyn Future<Output = Result<ElectionObserver, Error>> + Send>>;

/// Where a query stands.
enum Stage {
    /// Awaiting its one answer (mapped to the core's event).
    Once(Answer),
    /// Awaiting `observe_election`.
    Starting(Observing),
    /// Reading the observer's changes.
    Following(ElectionObserver),
}

struct Query {
    stage: Stage,
    wake: TaskWaker,
}

/// One client's queries in flight, by the harness's id.
#[derive(Default)]
pub(crate) struct Queries {
    running: BTreeMap<LockId, Query>,
    named: u64,
}

impl Queries {
    /// The user asks: the query's id, or why lock-client refused at once.
    pub(crate) fn start(
        &mut self,
        client: &LockClient,
        ask: Ask,
        out: &mut VecDeque<Drained>,
    ) -> Result<LockId, UsageError> {
        let client = client.clone();
        let stage = match ask {
            Ask::Revoke(path) => Stage::Once(Box::pin(async move {
                let nodes = client.revoke(path).await?;
                Ok(LockEvent::RevocationSent { nodes })
            })),
            Ask::Inspect(path) => Stage::Once(Box::pin(async move {
                Ok(LockEvent::Participants(client.participants(path).await?))
            })),
            Ask::Deadlocks(root) => Stage::Once(Box::pin(async move {
                let cycles = client.deadlocks(root).await?;
                Ok(LockEvent::Deadlocks { cycles })
            })),
            Ask::Observe(path) => {
                Stage::Starting(Box::pin(async move { client.observe_election(path).await }))
            }
        };
        let id = LockId(FIRST_QUERY_ID + self.named);
        let mut query = Query {
            stage,
            wake: TaskWaker::default(),
        };
        let waker = query.wake.waker.clone();
        match poll_query(&mut query, &waker, id, out) {
            // Refused at once (a bad path): nothing was started.
            Progress::Refused(e) => return Err(e),
            Progress::Over => {}
            Progress::Pending => {
                self.running.insert(id, query);
            }
        }
        self.named += 1;
        Ok(id)
    }

    /// Whether `id` names a query in flight.
    pub(crate) fn contains(&self, id: LockId) -> bool {
        self.running.contains_key(&id)
    }

    /// The user stops the query: drops its future or observer (the end it sees).
    pub(crate) fn cancel(&mut self, id: LockId, out: &mut VecDeque<Drained>) {
        if self.running.remove(&id).is_some() {
            out.push_back(Drained::Event {
                lock: id,
                event: LockEvent::Failed(FailReason::Cancelled),
            });
        }
    }

    /// Polls every query whose waker was woken; true if one was.
    pub(crate) fn poll_woken(&mut self, out: &mut VecDeque<Drained>) -> bool {
        let woken = take_woken(&self.running, |q| &q.wake);
        for (id, waker) in &woken {
            let query = self.running.get_mut(id).expect("running");
            let progress = poll_query(query, waker, *id, out);
            self.settle(*id, progress, out);
        }
        !woken.is_empty()
    }

    /// Polls every query with `probe`: one that gives an answer lost its wake-up.
    pub(crate) fn probe_unwoken(&mut self, probe: &Waker, out: &mut VecDeque<Drained>) {
        let ids: Vec<LockId> = self.running.keys().copied().collect();
        for id in ids {
            let query = self.running.get_mut(&id).expect("running");
            let wakes = query.wake.wakes();
            let mut seen = VecDeque::new();
            let progress = poll_query(query, probe, id, &mut seen);
            self.settle(id, progress, &mut seen);
            if !seen.is_empty() {
                out.push_back(lost_wake_up(format!("query {id}"), wakes));
                out.extend(seen);
            }
        }
    }
}

/// How far a poll took a query.
enum Progress {
    Pending,
    /// It gave its last answer.
    Over,
    /// lock-client refused the call as misuse: nothing was started.
    Refused(UsageError),
}

impl Queries {
    /// Drops a query that is over; one refused after it started breaks the
    /// contract (misuse is refused at the call).
    fn settle(&mut self, id: LockId, progress: Progress, out: &mut VecDeque<Drained>) {
        if let Progress::Refused(e) = &progress {
            out.push_back(Drained::Broken(
                crate::ViolationKind::UsageRefused,
                format!("query {id} refused after it started: {e}"),
            ));
        }
        if !matches!(progress, Progress::Pending) {
            self.running.remove(&id);
        }
    }
}

/// Polls a query as far as it goes, reporting its answers.
fn poll_query(
    query: &mut Query,
    waker: &Waker,
    id: LockId,
    out: &mut VecDeque<Drained>,
) -> Progress {
    let mut cx = Context::from_waker(waker);
    let mut report = |event| out.push_back(Drained::Event { lock: id, event });
    let failed = |e: Error, report: &mut dyn FnMut(LockEvent)| match e {
        Error::Usage(e) => Progress::Refused(e),
        e => {
            report(LockEvent::Failed(fail_reason(e)));
            Progress::Over
        }
    };
    loop {
        match &mut query.stage {
            Stage::Once(answer) => match answer.as_mut().poll(&mut cx) {
                Poll::Pending => return Progress::Pending,
                Poll::Ready(Ok(event)) => {
                    report(event);
                    return Progress::Over;
                }
                Poll::Ready(Err(e)) => return failed(e, &mut report),
            },
            Stage::Starting(start) => match start.as_mut().poll(&mut cx) {
                Poll::Pending => return Progress::Pending,
                Poll::Ready(Ok(observer)) => {
                    // `observe_election` returns at the first leader seen.
                    report(LockEvent::LeaderChanged {
                        leader: observer.leader().cloned(),
                        participants: observer.participants(),
                    });
                    query.stage = Stage::Following(observer);
                }
                Poll::Ready(Err(e)) => return failed(e, &mut report),
            },
            Stage::Following(observer) => {
                let polled = {
                    let mut changed = std::pin::pin!(observer.changed());
                    changed.as_mut().poll(&mut cx)
                };
                match polled {
                    Poll::Pending => return Progress::Pending,
                    Poll::Ready(Ok(leader)) => report(LockEvent::LeaderChanged {
                        leader,
                        participants: observer.participants(),
                    }),
                    Poll::Ready(Err(e)) => return failed(e, &mut report),
                }
            }
        }
    }
}
