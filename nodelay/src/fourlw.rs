//! ZooKeeper's four-letter words (`srvr`, `conf`, ...): one short exchange on a
//! connection of its own to a server's client port, and asking the servers this
//! process is connected to.

use crate::Peers;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// Sends the four-letter word `word` to the server at `addr` and returns its
/// whole answer (the server closes the connection after answering). Connecting
/// and the exchange each take at most `timeout`.
///
/// A word the server's `4lw.commands.whitelist` leaves out is answered with
/// `"<word> is not executed because it is not in the whitelist."` (ZooKeeper
/// 3.8 allows only `srvr` by default): an `Ok` answer, for the caller to read.
///
/// # Errors
/// `InvalidInput` when `word` is not four ASCII lowercase letters; `TimedOut`
/// when the answer is not complete in time; connection and I/O errors.
pub fn four_letter_word(addr: SocketAddr, word: &str, timeout: Duration) -> io::Result<String> {
    if word.len() != 4 || !word.bytes().all(|b| b.is_ascii_lowercase()) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{word:?} is not a four-letter word"),
        ));
    }
    let timeout = timeout.max(Duration::from_millis(1));
    let mut stream = TcpStream::connect_timeout(&addr, timeout)?;
    let deadline = Instant::now() + timeout;
    stream.set_write_timeout(Some(timeout))?;
    stream.write_all(word.as_bytes())?;
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(incomplete(timeout));
        }
        stream.set_read_timeout(Some(left))?;
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(incomplete(timeout))
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(String::from_utf8_lossy(&answer).into_owned())
}

fn incomplete(timeout: Duration) -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        format!("no complete answer within {timeout:?}"),
    )
}

/// The servers of `peers` this process has a TCP connection to (on Linux, from
/// [`connections`](crate::connections)); elsewhere, or when none is found,
/// every server of `peers`.
pub fn connected_servers(peers: &Peers) -> Vec<SocketAddr> {
    let connections = crate::connections(peers).unwrap_or_default();
    let connected = Peers::new(connections.iter().map(|c| c.peer));
    let servers = if connected.addrs().is_empty() {
        peers
    } else {
        &connected
    };
    servers.addrs().to_vec()
}

/// How long [`ask_connected_servers_all_after`] gives each server to connect,
/// and again to answer.
pub const BACKGROUND_TIMEOUT: Duration = Duration::from_secs(2);

/// Every server's answers to every word, as [`ask_connected_servers_all_after`]
/// hands them over.
pub type ServersAnswers = Vec<(SocketAddr, Vec<io::Result<String>>)>;

/// How long the answers [`ask_connected_servers_all_after`] got are handed to
/// the later askers of the same process (same connect string, same words)
/// instead of asking the servers again.
///
/// A binding asks after every (re)connect of every session: a process with a
/// thousand sessions whose server restarted would otherwise open six thousand
/// connections to the remaining servers (three servers, two words) while
/// those servers take over its sessions, and scan its thousand sockets a
/// thousand times. A server's settings and role do not change within seconds.
pub const SHARED_ANSWERS_FOR: Duration = Duration::from_secs(10);

/// On a thread of its own (name resolution and the exchanges block), after
/// `delay`: resolves `connect_string`, sends each of `words` to each of its
/// servers this process is connected to ([`connected_servers`];
/// [`BACKGROUND_TIMEOUT`] each), and calls `answers` once every server has
/// answered every word (or failed to): each server with its answers in the
/// order of `words`. For a binding's check of its servers after a
/// (re)connect, which must not hold up anything else; the `delay` keeps the
/// check out of the way of the session's first requests. For a judgement that needs
/// all of them at once (which of the servers is the session's is not known, so
/// what holds for the session must hold for each).
///
/// Askers of one process share: while an exchange for the same connect string
/// and words is under way, a later asker waits for its answers, and answers
/// younger than [`SHARED_ANSWERS_FOR`] are handed over without asking again
/// (then without the `delay`: nothing is sent). One thread per exchange.
///
/// # Errors
/// When no thread can be started.
pub fn ask_connected_servers_all_after(
    delay: Duration,
    connect_string: String,
    words: &'static [&'static str],
    answers: impl FnOnce(ServersAnswers) + Send + 'static,
) -> io::Result<()> {
    shared::ask(
        delay,
        SHARED_ANSWERS_FOR,
        connect_string,
        words,
        Box::new(answers),
    )
}

