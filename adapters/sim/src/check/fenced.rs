//! Fenced writes: every write to an audited data node comes from the holder of the
//! lock that fences it, with a token never lower than the last.

use super::{Checker, Failure, Key, ViolationKind};
use crate::model::ZkModel;
use lock_core::names::parse_name;
use lock_core::{FencedError, MultiOp, Op};
use std::collections::BTreeSet;

/// A data node whose writes are audited against the lock that fences them.
#[derive(Clone, Debug)]
pub(super) struct FencedData {
    pub(super) lock_path: String,
    pub(super) last_token: Option<i64>,
    /// Every data value applied (writes carry unique data to be told apart).
    pub(super) applied: BTreeSet<Vec<u8>>,
}

/// Whether a fenced write's reported outcome agrees with what the server did
/// (`applied`: each of its writes, applied or not): `Ok` only if all were applied,
/// `NotHeld` or a failed write only if none was, `Unknown` either way. The one
/// rule of the simulator's audit and the fuzz session harness's.
pub fn fenced_outcome_agrees<T>(result: &Result<T, FencedError>, applied: &[bool]) -> bool {
    match result {
        Ok(_) => applied.iter().all(|a| *a),
        Err(FencedError::Unknown(_)) => true,
        Err(_) => applied.iter().all(|a| !*a),
    }
}

/// A write to an audited data node, found in a request.
pub(crate) type AuditedWrite = (String, Vec<u8>);

/// The token a fenced data value carries: `<token>` or `<token>:<anything>`.
pub(crate) fn token_of(data: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(data).ok()?;
    s.split(':').next()?.parse().ok()
}

impl Checker {
    /// Audits every write to `data_path`: it must be fenced by the lock at `lock_path`.
    pub fn audit_fenced(&mut self, data_path: &str, lock_path: &str) {
        self.fenced.insert(
            data_path.to_owned(),
            FencedData {
                lock_path: lock_path.to_owned(),
                last_token: None,
                applied: BTreeSet::new(),
            },
        );
    }

    /// The writes to audited data nodes in `op`.
    pub fn audited_writes(&self, op: &Op) -> Vec<AuditedWrite> {
        if self.fenced.is_empty() {
            return Vec::new();
        }
        let mut out = Vec::new();
        let mut add = |path: &str, data: &[u8]| {
            if self.fenced.contains_key(path) {
                out.push((path.to_owned(), data.to_vec()));
            }
        };
        match op {
            Op::SetData { path, data, .. } => add(path, data),
            Op::Multi(ops) => {
                for o in ops {
                    if let MultiOp::SetData { path, data, .. } = o {
                        add(path, data);
                    }
                }
            }
            _ => {}
        }
        out
    }

    /// A fenced write was handed to the core as write `write` of `key`.
    pub fn on_fenced_call(&mut self, key: Key, write: u64, ops: &[MultiOp]) {
        let writes = self.audited_writes(&Op::Multi(ops.to_vec()));
        if !writes.is_empty() {
            self.writes.insert((key, write), writes);
        }
    }

    /// Whether the writer (`session`, writing `data`) holds the lock fencing
    /// `data_path` in `model` now, before its write applies: `Err` says why not.
    pub fn writer_holds(
        &self,
        session: i64,
        data_path: &str,
        data: &[u8],
        model: &ZkModel,
    ) -> Result<(), String> {
        let f = &self.fenced[data_path];
        let Some(token) = token_of(data) else {
            return Err(format!("{data:?} carries no token"));
        };
        let children = model.children(&f.lock_path).unwrap_or_default();
        let parts: Vec<(String, i32)> = children
            .iter()
            .filter_map(|n| parse_name(n).map(|p| (n.clone(), p.seq)))
            .collect();
        let Some((name, seq)) = parts.iter().find(|(n, _)| {
            model
                .stat(&format!("{}/{n}", f.lock_path))
                .is_some_and(|s| s.czxid == token)
        }) else {
            return Err(format!(
                "no lock node of {} has czxid {token} (the writer's node is gone)",
                f.lock_path
            ));
        };
        let stat = model
            .stat(&format!("{}/{name}", f.lock_path))
            .expect("listed");
        if stat.ephemeral_owner != session {
            return Err(format!(
                "{name} (token {token}) is owned by {:#x}, the writer is {session:#x}",
                stat.ephemeral_owner
            ));
        }
        if let Some((lower, _)) = parts
            .iter()
            .find(|(_, s)| lock_core::names::relative_sequence(*s, *seq) < 0)
        {
            return Err(format!(
                "{name} (token {token}) has a lower participant {lower}: not the holder"
            ));
        }
        Ok(())
    }

    /// Writes to audited data nodes were applied (`holds`: [`Checker::writer_holds`] of
    /// each, checked just before).
    pub fn on_fenced_applied(
        &mut self,
        writes: Vec<AuditedWrite>,
        holds: Vec<Result<(), String>>,
    ) -> Result<(), Failure> {
        for ((path, data), held) in writes.into_iter().zip(holds) {
            let f = self.fenced.get_mut(&path).expect("audited");
            let shown = String::from_utf8_lossy(&data).into_owned();
            if let Err(why) = held {
                return Err((
                    ViolationKind::StaleWrite,
                    format!(
                        "write {path}={shown} applied, but its writer did not hold {}: {why}",
                        f.lock_path
                    ),
                ));
            }
            let token = token_of(&data).expect("checked by writer_holds");
            if let Some(last) = f.last_token.filter(|l| token < *l) {
                return Err((
                    ViolationKind::StaleWrite,
                    format!(
                        "write {path}={shown} applied after token {last}: the token went backwards"
                    ),
                ));
            }
            f.last_token = Some(token);
            f.applied.insert(data);
            self.coverage.fenced_applied += 1;
        }
        Ok(())
    }
}
