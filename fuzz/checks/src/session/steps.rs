//! The user's steps: acquisitions, observers, revocations, sections, fenced
//! writes, releases and cancels.

use super::detect::{detect_after, OWNERS};
use super::world::name_of;
use super::{
    detect, AcquireStep, Conn, DirPick, FencedOpPick, Harness, LockPick, RecipePick, RevokeTarget,
    SchemePick, TaskKind, DIRS,
};
use lock_core::names::parse_name;
use lock_core::LockState::{Held, Releasing, Suspended, Waiting};
use lock_core::{Config, FailReason, LockEvent, LockId, LockSpec, MultiOp, Op, Recipe, UsageError};
use std::time::Duration;

impl Harness {
    pub(super) fn pick_lock(&self, p: LockPick) -> LockId {
        match p {
            LockPick::Known(i) => {
                crate::pick(&self.locks, i).map_or(LockId(u64::from(i)), |l| l.id)
            }
            LockPick::Raw(r) => LockId(r),
        }
    }

    pub(super) fn dir_of(p: &DirPick) -> String {
        match p {
            DirPick::Known(i) => DIRS[usize::from(*i) % DIRS.len()].to_owned(),
            DirPick::Raw(s) => s.clone(),
        }
    }

    pub(super) fn acquire(&mut self, a: &AcquireStep) {
        // The model knows semaphores in zklock's own layout only: one in Curator's
        // or kazoo's (a lease pool behind an internal mutex) is taken natively
        // here, and checked in lock-core's tests and the simulation instead.
        let mut a = a.clone();
        if let RecipePick::Semaphore(_) = a.recipe {
            a.scheme = SchemePick::Native;
        }
        let path = Self::dir_of(&a.dir);
        let data = a.data.bytes();
        let mut spec = match a.recipe {
            RecipePick::Write => LockSpec::write(path.clone()),
            RecipePick::Read => LockSpec::read(path.clone()),
            RecipePick::Semaphore(n) => LockSpec::semaphore(path.clone(), u32::from(n % 4)),
            RecipePick::Leader => LockSpec::leader(path.clone(), data.clone()),
        };
        let rec = spec.recipe();
        spec = spec.scheme(a.scheme.scheme()).data(data.clone());
        let deadline = a
            .deadline_ms
            .map(|ms| self.now + Duration::from_millis(u64::from(ms)));
        if let Some(d) = deadline {
            spec = spec.deadline(d);
        }
        if a.try_only {
            spec = spec.try_only();
        }
        if a.revocable {
            spec = spec.revocable();
        }
        if a.detect_crashes {
            spec = spec.detect_crashes();
        }
        let max_hold = a.max_hold_ms.map(|ms| Duration::from_millis(u64::from(ms)));
        if let Some(m) = max_hold {
            spec = spec.max_hold(m);
        }
        let owner = a
            .owner
            .map(|o| OWNERS[usize::from(o) % OWNERS.len()].to_owned());
        if let Some(o) = &owner {
            spec = spec.owner(o.clone());
        }
        if let Some(short) = a.detect {
            spec = spec.detect_deadlocks(detect_after(short));
        }
        let node_len =
            lock_core::owner::node_data(a.scheme.scheme(), owner.as_deref(), &data).len();
        // The harness keeps the default packet limit.
        let max_data = Config::default().max_data_len(&path).unwrap_or(0);
        // The documented refusals, in order.
        let expected_err = if self.conn == Conn::Closed {
            Some(UsageError::Closed)
        } else if let Err(e) = lock_core::validate_lock_path(&path) {
            Some(e)
        } else if node_len > max_data {
            Some(UsageError::DataTooLarge {
                len: node_len,
                max: max_data,
            })
        } else if rec == (Recipe::Semaphore { permits: 0 }) {
            Some(UsageError::ZeroPermits)
        } else if rec == Recipe::Leader && data.is_empty() {
            Some(UsageError::EmptyParticipant)
        } else if a.detect_crashes && !matches!(rec, Recipe::Write | Recipe::Leader) {
            Some(UsageError::Unsupported(
                "crash detection needs an exclusive recipe",
            ))
        } else {
            detect::detection_refusal(&a, owner.as_deref(), &data)
        };
        self.log(|| format!("acquire {path} {rec:?} {a:?}"));
        let before = self.s.tracked();
        // Register the directory first: the requests of this call belong to it.
        let known_dir = self.dirs.contains(&path);
        if expected_err.is_none() {
            self.dirs.insert(path.clone());
        }
        match self.s.acquire(spec, self.now) {
            Ok(id) => {
                check!(
                    self,
                    expected_err.is_none(),
                    "acquire accepted, expected {expected_err:?}"
                );
                let i = self.add_task(id, TaskKind::Lock, path);
                let l = &mut self.locks[i];
                l.recipe = rec;
                l.try_only = a.try_only;
                l.revocable = a.revocable;
                l.detect_crashes = a.detect_crashes;
                l.max_hold = max_hold;
                l.deadline = deadline;
                l.owner = owner;
                l.detect = a.detect.is_some();
            }
            Err(e) => {
                // An owner re-entering a lock it holds is refused (the harness
                // does not model `Granting`: accept it when a live acquisition of
                // the same owner on the path could block this one).
                let self_deadlock = expected_err.is_none()
                    && matches!(&e, UsageError::SelfDeadlock { path: p, owner: o, .. }
                        if *p == path && Some(o) == owner.as_ref())
                    && !a.try_only
                    && rec.permits() == 1
                    && self.locks.iter().any(|l| {
                        l.kind == TaskKind::Lock
                            && l.dir == path
                            && l.owner == owner
                            && l.state.is_some()
                    });
                check!(
                    self,
                    self_deadlock || Some(&e) == expected_err.as_ref(),
                    "acquire refused with {e:?}, expected {expected_err:?}"
                );
                check!(
                    self,
                    self.s.tracked() == before,
                    "a refused acquire changed the session"
                );
                if !known_dir {
                    self.dirs.remove(&path);
                }
            }
        }
        self.drain();
    }

