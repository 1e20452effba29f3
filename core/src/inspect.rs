//! Inspection ([`Session::inspect`](crate::Session::inspect)): who holds a lock
//! and who waits, in queue order. The break record is read too when the listing
//! shows one. A node that vanishes between the listing and its read is skipped:
//! it left the queue.

use crate::ctx::{Ctx, InFlight};
use crate::event::LockEvent;
use crate::ids::{FencingToken, LockId};
use crate::lease_inspect::LeaseView;
use crate::names::{
    is_marker, parse_participant, sort_by_sequence, NodeKind, ParsedName, BREAK_RECORD,
};
use crate::oneshot::{OneShot, OneShotRun};
use crate::owner;
use crate::participants::{LastBreak, Participant, Participants};
use crate::proto::{Op, Reply, RequestId, Stat, ZkError};
use crate::requests::Purpose;
use crate::spec::Recipe;

/// The recipe a participant follows, from its name (a semaphore without a recorded
/// permit count is taken as one permit).
pub(crate) fn recipe_of(p: &ParsedName) -> Recipe {
    match p.kind {
        NodeKind::Write => Recipe::Write,
        NodeKind::Read => Recipe::Read,
        NodeKind::Leader => Recipe::Leader,
        NodeKind::Semaphore => Recipe::Semaphore {
            permits: p.permits.unwrap_or(1).max(1),
        },
        #[allow(unreachable_patterns)]
        _ => Recipe::Write,
    }
}

/// One participant's place in its queue.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(crate) struct Place {
    pub name: String,
    pub parsed: ParsedName,
    /// Lower nodes that count against it, closest last.
    pub blockers: Vec<String>,
    /// Whether it holds.
    pub holds: bool,
    /// The blockers that must all leave before it can hold: its firm edges in
    /// the wait-for graph (see [`crate::deadlock`]).
    pub hard: Vec<String>,
}

/// Orders a listing and applies every participant's recipe rule.
pub(crate) fn queue(children: &[String]) -> (Vec<Place>, usize) {
    let mut parts: Vec<(ParsedName, String)> = Vec::new();
    let mut foreign = 0;
    for c in children {
        match parse_participant(c) {
            Some(p) => parts.push((p, c.clone())),
            // zklock's own markers (crash detection, lock-delay) are not foreign.
            None if is_marker(c) => {}
            None => foreign += 1,
        }
    }
    sort_by_sequence(&mut parts, |(p, _)| p.seq);
    let mut places = Vec::with_capacity(parts.len());
    for (i, (p, name)) in parts.iter().enumerate() {
        let recipe = recipe_of(p);
        let blockers: Vec<String> = parts[..i]
            .iter()
            .filter(|(q, _)| recipe.is_blocked_by(q.kind))
            .map(|(_, n)| n.clone())
            .collect();
        let writer = match recipe {
            Recipe::Semaphore { .. } => parts[..i]
                .iter()
                .rev()
                .find(|(q, _)| matches!(q.kind, NodeKind::Write | NodeKind::Leader))
                .map(|(_, n)| n.clone()),
            _ => None,
        };
        let holds = writer.is_none() && blockers.len() < recipe.permits();
        let hard = if holds {
            Vec::new()
        } else if recipe.permits() == 1 {
            blockers.clone()
        } else {
            writer.into_iter().collect()
        };
        places.push(Place {
            name: name.clone(),
            parsed: *p,
            blockers,
            holds,
            hard,
        });
    }
    (places, foreign)
}

pub(crate) struct Inspect {
    pub(crate) run: OneShotRun,
    path: String,
    list: InFlight,
    places: Vec<Place>,
    foreign: usize,
    /// The listing found the directory.
    exists: bool,
    reads: Vec<(RequestId, usize)>,
    data: Vec<Option<(Vec<u8>, Stat)>>,
    /// Semaphores in Curator's and kazoo's layouts on the path.
    lease: LeaseView,
    /// The read of the break record, when the listing shows one.
    record_read: InFlight,
    last_break: Option<LastBreak>,
}

