//! A session whose server is gone costs almost no CPU while the `zookeeper`
//! crate tries to reconnect: every attempt is refused at once, and the crate
//! retried at once, spinning a core until the session timed out. A binary of
//! its own: it counts the whole process's CPU time.

use lock_testkit::measure::cpu_time;
use std::time::{Duration, Instant};

#[test]
fn refused_reconnects_cost_little_cpu() {
    let server = lock_testkit::ZkServer::start().expect("a server");
    let locks = lock_zookeeper::builder(&server.connect_string())
        .session_timeout(Duration::from_secs(4))
        .connect()
        .expect("connects");
    server.kill();
    // Within the session timeout: the crate keeps trying the refusing server.
    std::thread::sleep(Duration::from_millis(200));
    let (cpu, wall) = (cpu_time(None), Instant::now());
    std::thread::sleep(Duration::from_secs(2));
    let (cpu, wall) = (cpu_time(None).saturating_sub(cpu), wall.elapsed());
    assert!(
        cpu < Duration::from_millis(300),
        "reconnecting to a refusing server cost {cpu:?} of CPU in {wall:?}"
    );
    drop(locks);
}
