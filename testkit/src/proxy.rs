//! A TCP proxy that can cut, blackhole, delay or hold back the connections
//! through it.

use std::collections::{HashMap, VecDeque};
use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::util::lock;

const UPSTREAM_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
const BUFFER: usize = 16 * 1024;

/// A direction of traffic through a [`FaultProxy`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// From the client to the upstream (the server): requests.
    Upstream = 0,
    /// From the upstream to the client: replies and notifications.
    Downstream = 1,
}

/// A TCP proxy on `127.0.0.1:<free port>` in front of one upstream address
/// (typically a [`ZkServer`](crate::ZkServer)), for injecting network faults
/// between a client and ZooKeeper: point the client at
/// [`connect_string`](Self::connect_string) instead of the server's.
///
/// * [`cut`](Self::cut): every current connection closed, both sides (a
///   connection loss, which a ZooKeeper client recovers from within its session);
/// * [`blackhole`](Self::blackhole) until [`heal`](Self::heal): nothing
///   forwarded, nothing closed (a partition; held long enough, the session
///   expires on the server);
/// * [`hold`](Self::hold) until [`release`](Self::release) or a cut: one
///   direction stopped. To lose exactly the *reply* to a request the server did
///   apply (a create whose node must then be found and adopted), hold
///   `Downstream` before the request and cut once its effect is visible on the
///   server: the held reply dies with the connection, deterministically;
/// * [`set_delays`](Self::set_delays): latency per direction, on current and
///   future connections (a link with that one-way latency, not a slow link).
///
/// Each accepted connection gets its own upstream connection and, per direction,
/// a reader thread (chunks of up to 16 KiB, stamped when read) and a writer
/// thread (writes them in order once due). Dropping the proxy closes every
/// connection and joins its threads.
#[derive(Debug)]
pub struct FaultProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

#[derive(Debug)]
struct Shared {
    upstream: SocketAddr,
    state: Mutex<ProxyState>,
    changed: Condvar,
}

/// What a reader hands its writer.
#[derive(Debug)]
enum Chunk {
    Data(Vec<u8>),
    /// End-of-file: shut down the destination's write side.
    Eof,
}

#[derive(Debug)]
struct ProxyState {
    /// Set by `blackhole`, cleared by `heal`.
    blackholed: bool,
    /// Per [`Direction`] (as an index), like `held` and `forwarded`.
    delays: [Duration; 2],
    /// Set by `hold`, cleared by `release` and `cut`.
    held: [bool; 2],
    /// Bytes written so far.
    forwarded: [u64; 2],
    stopped: bool,
    next_id: u64,
    conns: HashMap<u64, ProxiedConnection>,
    threads: Vec<JoinHandle<()>>,
    /// Writes in progress (so that `blackhole()` can wait for them).
    in_flight: usize,
}

impl ProxyState {
    /// Forgets a connection and closes it.
    fn close(&mut self, id: u64) {
        if let Some(conn) = self.conns.remove(&id) {
            conn.shutdown();
        }
    }
}

#[derive(Debug)]
struct ProxiedConnection {
    client: TcpStream,
    upstream: Option<TcpStream>,
    /// Running pump threads; the connection is forgotten when it reaches 0.
    pumps: usize,
    /// Per [`Direction`]: chunks read and not yet written, with the
    /// time each was read.
    lines: [VecDeque<(Instant, Chunk)>; 2],
}

impl ProxiedConnection {
    fn shutdown(&self) {
        let _ = self.client.shutdown(Shutdown::Both);
        if let Some(upstream) = &self.upstream {
            let _ = upstream.shutdown(Shutdown::Both);
        }
    }
}

