//! The cells, names and columns every listing prints (`ls`, `deadlocks`, `top`):
//! ages, session ids, node kinds and schemes as words, a queue in its order, and
//! the column layout.

use lock_zookeeper_client::{NameScheme, NodeKind, Participant, Participants};
use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the epoch (ZooKeeper's `ctime` unit).
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// The age of something created at `ctime` (`None` when the server gave no time).
pub(crate) fn age_ms(ctime: i64, now: i64) -> Option<i64> {
    (ctime > 0).then(|| now.saturating_sub(ctime).max(0))
}

/// An age for people: `850ms`, `12s`, `3m04s`, `2h03m`, `4d05h`, or `-`.
pub(crate) fn age_text(age_ms: Option<i64>) -> String {
    let Some(ms) = age_ms else {
        return "-".to_owned();
    };
    let s = ms / 1000;
    match s {
        0 => format!("{ms}ms"),
        1..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        3600..=86_399 => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
        _ => format!("{}d{:02}h", s / 86_400, s % 86_400 / 3600),
    }
}

/// A session id the way ZooKeeper's tools print it.
pub(crate) fn session_hex(session: i64) -> String {
    format!("{session:#x}")
}

/// What a participant node asks for.
pub(crate) fn kind_name(kind: NodeKind) -> &'static str {
    match kind {
        NodeKind::Write => "write",
        NodeKind::Read => "read",
        NodeKind::Semaphore => "semaphore",
        NodeKind::Leader => "leader",
        _ => "other",
    }
}

/// A participant's kind, with a semaphore's permits where its name carries
/// them: `write`, `semaphore(3)`.
pub(crate) fn kind_text(p: &Participant) -> String {
    match p.permits {
        Some(n) => format!("{}({n})", kind_name(p.kind)),
        None => kind_name(p.kind).to_owned(),
    }
}

/// Which client's names a participant node follows.
pub(crate) fn scheme_name(scheme: NameScheme) -> &'static str {
    match scheme {
        NameScheme::Native => "native",
        NameScheme::Curator => "curator",
        NameScheme::Kazoo => "kazoo",
        NameScheme::Go => "go",
        _ => "other",
    }
}

/// Who a participant is for, as `ls` and `top` show it: its owner, or an
/// election candidate's id (its data, what `zklock leader` prints); `-` for
/// neither.
pub(crate) fn owner_text(p: &Participant) -> String {
    match (&p.owner, p.kind) {
        (Some(owner), _) => cell(owner),
        (None, NodeKind::Leader) if !p.data.is_empty() => cell(&String::from_utf8_lossy(&p.data)),
        (None, _) => "-".to_owned(),
    }
}

/// Text safe for one table cell: control characters (which would break the
/// alignment or drive the terminal) become `?`.
pub(crate) fn cell(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

/// Every participant, holders and waiters, in queue order (by sequence number),
/// with whether it holds.
pub(crate) fn in_queue_order(who: &Participants) -> Vec<(&Participant, bool)> {
    let mut all: Vec<(&Participant, bool)> = who
        .holders
        .iter()
        .map(|p| (p, true))
        .chain(who.waiters.iter().map(|p| (p, false)))
        .collect();
    // One directory: its sequence numbers order it. A semaphore in Curator's or
    // kazoo's layout (lease holders, then its queue) comes in the core's order.
    if all.iter().all(|(p, _)| p.dir == who.path) {
        all.sort_by_key(|(p, _)| p.sequence);
    }
    all
}

/// Lays `rows` out in columns two spaces apart, the last one unpadded.
pub(crate) fn columns(rows: &[Vec<String>]) -> String {
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..n)
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (i, c) in row.iter().enumerate() {
            if i + 1 == row.len() {
                line.push_str(c);
            } else {
                // `{:<w$}` pads by chars, as the widths were counted.
                line.push_str(&format!("{c:<w$}  ", w = widths[i]));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages() {
        assert_eq!(age_text(None), "-");
        assert_eq!(age_text(Some(850)), "850ms");
        assert_eq!(age_text(Some(12_300)), "12s");
        assert_eq!(age_text(Some(184_000)), "3m04s");
        assert_eq!(age_text(Some(7_380_000)), "2h03m");
        assert_eq!(age_text(Some(363_600_000)), "4d05h");
        assert_eq!(age_ms(0, 5), None);
        assert_eq!(age_ms(10, 5), Some(0), "a clock behind the server's");
    }

    #[test]
    fn columns_align_and_cells_are_sanitised() {
        let rows = vec![
            vec!["A".to_owned(), "LONG HEADER".to_owned(), "X".to_owned()],
            vec!["wide cell".to_owned(), "b".to_owned(), cell("x\ny\u{1b}")],
        ];
        assert_eq!(
            columns(&rows),
            "A          LONG HEADER  X\nwide cell  b            x?y?\n"
        );
        assert_eq!(session_hex(0x1000_0a2c_3e40_0001), "0x10000a2c3e400001");
        assert_eq!(session_hex(-1), "0xffffffffffffffff");
    }
}