    /// `Session::observe`, `revoke`, `inspect` or `deadlocks` of `path` (an
    /// acquisition is [`Self::acquire`]): refused exactly when the session is
    /// closed or the path invalid. An accepted call may read under `path` (a
    /// revocation of a node writes that node; one of a directory, its children).
    pub(super) fn start_task(&mut self, kind: TaskKind, path: String) {
        let expected_err = if self.conn == Conn::Closed {
            Some(UsageError::Closed)
        } else {
            lock_core::validate_lock_path(&path).err()
        };
        if expected_err.is_none() {
            let scope = match kind {
                TaskKind::Revoke if parse_name(name_of(&path)).is_some() => &mut self.revoke_nodes,
                TaskKind::Observer | TaskKind::Revoke => &mut self.read_dirs,
                TaskKind::Inspect => &mut self.inspected,
                TaskKind::Scan => &mut self.scan_roots,
                TaskKind::Lock => unreachable!("acquisitions start in acquire"),
            };
            scope.insert(path.clone());
        }
        let r = match kind {
            TaskKind::Observer => self.s.observe(&path, self.now),
            TaskKind::Revoke => self.s.revoke(&path, self.now),
            TaskKind::Inspect => self.s.inspect(&path, self.now),
            _ => self.s.deadlocks(&path, self.now),
        };
        self.log(|| format!("{kind:?} {path} -> {r:?}"));
        match r {
            Ok(id) => {
                check!(
                    self,
                    expected_err.is_none(),
                    "{kind:?} accepted, expected {expected_err:?}"
                );
                self.add_task(id, kind, path);
            }
            Err(e) => check!(
                self,
                Some(&e) == expected_err.as_ref(),
                "{kind:?} refused with {e:?}, expected {expected_err:?}"
            ),
        }
        self.drain();
    }

    /// The path a `revoke` step targets, if there is one.
    pub(super) fn revoke_target(&self, t: &RevokeTarget) -> Option<String> {
        match t {
            RevokeTarget::Dir(i) => Some(DIRS[usize::from(*i) % DIRS.len()].to_owned()),
            RevokeTarget::Node(i) => crate::pick(&self.world.participants(), *i).cloned(),
            RevokeTarget::Raw(s) => Some(s.clone()),
        }
    }

    /// Checks a holder-only call's answer `r` on `id`: accepted exactly for a held
    /// lock (with crash detection if `needs_detect`), else an error fitting what `id`
    /// is. (The harness's view of `id` changes only when outputs are drained.)
    pub(super) fn check_holder_call<T: std::fmt::Debug>(
        &self,
        what: &str,
        id: LockId,
        needs_detect: bool,
        r: &Result<T, UsageError>,
    ) {
        let expect = match self.task(id).map(|i| &self.locks[i]) {
            None => Err(vec![UsageError::UnknownLock(id)]),
            Some(l) => match (l.kind, l.state) {
                (_, None) => Err(vec![
                    UsageError::UnknownLock(id),
                    UsageError::NotHeld(id),
                    UsageError::Unsupported("not a lock acquisition"),
                ]),
                (TaskKind::Observer | TaskKind::Revoke | TaskKind::Inspect | TaskKind::Scan, _) => {
                    Err(vec![UsageError::Unsupported("not a lock acquisition")])
                }
                (TaskKind::Lock, Some(Held)) if needs_detect && !l.detect_crashes => {
                    Err(vec![UsageError::Unsupported(
                        "sections need LockSpec::detect_crashes",
                    )])
                }
                (TaskKind::Lock, Some(Held)) => Ok(()),
                (TaskKind::Lock, _) => Err(vec![UsageError::NotHeld(id)]),
            },
        };
        match (r, &expect) {
            (Ok(_), Ok(())) => {}
            (Err(e), Err(allowed)) if allowed.contains(e) => {}
            _ => self.fail(format!("{what} on {id}: {r:?}, expected {expect:?}")),
        }
    }

