//! A TCP proxy that can hold back one direction of traffic, then cut.
//!
//! `lock_testkit::FaultProxy` stops both directions at once. To lose exactly the
//! *reply* to a create the server did apply (the case where the core must find and
//! adopt its node), requests must flow while replies are held: with
//! `hold(Direction::ToClient)` before the create and `cut()` once the node exists,
//! the held reply dies with the connection, deterministically.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread;

/// A direction of traffic through the proxy.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Direction {
    /// Client to server (requests).
    ToServer,
    /// Server to client (replies, notifications).
    ToClient,
}

impl Direction {
    fn index(self) -> usize {
        match self {
            Direction::ToServer => 0,
            Direction::ToClient => 1,
        }
    }
}

struct State {
    hold: [bool; 2],
    /// Bumped by `cut`: pumps of older connections stop without writing.
    epoch: u64,
    conns: Vec<TcpStream>,
    stopped: bool,
}

struct Shared {
    upstream: SocketAddr,
    state: Mutex<State>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// See the module docs.
///
/// ```no_run
/// use lock_conformance::{Direction, HoldProxy};
/// let proxy = HoldProxy::start(lock_conformance::shared_server().addr());
/// proxy.hold(Direction::ToClient); // requests pass, replies wait
/// proxy.cut();                     // held replies are lost; new connections flow
/// ```
pub struct HoldProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl HoldProxy {
    /// A proxy on `127.0.0.1:<free port>` in front of `upstream`, forwarding.
    pub fn start(upstream: SocketAddr) -> HoldProxy {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("binding the proxy");
        let addr = listener.local_addr().expect("proxy address");
        let shared = Arc::new(Shared {
            upstream,
            state: Mutex::new(State {
                hold: [false; 2],
                epoch: 0,
                conns: Vec::new(),
                stopped: false,
            }),
            changed: Condvar::new(),
        });
        let accept = shared.clone();
        thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                if accept.lock().stopped {
                    return;
                }
                let Ok(server) = TcpStream::connect(accept.upstream) else {
                    continue;
                };
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                let epoch = {
                    let mut state = accept.lock();
                    for s in [&client, &server] {
                        if let Ok(s) = s.try_clone() {
                            state.conns.push(s);
                        }
                    }
                    state.epoch
                };
                let (Ok(client2), Ok(server2)) = (client.try_clone(), server.try_clone()) else {
                    continue;
                };
                let up = accept.clone();
                thread::spawn(move || pump(&up, client, server, Direction::ToServer, epoch));
                let down = accept.clone();
                thread::spawn(move || pump(&down, server2, client2, Direction::ToClient, epoch));
            }
        });
        HoldProxy { addr, shared }
    }

    /// The connect string for clients.
    pub fn connect_string(&self) -> String {
        self.addr.to_string()
    }

    /// Stops forwarding in `direction` (bytes wait in the proxy).
    pub fn hold(&self, direction: Direction) {
        self.shared.lock().hold[direction.index()] = true;
    }

    /// Closes every current connection, dropping whatever was held, and forwards
    /// both ways again (for new connections).
    pub fn cut(&self) {
        let mut state = self.shared.lock();
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
        self.shared.lock().stopped = true;
        // Wake the acceptor so that it sees `stopped`.
        let _ = TcpStream::connect(self.addr);
    }
}

fn pump(shared: &Shared, mut from: TcpStream, mut to: TcpStream, dir: Direction, epoch: u64) {
    let mut buf = [0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let mut state = shared.lock();
        while state.hold[dir.index()] && state.epoch == epoch {
            state = shared
                .changed
                .wait(state)
                .unwrap_or_else(|p| p.into_inner());
        }
        if state.epoch != epoch {
            break; // cut while held: the bytes are lost
        }
        drop(state);
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}
