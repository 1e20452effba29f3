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
//! Then `"mixed_schemes": true|false`, `"holders_by_library": {"zklock":
//! [NODE...], "curator": [NODE...], "kazoo": [NODE...], "go-zookeeper":
//! [NODE...]}`: the node names each client library takes for holders. Only
//! zklock's when one scheme is used; with mixed schemes, also those of
//! Curator, kazoo and go-zookeeper if their nodes are there (Curator and kazoo
//! count only their own scheme's nodes, go-zookeeper every node), and `"last_break"`: `null`, or
//! the record the last `zklock break` left, `{"node": NAME, "token": N,
//! "session": "0x...", "by": "user@host" | null, "at": MS_SINCE_EPOCH}`.
//!
//! `permits` is a semaphore node's permit count where its name carries it
//! (zklock's scheme; the table shows it as `semaphore(3)`).

use crate::chroot::Chroot;
use crate::format::Format;
use crate::json::Object;
use crate::render::{
    age_ms, age_text, cell, columns, in_queue_order, kind_name, kind_text, now_ms, owner_text,
    scheme_name, session_hex,
};
use crate::say;
use crate::views;
use lock_zookeeper_client::{LockClient, Participant, Participants};
use std::process::ExitCode;

/// Runs `zklock ls`.
pub(crate) async fn run(
    locks: &LockClient,
    path: String,
    format: Format,
    chroot: &Chroot<'_>,
) -> ExitCode {
    let who = match locks.participants(path.clone()).await {
        Ok(who) => who,
        Err(e) => return crate::fail_at(&path, &e),
    };
    // A path that does not exist is said to (a typo, most likely); which
    // ancestor is missing takes a look-up of its own.
    let mut absent = None;
    if !who.exists {
        absent = chroot.nothing_at(&path).await;
    }
    let now = now_ms();
    if format == Format::Json {
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
    if let Some(last) = &who.last_break {
        notes.push(format!(
            "last broken {} ago{}: {} (token {}, session {})",
            age_text(age_ms(last.at, now)),
            last.by
                .as_deref()
                .map(|by| format!(" by {by}"))
                .unwrap_or_default(),
            last.node,
            last.token.0,
            session_hex(last.session),
        ));
    }
    (table, notes)
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
            kind_text(p),
            owner_text(p),
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
            .int("ctime", p.ctime)
            .opt_int("age_ms", age_ms(p.ctime, now))
            .int("token", p.token.0)
            .strs("waits_for", &p.waits_for)
            .strs("owner_waits_at", &p.owner_waits_at)
            .str("data", &String::from_utf8_lossy(&p.data))
            .opt_int("permits", p.permits.map(i64::from))
            .end();
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
    let mut last_break = String::new();
    match &who.last_break {
        Some(last) => {
            let mut o = Object::new(&mut last_break);
            o.str("node", &last.node)
                .int("token", last.token.0)
                .str("session", &session_hex(last.session))
                .opt_str("by", last.by.as_deref())
                .int("at", last.at)
                .end();
        }
        None => last_break.push_str("null"),
    }
    document
        .bool("mixed_schemes", views.is_some())
        .raw("holders_by_library", &by_library)
        .raw("last_break", &last_break)
        .end();
    out
}
