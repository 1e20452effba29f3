//! What workers record, one line per record:
//!
//! * `H <lock> <hot 0|1> <session> <requested> <granted> <released> <segments>`:
//!   a hold. `requested` is when the acquisition started, `granted` when it
//!   returned the guard, `released` when the holder began its release (or lost
//!   the lock); `segments` (`a-b;c-d`, or `-` if none) are the spans in which
//!   the holder trusted its lock (a `Suspended` ends one, `Resumed` starts one).
//!   Each recorded span lies inside the holder's true ownership, so two spans
//!   of one lock that overlap are two holders at once.
//! * `F <session> <at> <kind> <detail>`: anything that went wrong (an expiry
//!   seen while waiting or holding, a new session id, a timeout, a lost lock,
//!   an error), or, with kind `session-opened`, the session's id.

/// The [`Fault::kind`] of a note, not a fault: the session's id when its task
/// started (the detail, `0x...`), so that the servers' expiries can be matched
/// to the fleet's sessions.
pub const SESSION_OPENED: &str = "session-opened";

/// A hold of a lock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hold {
    /// The lock's path.
    pub lock: String,
    /// A hot lock (queues) or a cold one.
    pub hot: bool,
    /// The session's global index.
    pub session: usize,
    /// When the acquisition started (ns, CLOCK_MONOTONIC).
    pub requested: u64,
    /// When it was granted.
    pub granted: u64,
    /// When the release began.
    pub released: u64,
    /// The spans in which the holder trusted the lock.
    pub segments: Vec<(u64, u64)>,
}

/// Something that went wrong in a session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    /// The session's global index.
    pub session: usize,
    /// When (ns, CLOCK_MONOTONIC).
    pub at: u64,
    /// What (`expired-waiting`, `expired-holding`, `session-changed`,
    /// `acquire-timeout`, `acquire-error`, `lost`, `release-error`).
    pub kind: String,
    /// Which lock, which error.
    pub detail: String,
}

impl Fault {
    /// Whether this fault is a session expiry seen by the client.
    pub fn is_expiry(&self) -> bool {
        self.kind.starts_with("expired") || self.kind == "session-changed"
    }
}

/// One line of a worker's record file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Record {
    /// A hold.
    Hold(Hold),
    /// A fault.
    Fault(Fault),
}

impl Record {
    /// The line, without its newline.
    pub fn to_line(&self) -> String {
        match self {
            Record::Hold(h) => {
                let segments = if h.segments.is_empty() {
                    "-".to_owned()
                } else {
                    h.segments
                        .iter()
                        .map(|(a, b)| format!("{a}-{b}"))
                        .collect::<Vec<_>>()
                        .join(";")
                };
                format!(
                    "H {} {} {} {} {} {} {segments}",
                    h.lock, h.hot as u8, h.session, h.requested, h.granted, h.released
                )
            }
            Record::Fault(f) => format!(
                "F {} {} {} {}",
                f.session,
                f.at,
                f.kind,
                f.detail.replace('\n', " ")
            ),
        }
    }

    /// Parses [`to_line`](Self::to_line)'s output.
    pub fn parse(line: &str) -> Option<Record> {
        let mut words = line.splitn(8, ' ');
        match words.next()? {
            // Fields are evaluated in the order written: the line's order.
            "H" => Some(Record::Hold(Hold {
                lock: words.next()?.to_owned(),
                hot: words.next()? == "1",
                session: words.next()?.parse().ok()?,
                requested: words.next()?.parse().ok()?,
                granted: words.next()?.parse().ok()?,
                released: words.next()?.parse().ok()?,
                segments: match words.next()? {
                    "-" => Vec::new(),
                    text => text
                        .split(';')
                        .map(|s| {
                            let (a, b) = s.split_once('-')?;
                            Some((a.parse().ok()?, b.parse().ok()?))
                        })
                        .collect::<Option<Vec<_>>>()?,
                },
            })),
            "F" => {
                let mut rest = line.splitn(5, ' ').skip(1);
                Some(Record::Fault(Fault {
                    session: rest.next()?.parse().ok()?,
                    at: rest.next()?.parse().ok()?,
                    kind: rest.next()?.to_owned(),
                    detail: rest.next().unwrap_or("").to_owned(),
                }))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_round_trip() {
        let hold = Record::Hold(Hold {
            lock: "/fleet/hot/1".into(),
            hot: true,
            session: 7,
            requested: 10,
            granted: 20,
            released: 40,
            segments: vec![(20, 25), (30, 40)],
        });
        assert_eq!(Record::parse(&hold.to_line()), Some(hold));
        let fault = Record::Fault(Fault {
            session: 3,
            at: 99,
            kind: "lost".into(),
            detail: "/fleet/cold/4: SessionExpired".into(),
        });
        assert_eq!(Record::parse(&fault.to_line()), Some(fault));
    }
}