impl FaultProxy {
    /// Starts a proxy to `upstream`, forwarding.
    pub fn start(upstream: SocketAddr) -> Result<FaultProxy> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .map_err(|e| Error::io("binding the fault proxy to 127.0.0.1:0", e))?;
        let addr = listener
            .local_addr()
            .map_err(|e| Error::io("reading the fault proxy's address", e))?;
        let shared = Arc::new(Shared {
            upstream,
            state: Mutex::new(ProxyState {
                blackholed: false,
                delays: [Duration::ZERO; 2],
                held: [false; 2],
                forwarded: [0; 2],
                stopped: false,
                next_id: 0,
                conns: HashMap::new(),
                threads: Vec::new(),
                in_flight: 0,
            }),
            changed: Condvar::new(),
        });
        let acceptor = {
            let shared = Arc::clone(&shared);
            thread::Builder::new()
                .name(format!("zk-proxy-accept-{}", addr.port()))
                .spawn(move || accept_loop(&listener, &shared))
                .map_err(|e| Error::io("spawning the fault proxy's thread", e))?
        };
        Ok(FaultProxy {
            addr,
            shared,
            acceptor: Some(acceptor),
        })
    }

    /// The address clients connect to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The connect string for clients, `"127.0.0.1:<proxy port>"`.
    pub fn connect_string(&self) -> String {
        self.addr.to_string()
    }

    /// Connections accepted since the proxy started (including ones that
    /// were cut, or that could not reach the upstream). It counts a
    /// connection once the proxy has `accept()`ed it, which can be a moment
    /// after the client's `connect()` returned.
    pub fn accepted_connections(&self) -> u64 {
        self.shared.lock().next_id
    }

    /// Connections currently open through the proxy.
    pub fn active_connections(&self) -> usize {
        self.shared.lock().conns.len()
    }

    /// Closes every current connection now, both the client's and the
    /// upstream side (`shutdown(Both)`: the peers see end-of-file); what was
    /// held or delayed in the proxy is lost with them. A [hold](Self::hold)
    /// ends; a blackhole does not: new connections are accepted and, unless
    /// blackholed, forwarded.
    ///
    /// "Current" means accepted by the proxy. A client whose `connect()` has
    /// just returned may still sit in the listen backlog; it is accepted
    /// after the cut and forwarded, like a client that connected just after
    /// it. To be sure a connection is covered, wait until
    /// [`accepted_connections`](Self::accepted_connections) counts it.
    pub fn cut(&self) {
        let mut state = self.shared.lock();
        state.held = [false; 2];
        for (_, conn) in state.conns.drain() {
            conn.shutdown();
        }
        self.shared.changed.notify_all();
    }

    /// Stops writing in `direction`, on every connection, until
    /// [`release`](Self::release) or [`cut`](Self::cut); the proxy keeps
    /// reading, and what it reads waits in it. A write already in progress
    /// finishes.
    pub fn hold(&self, direction: Direction) {
        self.shared.lock().held[direction as usize] = true;
    }

    /// Blocks until bytes (or a close) going `direction` wait in the proxy
    /// while it is held.
    pub fn wait_holding(&self, direction: Direction) {
        let d = direction as usize;
        self.shared.wait_until(|state| {
            state.held[d] && state.conns.values().any(|c| !c.lines[d].is_empty())
        });
    }

    /// Resumes writing in `direction`; what was held is delivered in order.
    pub fn release(&self, direction: Direction) {
        self.shared.lock().held[direction as usize] = false;
        self.shared.changed.notify_all();
    }

    /// Bytes delivered in `direction` since the proxy started.
    pub fn forwarded(&self, direction: Direction) -> u64 {
        self.shared.lock().forwarded[direction as usize]
    }

    /// Blocks until at least `bytes` were delivered in `direction`.
    pub fn wait_forwarded(&self, direction: Direction, bytes: u64) {
        let d = direction as usize;
        self.shared.wait_until(|state| state.forwarded[d] >= bytes);
    }

    /// Stops forwarding in both directions on every connection, current and
    /// future, without closing anything.
    ///
    /// When this returns no further byte is delivered (a write already in
    /// progress is allowed to finish first). Bytes that arrive meanwhile are
    /// not lost: they stay in socket buffers (plus at most one 16 KiB chunk
    /// per direction held by the proxy, and the chunks still waiting out a
    /// [delay](Self::set_delays)), exactly like a network partition that TCP
    /// rides out. A close by either peer is not passed on either. New
    /// connections are accepted but not connected upstream until
    /// [`heal`](Self::heal).
    pub fn blackhole(&self) {
        let mut state = self.shared.lock();
        state.blackholed = true;
        // Past 2 s a peer is not reading: nothing more will be written.
        let writing = |state: &mut ProxyState| state.in_flight > 0;
        drop(
            self.shared
                .changed
                .wait_timeout_while(state, Duration::from_secs(2), writing),
        );
    }

    /// Delays the traffic going upstream and downstream (zero, the default, for
    /// none), on current and future connections, from now on: a round trip
    /// through the proxy then takes at least `upstream + downstream`.
    ///
    /// Each chunk the proxy reads is written `delay` after it was read, in the
    /// order read; the proxy keeps reading meanwhile, so chunks read 1 ms apart
    /// arrive about 1 ms apart, `delay` later. A change applies to the chunks
    /// still waiting too (measured from when each was read), without ever
    /// reordering them. Waiting chunks are held by the proxy (memory grows
    /// with throughput × delay), and like everything else they are held during
    /// a [`blackhole`](Self::blackhole) and discarded by a [`cut`](Self::cut).
    pub fn set_delays(&self, upstream: Duration, downstream: Duration) {
        let mut state = self.shared.lock();
        state.delays = [upstream, downstream];
        self.shared.changed.notify_all();
    }

    /// Resumes forwarding.
    ///
    /// Connections that were blackholed are **kept**, and what was held back
    /// is delivered in order, followed by any close that was held back. By
    /// then a ZooKeeper client has usually given up on such a connection (and
    /// the server may have expired its session); it reconnects through the
    /// proxy. Use [`cut`](Self::cut) before `heal` to drop them instead.
    pub fn heal(&self) {
        let mut state = self.shared.lock();
        state.blackholed = false;
        self.shared.changed.notify_all();
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.shared.lock().stopped = true;
        self.cut();
        // Wake the acceptor, blocked in accept(), so that it sees `stopped`.
        let woke = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1)).is_ok();
        if let Some(acceptor) = self.acceptor.take() {
            if woke {
                let _ = acceptor.join();
            }
        }
        loop {
            let threads = std::mem::take(&mut self.shared.lock().threads);
            if threads.is_empty() {
                break;
            }
            for thread in threads {
                let _ = thread.join();
            }
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, ProxyState> {
        lock(&self.state)
    }

    fn wait_until(&self, done: impl Fn(&ProxyState) -> bool) {
        drop(self.changed.wait_while(self.lock(), |state| !done(state)));
    }

    /// Waits while blackholed; `false` if the connection was cut or the proxy
    /// stopped. Returns the guard so callers can act atomically.
    fn wait_forwarding(&self, id: u64) -> (MutexGuard<'_, ProxyState>, bool) {
        let open = |state: &ProxyState| !state.stopped && state.conns.contains_key(&id);
        let waited = self
            .changed
            .wait_while(self.lock(), |s| s.blackholed && open(s));
        let state = waited.unwrap_or_else(PoisonError::into_inner);
        let forwarding = open(&state);
        (state, forwarding)
    }

    fn close(&self, id: u64) {
        self.lock().close(id);
    }

    fn pump_done(&self, id: u64) {
        let mut state = self.lock();
        if let Some(conn) = state.conns.get_mut(&id) {
            conn.pumps -= 1;
            if conn.pumps == 0 {
                state.close(id);
            }
        }
    }
}

