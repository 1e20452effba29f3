//! A TCP proxy that holds back one direction of traffic, then cuts.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;

use crate::error::{Error, Result};
use crate::proxy::Direction;
use crate::util::lock;

struct HoldState {
    hold: [bool; 2],
    /// Pumps waiting with a chunk in hand, per direction.
    holding: [usize; 2],
    /// Bytes delivered, per direction.
    forwarded: [u64; 2],
    /// Bumped by `cut`: pumps of older connections stop without writing.
    epoch: u64,
    conns: Vec<TcpStream>,
    stopped: bool,
}

struct Shared {
    upstream: SocketAddr,
    state: Mutex<HoldState>,
    changed: Condvar,
}

impl Shared {
    fn wait<'a>(
        &self,
        state: std::sync::MutexGuard<'a, HoldState>,
    ) -> std::sync::MutexGuard<'a, HoldState> {
        self.changed.wait(state).unwrap_or_else(|p| p.into_inner())
    }
}

/// A TCP proxy on `127.0.0.1:<free port>` in front of one upstream address that
/// can hold back one direction while the other flows.
///
/// [`FaultProxy`](crate::FaultProxy) stops both directions at once. To lose
/// exactly the *reply* to a request the server did apply (a create whose node
/// must then be found and adopted), requests must flow while replies wait: with
/// [`hold`](Self::hold)`(Direction::Downstream)` before the request and
/// [`cut`](Self::cut) once its effect is visible on the server, the held reply dies
/// with the connection, deterministically. Holding `Upstream` instead keeps a
/// request from ever reaching the server.
///
/// ```no_run
/// use lock_testkit::{Direction, HoldProxy, ZkServer};
/// # fn main() -> lock_testkit::Result<()> {
/// let server = ZkServer::start()?;
/// let proxy = HoldProxy::start(server.addr())?; // clients use proxy.connect_string()
/// proxy.hold(Direction::Downstream);            // requests pass, replies wait
/// proxy.cut();                                  // held replies are lost; new connections flow
/// # Ok(())
/// # }
/// ```
pub struct HoldProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for HoldProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HoldProxy")
            .field("addr", &self.addr)
            .field("upstream", &self.shared.upstream)
            .finish()
    }
}

impl HoldProxy {
    /// A proxy in front of `upstream`, forwarding both ways.
    ///
    /// # Errors
    /// [`Error::Io`] if no loopback port can be bound.
    pub fn start(upstream: SocketAddr) -> Result<HoldProxy> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .map_err(|e| Error::io("binding the hold proxy to 127.0.0.1:0", e))?;
        let addr = listener
            .local_addr()
            .map_err(|e| Error::io("reading the hold proxy's address", e))?;
        let shared = Arc::new(Shared {
            upstream,
            state: Mutex::new(HoldState {
                hold: [false; 2],
                holding: [0; 2],
                forwarded: [0; 2],
                epoch: 0,
                conns: Vec::new(),
                stopped: false,
            }),
            changed: Condvar::new(),
        });
        let acceptor = shared.clone();
        thread::spawn(move || accept_loop(listener, acceptor));
        Ok(HoldProxy { addr, shared })
    }

    /// The proxy's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The connect string for clients (`127.0.0.1:<port>`).
    pub fn connect_string(&self) -> String {
        self.addr.to_string()
    }

    /// Stops forwarding in `direction`; bytes wait in the proxy.
    pub fn hold(&self, direction: Direction) {
        lock(&self.shared.state).hold[direction.index()] = true;
    }

    /// Blocks until bytes going `direction` are being held.
    pub fn wait_holding(&self, direction: Direction) {
        let mut state = lock(&self.shared.state);
        while state.holding[direction.index()] == 0 {
            state = self.shared.wait(state);
        }
    }

    /// Resumes forwarding in `direction`; what was held is delivered in order.
    pub fn release(&self, direction: Direction) {
        lock(&self.shared.state).hold[direction.index()] = false;
        self.shared.changed.notify_all();
    }

    /// Bytes delivered in `direction` so far.
    pub fn forwarded(&self, direction: Direction) -> u64 {
        lock(&self.shared.state).forwarded[direction.index()]
    }

    /// Blocks until at least `bytes` were delivered in `direction`.
    pub fn wait_forwarded(&self, direction: Direction, bytes: u64) {
        let mut state = lock(&self.shared.state);
        while state.forwarded[direction.index()] < bytes {
            state = self.shared.wait(state);
        }
    }

    /// Closes every current connection (held bytes are dropped with them) and
    /// forwards both ways again, for new connections.
    pub fn cut(&self) {
        let mut state = lock(&self.shared.state);
        state.epoch += 1;
        state.hold = [false; 2];
        for conn in state.conns.drain(..) {
            let _ = conn.shutdown(Shutdown::Both);
        }
        self.shared.changed.notify_all();
    }
}

impl Drop for HoldProxy {
    fn drop(&mut self) {
        self.cut();
        lock(&self.shared.state).stopped = true;
        let _ = TcpStream::connect(self.addr); // wakes the acceptor
    }
}

fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    for client in listener.incoming() {
        if lock(&shared.state).stopped {
            return;
        }
        let Ok(client) = client else { continue };
        let Ok(server) = TcpStream::connect(shared.upstream) else {
            continue;
        };
        let _ = client.set_nodelay(true);
        let _ = server.set_nodelay(true);
        let (Ok(c1), Ok(c2), Ok(s1), Ok(s2)) = (
            client.try_clone(),
            client.try_clone(),
            server.try_clone(),
            server.try_clone(),
        ) else {
            continue;
        };
        let epoch = {
            let mut state = lock(&shared.state);
            state.conns.push(c1);
            state.conns.push(s1);
            state.epoch
        };
        let pumps = [
            (c2, server, Direction::Upstream),
            (s2, client, Direction::Downstream),
        ];
        for (from, to, direction) in pumps {
            let shared = shared.clone();
            thread::spawn(move || pump(from, to, direction, epoch, &shared));
        }
    }
}

fn pump(mut from: TcpStream, mut to: TcpStream, direction: Direction, epoch: u64, shared: &Shared) {
    let d = direction.index();
    let mut buf = [0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let mut state = lock(&shared.state);
        if state.hold[d] && state.epoch == epoch {
            state.holding[d] += 1;
            shared.changed.notify_all();
            while state.hold[d] && state.epoch == epoch {
                state = shared.wait(state);
            }
            state.holding[d] -= 1;
        }
        if state.epoch != epoch {
            return; // cut: what was held is lost with the connection
        }
        drop(state);
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
        lock(&shared.state).forwarded[d] += n as u64;
        shared.changed.notify_all();
    }
    let _ = to.shutdown(Shutdown::Write);
}
