//! The table of `zklock top`, as text (`--once`, and the lines the screen shows).

use super::rows::Row;
use crate::ls::{age_text, cell, columns};

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
pub(crate) fn sort(rows: &mut [Row], by: SortBy) {
    rows.sort_by(|a, b| {
        let key = |r: &Row| match by {
            SortBy::Wait => r.longest_wait,
            SortBy::Hold => r.longest_hold,
            SortBy::Path => None,
        };
        b.deadlocked
            .cmp(&a.deadlocked)
            .then(key(b).cmp(&key(a)))
            .then(a.path.cmp(&b.path))
    });
}

/// The header and one line of cells per row.
pub(crate) fn cells(rows: &[Row]) -> Vec<Vec<String>> {
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
            .map(|(owner, age, token)| {
                format!("{}({}, token {token})", cell(owner), age_text(*age))
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
                age_text(row.longest_wait)
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
pub(crate) fn summary(root: &str, rows: &[Row]) -> String {
    let waiting: usize = rows.iter().map(|r| r.waiting).sum();
    let deadlocked = rows.iter().filter(|r| r.deadlocked).count();
    format!(
        "{} lock(s) under {} held or waited for, {waiting} waiter(s), {deadlocked} on a deadlock",
        rows.len(),
        cell(root)
    )
}

/// The whole table as text, after the summary line.
pub(crate) fn text(root: &str, rows: &[Row]) -> String {
    let mut out = summary(root, rows) + "\n";
    if !rows.is_empty() {
        out.push_str(&columns(&cells(rows)));
    }
    out
}
