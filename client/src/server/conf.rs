//! A ZooKeeper server's timing settings, as its `conf` four-letter word tells
//! them: what [`Hazard`](crate::Hazard)s are judged from. Parsing only; asking
//! the server is the binding's part (through lock-nodelay).

use std::time::Duration;

/// What ZooKeeper answers to a four-letter word its `4lw.commands.whitelist`
/// leaves out: `"<word> is not executed because it is not in the whitelist."`
/// (3.5 to 3.9; 3.8 allows only `srvr` by default).
const REFUSED: &str = "is not executed because it is not in the whitelist";

/// What a server answers to every four-letter word while it has no quorum or
/// is still starting.
const NOT_SERVING: &str = "not currently serving requests";

/// A server's timing settings, from its `conf` four-letter word.
///
/// ```
/// let answer = "clientPort=2181\ntickTime=2000\nminSessionTimeout=4000\n\
///               maxSessionTimeout=40000\nserverId=1\ninitLimit=10\nsyncLimit=5\n";
/// let conf = zklock::ServerConf::parse(answer).unwrap();
/// assert_eq!(conf.follower_lag(), Some(std::time::Duration::from_secs(10)));
/// // ZooKeeper clamps the session timeout a client asks for into [min, max].
/// assert_eq!(conf.negotiate(std::time::Duration::from_secs(60)).as_secs(), 40);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerConf {
    /// `tickTime`: the leader pings its followers every half tick and expires
    /// sessions on tick boundaries.
    pub tick_time: Duration,
    /// `syncLimit`, in ticks; `None` for a standalone server (which has no
    /// leader to fall behind), or when the source does not tell it.
    pub sync_limit: Option<u32>,
    /// `minSessionTimeout`: shorter requested timeouts are raised to it.
    pub min_session_timeout: Duration,
    /// `maxSessionTimeout`: longer requested timeouts are lowered to it.
    pub max_session_timeout: Duration,
}

/// Why a server's settings could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfError {
    /// The server refuses `conf`: it is not in `4lw.commands.whitelist`.
    #[error("the server refuses the `conf` four-letter word (add it to 4lw.commands.whitelist)")]
    Refused,
    /// The server is not serving (no quorum, or starting).
    #[error("the server is not currently serving requests")]
    NotServing,
    /// The answer lacks a setting or has one that is not a number.
    #[error("unexpected `conf` answer: {0}")]
    Malformed(String),
    /// The exchange failed (connect, write, read, timeout).
    #[error("cannot ask the server: {0}")]
    Unreachable(String),
}

/// Whether `answer` is ZooKeeper's refusal of a four-letter word that
/// `4lw.commands.whitelist` leaves out.
///
/// ```
/// assert!(zklock::four_letter_word_refused(
///     "conf is not executed because it is not in the whitelist.\n"
/// ));
/// assert!(!zklock::four_letter_word_refused("imok"));
/// ```
pub fn four_letter_word_refused(answer: &str) -> bool {
    answer.contains(REFUSED)
}

impl ServerConf {
    /// Settings known otherwise (e.g. from the AdminServer's
    /// `/commands/configuration`, which has no `syncLimit` in ZooKeeper 3.8:
    /// give `None` then, and the lag rule goes unchecked).
    pub fn new(
        tick_time: Duration,
        sync_limit: Option<u32>,
        min_session_timeout: Duration,
        max_session_timeout: Duration,
    ) -> ServerConf {
        ServerConf {
            tick_time,
            sync_limit,
            min_session_timeout,
            max_session_timeout,
        }
    }

    /// Parses the answer to `conf` (`key=value` lines; a standalone server has
    /// no `syncLimit`).
    ///
    /// # Errors
    /// [`ConfError::Refused`] for the whitelist refusal, [`ConfError::NotServing`],
    /// or [`ConfError::Malformed`] when `tickTime`, `minSessionTimeout` or
    /// `maxSessionTimeout` is missing, or a value is not a number.
    pub fn parse(answer: &str) -> Result<ServerConf, ConfError> {
        if four_letter_word_refused(answer) {
            return Err(ConfError::Refused);
        }
        if answer.contains(NOT_SERVING) {
            return Err(ConfError::NotServing);
        }
        let value = |key: &str| -> Result<Option<u64>, ConfError> {
            let Some(text) = answer.lines().find_map(|line| {
                let (k, v) = line.split_once('=')?;
                (k.trim() == key).then(|| v.trim())
            }) else {
                return Ok(None);
            };
            text.parse()
                .map(Some)
                .map_err(|_| ConfError::Malformed(format!("{key}={text} is not a number")))
        };
        let millis = |key: &str| -> Result<Duration, ConfError> {
            value(key)?
                .map(Duration::from_millis)
                .ok_or_else(|| ConfError::Malformed(format!("no {key}")))
        };
        let sync_limit =
            match value("syncLimit")? {
                Some(ticks) => Some(u32::try_from(ticks).map_err(|_| {
                    ConfError::Malformed(format!("syncLimit={ticks} is out of range"))
                })?),
                None => None,
            };
        Ok(ServerConf {
            tick_time: millis("tickTime")?,
            sync_limit,
            min_session_timeout: millis("minSessionTimeout")?,
            max_session_timeout: millis("maxSessionTimeout")?,
        })
    }

