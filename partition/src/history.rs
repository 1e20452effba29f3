//! One history line per event, as every contender prints it on stdout:
//!
//! ```text
//! <CLOCK_MONOTONIC ns> <client> <lock path> <event> [argument]
//! ```
//!
//! Events: `acquire-request`, `granted <fencing token>`, `suspended`, `resumed`,
//! `lost <reason>`, `released` (printed when the holder decides to let go,
//! before it deletes its node: the end of its trust). Other words (`ready`,
//! `failed ...`, `note ...`) are kept as [`EventKind::Other`]. All processes on one
//! host share CLOCK_MONOTONIC (`lock_testkit::exclusion::monotonic_ns`), so histories
//! merge by time.

use std::fmt;

/// Nanoseconds of CLOCK_MONOTONIC.
pub type Nanos = u64;

/// One event of one contender.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// When (CLOCK_MONOTONIC ns).
    pub at: Nanos,
    /// The contender's name, `<binding>-<rest>` (see [`binding_of`]).
    pub client: String,
    /// The lock path.
    pub lock: String,
    /// What happened.
    pub kind: EventKind,
}

/// What happened to a contender.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EventKind {
    /// It asked for the lock.
    AcquireRequest,
    /// It holds the lock, with this fencing token (the `czxid` of its node).
    Granted(i64),
    /// Its connection is down: it stops trusting the lock.
    Suspended,
    /// Its connection is back and the lock still its own.
    Resumed,
    /// The lock is gone (the library's own word for it).
    Lost(String),
    /// It let go of the lock.
    Released,
    /// Anything else it said.
    Other(String),
}

/// A line that is not a history line.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("not a history line ({why}): {line:?}")]
pub struct ParseError {
    /// The line.
    pub line: String,
    /// What is wrong with it.
    pub why: &'static str,
}

impl Event {
    /// Parses one history line.
    pub fn parse(line: &str) -> Result<Event, ParseError> {
        let bad = |why| ParseError {
            line: line.to_string(),
            why,
        };
        let mut words = line.split_whitespace();
        let at = words
            .next()
            .and_then(|w| w.parse().ok())
            .ok_or_else(|| bad("no timestamp"))?;
        let client = words.next().ok_or_else(|| bad("no client"))?.to_string();
        let lock = words.next().ok_or_else(|| bad("no lock path"))?.to_string();
        let event = words.next().ok_or_else(|| bad("no event"))?;
        let rest: Vec<&str> = words.collect();
        let kind = match event {
            "acquire-request" => EventKind::AcquireRequest,
            "granted" => EventKind::Granted(
                rest.first()
                    .and_then(|t| t.parse().ok())
                    .ok_or_else(|| bad("granted without a token"))?,
            ),
            "suspended" => EventKind::Suspended,
            "resumed" => EventKind::Resumed,
            "lost" => EventKind::Lost(rest.join(" ")),
            "released" => EventKind::Released,
            other => EventKind::Other([vec![other], rest].concat().join(" ")),
        };
        Ok(Event {
            at,
            client,
            lock,
            kind,
        })
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {} ", self.at, self.client, self.lock)?;
        match &self.kind {
            EventKind::AcquireRequest => write!(f, "acquire-request"),
            EventKind::Granted(token) => write!(f, "granted {token}"),
            EventKind::Suspended => write!(f, "suspended"),
            EventKind::Resumed => write!(f, "resumed"),
            EventKind::Lost(reason) => write!(f, "lost {reason}"),
            EventKind::Released => write!(f, "released"),
            EventKind::Other(words) => write!(f, "{words}"),
        }
    }
}

/// The binding or library of a contender: its name up to the first `-`
/// (`async`, `blocking`, `curator`, `kazoo`).
pub fn binding_of(client: &str) -> &str {
    client.split('-').next().unwrap_or(client)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_round_trip() {
        for line in [
            "17 async-1 /locks/a acquire-request",
            "18 async-1 /locks/a granted 4294967310",
            "19 kazoo-2 /locks/b lost SessionExpired after 4 s",
            "20 curator-1 /locks/a note fenced write refused",
        ] {
            assert_eq!(Event::parse(line).unwrap().to_string(), line);
        }
        assert_eq!(
            Event::parse("5 blocking-3 /l released").unwrap().kind,
            EventKind::Released
        );
        assert_eq!(binding_of("blocking-zk2-b"), "blocking");
    }

    #[test]
    fn malformed_lines_are_refused() {
        assert_eq!(Event::parse("").unwrap_err().why, "no timestamp");
        assert_eq!(
            Event::parse("x a /l granted 1").unwrap_err().why,
            "no timestamp"
        );
        assert_eq!(Event::parse("1 a /l").unwrap_err().why, "no event");
        assert_eq!(
            Event::parse("1 a /l granted").unwrap_err().why,
            "granted without a token"
        );
    }
}
