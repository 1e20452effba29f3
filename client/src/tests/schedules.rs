//! The shared state under shuttle's schedulers: two waiters on one mutex and
//! one that gives up, a binding that sends from one thread and feeds replies and
//! watch firings from another (through a shared `Mutex<Link>`, as a thread-based
//! binding does), and a close, interleaved at every lock of the state (its mutex is shuttle's here,
//! see `crate::sync`). Each schedule must end: a lost wake-up leaves a thread
//! blocked for ever, which shuttle reports as a deadlock. The mutex is held by
//! one waiter at a time; requests come out in the core's order, each once, and
//! every reply matches a request the core is waiting for.

use crate::*;
use lock_core::{Config, Reply, RequestId, SessionEvent, WatchKind, ZkError};
use shuttle::sync::{mpsc, Mutex as CheckedMutex};
use shuttle::{future::block_on, thread};
use std::collections::BTreeSet;
use std::future::poll_fn;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What the server sends back on the session, in its order.
enum Incoming {
    Reply(RequestId, Result<Reply, ZkError>),
    Watch(String, WatchKind),
    /// The link is gone.
    Stop,
}

/// The binding's shared half: the link (gone once closed), the server, the
/// newest request id sent.
struct Binding {
    link: Option<Link>,
    server: lock_sim::ZkModel,
    session: i64,
    last_sent: Option<RequestId>,
    /// Sent and not answered yet.
    awaiting: BTreeSet<RequestId>,
}

impl Binding {
    /// Rule 2: sends every request the core put out, in order, to the server,
    /// whose answers (and the watches the changes fired) go to `replies`.
    fn pump(&mut self, replies: &mpsc::Sender<Incoming>) {
        let Some(link) = self.link.as_mut() else {
            return;
        };
        let mut requests = Vec::new();
        let _ = link.poll(&mut requests);
        for request in requests {
            assert!(
                self.last_sent < Some(request.id),
                "requests handed out in the core's order, each once"
            );
            self.last_sent = Some(request.id);
            self.awaiting.insert(request.id);
            let result = self.server.apply(self.session, &request.op);
            replies.send(Incoming::Reply(request.id, result)).unwrap();
            for fired in self.server.take_notifications() {
                if fired.session == self.session {
                    replies
                        .send(Incoming::Watch(fired.path, fired.kind))
                        .unwrap();
                }
            }
        }
    }
}

/// One waiter: takes the mutex (or finds the client closed), holds it alone,
/// and lets go by `release` or by dropping the guard.
fn waiter(locks: LockClient, holding: Arc<AtomicBool>, release: bool) {
    block_on(async move {
        let Ok(guard) = locks.mutex("/locks/job").lock().await else {
            return;
        };
        assert!(!holding.swap(true, Ordering::SeqCst), "two holders at once");
        thread::yield_now();
        holding.store(false, Ordering::SeqCst);
        if release {
            let _ = guard.release().await;
        }
    });
}

/// A waiter that gives up: polls its acquisition once, then drops it (a
/// cancel racing the replies to its requests).
fn quitter(locks: LockClient) {
    let mutex = locks.mutex("/locks/job");
    let mut lock = Box::pin(mutex.lock());
    let _ = super::poll_once(lock.as_mut());
    thread::yield_now();
    drop(lock);
}

/// One schedule; with `quits`, a third waiter gives up mid-way (the replies to
/// its requests are then stale: the core forgot them).
fn schedule(quits: bool) {
    let (locks, mut link) = pair(Config::new(Duration::from_secs(10), 1));
    let mut server = lock_sim::ZkModel::new();
    let session = server.create_session();
    link.handle_session(
        SessionEvent::Connected {
            session_id: session,
        },
        Instant::now(),
    );
    let binding = Arc::new(CheckedMutex::new(Binding {
        link: Some(link),
        server,
        session,
        last_sent: None,
        awaiting: BTreeSet::new(),
    }));
    let (replies, incoming) = mpsc::channel();
    let holding = Arc::new(AtomicBool::new(false));

    // The binding's sending loop: woken by handles, closes the session when told.
    let sender = {
        let (binding, replies) = (binding.clone(), replies.clone());
        thread::spawn(move || loop {
            block_on(poll_fn(|cx| {
                let mut binding = binding.lock().unwrap();
                binding.link.as_mut().expect("open").poll_wake(cx)
            }));
            let mut binding = binding.lock().unwrap();
            if binding.link.as_ref().expect("open").is_closed() {
                let mut link = binding.link.take().expect("open");
                if !quits {
                    let stale = link.stats().stale_replies;
                    assert_eq!(stale, 0, "every reply for a request the core waits for");
                }
                link.handle_session(SessionEvent::Closed, Instant::now());
                drop(link);
                replies.send(Incoming::Stop).unwrap();
                return;
            }
            binding.pump(&replies);
        })
    };
    // The binding's receiving side: replies and watch firings, then rule 2.
    let receiver = {
        let binding = binding.clone();
        thread::spawn(move || loop {
            let message = incoming.recv().unwrap();
            let mut binding = binding.lock().unwrap();
            let binding = &mut *binding;
            let Some(link) = binding.link.as_mut() else {
                return;
            };
            match message {
                Incoming::Reply(id, result) => {
                    assert!(binding.awaiting.remove(&id), "each reply fed once");
                    link.handle_reply(id, result, Instant::now())
                }
                Incoming::Watch(path, kind) => link.handle_watch(path, kind, Instant::now()),
                Incoming::Stop => return,
            }
            binding.pump(&replies);
        })
    };
    let waiters = [true, false].map(|release| {
        let (locks, holding) = (locks.clone(), holding.clone());
        thread::spawn(move || waiter(locks, holding, release))
    });
    let quitter = quits.then(|| {
        let locks = locks.clone();
        thread::spawn(move || quitter(locks))
    });
    let closer = {
        let locks = locks.clone();
        thread::spawn(move || {
            thread::yield_now();
            block_on(locks.close());
            assert!(
                locks.stats_blocking().is_err(),
                "closed for every later call"
            );
        })
    };
    for waiter in waiters {
        waiter.join().unwrap();
    }
    if let Some(quitter) = quitter {
        quitter.join().unwrap();
    }
    closer.join().unwrap();
    sender.join().unwrap();
    receiver.join().unwrap();
}

#[test]
fn random_schedules_lose_no_wake_up() {
    shuttle::check_random(|| schedule(false), 500);
    shuttle::check_random(|| schedule(true), 500);
}

#[test]
fn pct_schedules_lose_no_wake_up() {
    shuttle::check_pct(|| schedule(false), 500, 3);
    shuttle::check_pct(|| schedule(true), 500, 3);
}
