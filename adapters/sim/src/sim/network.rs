//! One client's connection to the server: two FIFO pipes with latency.
//!
//! Requests reach the server in send order, each after a latency; replies and watch
//! notifications come back in the order the server produced them, each after a
//! latency. A later message never overtakes an earlier one on the same pipe (its due
//! time is clamped to the previous one's), which is ZooKeeper's per-session FIFO
//! guarantee, and what lets the core pipeline requests.

use crate::sim::rng::SimRng;
use lock_core::{Reply, Request, Timestamp, WatchKind, ZkError};
use std::collections::VecDeque;
use std::time::Duration;

/// One-way network delay, drawn uniformly from `min..=max` for every message.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Latency {
    /// Shortest delay.
    pub min: Duration,
    /// Longest delay.
    pub max: Duration,
}

impl Latency {
    /// Always exactly `d`: handy for counting round trips in virtual time.
    pub fn fixed(d: Duration) -> Self {
        Latency { min: d, max: d }
    }

    /// Uniform in `min..=max`.
    pub fn between(min: Duration, max: Duration) -> Self {
        Latency { min, max }
    }

    pub(crate) fn sample(&self, rng: &mut SimRng) -> Duration {
        rng.duration(self.min, self.max)
    }
}

impl Default for Latency {
    /// 1 to 5 ms each way.
    fn default() -> Self {
        Latency::between(Duration::from_millis(1), Duration::from_millis(5))
    }
}

/// A request on its way to the server.
#[derive(Clone, Debug)]
pub(crate) struct Packet {
    pub due: Timestamp,
    pub session: i64,
    pub request: Request,
}

/// Something on its way back to the client.
#[derive(Clone, Debug)]
pub(crate) enum Message {
    Reply {
        id: lock_core::RequestId,
        result: Result<Reply, ZkError>,
        /// The server's last zxid when it answered (the reply header's zxid).
        zxid: i64,
    },
    Watch {
        path: String,
        kind: WatchKind,
    },
}

#[derive(Clone, Debug)]
pub(crate) struct Delivery {
    pub due: Timestamp,
    pub msg: Message,
}

/// The two pipes of one connection.
#[derive(Default, Debug)]
pub(crate) struct Link {
    pub to_server: VecDeque<Packet>,
    pub to_client: VecDeque<Delivery>,
    last_up: Timestamp,
    last_down: Timestamp,
}

impl Link {
    pub fn send(&mut self, now: Timestamp, delay: Duration, session: i64, request: Request) {
        let due = (now + delay).max(self.last_up);
        self.last_up = due;
        self.to_server.push_back(Packet {
            due,
            session,
            request,
        });
    }

    pub fn deliver(&mut self, now: Timestamp, delay: Duration, msg: Message) {
        let due = (now + delay).max(self.last_down);
        self.last_down = due;
        self.to_client.push_back(Delivery { due, msg });
    }

    /// Empties both pipes (the connection is gone), returning the requests that were
    /// on their way.
    pub fn cut(&mut self) -> Vec<Packet> {
        self.to_client.clear();
        self.to_server.drain(..).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.to_server.is_empty() && self.to_client.is_empty()
    }

    pub fn notifications_in_flight(&self) -> usize {
        self.to_client
            .iter()
            .filter(|d| matches!(d.msg, Message::Watch { .. }))
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lock_core::{Op, RequestId};

    #[test]
    fn later_messages_never_overtake() {
        let mut link = Link::default();
        let r = |i| Request {
            id: RequestId(i),
            op: Op::GetChildren { path: "/".into() },
        };
        let t0 = Timestamp::ZERO;
        link.send(t0, Duration::from_millis(10), 1, r(1));
        link.send(t0, Duration::from_millis(1), 1, r(2));
        let dues: Vec<_> = link.to_server.iter().map(|p| p.due).collect();
        assert_eq!(dues[0], dues[1]);
        assert_eq!(link.cut().len(), 2);
        assert!(link.is_empty());
    }
}
