//! `zklock ls`: the holders and waiters of one lock, as a table or as JSON.
//!
//! The JSON shape (one object, one line; fields in this order, new fields only
//! ever added):
//!
//! ```text
//! {"path": "/locks/job", "foreign": 0,
//!  "holders": [PARTICIPANT...], "waiters": [PARTICIPANT...],
//!  "mixed_schemes": false, "holders_by_library": {"zklock": [NODE...]}}
//! PARTICIPANT = {"position": 1, "node": "zkl-...-write-0000000003",
//!  "path": "/locks/job/zkl-...", "kind": "write", "scheme": "native",
//!  "sequence": 3, "owner": "alice" | null, "session": "0x10000a2c3e40001",
//!  "ctime": 1764063123456, "age_ms": 5120 | null, "token": 4294967301,
//!  "waits_for": ["zkl-..."], "owner_waits_at": ["/locks/other/zkl-..."],
//!  "data": "...", "permits": 3 | null}
//! ```
//!
//! Then `"mixed_schemes": true|false` and `"holders_by_library": {"zklock":
//! [NODE...], "curator": [NODE...], "kazoo": [NODE...]}`: the node names each
//! client library takes for holders. Only zklock's when one scheme is used;
//! with mixed schemes, also those of Curator and kazoo if their nodes are there
//! (each counts only its own scheme's nodes).
//!
//! `permits` is a semaphore node's permit count where its name carries it
//! (zklock's scheme; the table shows it as `semaphore(3)`).

use crate::chroot::Chroot;
use crate::json::Object;
use crate::say;
use crate::views;
use lock_zookeeper_client::{LockClient, NameScheme, NodeKind, Participant, Participants};
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

/// Runs `zklock ls`.
pub(crate) async fn run(
    locks: &LockClient,
    path: String,
    as_json: bool,
    chroot: &Chroot<'_>,
) -> ExitCode {
    let who = match locks.participants(path.clone()).await {
        Ok(who) => who,
        Err(e) => return chroot.fail(&path, &e).await,
    };
    // Not "nobody holds" when nothing can be there at all (a missing chroot:
    // exit 2), and a path that does not exist is said to (a typo, most likely).
    let mut absent = None;
    if who.holders.is_empty() && who.waiters.is_empty() {
        match chroot.nothing_at(&path).await {
            Ok(hint) => absent = hint,
            Err(code) => return code,
        }
    }
    let now = now_ms();
    if as_json {
        println!("{}", to_json(&who, now));
        if let Some(hint) = absent {
            say(hint);
        }
        return ExitCode::SUCCESS;
    }
    let (table, mut notes) = text_view(&who, &path, now);
    if let (Some(hint), Some(nobody)) = (absent, notes.first_mut()) {
        // The "nobody holds or waits" note, and why.
        *nobody = format!("{nobody}: {hint}");
    }
    print!("{table}");
    for line in notes {
        say(line);
    }
    ExitCode::SUCCESS
}

/// The text view of one lock: the table (empty when nobody holds or waits),
/// and the notes printed after it on stderr (nobody there, mixed naming
/// schemes, foreign nodes). `zklock top` shows the same when following a lock.
pub(crate) fn text_view(who: &Participants, path: &str, now: i64) -> (String, Vec<String>) {
    let mut notes = Vec::new();
    let table = if who.holders.is_empty() && who.waiters.is_empty() {
        notes.push(format!("nobody holds or waits for {path}"));
        String::new()
    } else {
        table(who, now)
    };
    if let Some(views) = views::views(who) {
        let all = in_queue_order(who);
        let position = |node: &str| all.iter().position(|(p, _)| p.node == node).map(|i| i + 1);
        notes.extend(views::describe(path, &views, position));
    }
    if who.foreign > 0 {
        notes.push(format!(
            "{} other node(s) in {path} follow no lock naming scheme (ignored)",
            who.foreign
        ));
    }
    (table, notes)
}

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

/// The text table: one row per participant in queue order; `WAITS FOR` names the
/// rows (`#`) a waiter waits for.
fn table(who: &Participants, now: i64) -> String {
    let all = in_queue_order(who);
    let position = |node: &str| all.iter().position(|(p, _)| p.node == node);
    let mut rows = vec![[
        "#",
        "STATE",
        "KIND",
        "OWNER",
        "SESSION",
        "AGE",
        "TOKEN",
        "SCHEME",
        "WAITS FOR",
        "NODE",
    ]
    .map(str::to_owned)
    .to_vec()];
    for (i, (p, holds)) in all.iter().enumerate() {
        let waits = if *holds {
            "-".to_owned()
        } else {
            let rows: Vec<String> = p
                .waits_for
                .iter()
                .map(|w| match position(w) {
                    Some(j) => format!("#{}", j + 1),
                    None => cell(w),
                })
                .collect();
            if rows.is_empty() {
                "-".to_owned()
            } else {
                rows.join(",")
            }
        };
        rows.push(vec![
            (i + 1).to_string(),
            if *holds { "holds" } else { "waits" }.to_owned(),
            match p.permits {
                Some(n) => format!("{}({n})", kind_name(p.kind)),
                None => kind_name(p.kind).to_owned(),
            },
            p.owner.as_deref().map_or_else(|| "-".to_owned(), cell),
            session_hex(p.session),
            age_text(age_ms(p.ctime, now)),
            p.token.to_string(),
            scheme_name(p.scheme).to_owned(),
            waits,
            cell(&p.node),
        ]);
    }
    columns(&rows)
}

/// The JSON document described in the module docs.
fn to_json(who: &Participants, now: i64) -> String {
    let all = in_queue_order(who);
    let position = |p: &Participant| {
        all.iter()
            .position(|(q, _)| q.node == p.node)
            .map_or(0, |i| i as i64 + 1)
    };
    let participant = |out: &mut String, p: &Participant| {
        let mut o = Object::new(out);
        o.int("position", position(p))
            .str("node", &p.node)
            .str("path", &format!("{}/{}", p.dir, p.node))
            .str("kind", kind_name(p.kind))
            .str("scheme", scheme_name(p.scheme))
            .int("sequence", i64::from(p.sequence))
            .opt_str("owner", p.owner.as_deref())
            .str("session", &session_hex(p.session))
            .int("ctime", p.ctime);
        match age_ms(p.ctime, now) {
            Some(age) => o.int("age_ms", age),
            None => o.raw("age_ms", "null"),
        };
        o.int("token", p.token.0)
            .strs("waits_for", &p.waits_for)
            .strs("owner_waits_at", &p.owner_waits_at)
            .str("data", &String::from_utf8_lossy(&p.data));
        match p.permits {
            Some(n) => o.int("permits", i64::from(n)),
            None => o.raw("permits", "null"),
        };
        o.end();
    };
    let mut out = String::new();
    let mut document = Object::new(&mut out);
    document
        .str("path", &who.path)
        .int("foreign", who.foreign as i64)
        .array("holders", &who.holders, |o, p| participant(o, p))
        .array("waiters", &who.waiters, |o, p| participant(o, p));
    let views = views::views(who);
    let mut by_library = String::new();
    let mut libraries = Object::new(&mut by_library);
    match &views {
        Some(views) => {
            for view in views {
                libraries.strs(view.library, &view.holders);
            }
        }
        None => {
            let holders: Vec<&str> = who.holders.iter().map(|p| p.node.as_str()).collect();
            libraries.strs("zklock", &holders);
        }
    }
    libraries.end();
    document
        .bool("mixed_schemes", views.is_some())
        .raw("holders_by_library", &by_library)
        .end();
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
