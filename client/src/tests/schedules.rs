//! The shared state under shuttle's schedulers: two waiters on one mutex and
//! one that gives up, a binding that sends from one thread and feeds replies and
//! watch firings from another (through a shared `Mutex<Link>`, as a thread-based
//! binding does), and a close, interleaved at every lock of the state (its mutex is shuttle's here,
//! see `crate::sync`). Each schedule must end: a lost wake-up leaves a thread
//! blocked for ever, which shuttle reports as a deadlock. The mutex is held by
//! one waiter at a time; requests come out in the core's order, each once, and
//! every reply matches a request the core is waiting for. The same with a
//! binding that pumps (`pumping_schedule`): the waiters drive its I/O in place,
//! the one that gives up stops listening mid-way, its driver takes over, and
//! one set aside undropped is covered by the driver's watchdog (without it, a
//! few in a thousand PCT schedules of depth 5 deadlock: hence their number).

use crate::*;
use lock_core::{Config, Reply, RequestId, SessionEvent, WatchKind, ZkError};
use shuttle::sync::atomic::AtomicU64;
use shuttle::sync::{mpsc, Mutex as CheckedMutex};
use shuttle::{future::block_on, thread};
use std::collections::{BTreeSet, VecDeque};
use std::future::poll_fn;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
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
    /// Feeds `batch` (replies at hand), then rule 2: sends every request the
    /// core put out, in order, to the server, whose answers (and the watches
    /// the changes fired) go to `replies`.
    fn pump(
        &mut self,
        replies: &mpsc::Sender<Incoming>,
        batch: Vec<(RequestId, Result<Reply, ZkError>)>,
    ) {
        let Some(link) = self.link.as_mut() else {
            return;
        };
        let mut requests = Vec::new();
        let _ = link.handle_replies(batch, Instant::now(), &mut requests);
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

/// Two waiters (one releases, one drops its guard) and, with `quits`, one
/// that gives up: their threads.
fn contenders(locks: &LockClient, quits: bool) -> Vec<thread::JoinHandle<()>> {
    let holding = Arc::new(AtomicBool::new(false));
    let mut threads: Vec<_> = [true, false]
        .map(|release| {
            let (locks, holding) = (locks.clone(), holding.clone());
            thread::spawn(move || waiter(locks, holding, release))
        })
        .into();
    if quits {
        let locks = locks.clone();
        threads.push(thread::spawn(move || quitter(locks)));
    }
    threads
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
            binding.pump(&replies, Vec::new());
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
            binding.pump(&replies, Vec::new());
        })
    };
    let contenders = contenders(&locks, quits);
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
    for contender in contenders {
        contender.join().unwrap();
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

/// The pumping binding's replies in flight: the server's answers arrive here
/// (from the network thread) and wake whoever polled last, as a
/// `FuturesUnordered` of the client's reply futures does.
#[derive(Default)]
struct Arrivals {
    arrived: VecDeque<Incoming>,
    waker: Option<Waker>,
}

/// A binding that pumps (as the zookeeper-client binding's driver does): its
/// I/O state under a mutex that waiters `try_lock` and the driver takes; every
/// pass ends by polling the replies with the passer's waker.
struct Pumped {
    state: CheckedMutex<Binding>,
    arrivals: CheckedMutex<Arrivals>,
    /// The waiter that polled the replies last (0: the driver).
    heard_by: AtomicU64,
    /// The driver's waker, once it ran.
    driver: CheckedMutex<Option<Waker>>,
    /// To the network thread: replies (and firings) on their way.
    wire: mpsc::Sender<Incoming>,
    /// The watchdog (the driver's look a while after a waiter took the
    /// replies) is under way, on these threads.
    watchdog: AtomicBool,
    watchdogs: CheckedMutex<Vec<thread::JoinHandle<()>>>,
    me: CheckedMutex<std::sync::Weak<Pumped>>,
}

impl Pumped {
    /// One pass under the state's mutex: feed the replies that arrived as one
    /// batch and send, until nothing is at hand; the replies are polled last
    /// with `cx`'s waker.
    fn pass(&self, binding: &mut Binding, waiter: u64, cx: &mut Context<'_>) {
        let mut batch = Vec::new();
        loop {
            let Some(link) = binding.link.as_mut() else {
                return;
            };
            if link.is_closed() {
                self.wake_driver();
                return;
            }
            binding.pump(&self.wire, std::mem::take(&mut batch));
            let mut arrivals = self.arrivals.lock().unwrap();
            arrivals.waker = Some(cx.waker().clone());
            while let Some(Incoming::Reply(id, result)) = arrivals.arrived.front() {
                assert!(binding.awaiting.remove(id), "each reply fed once");
                batch.push((*id, result.clone()));
                arrivals.arrived.pop_front();
            }
            if waiter != 0 {
                FED_IN_PLACE.fetch_add(batch.len(), SeqCst);
            }
            if let (true, Some(Incoming::Watch(..))) = (batch.is_empty(), arrivals.arrived.front())
            {
                let Some(Incoming::Watch(path, kind)) = arrivals.arrived.pop_front() else {
                    unreachable!()
                };
                drop(arrivals);
                binding
                    .link
                    .as_mut()
                    .expect("open")
                    .handle_watch(path, kind, Instant::now());
            } else if batch.is_empty() {
                break;
            }
        }
        self.heard_by.store(waiter, SeqCst);
        if waiter != 0 && !binding.awaiting.is_empty() && !self.watchdog.swap(true, SeqCst) {
            let pumped = self.me.lock().unwrap().upgrade().expect("alive");
            let watchdog = thread::spawn(move || {
                pumped.watchdog.store(false, SeqCst);
                pumped.wake_driver();
            });
            self.watchdogs.lock().unwrap().push(watchdog);
        }
    }

    fn wake_driver(&self) {
        if let Some(driver) = &*self.driver.lock().unwrap() {
            driver.wake_by_ref();
        }
    }

    /// The driver's turn: a pass, then the link's wake-ups; ready once closed.
    fn drive(&self, cx: &mut Context<'_>) -> Poll<()> {
        *self.driver.lock().unwrap() = Some(cx.waker().clone());
        let mut binding = self.state.lock().unwrap();
        loop {
            self.pass(&mut binding, 0, cx);
            let link = binding.link.as_mut().expect("open");
            if link.is_closed() {
                let mut link = binding.link.take().expect("open");
                link.handle_session(SessionEvent::Closed, Instant::now());
                self.wire.send(Incoming::Stop).unwrap();
                return Poll::Ready(());
            }
            if link.poll_wake(cx).is_pending() {
                return Poll::Pending;
            }
        }
    }
}

impl Pump for Pumped {
    fn pump(&self, waiter: u64, cx: &mut Context<'_>) -> bool {
        if self.driver.lock().unwrap().is_none() {
            return false;
        }
        let Ok(mut binding) = self.state.try_lock() else {
            return false;
        };
        if binding.link.is_none() {
            return false;
        }
        self.pass(&mut binding, waiter, cx);
        true
    }

    fn stop(&self, waiter: u64) {
        if self.heard_by.load(SeqCst) != waiter {
            return;
        }
        let Ok(mut binding) = self.state.try_lock() else {
            return;
        };
        if self.heard_by.load(SeqCst) == waiter {
            let driver = self.driver.lock().unwrap().clone().expect("ran");
            self.pass(&mut binding, 0, &mut Context::from_waker(&driver));
        }
    }
}

/// Replies fed by a waiting future rather than the driver, over all schedules.
static FED_IN_PLACE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Two waiters, one that gives up and one set aside, with the binding's pump:
/// the waiters drive the I/O in place, the driver whenever none does (and a
/// while after a waiter took the replies); a close at the end.
fn pumping_schedule() {
    let (locks, mut link) = pair(Config::new(Duration::from_secs(10), 1));
    let mut server = lock_sim::ZkModel::new();
    let session = server.create_session();
    link.handle_session(
        SessionEvent::Connected {
            session_id: session,
        },
        Instant::now(),
    );
    let (wire, incoming) = mpsc::channel();
    let pumped = Arc::new(Pumped {
        state: CheckedMutex::new(Binding {
            link: None,
            server,
            session,
            last_sent: None,
            awaiting: BTreeSet::new(),
        }),
        arrivals: CheckedMutex::default(),
        heard_by: AtomicU64::new(0),
        driver: CheckedMutex::new(None),
        wire,
        watchdog: AtomicBool::new(false),
        watchdogs: CheckedMutex::default(),
        me: CheckedMutex::default(),
    });
    *pumped.me.lock().unwrap() = Arc::downgrade(&pumped);
    link.set_pump(pumped.clone());
    pumped.state.lock().unwrap().link = Some(link);
    // The network: replies arrive one by one and wake whoever listens.
    let network = {
        let pumped = pumped.clone();
        thread::spawn(move || loop {
            let message = incoming.recv().unwrap();
            if matches!(message, Incoming::Stop) {
                return;
            }
            let mut arrivals = pumped.arrivals.lock().unwrap();
            arrivals.arrived.push_back(message);
            if let Some(waker) = arrivals.waker.take() {
                waker.wake();
            }
        })
    };
    let driver = {
        let pumped = pumped.clone();
        thread::spawn(move || block_on(poll_fn(|cx| pumped.drive(cx))))
    };
    // A waiter polled once and set aside undropped (a `select!` that moved
    // on), on a lock of its own, until the others are done.
    let (done, set_aside) = mpsc::channel::<()>();
    let aside = {
        let locks = locks.clone();
        thread::spawn(move || {
            let mutex = locks.mutex("/locks/aside");
            let mut lock = Box::pin(mutex.lock());
            let _ = super::poll_once(lock.as_mut());
            set_aside.recv().unwrap();
        })
    };
    for contender in contenders(&locks, true) {
        contender.join().unwrap();
    }
    done.send(()).unwrap();
    aside.join().unwrap();
    block_on(locks.close());
    driver.join().unwrap();
    network.join().unwrap();
    let watchdogs = std::mem::take(&mut *pumped.watchdogs.lock().unwrap());
    watchdogs.into_iter().for_each(|w| w.join().unwrap());
}

#[test]
fn pumping_waiters_lose_no_wake_up_and_feed_each_reply_once() {
    shuttle::check_random(pumping_schedule, 1000);
    shuttle::check_pct(pumping_schedule, 6000, 5);
    assert!(
        FED_IN_PLACE.load(SeqCst) > 0,
        "waiters fed replies in place"
    );
}