    pub(super) fn section(&mut self, p: LockPick, open: bool) {
        let id = self.pick_lock(p);
        let r = if open {
            self.s.open_section(id, self.now)
        } else {
            self.s.close_section(id, self.now)
        };
        self.log(|| format!("section open={open} {id} -> {r:?}"));
        self.check_holder_call(&format!("section(open={open})"), id, true, &r);
        self.drain();
    }

    pub(super) fn fenced_write(&mut self, p: LockPick, ops: &[FencedOpPick]) {
        let id = self.pick_lock(p);
        let ops: Vec<MultiOp> = ops.iter().take(4).map(FencedOpPick::op).collect();
        self.fenced.push(ops.clone());
        let max_before = self.max_issued;
        let r = self.s.fenced_write(id, ops, self.now);
        self.log(|| format!("fenced write on {id} -> {r:?}"));
        self.check_holder_call("fenced_write", id, false, &r);
        if let Ok(w) = r {
            check!(self, w > self.last_write, "write id {w} not increasing");
            self.last_write = w;
            let i = self.task(id).expect("a held lock");
            self.locks[i].writes.push((w, None));
        }
        self.drain();
        if let Ok(w) = r {
            // The multi this call emitted is the write's request.
            let req = self
                .outstanding
                .iter()
                .find(|q| q.id.0 > max_before && matches!(q.op, Op::Multi(_)))
                .map(|q| q.id);
            check!(self, req.is_some(), "fenced write {w} sent no multi");
            let i = self.task(id).expect("a held lock");
            if let Some(e) = self.locks[i].writes.iter_mut().find(|(x, _)| *x == w) {
                e.1 = req;
            }
        }
    }

    /// `Session::release`, or with `cancel` `Session::cancel`, of a picked id:
    /// refused for an unknown id; a release is refused for anything not held, a
    /// cancel accepted for anything started (an ended one may be forgotten); a
    /// held lock starts releasing, a cancelled waiter fails with `Cancelled`, and
    /// an ended task hears nothing more.
    pub(super) fn release(&mut self, p: LockPick, cancel: bool) {
        let id = self.pick_lock(p);
        let i = self.task(id);
        let task = i.map(|i| (self.locks[i].kind, self.locks[i].state));
        let what = if cancel { "cancel" } else { "release" };
        if let (Some(i), true) = (i, cancel && matches!(task, Some((_, Some(Waiting))))) {
            self.locks[i].cancelled = true;
        }
        let r = if cancel {
            self.s.cancel(id, self.now)
        } else {
            self.s.release(id, self.now)
        };
        self.log(|| format!("{what} {id} ({task:?}) -> {r:?}"));
        let refused = |e: fn(LockId) -> UsageError| r == Err(e(id));
        let ok = match task {
            None => refused(UsageError::UnknownLock),
            Some((TaskKind::Lock, Some(Held) | Some(Suspended))) => r.is_ok(),
            Some((_, None)) if refused(UsageError::UnknownLock) => true,
            Some(_) if cancel => r.is_ok(),
            Some(_) => refused(UsageError::NotHeld),
        };
        check!(self, ok, "{what} of {task:?} {id}: {r:?}");
        if let (Some(i), Some((TaskKind::Lock, Some(Held) | Some(Suspended)))) = (i, task) {
            self.locks[i].state = Some(Releasing);
        }
        let events = self.drain();
        if cancel && matches!(task, Some((_, Some(Waiting)))) {
            check!(
                self,
                events.contains(&(id, LockEvent::Failed(FailReason::Cancelled))),
                "cancel of waiting {id} did not fail it: {events:?}"
            );
        }
        if matches!(task, Some((_, None))) {
            check!(
                self,
                events.iter().all(|(l, _)| *l != id),
                "events after the end of {id}"
            );
        }
    }
}
