//! One client's driver: a thread that runs the link's calling rules against the
//! embedded server. Each step delivers what the server queued for the client
//! (session changes, watch firings), sends the core's requests (each applied at once,
//! in order: the per-session FIFO order ZooKeeper gives), fires due timers, then
//! sleeps until a handle, the server or a timer needs it.

use super::state::{Delivery, ServerState};
use lock_client::Link;
use lock_core::SessionEvent;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

pub(crate) fn run(server: Arc<Mutex<ServerState>>, key: u64, mut link: Link) {
    let lock = || server.lock().unwrap_or_else(PoisonError::into_inner);
    let mut requests = Vec::new();
    loop {
        let now = Instant::now();
        let (deliveries, wake_at) = lock().take(key, now);
        for delivery in deliveries {
            match delivery {
                Delivery::Session(event) => link.handle_session(event, now),
                Delivery::Watch(path, kind) => link.handle_watch(path, kind, now),
                Delivery::Reply(id, result) => link.handle_reply(id, result, now),
            }
        }
        // Answered at once, a request's reply may ask for more: poll until none.
        let polled = loop {
            let polled = link.poll(&mut requests);
            if requests.is_empty() {
                break polled;
            }
            for request in requests.drain(..) {
                let Some((own, result)) = lock().apply(key, request.id, &request.op) else {
                    continue; // held: delivered (or lost) later
                };
                let now = Instant::now();
                for (path, kind) in own {
                    link.handle_watch(path, kind, now);
                }
                link.handle_reply(request.id, result, now);
            }
        };
        if polled.closed {
            lock().detach(key);
            link.handle_session(SessionEvent::Closed, Instant::now());
            return;
        }
        let timer = polled.timeout;
        if timer.is_some_and(|at| at <= Instant::now()) {
            link.handle_timeout(Instant::now());
            continue;
        }
        let deadline = [timer, wake_at].into_iter().flatten().min();
        link.wait(deadline);
    }
}
