//! The binding proper: how the simulator drives each client's [`lock_core::Session`]
//! exactly by the core's calling rules, and how the client library reacts to its
//! connection (connect, reconnect, notice a disconnect, learn of an expiry).
//!
//! * every call into the core is followed by draining `poll_output` until `None`;
//!   requests are sent in the order polled, pipelined, without waiting for replies;
//! * `Connected { session_id }` is fed once connected, `Disconnected` when the client
//!   notices a dead connection (at once for a reset, within 2/3 of the session
//!   timeout for a silent partition), and on reconnect either `Connected` with the
//!   same id, or the expiry as the [`Profile`] reports it;
//! * `handle_timeout(now)` is called once `now >= poll_timeout()`.

use crate::ids::ClientId;
use crate::sim::client::{ConnectionView, EventRecord, InFlightRequest, Profile, ProgressRecord};
use crate::sim::network::Link;
use crate::sim::user_face::Drained;
use lock_core::{LockEvent, LockId, RequestId, Timestamp, ZkError};
use std::time::Duration;

/// How a broken connection ends.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Break {
    /// The connection is reset: the client notices at once.
    Reset,
    /// Packets vanish until `until`; the client notices within 2/3 of its session
    /// timeout.
    Blackhole { until: Timestamp },
}

impl crate::sim::scheduler::Sim {
    /// Feeds one input to client `i`'s core, then drains it.
    pub(crate) fn feed(&mut self, i: usize, input: lock_core::Input) {
        self.trace_with(Some(i), || format!("core <- {input:?}"));
        let now = self.now;
        self.clients[i].core.handle_input(input, now);
        self.pump(i);
    }

    /// Drains client `i`'s core: sends every request in order, records every event.
    pub(crate) fn pump(&mut self, i: usize) {
        let (now, check, trace) = (self.now, self.cfg.check_invariants, self.cfg.trace);
        while let Some(out) = self.clients[i].core.poll_output(now, check, trace) {
            match out {
                Drained::Request(r) => self.send(i, r),
                Drained::Event { lock, event } => self.on_event(i, lock, event),
                Drained::SectionCall { lock, open } => {
                    self.trace_with(Some(i), || {
                        format!("lock-client sends the section call (open: {open}) on {lock}")
                    });
                    self.checker.on_section_call((ClientId(i), lock), open);
                }
                Drained::FencedCall { lock, write, ops } => {
                    self.trace_with(Some(i), || {
                        format!("lock-client sends fenced write {write} on {lock}")
                    });
                    self.checker
                        .on_fenced_call((ClientId(i), lock), write, &ops);
                }
                Drained::Progress { lock, progress } => {
                    self.trace_with(Some(i), || format!("progress {lock} {progress:?}"));
                    let at = self.now;
                    self.clients[i]
                        .progress
                        .push(ProgressRecord { at, lock, progress });
                }
                Drained::Note(text) => self.trace_with(Some(i), || text),
                Drained::Broken(kind, detail) => {
                    let detail = format!("{}: {detail}", ClientId(i));
                    self.violate(kind, detail);
                }
            }
        }
    }

    fn send(&mut self, i: usize, request: lock_core::Request) {
        self.trace_with(Some(i), || format!("send {} {:?}", request.id, request.op));
        let now = self.now;
        let latency = self.cfg.latency;
        let c = &mut self.clients[i];
        c.counters
            .count_request(crate::sim::counters::OpKind::of(&request.op));
        let watch = c.watches.on_send(&request.op);
        let id = request.id;
        match c.conn {
            ConnectionView::Connected => {
                let session = c.session.expect("connected clients have a session");
                let delay = latency.sample(&mut c.rng);
                c.link.send(now, delay, session, request);
                c.pending.push_back(InFlightRequest { id, watch });
            }
            // Into the void; the client finds out when it notices the disconnect.
            ConnectionView::Blackholed { .. } => c.pending.push_back(InFlightRequest { id, watch }),
            ConnectionView::Connecting { .. } => {
                c.local.push_back((now, id, ZkError::ConnectionLoss))
            }
            ConnectionView::Closed => c.local.push_back((now, id, ZkError::Closed)),
        }
    }

