//! What `zklock exec` and `zklock elect` say on stderr while they wait.
//!
//! On a terminal: one line, rewritten in place (`\r`) every second, with the
//! place in the lock's queue and the time waited. Nothing is drawn in the
//! first second: short waits stay quiet.
//! - `exec` takes its place from its own acquisition ([`QueueWatch`]): free,
//!   as the acquisition learns it from its own looks, and made exact every
//!   [`POLL_TICKS`] seconds by one more look at the queue (one read).
//! - `elect` reads the election's participants every [`POLL_TICKS`] seconds (one
//!   round trip of 1 + n reads for n participants, no watches).
//!
//! Not on a terminal (a log, a pipe, cron): nothing, as flock(1) says nothing
//! (cron would mail every contended run's output); `exec --progress` prints one
//! line each time its place changes, which costs no request (between the
//! acquisition's own looks the place is an upper bound). `exec -q` prints
//! nothing in either case.

use lock_zookeeper_client::{Error, LockClient, Participants, QueueWatch, Queued};
use std::future::{pending, Future};
use std::pin::Pin;
use std::time::Duration;
use tokio::time::{sleep_until, Instant};

/// How often the line is redrawn (the elapsed time is shown in seconds).
const TICK: Duration = Duration::from_secs(1);
/// The queue is looked at again every this many redraws (every 2 s), first at
/// the first redraw.
const POLL_TICKS: u32 = 2;

type Query = Pin<Box<dyn Future<Output = Result<Participants, Error>>>>;

/// Where the place in the queue comes from.
pub(crate) enum Source {
    /// Our own acquisition (`exec`).
    Acquisition(QueueWatch),
    /// The participants of an election, read every [`POLL_TICKS`] redraws.
    Participants,
}

/// How the wait is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Show {
    /// One line on a terminal, rewritten in place.
    Line,
    /// A line per change of place (`--progress`, stderr not a terminal).
    Changes,
    /// Nothing (`-q`, or off a terminal unless asked).
    Nothing,
}

/// Where we are in the queue.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Place {
    /// From our acquisition.
    Queued(Queued),
    /// 1-based position among `of` participants of an election.
    Among { position: usize, of: usize },
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Place::Queued(queued) => write!(f, "{queued}"),
            Place::Among { position, of } => write!(f, "position {position} of {of} in the queue"),
        }
    }
}

/// The progress of one wait.
pub(crate) struct Progress {
    path: String,
    show: Show,
    source: Source,
    started: Instant,
    next_tick: Instant,
    ticks: u32,
    query: Option<Query>,
    place: Option<Place>,
    shown: bool,
}

impl Progress {
    /// The progress of a wait on `path`, shown as `show` says, its place taken
    /// from `source`.
    pub(crate) fn new(path: &str, show: Show, source: Source) -> Progress {
        let now = Instant::now();
        Progress {
            path: path.to_owned(),
            show,
            source,
            started: now,
            next_tick: now + TICK,
            ticks: 0,
            query: None,
            place: None,
            shown: false,
        }
    }

    /// Waits for the next redraw, a new place or the answer of a participants
    /// read, and handles it. Cancel-safe (a read in flight is kept); never
    /// returns when there is nothing to show.
    pub(crate) async fn step(&mut self, locks: &LockClient) {
        match self.show {
            Show::Nothing => pending().await,
            Show::Changes => {
                let Source::Acquisition(watch) = &mut self.source else {
                    return pending().await;
                };
                match watch.changed().await {
                    Some(queued) => {
                        crate::say(format_args!("waiting for {}: {queued}", self.path));
                    }
                    // Granted or ended: the wait's outcome says the rest.
                    None => self.show = Show::Nothing,
                }
            }
            Show::Line => self.line_step(locks).await,
        }
    }

    async fn line_step(&mut self, locks: &LockClient) {
        enum Woke {
            Tick,
            Place(Option<Place>),
            Ended,
        }
        let tick = self.next_tick;
        let woke = match &mut self.source {
            Source::Acquisition(watch) => tokio::select! {
                changed = watch.changed() => match changed {
                    Some(queued) => Woke::Place(Some(Place::Queued(queued))),
                    None => Woke::Ended,
                },
                _ = sleep_until(tick) => Woke::Tick,
            },
            Source::Participants => {
                let query = &mut self.query;
                let answer = async {
                    match query.as_mut() {
                        Some(q) => q.await,
                        None => pending().await,
                    }
                };
                tokio::select! {
                    answer = answer => {
                        self.query = None;
                        // A failed read leaves the last place shown; the wait
                        // itself reports real trouble.
                        match answer {
                            Ok(who) => Woke::Place(among(&who, locks.session_id())),
                            Err(_) => Woke::Place(self.place.clone()),
                        }
                    }
                    _ = sleep_until(tick) => Woke::Tick,
                }
            }
        };
        match woke {
            Woke::Ended => return pending().await,
            Woke::Place(place) => self.place = place,
            Woke::Tick => {
                self.next_tick += TICK;
                self.ticks += 1;
                if (self.ticks - 1).is_multiple_of(POLL_TICKS) {
                    self.look_again(locks);
                }
            }
        }
        // Nothing in the first second.
        if self.ticks > 0 {
            self.draw();
        }
    }

    /// Asks for an exact place: our acquisition looks at its queue again, or
    /// the participants are read (a slow answer delays the next read rather
    /// than piling reads up).
    fn look_again(&mut self, locks: &LockClient) {
        match &self.source {
            Source::Acquisition(watch) => watch.refresh(),
            Source::Participants if self.query.is_none() => {
                let (locks, path) = (locks.clone(), self.path.clone());
                self.query = Some(Box::pin(async move { locks.participants(path).await }));
            }
            Source::Participants => {}
        }
    }

    fn draw(&mut self) {
        let waited = self.started.elapsed().as_secs();
        let place = match &self.place {
            Some(p) => format!("{p}, "),
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

/// Our place among an election's participants: the one our session owns.
fn among(who: &Participants, session: Option<i64>) -> Option<Place> {
    let session = session?;
    let all = crate::render::in_queue_order(who);
    let i = all.iter().rposition(|(p, _)| p.session == session)?;
    Some(Place::Among {
        position: i + 1,
        of: all.len(),
    })
}
