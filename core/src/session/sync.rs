//! The session's own timers: the `sync` that proves the leader hears us, and the
//! suspension of held locks when no newer proof comes (see [`crate::contact`]).

use super::task::Task;
use super::{Session, SESSION_TIMERS};
use crate::output::Output;
use crate::proto::{Op, Request};
use crate::time::Timestamp;
use crate::timers::TimerKind;

impl Session {
    /// A reply, for what it proves of the leader's contact (see [`crate::contact`]).
    pub(super) fn on_contact_reply<T>(
        &mut self,
        request: crate::proto::RequestId,
        result: &Result<T, crate::proto::ZkError>,
        now: Timestamp,
    ) {
        if self.config.sync_interval.is_none() {
            return;
        }
        if self.contact.on_reply(&self.config, request, result, now) {
            self.arm_contact();
            if self.contact.is_fresh(&self.config, now) {
                // Only the tasks a renewed proof moves on (in lock order, as a
                // walk over every task would call them): the rest would do
                // nothing, and a session holding 10,000 locks renews contact
                // with nearly every reply.
                for id in self.contact.awaiting() {
                    self.with_task_inner(id, now, |t, cx| {
                        if let Task::Acquisition(a) = t {
                            a.on_contact_renewed(cx);
                        }
                    });
                }
                self.sync_publications(now);
            }
        }
        self.arm_sync();
    }

    /// Arms the session's next `sync` unless it is armed already (a timer that
    /// fires early finds out and arms again: sends only ever make it later).
    pub(super) fn arm_sync(&mut self) {
        if self.timers.is_armed(SESSION_TIMERS, TimerKind::Sync) || !self.is_connected() {
            return;
        }
        if let Some(at) = self.contact.next_sync(&self.config) {
            self.timers.set(SESSION_TIMERS, TimerKind::Sync, at);
        }
    }

    /// Arms the suspension of held locks for want of a newer proof of contact.
    pub(super) fn arm_contact(&mut self) {
        match self.contact.suspend_at(&self.config) {
            Some(at) => self.timers.set(SESSION_TIMERS, TimerKind::Contact, at),
            None => self.timers.cancel(SESSION_TIMERS, TimerKind::Contact),
        }
    }

    /// The sync timer fired: a `sync` goes out if one is due, else the timer is
    /// armed for when one will be.
    fn on_sync_timer(&mut self, now: Timestamp) {
        match self.contact.next_sync(&self.config) {
            Some(at) if at <= now => {
                let id = self.requests.mint();
                let op = Op::Sync { path: "/".into() };
                self.contact.on_sync_sent(&self.config, id, &op, now);
                self.stats.requests += 1;
                self.out.push_back(Output::Request(Request { id, op }));
            }
            Some(at) => self.timers.set(SESSION_TIMERS, TimerKind::Sync, at),
            None => {}
        }
    }

    pub(super) fn on_session_timer(&mut self, kind: TimerKind, now: Timestamp) {
        match kind {
            TimerKind::Sync if self.is_connected() => {
                self.on_sync_timer(now);
                // A hold that outlived a sync interval watches its node (once):
                // only the holds that do not yet are called.
                if let Some(interval) = self.config.sync_interval {
                    for id in self.contact.unwatched() {
                        self.with_task_inner(id, now, |t, cx| {
                            if let Task::Acquisition(a) = t {
                                a.on_sync_timer(cx, interval);
                            }
                        });
                    }
                    self.sync_publications(now);
                    self.arm_sync();
                }
            }
            TimerKind::Contact => {
                // No newer proof came in time: held locks are no longer trusted
                // (locks granted from now on are suspended as they are granted).
                if let Some(lost_at) = self.contact.trusted_until(&self.config) {
                    self.for_each_task(now, |t, cx| {
                        if let Task::Acquisition(a) = t {
                            a.suspend(cx, lost_at);
                        }
                    });
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::proto::{Input, Op, Reply, SessionEvent, Stat};
    use crate::session::OUTPUT_KEPT;
    use crate::{Config, LockSpec, Output, Session, Timestamp};
    use std::time::Duration;

    /// Answers every request of `s` as a prompt server holding one node per lock.
    fn serve(s: &mut Session, now: Timestamp) {
        let mut created = std::collections::HashMap::new();
        while let Some(out) = s.poll_output() {
            let Output::Request(r) = out else { continue };
            let stat = Stat {
                czxid: 1,
                ephemeral_owner: 1,
                ..Stat::default()
            };
            let reply = match r.op {
                Op::Create { path, .. } => {
                    let (dir, name) = path.rsplit_once('/').expect("a path");
                    created.insert(dir.to_owned(), format!("{name}0000000001"));
                    Reply::Created {
                        path: format!("{path}0000000001"),
                        stat: Some(stat),
                    }
                }
                Op::GetChildren { path } => Reply::Children(vec![created[&path].clone()]),
                Op::GetData { .. } => Reply::Data { data: vec![], stat },
                _ => Reply::Synced,
            };
            s.handle_input(
                Input::Reply {
                    request: r.id,
                    result: Ok(reply),
                },
                now,
            );
        }
    }

    /// The sync timer calls only the holds without a watch on their node: a
    /// hold leaves that set once it watches, so a session holding many watched
    /// locks walks none of them per timer (without syncs, none is kept; syncs
    /// turned on later find them). And a burst of requests leaves no buffer
    /// behind once drained.
    #[test]
    fn the_sync_timer_looks_only_at_holds_that_do_not_watch_their_node() {
        let mut config = Config::new(Duration::from_secs(10), 1);
        let mut s = Session::new(config.clone());
        let mut now = Timestamp::ZERO;
        s.handle_input(
            Input::Session(SessionEvent::Connected { session_id: 1 }),
            now,
        );
        for i in 0..300 {
            s.acquire(LockSpec::write(format!("/l/{i}")), now).unwrap();
        }
        assert!(s.out.len() > OUTPUT_KEPT);
        serve(&mut s, now);
        assert!(s.out.capacity() <= OUTPUT_KEPT);
        assert_eq!(s.contact.unwatched(), vec![], "no syncs: none kept");
        config.sync_interval = Some(Duration::from_millis(500));
        s.reconfigure(config);
        assert_eq!(s.contact.unwatched().len(), 300, "held, not watched yet");
        for _ in 0..4 {
            now = now + Duration::from_millis(500);
            s.handle_timeout(now);
            serve(&mut s, now);
        }
        assert_eq!(s.tracked(), 300);
        assert_eq!(s.contact.unwatched(), vec![], "every hold watches its node");
    }
}
