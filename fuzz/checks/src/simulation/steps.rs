//! The steps of a `simulation` case: user calls, faults and time, each applied
//! to the simulator.

use super::{Driver, InFlightPick, SimRecipe, SimStep, DIRS, FOREIGN};
use lock_core::{CreateMode, LockSpec, MultiOp, NameScheme};
use lock_sim::InFlight;
use std::time::Duration;

impl Driver {
    pub(super) fn run_step(&mut self, step: &SimStep) {
        match step {
            SimStep::Run(ms) => {
                let _ = self
                    .sim
                    .run_for(Duration::from_millis(u64::from(*ms) % 20_000));
            }
            SimStep::Settle => {
                if self.chaos {
                    // Under random faults the network is never quiet for long: a
                    // settle could legitimately run out of time.
                    let _ = self.sim.run_for(Duration::from_millis(500));
                } else {
                    let _ = self.sim.settle();
                }
            }
            SimStep::Acquire {
                client,
                dir,
                recipe,
                scheme,
                deadline_ms,
                try_only,
                revocable,
                detect_crashes,
                max_hold_ms,
            } => {
                let c = self.client(*client);
                let dir = DIRS[usize::from(*dir) % DIRS.len()];
                let mut spec = match recipe {
                    SimRecipe::Write => LockSpec::write(dir),
                    SimRecipe::Read => LockSpec::read(dir),
                    SimRecipe::Semaphore(n) => LockSpec::semaphore(dir, 1 + u32::from(*n % 3)),
                    SimRecipe::Leader => LockSpec::leader(dir, vec![b'p', *client]),
                };
                spec = spec.scheme(match *scheme % 3 {
                    // Semaphores stay native here: Curator's and kazoo's layouts (a
                    // lease pool behind an internal mutex; kazoo's pool is the path
                    // itself) cannot share a directory with the other recipes these
                    // cases mix on it. lock-sim's workloads run them, one per path.
                    _ if matches!(recipe, SimRecipe::Semaphore(_)) => NameScheme::Native,
                    0 => NameScheme::Native,
                    1 => NameScheme::Curator,
                    _ => NameScheme::Kazoo,
                });
                // go-zookeeper has only a mutex: a quarter of the write picks are
                // go-zookeeper's mutex instead, beside every other scheme and recipe on
                // the same directory. (Only the top bits decide: the corpus's other
                // picks keep their meaning.)
                let go = matches!(recipe, SimRecipe::Write) && *scheme >= 0xC0;
                if go {
                    spec = LockSpec::exclusive(dir).scheme(NameScheme::Go);
                }
                if let Some(ms) = deadline_ms {
                    let d = self.sim.now() + Duration::from_millis(u64::from(*ms));
                    spec = spec.deadline(d);
                }
                if *try_only {
                    spec = spec.try_only();
                }
                if *revocable {
                    spec = spec.revocable();
                }
                // Not in go-zookeeper's layout, whose `Lock` fails on the marker.
                if *detect_crashes && !go && matches!(recipe, SimRecipe::Write | SimRecipe::Leader)
                {
                    spec = spec.detect_crashes();
                }
                if let Some(ms) = max_hold_ms {
                    spec = spec.max_hold(Duration::from_millis(u64::from(*ms)));
                }
                let closed = self.closed[c.0];
                match self.sim.acquire(c, spec) {
                    Ok(id) => self.tasks.push((c, id)),
                    Err(e) => {
                        if !closed {
                            self.fail(&format!("acquire refused on an open client: {e:?}"));
                        }
                    }
                }
            }
            SimStep::Release(t)
            | SimStep::Cancel(t)
            | SimStep::OpenSection(t)
            | SimStep::CloseSection(t) => {
                let Some((c, l)) = self.task(*t) else {
                    return;
                };
                // A refusal (a lock ended, or not held) is a valid answer to a random step.
                let _ = match step {
                    SimStep::Release(_) => self.sim.release(c, l),
                    SimStep::Cancel(_) => self.sim.cancel(c, l),
                    SimStep::OpenSection(_) => self.sim.open_section(c, l),
                    _ => self.sim.close_section(c, l),
                };
            }
            SimStep::Observe { client, dir } => {
                let c = self.client(*client);
                let dir = DIRS[usize::from(*dir) % DIRS.len()];
                if let Ok(id) = self.sim.observe(c, dir) {
                    self.tasks.push((c, id));
                }
            }
            SimStep::Revoke { client, dir, node } => {
                let c = self.client(*client);
                let target = match node {
                    Some(i) => match self.pick_participant(*i) {
                        Some(p) => p,
                        None => return,
                    },
                    None => DIRS[usize::from(*dir) % DIRS.len()].to_owned(),
                };
                if let Ok(id) = self.sim.revoke(c, &target) {
                    self.tasks.push((c, id));
                }
            }
            SimStep::FencedWrite { lock, node } => {
                if let Some((c, l)) = self.task(*lock) {
                    if self.sim.get("/data").is_none() {
                        let _ = self.sim.admin_create("/data", b"", CreateMode::Persistent);
                    }
                    let (path, data) = ("/data/x".to_owned(), vec![*node]);
                    let op = if self.sim.get(&path).is_none() {
                        let mode = CreateMode::Persistent;
                        MultiOp::Create { path, data, mode }
                    } else {
                        MultiOp::SetData {
                            path,
                            data,
                            version: None,
                        }
                    };
                    let _ = self.sim.fenced_write(c, l, vec![op]);
                }
            }
            SimStep::Disconnect { client, in_flight } => {
                let c = self.client(*client);
                let f = match in_flight {
                    InFlightPick::Applied => InFlight::Applied,
                    InFlightPick::Lost => InFlight::Lost,
                    InFlightPick::First(n) => InFlight::First(usize::from(*n % 8)),
                    InFlightPick::Seeded => InFlight::Seeded,
                };
                self.sim.disconnect_with(c, f);
            }
            SimStep::Partition { client, frac } => {
                let c = self.client(*client);
                let d = self.timeouts[c.0] * u32::from(*frac % 160) / 64;
                self.sim.partition(c, d);
            }
            SimStep::Heal(c) => {
                let c = self.client(*c);
                self.sim.heal(c);
            }
            SimStep::DelayReconnect { client, ms } => {
                let c = self.client(*client);
                self.sim
                    .delay_reconnect(c, Duration::from_millis(u64::from(*ms) % 20_000));
            }
            SimStep::Expire(c) => {
                let c = self.client(*c);
                self.sim.expire_session(c);
            }
            SimStep::LoseNotifications(c) => {
                let c = self.client(*c);
                self.sim.lose_notifications(c);
            }
            SimStep::AdminDelete(i) => {
                if let Some(p) = self.pick_participant(*i) {
                    let _ = self.sim.admin_delete(&p);
                }
            }
            SimStep::AdminRevoke(i) => {
                if let Some(p) = self.pick_participant(*i) {
                    let _ = self.sim.admin_set_data(&p, b"__REVOKE__");
                }
            }
            SimStep::AdminForeign { dir, name } => {
                let dir = DIRS[usize::from(*dir) % DIRS.len()];
                self.ensure_dir(dir);
                let name = FOREIGN[usize::from(*name) % FOREIGN.len()];
                let _ =
                    self.sim
                        .admin_create(&format!("{dir}/{name}"), b"", CreateMode::Persistent);
            }
            SimStep::NearWrap { dir, at } => {
                let dir = DIRS[usize::from(*dir) % DIRS.len()];
                self.ensure_dir(dir);
                // Only on an empty directory: a counter set below existing sequence
                // numbers is nothing a server does.
                if self.sim.children(dir).is_empty() {
                    let v = match at % 3 {
                        0 => i32::MAX - 2,
                        1 => -1_000_000_002,
                        _ => -3,
                    };
                    let _ = self.sim.set_cversion(dir, v);
                }
            }
            SimStep::Reap => {
                self.sim.reap_containers();
            }
            SimStep::Close(c) => {
                let c = self.client(*c);
                if !self.closed[c.0] {
                    self.closed[c.0] = true;
                    self.sim.close(c);
                }
            }
        }
    }
}
