//! What the missing Stat on `create` costs: uncontended acquire, release and cycle
//! latency against the raw calls they are made of, and handoff latency between two
//! sessions, on a real standalone server on loopback. Medians;
//! `cargo bench -p lock-zookeeper`.

use lock_testkit::ZkServer;
use lock_zookeeper::{Connect, LockClient};
use std::time::{Duration, Instant};
use zookeeper::{Acl, CreateMode, WatchedEvent, ZooKeeper};

const N: usize = 300;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let server = ZkServer::start().expect("ZooKeeper (see testkit/README.md)");
    let connect = server.connect_string();

    let raw = ZooKeeper::connect(&connect, Duration::from_secs(10), |_: WatchedEvent| {})
        .expect("raw client");
    raw.create(
        "/bench",
        Vec::new(),
        Acl::open_unsafe().clone(),
        CreateMode::Persistent,
    )
    .expect("create /bench");
    // Warm the server's JIT before measuring anything.
    for _ in 0..2000 {
        raw.exists("/", false).expect("exists");
    }
    // The binding's uncontended path without the binding: create, then getData on
    // the new node (its Stat: the token), then delete.
    let (mut create, mut read, mut delete) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..N {
        let t0 = Instant::now();
        let path = raw
            .create(
                "/bench/raw-",
                Vec::new(),
                Acl::open_unsafe().clone(),
                CreateMode::EphemeralSequential,
            )
            .expect("create");
        let t1 = Instant::now();
        raw.get_data(&path, true).expect("getData");
        let t2 = Instant::now();
        raw.delete(&path, None).expect("delete");
        create.push(t1 - t0);
        read.push(t2 - t1);
        delete.push(t2.elapsed());
    }
    let (create, read, delete) = (median(create), median(read), median(delete));

    let locks = LockClient::connect(&connect).expect("connect");
    let lock = locks.mutex("/bench/grant");
    for _ in 0..50 {
        lock.lock_blocking()
            .expect("warm up")
            .release_blocking()
            .expect("release");
    }
    let (mut acquire, mut release, mut cycle) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..N {
        let t0 = Instant::now();
        let guard = lock.lock_blocking().expect("lock");
        let t1 = Instant::now();
        guard.release_blocking().expect("release");
        let t2 = Instant::now();
        acquire.push(t1 - t0);
        release.push(t2 - t1);
        cycle.push(t2 - t0);
    }
    let (acquire, release, cycle) = (median(acquire), median(release), median(cycle));

    let other = LockClient::connect(&connect).expect("connect");
    let mut handoff = Vec::new();
    for _ in 0..N / 3 {
        let held = lock.lock_blocking().expect("lock");
        let mut waiter = other.mutex("/bench/grant").start().expect("start");
        // Queued once the lock directory shows two nodes (its watch follows at once).
        while raw
            .get_children("/bench/grant", false)
            .map_or(0, |c| c.len())
            < 2
        {}
        assert!(waiter
            .wait_timeout_blocking(Duration::from_millis(2))
            .is_none());
        let t = Instant::now();
        held.release_blocking().expect("release");
        let guard = waiter
            .wait_timeout_blocking(Duration::from_secs(10))
            .expect("handed over")
            .expect("lock");
        handoff.push(t.elapsed());
        guard.release_blocking().expect("release");
    }
    let handoff = median(handoff);

    println!("lock-zookeeper on a loopback ZooKeeper (medians of {N})");
    println!("  raw create (ephemeral sequential)  {create:>9.1?}");
    println!("  raw getData                        {read:>9.1?}");
    println!("  raw delete                         {delete:>9.1?}");
    println!(
        "  raw create, then getData           {:>9.1?}   <- the uncontended grant without a Stat on create",
        create + read
    );
    println!("  uncontended acquire                {acquire:>9.1?}");
    println!("  release                            {release:>9.1?}");
    println!("  acquire + release                  {cycle:>9.1?}");
    println!("  handoff (release call to grant)    {handoff:>9.1?}");
    locks.close_blocking();
    other.close_blocking();
}
