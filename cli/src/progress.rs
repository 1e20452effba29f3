//! The waiting line of `zklock exec` on a terminal: our position in the lock's
//! queue and the time waited, on stderr, rewritten in place (`\r`).
//!
//! The position comes from [`LockClient::participants`], asked every
//! [`POLL_TICKS`] seconds while we wait (one round trip of 1 + n reads for n participants, no
//! watches), and only on a terminal: a wait under cron or in a pipeline costs no
//! request. Our node is the one our session owns (the command takes one lock).

use lock_zookeeper_client::{Error, LockClient, Participants};
use std::future::{pending, Future};
use std::pin::Pin;
use std::time::Duration;
use tokio::time::{sleep_until, Instant};

/// How often the line is redrawn (the elapsed time is shown in seconds).
const TICK: Duration = Duration::from_secs(1);
/// The queue is read again every this many redraws (every 2 s), first at the
/// first redraw.
const POLL_TICKS: u32 = 2;

type Query = Pin<Box<dyn Future<Output = Result<Participants, Error>>>>;

/// Where we are in the queue: 1-based position among `of` participants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Place {
    position: usize,
    of: usize,
}

/// The progress line of one wait.
pub(crate) struct Progress {
    path: String,
    enabled: bool,
    started: Instant,
    next_tick: Instant,
    ticks: u32,
    query: Option<Query>,
    place: Option<Place>,
    shown: bool,
}

impl Progress {
    /// A progress line for a wait on `path`, shown only if `enabled` (stderr is a
    /// terminal). Nothing is drawn in the first second: short waits stay quiet.
    pub(crate) fn new(path: &str, enabled: bool) -> Progress {
        let now = Instant::now();
        Progress {
            path: path.to_owned(),
            enabled,
            started: now,
            next_tick: now + TICK,
            ticks: 0,
            query: None,
            place: None,
            shown: false,
        }
    }

    /// Waits for the next redraw or the answer of a queue read, and handles it.
    /// Cancel-safe (a query in flight is kept); never returns when disabled.
    pub(crate) async fn step(&mut self, locks: &LockClient) {
        if !self.enabled {
            return pending().await;
        }
        let answer = {
            let (query, tick) = (&mut self.query, self.next_tick);
            let query = async {
                match query.as_mut() {
                    Some(q) => q.await,
                    None => pending().await,
                }
            };
            tokio::select! {
                answer = query => Some(answer),
                _ = sleep_until(tick) => None,
            }
        };
        match answer {
            Some(answer) => {
                self.query = None;
                // A failed read leaves the last position shown; the wait itself
                // reports real trouble.
                if let Ok(who) = answer {
                    self.place = place(&who, locks.session_id());
                }
            }
            None => {
                self.next_tick += TICK;
                self.ticks += 1;
                // A slow answer delays the next read rather than piling reads up.
                if self.query.is_none() && (self.ticks - 1).is_multiple_of(POLL_TICKS) {
                    let (locks, path) = (locks.clone(), self.path.clone());
                    self.query = Some(Box::pin(async move { locks.participants(path).await }));
                }
            }
        }
        self.draw();
    }

    fn draw(&mut self) {
        let waited = self.started.elapsed().as_secs();
        let place = match self.place {
            Some(p) => format!("position {} of {} in the queue, ", p.position, p.of),
            None => String::new(),
        };
        eprint!(
            "\rzklock: waiting for {}: {place}{waited} s\x1b[K",
            self.path
        );
        self.shown = true;
    }

    /// Erases the line, if one was drawn.
    pub(crate) fn clear(&mut self) {
        if self.shown {
            eprint!("\r\x1b[K");
            self.shown = false;
        }
    }
}

/// Our place in `who`: the participant our session owns.
fn place(who: &Participants, session: Option<i64>) -> Option<Place> {
    let session = session?;
    let all = crate::render::in_queue_order(who);
    let i = all.iter().rposition(|(p, _)| p.session == session)?;
    Some(Place {
        position: i + 1,
        of: all.len(),
    })
}