impl Inspect {
    pub(crate) fn new(id: LockId, path: String) -> Self {
        Inspect {
            run: OneShotRun::new(id),
            path: path.clone(),
            list: InFlight::default(),
            places: Vec::new(),
            foreign: 0,
            exists: false,
            reads: Vec::new(),
            data: Vec::new(),
            lease: LeaseView::new(path.clone()),
            record_read: InFlight::default(),
            last_break: None,
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
            Purpose::List if self.list.take_reply(request) => {
                self.exists = result.is_ok();
                let children = match result {
                    Ok(Reply::Children(c)) => c,
                    Err(ZkError::NoNode) => Vec::new(),
                    Ok(_) => return self.trouble(cx, ZkError::unexpected_reply()),
                    Err(e) => return self.trouble(cx, e),
                };
                let (places, foreign) = queue(&children);
                self.places = places;
                let claimed = children.iter().filter(|c| LeaseView::claims(c)).count();
                self.foreign = foreign - claimed;
                self.lease.kazoo_pool(cx, self.run.id, &children);
                self.data = vec![None; self.places.len()];
                for (i, p) in self.places.iter().enumerate() {
                    let op = Op::read(format!("{}/{}", self.path, p.name));
                    if let Some(r) = cx.send(self.run.id, Purpose::Inspect, op) {
                        self.reads.push((r, i));
                    }
                }
                if children.iter().any(|c| c == BREAK_RECORD) {
                    let op = Op::read(format!("{}/{BREAK_RECORD}", self.path));
                    self.record_read.send(cx, self.run.id, Purpose::Inspect, op);
                }
            }
            Purpose::Inspect if self.record_read.take_reply(request) => {
                match result {
                    Ok(Reply::Data { data, stat }) => {
                        self.last_break = LastBreak::parse(&data, stat.mtime)
                    }
                    // Gone since the listing: no record to show.
                    Err(ZkError::NoNode) => {}
                    Ok(_) => return self.trouble(cx, ZkError::unexpected_reply()),
                    Err(e) => return self.trouble(cx, e),
                }
            }
            Purpose::Inspect => {
                if let Some(handled) = self.lease.on_reply(cx, self.run.id, request, &result) {
                    if let Err(e) = handled {
                        return self.trouble(cx, e);
                    }
                    return self.maybe_finish(cx);
                }
                let Some(pos) = self.reads.iter().position(|(r, _)| *r == request) else {
                    return;
                };
                let (_, i) = self.reads.remove(pos);
                match result {
                    Ok(Reply::Data { data, stat }) => self.data[i] = Some((data, stat)),
                    // Gone since the listing: it left the queue.
                    Err(ZkError::NoNode) => {}
                    Ok(_) => return self.trouble(cx, ZkError::unexpected_reply()),
                    Err(e) => return self.trouble(cx, e),
                }
            }
            _ => return,
        }
        self.maybe_finish(cx);
    }

    fn maybe_finish(&mut self, cx: &mut Ctx) {
        if !self.list.is_pending()
            && self.reads.is_empty()
            && !self.record_read.is_pending()
            && self.lease.settled()
            && !self.run.done
            && !self.run.retry_due
        {
            self.finish(cx);
        }
    }

