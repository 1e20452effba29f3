//! The simulated clients, with an index of what each waits for next.
//!
//! The scheduler needs the earliest wakeup of all (a packet arriving, a reconnect,
//! a core timer...) after every step, and [`Sim::settle`](crate::Sim::settle) needs
//! to know whether every client is quiet. Scanning every client for both made a
//! step cost O(clients), and a run O(clients²): 100,000 clients took hours. Here
//! each client's own next wakeup and quietness are kept in ordered sets and
//! recomputed only for the clients touched since the last look: any mutable access
//! ([`IndexMut`], [`iter_mut`](Clients::iter_mut), [`push`](Clients::push)) marks a
//! client, and [`refresh`](Clients::refresh) recomputes the marked ones. Mutation
//! goes through nothing else, so the compiler keeps the index honest.
//!
//! The earliest entry of the index is the same `(due, Wake)` the full scan found:
//! each client's entry is the minimum of its own candidates, under the same order.

use crate::sim::client::{ConnectionView, SimClient};
use lock_core::Timestamp;
use std::collections::BTreeSet;
use std::ops::{Index, IndexMut};

/// What the scheduler wakes up for; at equal times, the earlier variant goes first.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub(crate) enum Wake {
    ServerReceive(usize),
    ClientReceive(usize),
    LocalFailure(usize),
    Connect(usize),
    NoticeDisconnect(usize),
    CoreTimer(usize),
    Expire(i64),
    Reap,
    Fault,
}

#[derive(Default)]
pub(crate) struct Clients {
    list: Vec<SimClient>,
    /// Touched since the last refresh (`marked[i]` says whether `i` is in `touched`).
    touched: Vec<usize>,
    marked: Vec<bool>,
    /// Each client's entry in `by_due`, as last computed.
    next: Vec<Option<(Timestamp, Wake)>>,
    by_due: BTreeSet<(Timestamp, Wake)>,
    /// The clients not quiet ([`SimClient::is_quiet`]), as last computed.
    unquiet: BTreeSet<usize>,
}

impl Clients {
    // ----- getters ----------------------------------------------------------------

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    pub fn iter(&self) -> std::slice::Iter<'_, SimClient> {
        self.list.iter()
    }

    /// The earliest wakeup of every client, as of the last [`refresh`](Self::refresh).
    pub fn next_wakeup(&self) -> Option<(Timestamp, Wake)> {
        self.by_due.first().copied()
    }

    /// Whether every client is quiet, as of the last [`refresh`](Self::refresh).
    pub fn all_quiet(&self) -> bool {
        self.unquiet.is_empty()
    }

    // ----- mutators ---------------------------------------------------------------

    pub fn push(&mut self, client: SimClient) {
        self.list.push(client);
        self.next.push(None);
        self.marked.push(false);
        self.mark(self.list.len() - 1);
    }

    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, SimClient> {
        for i in 0..self.list.len() {
            self.mark(i);
        }
        self.list.iter_mut()
    }

    /// Recomputes the entries of the clients touched since the last refresh; `now`
    /// for a core timer already due (it runs now, not in the past).
    pub fn refresh(&mut self, now: Timestamp) {
        for i in std::mem::take(&mut self.touched) {
            self.marked[i] = false;
            let client = &self.list[i];
            let next = own_next_wakeup(i, client, now);
            if self.next[i] != next {
                if let Some(old) = self.next[i] {
                    self.by_due.remove(&old);
                }
                if let Some(new) = next {
                    self.by_due.insert(new);
                }
                self.next[i] = next;
            }
            if client.is_quiet() {
                self.unquiet.remove(&i);
            } else {
                self.unquiet.insert(i);
            }
        }
    }

    fn mark(&mut self, i: usize) {
        if !std::mem::replace(&mut self.marked[i], true) {
            self.touched.push(i);
        }
    }
}

impl Index<usize> for Clients {
    type Output = SimClient;

    fn index(&self, i: usize) -> &SimClient {
        &self.list[i]
    }
}

impl IndexMut<usize> for Clients {
    fn index_mut(&mut self, i: usize) -> &mut SimClient {
        self.mark(i);
        &mut self.list[i]
    }
}

impl<'a> IntoIterator for &'a Clients {
    type Item = &'a SimClient;
    type IntoIter = std::slice::Iter<'a, SimClient>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<'a> IntoIterator for &'a mut Clients {
    type Item = &'a mut SimClient;
    type IntoIter = std::slice::IterMut<'a, SimClient>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter_mut()
    }
}

/// Client `i`'s earliest wakeup: the minimum of its candidates (at equal times the
/// earlier [`Wake`] variant).
fn own_next_wakeup(i: usize, c: &SimClient, now: Timestamp) -> Option<(Timestamp, Wake)> {
    let conn = match c.conn {
        ConnectionView::Connecting { at } => Some((at, Wake::Connect(i))),
        ConnectionView::Blackholed { detect_at } => Some((detect_at, Wake::NoticeDisconnect(i))),
        ConnectionView::Connected | ConnectionView::Closed => None,
    };
    [
        c.link
            .to_server
            .front()
            .map(|p| (p.due, Wake::ServerReceive(i))),
        c.link
            .to_client
            .front()
            .map(|d| (d.due, Wake::ClientReceive(i))),
        c.local.front().map(|(t, _, _)| (*t, Wake::LocalFailure(i))),
        conn,
        c.core
            .poll_timeout()
            .map(|t| (t.max(now), Wake::CoreTimer(i))),
    ]
    .into_iter()
    .flatten()
    .min()
}