/// Spawns a thread that `Drop for FaultProxy` will join.
fn spawn_tracked(state: &mut ProxyState, name: String, f: impl FnOnce() + Send + 'static) -> bool {
    match thread::Builder::new().name(name).spawn(f) {
        Ok(handle) => {
            state.threads.retain(|t| !t.is_finished());
            state.threads.push(handle);
            true
        }
        Err(_) => false,
    }
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    for incoming in listener.incoming() {
        let mut state = shared.lock();
        if state.stopped {
            break;
        }
        let Ok(client) = incoming else {
            // E.g. out of file descriptors: back off instead of spinning.
            drop(state);
            thread::sleep(Duration::from_millis(10));
            continue;
        };
        // Ids count the accepted connections.
        let id = state.next_id;
        state.next_id += 1;
        let Ok(registered) = client.try_clone() else {
            continue;
        };
        state.conns.insert(
            id,
            ProxiedConnection {
                client: registered,
                upstream: None,
                pumps: 1,
                lines: [VecDeque::new(), VecDeque::new()],
            },
        );
        let worker = Arc::clone(shared);
        let name = format!("zk-proxy-conn-{id}");
        if !spawn_tracked(&mut state, name, move || connection(&worker, id, client)) {
            state.close(id);
        }
    }
}

fn connection(shared: &Arc<Shared>, id: u64, client: TcpStream) {
    // A blackholed proxy does not even reach the upstream.
    let (state, forwarding) = shared.wait_forwarding(id);
    drop(state);
    if !forwarding {
        shared.close(id);
        return;
    }
    let Ok(upstream) = TcpStream::connect_timeout(&shared.upstream, UPSTREAM_CONNECT_TIMEOUT)
    else {
        // Like a dead server: the client's connection is closed.
        shared.close(id);
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = upstream.set_nodelay(true);
    // One reader and one writer per direction; this thread reads the client.
    let (Ok(registered), Ok(up_src), Ok(client_dst)) = (
        upstream.try_clone(),
        upstream.try_clone(),
        client.try_clone(),
    ) else {
        let _ = upstream.shutdown(Shutdown::Both);
        shared.close(id);
        return;
    };
    {
        let mut state = shared.lock();
        let Some(conn) = state.conns.get_mut(&id) else {
            // Cut (or stopped) while connecting.
            let _ = upstream.shutdown(Shutdown::Both);
            return;
        };
        conn.upstream = Some(registered);
        type Pump = fn(&Shared, u64, Direction, TcpStream);
        let pumps: [(&str, Pump, Direction, TcpStream); 3] = [
            ("up-w", write_loop, Direction::Upstream, upstream),
            ("down-r", read_loop, Direction::Downstream, up_src),
            ("down-w", write_loop, Direction::Downstream, client_dst),
        ];
        for (name, pump, direction, stream) in pumps {
            if let Some(conn) = state.conns.get_mut(&id) {
                conn.pumps += 1;
            }
            let shared = Arc::clone(shared);
            let body = move || pump(&shared, id, direction, stream);
            if !spawn_tracked(&mut state, format!("zk-proxy-{name}-{id}"), body) {
                state.close(id);
                return;
            }
        }
    }
    read_loop(shared, id, Direction::Upstream, client);
}

/// Reads `src` into the connection's line in `direction` until end-of-file, an
/// error, or a cut.
fn read_loop(shared: &Shared, id: u64, direction: Direction, mut src: TcpStream) {
    let mut buf = vec![0u8; BUFFER];
    loop {
        // Do not even read while blackholed, so that nothing piles up here.
        let (state, forwarding) = shared.wait_forwarding(id);
        drop(state);
        if !forwarding {
            break;
        }
        let read = src.read(&mut buf);
        let read_at = Instant::now();
        // Whatever was read (data, end-of-file or an error) is passed on
        // only when forwarding.
        let (mut state, forwarding) = shared.wait_forwarding(id);
        if !forwarding {
            break;
        }
        let chunk = match read {
            Ok(0) => Chunk::Eof,
            Ok(n) => Chunk::Data(buf[..n].to_vec()),
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => {
                // Like a reset: the connection is closed both ways, and what
                // is still in its lines is dropped.
                drop(state);
                shared.close(id);
                break;
            }
        };
        let eof = matches!(chunk, Chunk::Eof);
        if let Some(conn) = state.conns.get_mut(&id) {
            conn.lines[direction as usize].push_back((read_at, chunk));
        }
        shared.changed.notify_all();
        drop(state);
        if eof {
            break;
        }
    }
    shared.pump_done(id);
}

/// Writes the connection's line in `direction` to `dst`, each chunk once its
/// delay has passed, until end-of-file, an error, or a cut.
fn write_loop(shared: &Shared, id: u64, direction: Direction, mut dst: TcpStream) {
    let d = direction as usize;
    loop {
        let mut state = shared.lock();
        let chunk = loop {
            if state.stopped || !state.conns.contains_key(&id) {
                break None;
            }
            let delay = state.delays[d];
            let forwarding = !state.blackholed && !state.held[d];
            let due = state.conns[&id].lines[d].front().map(|(at, _)| *at + delay);
            match due {
                Some(due) if forwarding => {
                    let now = Instant::now();
                    if due <= now {
                        let conn = state.conns.get_mut(&id).expect("checked above");
                        break conn.lines[d].pop_front().map(|(_, chunk)| chunk);
                    }
                    let waited = shared.changed.wait_timeout(state, due - now);
                    state = waited.unwrap_or_else(PoisonError::into_inner).0;
                }
                _ => {
                    state = shared
                        .changed
                        .wait(state)
                        .unwrap_or_else(PoisonError::into_inner)
                }
            }
        };
        match chunk {
            None => break,
            Some(Chunk::Eof) => {
                drop(state);
                let _ = dst.shutdown(Shutdown::Write);
                break;
            }
            Some(Chunk::Data(bytes)) => {
                state.in_flight += 1;
                drop(state);
                let written = dst.write_all(&bytes);
                let mut state = shared.lock();
                state.in_flight -= 1;
                if written.is_ok() {
                    state.forwarded[d] += bytes.len() as u64;
                }
                shared.changed.notify_all();
                drop(state);
                if written.is_err() {
                    shared.close(id);
                    break;
                }
            }
        }
    }
    shared.pump_done(id);
}