    fn on_event(&mut self, i: usize, lock: LockId, event: LockEvent) {
        let record = EventRecord {
            at: self.now,
            client: ClientId(i),
            lock,
            event,
        };
        self.trace_with(Some(i), || format!("event {} {:?}", lock, record.event));
        if self.cfg.check_invariants {
            let session = self.clients[i].session;
            let r = self
                .checker
                .on_event((ClientId(i), lock), &record.event, session, &self.model);
            self.check(r);
        }
        self.clients[i].events.push(record.clone());
        self.feed_log.push(record);
    }

    /// The next message on client `i`'s connection arrives.
    pub(crate) fn client_receive(&mut self, i: usize) {
        let c = &mut self.clients[i];
        let Some(d) = c.link.to_client.pop_front() else {
            return;
        };
        match d.msg {
            crate::sim::network::Message::Reply { id, result, zxid } => {
                c.last_zxid = c.last_zxid.max(zxid);
                c.counters.replies += 1;
                let pos = c.pending.iter().position(|p| p.id == id);
                debug_assert_eq!(pos, Some(0), "replies come in request order");
                let pending = pos.and_then(|p| c.pending.remove(p));
                if c.keeps_watches() && result.is_ok() {
                    c.watches.set(pending.and_then(|p| p.watch));
                }
                self.feed(
                    i,
                    lock_core::Input::Reply {
                        request: id,
                        result,
                    },
                );
            }
            crate::sim::network::Message::Watch { path, kind } => {
                c.watches.fired(&path, kind);
                c.counters.notifications += 1;
                self.feed(i, lock_core::Input::Watch { path, kind });
            }
        }
    }

    /// A request client `i` failed locally (not connected) comes back as an error.
    pub(crate) fn local_fail(&mut self, i: usize) {
        if let Some((_, id, e)) = self.clients[i].local.pop_front() {
            self.feed(
                i,
                lock_core::Input::Reply {
                    request: id,
                    result: Err(e),
                },
            );
        }
    }

    /// Client `i`'s core timer is due.
    pub(crate) fn core_timer(&mut self, i: usize) {
        let now = self.now;
        let c = &mut self.clients[i];
        c.timer_spin = if c.timer_spin.0 == now {
            (now, c.timer_spin.1 + 1)
        } else {
            (now, 1)
        };
        if c.timer_spin.1 > 10_000 {
            let at = c.core.poll_timeout();
            self.violate(
                crate::check::ViolationKind::Stalled,
                format!(
                    "{}: core timer {at:?} stays due after handle_timeout",
                    ClientId(i)
                ),
            );
            return;
        }
        self.trace_with(Some(i), || "core timeout".to_owned());
        self.clients[i].core.handle_timeout(now);
        self.pump(i);
    }

    /// A (re)connect attempt of client `i`.
    pub(crate) fn connect(&mut self, i: usize) {
        let now = self.now;
        if self.clients[i].is_partitioned(now) {
            let delay = self.reconnect_delay(i);
            self.clients[i].conn = ConnectionView::Connecting { at: now + delay };
            return;
        }
        let profile = self.clients[i].cfg.profile;
        let reconnected = match self.clients[i].session {
            Some(s) if self.model.session_is_alive(s) => Some(s),
            Some(s) if profile == Profile::KeepsWatches => {
                // The library reports the expiry; the adapter then opens a new session.
                self.trace_with(Some(i), || format!("session {s:#x} expired"));
                self.clients[i].session = None;
                self.clients[i].watches.clear();
                let delay = self.reconnect_delay(i);
                self.clients[i].conn = ConnectionView::Connecting { at: now + delay };
                self.feed(
                    i,
                    lock_core::Input::Session(lock_core::SessionEvent::Expired),
                );
                return;
            }
            // A first session, or (LosesWatchesNewSession) a silent new one.
            _ => None,
        };
        let s = reconnected.unwrap_or_else(|| self.open_session(i));
        let c = &mut self.clients[i];
        c.link = Link::default();
        c.conn = ConnectionView::Connected;
        if reconnected.is_some() {
            c.counters.reconnects += 1;
            self.sessions.in_contact(s);
            let c = &mut self.clients[i];
            let (keeps, zxid) = (c.keeps_watches(), c.last_zxid);
            c.watches.reconnect(&mut self.model, s, zxid, keeps);
            self.route_notifications();
            self.trace_with(Some(i), || format!("reconnected to session {s:#x}"));
        } else {
            self.trace_with(Some(i), || format!("connected with new session {s:#x}"));
        }
        self.feed(
            i,
            lock_core::Input::Session(lock_core::SessionEvent::Connected { session_id: s }),
        );
    }

