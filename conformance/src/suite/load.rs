//! Contention under load on an ensemble: grants that come after waits longer
//! than a session timeout, on sessions that hold nothing meanwhile, are never
//! followed by a false alarm.

use super::*;
use std::process::{Child, Command, Stdio};

/// Two processes that spin for as long as they live: the machine is busy (the
/// ensemble, the clients and the test share what is left).
struct BusyProcesses(Vec<Child>);

impl BusyProcesses {
    fn start(count: usize) -> BusyProcesses {
        BusyProcesses(
            (0..count)
                .map(|_| {
                    Command::new("sh")
                        .args(["-c", "while :; do :; done"])
                        .stdin(Stdio::null())
                        .spawn()
                        .expect("spawning a busy process (sh)")
                })
                .collect(),
        )
    }
}

impl Drop for BusyProcesses {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// 1,000 contended grants on a 3-node ensemble (500 ms ticks, `T` = 4 s) with
/// two busy processes on the machine: each lock has seven sessions taking turns,
/// each holding 0.7 s, so a waiter waits about six holds (longer than `T`) in a
/// session that holds nothing meanwhile. Nothing is cut off, so no holder may be
/// told `Suspended` or `Lost`: the grant is reported on a proof of contact that
/// lasts (the waiter next in line keeps its session proving contact).
pub fn contended_grants_under_load_raise_no_false_alarm(b: &Suite) {
    const T: Duration = Duration::from_secs(4);
    const TICK: Duration = Duration::from_millis(500);
    const LOCKS: usize = 20;
    const SESSIONS_PER_LOCK: usize = 7;
    const GRANTS: usize = 1000;
    const HOLD: Duration = Duration::from_millis(700);
    let ensemble = b
        .env()
        .ensemble(TICK)
        .expect("an environment with Capability::Ensemble");
    let ensemble = &*ensemble;
    let _busy = BusyProcesses::start(2);
    let granted = AtomicUsize::new(0);
    let requests = AtomicU64::new(0);
    let waited_longer_than_t = AtomicUsize::new(0);
    let alarms = Mutex::new(Vec::new());
    let start = Instant::now();
    thread::scope(|s| {
        for lock in 0..LOCKS {
            let path = unique_path("load");
            for _ in 0..SESSIONS_PER_LOCK {
                let (path, granted, waited_longer_than_t, alarms, requests) = (
                    path.clone(),
                    &granted,
                    &waited_longer_than_t,
                    &alarms,
                    &requests,
                );
                s.spawn(move || {
                    let c = ensemble
                        .client(T)
                        .unwrap_or_else(|e| panic!("{}: connecting: {e}", b.name()));
                    loop {
                        let asked = Instant::now();
                        let mut g = b
                            .lock(&c, Kind::Mutex, &path, Wait::Timeout(LONG))
                            .unwrap_or_else(|e| panic!("{}: lock {lock}: {e}", b.name()));
                        let waited = asked.elapsed();
                        if granted.fetch_add(1, Ordering::SeqCst) >= GRANTS {
                            let _ = b.release(g);
                            break;
                        }
                        if waited > T {
                            waited_longer_than_t.fetch_add(1, Ordering::SeqCst);
                        }
                        let held = Instant::now();
                        if let Some(event) = b.next_event(&mut g, HOLD) {
                            alarms.lock().unwrap().push(format!(
                                "lock {lock}: {event:?} {:?} after a grant that waited {waited:?}",
                                held.elapsed()
                            ));
                        }
                        b.release(g)
                            .unwrap_or_else(|e| panic!("{}: release: {e}", b.name()));
                    }
                    if let Ok(stats) = b.stats(&c) {
                        requests.fetch_add(stats.requests, Ordering::SeqCst);
                    }
                    b.close(&c);
                });
            }
        }
    });
    let long_waits = waited_longer_than_t.load(Ordering::SeqCst);
    // What proving contact for the holders and the waiters next in line
    // costs: a sync every T/20 per such session, beside each cycle's create,
    // listing, watches and delete.
    eprintln!(
        "{}: {GRANTS} contended grants in {:?}, {long_waits} after waits longer than T; \
         {:.1} requests per grant",
        b.name(),
        start.elapsed(),
        requests.load(Ordering::SeqCst) as f64 / GRANTS as f64
    );
    let alarms = alarms.into_inner().unwrap();
    assert!(
        alarms.is_empty(),
        "{}: {} false alarms on a sound ensemble: {alarms:#?}",
        b.name(),
        alarms.len()
    );
    // The scenario happened: most grants came after a wait longer than T.
    assert!(
        long_waits >= GRANTS / 2,
        "{}: only {long_waits} of {GRANTS} grants waited longer than T",
        b.name()
    );
}
