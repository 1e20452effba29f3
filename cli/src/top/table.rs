//! The table of `zklock top`, as text (`--once`, and the lines the screen shows).

use super::rows::Row;
use crate::render::{age_ms, age_text, cell, columns};

/// What to sort the rows by, longest first.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SortBy {
    /// The longest wait of a lock's queue.
    Wait,
    /// The longest hold of a lock's holders.
    Hold,
    /// The lock path.
    Path,
}

/// Sorts `rows`: deadlocked locks first, then by `by` (longest first; ties by path).
pub(crate) fn sort(rows: &mut [&Row], by: SortBy) {
    rows.sort_by(|a, b| {
        // The older the creation, the longer the wait (or hold).
        let key = |r: &Row| match by {
            SortBy::Wait => r.oldest_wait.map(|ctime| -ctime),
            SortBy::Hold => r.oldest_hold.map(|ctime| -ctime),
            SortBy::Path => None,
        };
        b.deadlocked
            .cmp(&a.deadlocked)
            .then(key(b).cmp(&key(a)))
            .then(a.path.cmp(&b.path))
    });
}

/// The header and one line of cells per row, with ages at `now` (ms since the epoch).
pub(crate) fn cells(rows: &[&Row], now: i64) -> Vec<Vec<String>> {
    let header = [
        "LOCK",
        "RECIPE",
        "HOLDERS",
        "WAITING",
        "LONGEST WAIT",
        "SCHEME",
        "",
    ];
    let mut out = vec![header.map(str::to_owned).to_vec()];
    for row in rows {
        let holders = row
            .holders
            .iter()
            .map(|(owner, ctime, token)| {
                let age = age_text(age_ms(*ctime, now));
                format!("{}({age}, token {token})", cell(owner))
            })
            .collect::<Vec<_>>()
            .join(" ");
        out.push(vec![
            cell(&row.path),
            row.recipe.clone(),
            if holders.is_empty() {
                "-".to_owned()
            } else {
                holders
            },
            row.waiting.to_string(),
            if row.waiting == 0 {
                "-".to_owned()
            } else {
                age_text(row.oldest_wait.and_then(|ctime| age_ms(ctime, now)))
            },
            row.scheme.clone(),
            if row.deadlocked {
                "DEADLOCK".to_owned()
            } else {
                String::new()
            },
        ]);
    }
    out
}

/// One line: how many locks, waiters and deadlocked locks.
pub(crate) fn summary(root: &str, rows: &[&Row]) -> String {
    let waiting: usize = rows.iter().map(|r| r.waiting).sum();
    let deadlocked = rows.iter().filter(|r| r.deadlocked).count();
    format!(
        "{} lock(s) under {} held or waited for, {waiting} waiter(s), {deadlocked} on a deadlock",
        rows.len(),
        cell(root)
    )
}

/// The whole table as text, after the summary line.
pub(crate) fn text(root: &str, rows: &[&Row], now: i64) -> String {
    let mut out = summary(root, rows) + "\n";
    if !rows.is_empty() {
        out.push_str(&columns(&cells(rows, now)));
    }
    out
}
