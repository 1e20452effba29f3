//! A TCP proxy that can hold back one direction of traffic, then cut.
//!
//! lock-testkit's `FaultProxy` stops both directions at once; to lose exactly the
//! *reply* to a create that the server did apply (the case where the core must find
//! and adopt its node) the test needs requests to flow while replies are held. With
//! `hold(ToClient)` before the create and `cut()` once the node exists, that is
//! deterministic: the held reply dies with the connection.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;

/// A direction of traffic through the proxy.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Direction {
    /// Client to server (requests).
    ToServer,
    /// Server to client (replies, notifications).
    ToClient,
}

struct State {
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
    state: Mutex<State>,
    changed: Condvar,
}

/// See the module docs.
pub struct HoldProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl HoldProxy {
    /// A proxy on 127.0.0.1:<free port> in front of `upstream`, forwarding.
    pub fn start(upstream: SocketAddr) -> HoldProxy {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("binding the proxy");
        let addr = listener.local_addr().expect("proxy address");
        let shared = Arc::new(Shared {
            upstream,
            state: Mutex::new(State {
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
        HoldProxy { addr, shared }
    }

    /// The connect string for clients.
    pub fn connect_string(&self) -> String {
        self.addr.to_string()
    }

    /// Stops forwarding in `direction`; bytes wait in the proxy.
    pub fn hold(&self, direction: Direction) {
        self.shared.state.lock().unwrap().hold[direction as usize] = true;
    }

    /// Waits until bytes going `direction` are being held.
    pub fn wait_holding(&self, direction: Direction) {
        let mut state = self.shared.state.lock().unwrap();
        while state.holding[direction as usize] == 0 {
            state = self.shared.changed.wait(state).unwrap();
        }
    }

    /// Resumes forwarding in `direction`; what was held is delivered in order.
    pub fn release(&self, direction: Direction) {
        self.shared.state.lock().unwrap().hold[direction as usize] = false;
        self.shared.changed.notify_all();
    }

    /// Bytes delivered in `direction` so far.
    pub fn forwarded(&self, direction: Direction) -> u64 {
        self.shared.state.lock().unwrap().forwarded[direction as usize]
    }

    /// Waits until at least `bytes` were delivered in `direction`.
    pub fn wait_forwarded(&self, direction: Direction, bytes: u64) {
        let mut state = self.shared.state.lock().unwrap();
        while state.forwarded[direction as usize] < bytes {
            state = self.shared.changed.wait(state).unwrap();
        }
    }

    /// Closes every current connection (held bytes are dropped with them) and
    /// resumes forwarding for new connections.
    pub fn cut(&self) {
        let mut state = self.shared.state.lock().unwrap();
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
        self.shared.state.lock().unwrap().stopped = true;
        let _ = TcpStream::connect(self.addr); // wakes the acceptor
    }
}

fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    for client in listener.incoming() {
        if shared.state.lock().unwrap().stopped {
            return;
        }
        let Ok(client) = client else { continue };
        let Ok(server) = TcpStream::connect(shared.upstream) else {
            continue;
        };
        let _ = client.set_nodelay(true);
        let _ = server.set_nodelay(true);
        let epoch = {
            let mut state = shared.state.lock().unwrap();
            state.conns.push(client.try_clone().expect("clone"));
            state.conns.push(server.try_clone().expect("clone"));
            state.epoch
        };
        let pumps = [
            (
                client.try_clone().unwrap(),
                server.try_clone().unwrap(),
                Direction::ToServer,
            ),
            (server, client, Direction::ToClient),
        ];
        for (from, to, direction) in pumps {
            let shared = shared.clone();
            thread::spawn(move || pump(from, to, direction, epoch, &shared));
        }
    }
}

fn pump(mut from: TcpStream, mut to: TcpStream, direction: Direction, epoch: u64, shared: &Shared) {
    let mut buf = [0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let mut state = shared.state.lock().unwrap();
        if state.hold[direction as usize] && state.epoch == epoch {
            state.holding[direction as usize] += 1;
            shared.changed.notify_all();
            while state.hold[direction as usize] && state.epoch == epoch {
                state = shared.changed.wait(state).unwrap();
            }
            state.holding[direction as usize] -= 1;
        }
        if state.epoch != epoch {
            return; // cut: what was held is lost with the connection
        }
        drop(state);
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
        shared.state.lock().unwrap().forwarded[direction as usize] += n as u64;
        shared.changed.notify_all();
    }
    let _ = to.shutdown(Shutdown::Write);
}