    fn finish(&mut self, cx: &mut Ctx) {
        self.run.done = true;
        let mut out = Participants {
            path: self.path.clone(),
            foreign: self.foreign,
            exists: self.exists,
            last_break: self.last_break.clone(),
            ..Participants::default()
        };
        // Nodes gone since the listing left the queue: nobody waits for them.
        let present: std::collections::BTreeSet<&str> = self
            .places
            .iter()
            .zip(&self.data)
            .filter(|(_, d)| d.is_some())
            .map(|(p, _)| p.name.as_str())
            .collect();
        // Who each present node is held or waited for: (owner, session, holds).
        let whose: std::collections::BTreeMap<&str, (Option<String>, i64, bool)> = self
            .places
            .iter()
            .zip(&self.data)
            .filter_map(|(p, d)| {
                let (data, stat) = d.as_ref()?;
                let owner = owner::parse(p.parsed.scheme, data).owner;
                Some((p.name.as_str(), (owner, stat.ephemeral_owner, p.holds)))
            })
            .collect();
        for (place, data) in self.places.iter().zip(&self.data) {
            let Some((data, stat)) = data else { continue };
            let d = owner::parse(place.parsed.scheme, data);
            // A downgrade: a read whose only blockers are held write nodes of its
            // own owner on its own session holds (the read acquisition's rule).
            let own_held = |b: &String| {
                whose.get(b.as_str()).is_some_and(|(o, s, held)| {
                    *held && *o == d.owner && *s == stat.ephemeral_owner
                })
            };
            let mut present_blockers = place
                .blockers
                .iter()
                .filter(|b| present.contains(b.as_str()))
                .peekable();
            let downgraded = !place.holds
                && place.parsed.kind == NodeKind::Read
                && d.owner.is_some()
                && present_blockers.peek().is_some()
                && present_blockers.all(own_held);
            let holds = place.holds || downgraded;
            let p = Participant {
                node: place.name.clone(),
                dir: self.path.clone(),
                kind: place.parsed.kind,
                permits: place.parsed.permits,
                scheme: place.parsed.scheme,
                sequence: place.parsed.seq,
                owner: d.owner,
                session: stat.ephemeral_owner,
                ctime: stat.ctime,
                token: FencingToken(stat.czxid),
                data: d.user,
                waits_for: place
                    .blockers
                    .iter()
                    .filter(|b| !holds && present.contains(b.as_str()))
                    .cloned()
                    .collect(),
                owner_waits_at: d.waits,
            };
            if holds {
                out.holders.push(p);
            } else {
                out.waiters.push(p);
            }
        }
        let (holders, waiters) = self.lease.participants();
        out.holders.extend(holders);
        out.waiters.extend(waiters);
        cx.emit(self.run.id, LockEvent::Participants(out));
    }
}

impl OneShot for Inspect {
    fn run(&mut self) -> &mut OneShotRun {
        &mut self.run
    }

    fn restart(&mut self, cx: &mut Ctx) {
        self.reads.clear();
        self.record_read.forget();
        self.last_break = None;
        let op = Op::GetChildren {
            path: self.path.clone(),
        };
        self.list.send(cx, self.run.id, Purpose::List, op);
        self.lease.recover(cx, self.run.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(kind: &str, seq: i32) -> String {
        format!("zkl-{:032x}-{kind}-{seq:010}", seq as u128 + 1)
    }

    #[test]
    fn the_queue_applies_every_recipe_rule() {
        let children = vec![
            name("read", 4),
            name("read", 1),
            name("write", 2),
            name("read", 3),
            "junk".to_owned(),
        ];
        let (q, foreign) = queue(&children);
        assert_eq!(foreign, 1);
        let holds: Vec<bool> = q.iter().map(|p| p.holds).collect();
        assert_eq!(holds, [true, false, false, false]);
        assert!(q[1].hard == vec![name("read", 1)]);
        assert_eq!(q[2].hard, vec![name("write", 2)]);
        assert_eq!(q[3].hard, vec![name("write", 2)]);
        let sem = vec![name("sem2", 1), name("sem2", 2), name("sem2", 3)];
        let (q, _) = queue(&sem);
        assert_eq!(
            q.iter().map(|p| p.holds).collect::<Vec<_>>(),
            [true, true, false]
        );
        assert!(q[2].hard.is_empty(), "no firm edge among semaphore holders");
        assert_eq!(q[2].blockers.len(), 2);
    }
}
