//! What the coordinator measures of the servers: a JVM's live heap, the
//! members' `mntr` counters over the window, the sessions a member's log says
//! it expired (a process's RSS and CPU time and the machine's load are
//! `lock_testkit::measure`'s).

use crate::case::MemberFigures;
use lock_testkit::{ZkEnsemble, ZkServer};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// The live heap of a JVM, MiB: `jcmd <pid> GC.run` (a full collection, after
/// the window, so that the figure is what the sessions and nodes keep, not
/// where the collector happened to be), then `GC.heap_info` (the generations'
/// `used`; metaspace is not heap).
pub(crate) fn heap_used_mb(pid: u32) -> Option<f64> {
    let pid = pid.to_string();
    Command::new("jcmd").args([&pid, "GC.run"]).output().ok()?;
    let out = Command::new("jcmd")
        .args([&pid, "GC.heap_info"])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut kib = 0u64;
    let mut seen = false;
    for line in text
        .lines()
        .filter(|l| l.contains("generation") || l.contains("garbage-first heap"))
    {
        if let Some(used) = line.split("used ").nth(1) {
            let number: String = used.chars().take_while(char::is_ascii_digit).collect();
            kib += number.parse::<u64>().ok()?;
            seen = true;
        }
    }
    seen.then_some(kib as f64 / 1024.0)
}

/// Samples every member every 2 s until `stop`: packets received (attributed to
/// the member's role at the sample), outstanding requests, connections.
pub(crate) fn sampler(ensemble: Arc<ZkEnsemble>, stop: Arc<AtomicBool>) -> Vec<MemberFigures> {
    let n = ensemble.members().len();
    let mut figures = vec![MemberFigures::default(); n];
    // Per member: packets received from clients, requests into the request
    // pipeline (on the leader: its clients' and the writes and syncs its
    // followers forward), writes proposed.
    let mut last: Vec<Option<[u64; 3]>> = vec![None; n];
    // A restarted member counts from 0 again.
    let delta = |now: u64, prev: u64| if now >= prev { now - prev } else { now };
    loop {
        let stopping = stop.load(Ordering::SeqCst);
        for (i, member) in ensemble.members().iter().enumerate() {
            let Ok(m) = member.mntr() else {
                figures[i].unanswered += 1;
                continue;
            };
            let counters = [
                m.get_u64("zk_packets_received").unwrap_or(0),
                m.get_u64("zk_prep_processor_request_queued").unwrap_or(0),
                m.get_u64("zk_proposal_count").unwrap_or(0),
            ];
            let leading = m.get("zk_server_state") == Some("leader");
            let f = &mut figures[i];
            f.max_outstanding = f
                .max_outstanding
                .max(m.get_u64("zk_outstanding_requests").unwrap_or(0));
            f.max_connections = f
                .max_connections
                .max(m.get_u64("zk_num_alive_connections").unwrap_or(0));
            if let Some(prev) = last[i] {
                let received = delta(counters[0], prev[0]);
                if leading {
                    f.received_leading += received;
                    f.pipeline_leading += delta(counters[1], prev[1]);
                    f.proposals += delta(counters[2], prev[2]);
                } else {
                    f.received_following += received;
                }
            }
            last[i] = Some(counters);
        }
        if stopping {
            return figures;
        }
        let until = Instant::now() + Duration::from_secs(2);
        while Instant::now() < until && !stop.load(Ordering::SeqCst) {
            thread::sleep(Duration::from_millis(50));
        }
    }
}

/// The ids (`0x...`) of the sessions a member's log says it expired, in order.
pub(crate) fn expiring_ids(server: &ZkServer) -> Vec<String> {
    std::fs::read_to_string(server.log_path())
        .map(|log| {
            log.lines()
                .filter_map(|l| l.split("Expiring session ").nth(1))
                .map(|rest| rest.split([',', ' ']).next().unwrap_or("").to_owned())
                .collect()
        })
        .unwrap_or_default()
}