    /// Client `i` notices its connection is gone: reports `Disconnected` and fails
    /// whatever was in flight (before or after the session event, or not at all:
    /// client libraries differ, and the core must cope with each).
    pub(crate) fn notice_disconnect(&mut self, i: usize) {
        let now = self.now;
        let delay = self.reconnect_delay(i);
        let p_errors = self.cfg.faults.connection_loss_errors;
        let c = &mut self.clients[i];
        let lost: Vec<RequestId> = c.pending.drain(..).map(|p| p.id).collect();
        c.counters.notifications_lost += c.link.notifications_in_flight() as u64;
        c.link.cut();
        c.conn = ConnectionView::Connecting { at: now + delay };
        c.counters.disconnects += 1;
        let errors = !lost.is_empty() && c.rng.chance(p_errors);
        let before = c.rng.chance(0.5);
        self.trace_with(Some(i), || "notices the disconnect".to_owned());
        let fail_all = |sim: &mut Self| {
            for id in &lost {
                sim.feed(
                    i,
                    lock_core::Input::Reply {
                        request: *id,
                        result: Err(ZkError::ConnectionLoss),
                    },
                );
            }
        };
        if errors && before {
            fail_all(self);
        }
        let since_contact = if self.cfg.report_contact {
            now - self.clients[i].last_contact
        } else {
            Duration::ZERO
        };
        self.feed(
            i,
            lock_core::Input::Session(lock_core::SessionEvent::Disconnected { since_contact }),
        );
        if errors && !before {
            fail_all(self);
        }
    }

    /// Breaks client `i`'s connection. The first `applied` requests in flight (a
    /// seeded number if `None`) still reach the server, their replies lost; the rest
    /// never do. Returns false if it was not connected.
    pub(crate) fn break_link(&mut self, i: usize, how: Break, applied: Option<usize>) -> bool {
        let now = self.now;
        if self.clients[i].conn != ConnectionView::Connected {
            if let Break::Blackhole { until } = how {
                let c = &mut self.clients[i];
                c.partition_until = Some(c.partition_until.map_or(until, |t| t.max(until)));
            }
            return false;
        }
        let session = self.clients[i]
            .session
            .expect("connected clients have a session");
        let notice = self.clients[i]
            .cfg
            .session_timeout
            .mul_f64(self.cfg.notice_within);
        let c = &mut self.clients[i];
        c.counters.notifications_lost += c.link.notifications_in_flight() as u64;
        let packets = c.link.cut();
        let k = applied
            .unwrap_or_else(|| c.rng.index(packets.len() + 1))
            .min(packets.len());
        // Nothing reaches this client from now on.
        c.conn = match how {
            Break::Reset => ConnectionView::Connecting { at: Timestamp::MAX },
            Break::Blackhole { until } => {
                c.partition_until = Some(until);
                let detect = c.rng.duration(Duration::from_nanos(1).min(notice), notice);
                ConnectionView::Blackholed {
                    detect_at: now + detect,
                }
            }
        };
        self.trace_with(Some(i), || {
            format!(
                "connection breaks ({how:?}): {k} of {} requests in flight applied",
                packets.len()
            )
        });
        for p in packets.into_iter().take(k) {
            if self.model.session_is_alive(p.session) {
                let _ = self.apply_request(p.session, &p.request.op);
                self.route_notifications();
            }
        }
        self.sessions.lost_contact(session, now);
        // A connected client pings: its last contact is the moment of the break.
        self.clients[i].last_contact = now;
        if how == Break::Reset {
            self.model.remove_watches(session);
            self.notice_disconnect(i);
        }
        true
    }

    fn reconnect_delay(&mut self, i: usize) -> Duration {
        let (lo, hi) = self.cfg.faults.reconnect_delay;
        self.clients[i].rng.duration(lo, hi)
    }
}