    /// Parses the outcome of asking a server for `conf`: its answer, or the I/O
    /// error of the exchange.
    ///
    /// # Errors
    /// As [`parse`](Self::parse), and [`ConfError::Unreachable`] for `Err`.
    pub fn from_answer(answer: std::io::Result<String>) -> Result<ServerConf, ConfError> {
        match answer {
            Ok(text) => ServerConf::parse(&text),
            Err(e) => Err(ConfError::Unreachable(e.to_string())),
        }
    }

    /// How long a server of this ensemble cut off from its leader (or a leader
    /// cut off from its quorum) keeps answering its clients: `syncLimit` ×
    /// `tickTime`, after which it gives up and drops them. `None` for a
    /// standalone server.
    pub fn follower_lag(&self) -> Option<Duration> {
        self.sync_limit.map(|ticks| self.tick_time * ticks)
    }

    /// The session timeout the server grants for `requested`: clamped into
    /// [`minSessionTimeout`, `maxSessionTimeout`].
    pub fn negotiate(&self, requested: Duration) -> Duration {
        requested.clamp(
            self.min_session_timeout,
            self.max_session_timeout.max(self.min_session_timeout),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ZooKeeper 3.8.0's answer, one member of a quorum (syncLimit present).
    const QUORUM: &str = "clientPort=23181\nsecureClientPort=-1\ndataDir=/tmp/zkt/data/version-2\n\
        dataDirSize=511\ndataLogDir=/tmp/zkt/data/version-2\ndataLogSize=511\ntickTime=2000\n\
        maxClientCnxns=60\nminSessionTimeout=4000\nmaxSessionTimeout=40000\n\
        clientPortListenBacklog=-1\nserverId=1\ninitLimit=10\nsyncLimit=5\nelectionAlg=3\n\
        electionPort=23183\nquorumPort=23182\npeerType=0\nmembership: \n\
        server.1=127.0.0.1:23182:23183:participant\nversion=0";

    #[test]
    fn parses_a_quorum_members_answer_and_clamps_into_its_bounds() {
        let conf = ServerConf::parse(QUORUM).unwrap();
        assert_eq!(conf.tick_time, Duration::from_secs(2));
        assert_eq!(conf.sync_limit, Some(5));
        assert_eq!(conf.min_session_timeout, Duration::from_secs(4));
        assert_eq!(conf.max_session_timeout, Duration::from_secs(40));
        assert_eq!(conf.follower_lag(), Some(Duration::from_secs(10)));
        for (asked, granted) in [(1, 4), (10, 10), (99, 40)] {
            let asked = Duration::from_secs(asked);
            assert_eq!(conf.negotiate(asked), Duration::from_secs(granted));
        }
    }

    #[test]
    fn a_standalone_server_has_no_sync_limit() {
        let standalone = QUORUM.replace("syncLimit=5\n", "");
        let conf = ServerConf::parse(&standalone).unwrap();
        assert_eq!(conf.sync_limit, None);
        assert_eq!(conf.follower_lag(), None);
    }

    #[test]
    fn refusals_and_bad_answers_are_told_apart() {
        let refused = "conf is not executed because it is not in the whitelist.\n";
        assert_eq!(ServerConf::parse(refused), Err(ConfError::Refused));
        let not_serving = "This ZooKeeper instance is not currently serving requests\n";
        assert_eq!(ServerConf::parse(not_serving), Err(ConfError::NotServing));
        assert!(matches!(
            ServerConf::parse("tickTime=2000\n"),
            Err(ConfError::Malformed(m)) if m.contains("minSessionTimeout")
        ));
        assert!(matches!(
            ServerConf::parse(&QUORUM.replace("syncLimit=5", "syncLimit=five")),
            Err(ConfError::Malformed(m)) if m.contains("syncLimit=five")
        ));
        let io = std::io::Error::new(std::io::ErrorKind::TimedOut, "timed out");
        assert!(matches!(
            ServerConf::from_answer(Err(io)),
            Err(ConfError::Unreachable(m)) if m.contains("timed out")
        ));
    }
}