/// The askers of [`ask_connected_servers_all_after`] in this process, by what
/// they ask.
mod shared {
    use super::*;
    use std::collections::HashMap;
    use std::sync::{Mutex, PoisonError};

    pub(super) type Asker = Box<dyn FnOnce(ServersAnswers) + Send>;
    type Key = (String, &'static [&'static str]);

    /// One connect string's and word list's exchanges.
    #[derive(Default)]
    struct Exchanges {
        /// The latest answers, and when they were complete.
        latest: Option<(Instant, ServersAnswers)>,
        /// Askers not answered yet.
        waiting: Vec<Asker>,
        /// Whether a thread is serving `waiting` (it ends when none is left).
        serving: bool,
    }

    static EXCHANGES: Mutex<Option<HashMap<Key, Exchanges>>> = Mutex::new(None);

    fn with<R>(key: &Key, f: impl FnOnce(&mut Exchanges) -> R) -> R {
        // A panic in here leaves plain data (answers, askers): nothing to undo.
        let mut all = EXCHANGES.lock().unwrap_or_else(PoisonError::into_inner);
        f(all
            .get_or_insert_with(HashMap::new)
            .entry(key.clone())
            .or_default())
    }

    pub(super) fn ask(
        delay: Duration,
        reuse: Duration,
        connect_string: String,
        words: &'static [&'static str],
        asker: Asker,
    ) -> io::Result<()> {
        let key: Key = (connect_string, words);
        let start = with(&key, |x| {
            x.waiting.push(asker);
            !std::mem::replace(&mut x.serving, true)
        });
        if !start {
            return Ok(());
        }
        let started = std::thread::Builder::new()
            .name("zklock-4lw".to_owned())
            .spawn({
                let key = key.clone();
                move || serve(&key, delay, reuse)
            });
        if let Err(e) = started {
            // Nobody serves them: the askers are dropped unanswered, as before.
            with(&key, |x| {
                x.serving = false;
                x.waiting.clear();
            });
            return Err(e);
        }
        Ok(())
    }

    /// The serving thread: answers the waiting askers, from fresh answers or a
    /// new exchange, until none is left.
    fn serve(key: &Key, delay: Duration, reuse: Duration) {
        std::thread::sleep(delay);
        loop {
            let (askers, fresh) = with(key, |x| {
                let askers = std::mem::take(&mut x.waiting);
                if askers.is_empty() {
                    x.serving = false;
                }
                let fresh = x
                    .latest
                    .as_ref()
                    .filter(|(at, _)| at.elapsed() < reuse)
                    .map(|(_, all)| copy(all));
                (askers, fresh)
            });
            if askers.is_empty() {
                return;
            }
            let all = match fresh {
                Some(all) => all,
                None => {
                    let Ok(peers) = Peers::resolve(&key.0) else {
                        // Unanswerable: dropped unanswered, as a lone asker's.
                        continue;
                    };
                    let all: ServersAnswers = connected_servers(&peers)
                        .into_iter()
                        .map(|server| {
                            let said = key
                                .1
                                .iter()
                                .map(|word| four_letter_word(server, word, BACKGROUND_TIMEOUT))
                                .collect();
                            (server, said)
                        })
                        .collect();
                    with(key, |x| x.latest = Some((Instant::now(), copy(&all))));
                    all
                }
            };
            let mut askers = askers.into_iter();
            let last = askers.next_back();
            for asker in askers {
                asker(copy(&all));
            }
            if let Some(last) = last {
                last(all);
            }
        }
    }

    /// A copy of every answer (an I/O error keeps its kind and text).
    fn copy(all: &ServersAnswers) -> ServersAnswers {
        all.iter()
            .map(|(server, said)| {
                let said = said
                    .iter()
                    .map(|answer| match answer {
                        Ok(text) => Ok(text.clone()),
                        Err(e) => Err(io::Error::new(e.kind(), e.to_string())),
                    })
                    .collect();
                (*server, said)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// A server that answers `answer` to every connection sending `conf` (and
    /// closes the others), counting the connections.
    fn answering(answer: &'static str) -> (SocketAddr, Arc<AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let count = Arc::new(AtomicUsize::new(0));
        let counted = count.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let mut stream = stream.unwrap();
                counted.fetch_add(1, Ordering::SeqCst);
                std::thread::spawn(move || {
                    let mut word = [0u8; 4];
                    if stream.read_exact(&mut word).is_ok() && &word == b"conf" {
                        let _ = stream.write_all(answer.as_bytes());
                    }
                });
            }
        });
        (addr, count)
    }

    #[test]
    fn reads_the_whole_answer() {
        let (addr, _) = answering("tickTime=2000\nsyncLimit=5\n");
        let answer = four_letter_word(addr, "conf", Duration::from_secs(5)).unwrap();
        assert_eq!(answer, "tickTime=2000\nsyncLimit=5\n");
    }

    #[test]
    fn a_silent_server_times_out() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let err = four_letter_word(addr, "conf", Duration::from_millis(200)).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        drop(listener);
    }

    #[test]
    fn only_four_letter_words_are_sent() {
        let addr: SocketAddr = "127.0.0.1:9".parse().unwrap();
        for word in ["con", "CONF", "confs"] {
            let err = four_letter_word(addr, word, Duration::from_secs(1)).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{word}");
        }
    }

    #[test]
    fn lists_only_the_servers_this_process_is_connected_to() {
        let (addr, _) = answering("imok-ish");
        // Connected to it (this socket is what `connections` finds on Linux)...
        let other = TcpListener::bind("127.0.0.1:0").unwrap();
        let peers = Peers::new([addr, other.local_addr().unwrap()]);
        // ... the first server only, so only it is listed (elsewhere: both).
        let _ours = TcpStream::connect(addr);
        let expected = if cfg!(target_os = "linux") {
            vec![addr]
        } else {
            peers.addrs().to_vec()
        };
        assert_eq!(connected_servers(&peers), expected);
    }

    #[test]
    fn askers_of_one_process_share_one_exchange_after_the_delay() {
        let (addr, exchanges) = answering("shared");
        let _ours = TcpStream::connect(addr);
        let delay = Duration::from_millis(200);
        let asked = Instant::now();
        let (tx, rx) = std::sync::mpsc::channel();
        let ask = |tx: std::sync::mpsc::Sender<_>| {
            let words = &["conf", "srvr"];
            ask_connected_servers_all_after(delay, format!("{addr}"), words, move |all| {
                tx.send((all, asked.elapsed())).unwrap()
            })
            .unwrap()
        };
        // Ten sessions reconnecting at once, and one a moment later.
        for _ in 0..10 {
            ask(tx.clone());
        }
        let mut answers: Vec<_> = (0..10)
            .map(|_| rx.recv_timeout(Duration::from_secs(10)).unwrap())
            .collect();
        ask(tx);
        answers.push(rx.recv_timeout(Duration::from_secs(10)).unwrap());
        for (all, after) in answers {
            assert!(after >= delay, "answered {after:?} after asking");
            assert_eq!(all.len(), 1);
            assert_eq!(all[0].0, addr);
            let said: Vec<_> = all[0]
                .1
                .iter()
                .map(|a| a.as_ref().unwrap().as_str())
                .collect();
            // The test server answers `conf` only, and closes on `srvr`.
            assert_eq!(said, ["shared", ""]);
        }
        // Our own connection, then one per word for all eleven askers.
        assert_eq!(exchanges.load(Ordering::SeqCst), 1 + 2);
    }

    #[test]
    fn answers_older_than_the_window_are_asked_again() {
        let (addr, exchanges) = answering("again");
        let _ours = TcpStream::connect(addr);
        for round in 1..=2 {
            let (tx, rx) = std::sync::mpsc::channel();
            shared::ask(
                Duration::ZERO,
                Duration::ZERO,
                format!("{addr}"),
                &["conf"],
                Box::new(move |all| tx.send(all).unwrap()),
            )
            .unwrap();
            rx.recv_timeout(Duration::from_secs(10)).unwrap();
            // Our own connection, then one per round.
            assert_eq!(exchanges.load(Ordering::SeqCst), 1 + round);
        }
    }
}
