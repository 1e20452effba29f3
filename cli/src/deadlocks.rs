//! `zklock deadlocks`: the deadlock cycles among the locks under a root, as text,
//! JSON or a Graphviz graph.
//!
//! Each cycle lists its nodes in wait order: every node waits for the next, the
//! last for the first. A held node waits for the node its owner waits at; a
//! waiting node waits for a blocker ahead of it in its queue.
//!
//! The JSON shape (one object, one line; new fields only ever added):
//!
//! ```text
//! {"root": "/locks", "cycles": [
//!   {"owners": ["alice", "bob"], "nodes": [NODE...]}]}
//! NODE = {"node": "/locks/a/zkl-...", "lock": "/locks/a", "owner": "alice" | null,
//!   "holds": true, "session": "0x10000a2c3e40001", "token": 4294967301,
//!   "ctime": 1764063123456, "age_ms": 5120 | null}
//! ```

use crate::chroot::Chroot;
use crate::format::Format;
use crate::json::Object;
use crate::render::{age_ms, age_text, cell, columns, now_ms, session_hex};
use crate::{exit, say};
use lock_zookeeper_client::{Cycle, CycleNode, LockClient};
use std::fmt::Write;
use std::process::ExitCode;

/// Runs `zklock deadlocks`: exit 0 when there is none, [`exit::DEADLOCK`] when
/// some were found (so that `zklock deadlocks /locks || alert` alerts on a
/// deadlock and on a failure alike).
///
/// None found: a missing chroot is exit 2 before anything is printed (else
/// `zklock deadlocks /locks || alert` would pass on a typo in `--zk`), and a
/// ROOT that does not exist is said to on stderr (still exit 0: no deadlock).
pub(crate) async fn run(
    locks: &LockClient,
    root: String,
    format: Format,
    chroot: &Chroot<'_>,
) -> ExitCode {
    let cycles = match locks.deadlocks(root.clone()).await {
        Ok(cycles) => cycles,
        Err(e) => return crate::fail_at(&root, &e),
    };
    let absent = if cycles.is_empty() {
        chroot.nothing_at(&root).await
    } else {
        None
    };
    let now = now_ms();
    print!(
        "{}",
        match format {
            // One table per cycle.
            Format::Text => text(&root, &cycles, now),
            Format::Json => json(&root, &cycles, now) + "\n",
            // A Graphviz `digraph`, one cluster per cycle.
            Format::Dot => dot(&cycles),
        }
    );
    if let Some(hint) = absent {
        say(hint);
    }
    if cycles.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(exit::DEADLOCK)
    }
}

/// The lock directory a node is in.
fn lock_of(node: &str) -> &str {
    node.rsplit_once('/').map_or(node, |(dir, _)| dir)
}

/// The owners around a cycle, in wait order, each once per visit (a held node and
/// the waiting node of the same owner are one step); `?` for a node without one.
fn owners(cycle: &Cycle) -> Vec<String> {
    ring(cycle.iter().map(|n| n.owner.as_deref()))
}

fn ring<'a>(owners: impl IntoIterator<Item = Option<&'a str>>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for owner in owners {
        let owner = owner.unwrap_or("?").to_owned();
        if out.last() != Some(&owner) {
            out.push(owner);
        }
    }
    if out.len() > 1 && out.first() == out.last() {
        out.pop();
    }
    out
}

fn text(root: &str, cycles: &[Cycle], now: i64) -> String {
    if cycles.is_empty() {
        return format!("no deadlock under {root}\n");
    }
    let mut out = String::new();
    for (i, cycle) in cycles.iter().enumerate() {
        let mut around = owners(cycle);
        if let Some(first) = around.first().cloned() {
            around.push(first);
        }
        let around: Vec<String> = around.iter().map(|o| cell(o)).collect();
        let _ = writeln!(
            out,
            "deadlock {} of {}: {}",
            i + 1,
            cycles.len(),
            around.join(" -> ")
        );
        let mut rows = vec![["STATE", "OWNER", "SESSION", "AGE", "TOKEN", "NODE"]
            .map(str::to_owned)
            .to_vec()];
        for n in cycle {
            rows.push(vec![
                if n.holds { "holds" } else { "waits" }.to_owned(),
                n.owner.as_deref().map_or_else(|| "?".to_owned(), cell),
                session_hex(n.session),
                age_text(age_ms(n.ctime, now)),
                n.token.to_string(),
                cell(&n.node),
            ]);
        }
        for line in columns(&rows).lines() {
            let _ = writeln!(out, "  {line}");
        }
        out.push_str("  (each node waits for the next, the last for the first)\n");
    }
    out
}

fn node_json(out: &mut String, n: &CycleNode, now: i64) {
    let mut o = Object::new(out);
    o.str("node", &n.node)
        .str("lock", lock_of(&n.node))
        .opt_str("owner", n.owner.as_deref())
        .bool("holds", n.holds)
        .str("session", &session_hex(n.session))
        .int("token", n.token.0)
        .int("ctime", n.ctime)
        .opt_int("age_ms", age_ms(n.ctime, now))
        .end();
}

fn json(root: &str, cycles: &[Cycle], now: i64) -> String {
    let mut out = String::new();
    Object::new(&mut out)
        .str("root", root)
        .array("cycles", cycles, |out, cycle| {
            Object::new(out)
                .strs("owners", &owners(cycle))
                .array("nodes", cycle, |out, n| node_json(out, n, now))
                .end();
        })
        .end();
    out
}

/// A DOT double-quoted string: `"` and `\` escaped, line breaks as DOT's `\n`.
fn dot_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if c.is_control() => out.push('?'),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn dot(cycles: &[Cycle]) -> String {
    let mut out = String::from("digraph deadlocks {\n  node [shape=box];\n");
    for (i, cycle) in cycles.iter().enumerate() {
        let _ = writeln!(out, "  subgraph cluster_{i} {{");
        let _ = writeln!(
            out,
            "    label={};",
            dot_string(&format!("deadlock {}", i + 1))
        );
        for n in cycle {
            let (name, dir) = match n.node.rsplit_once('/') {
                Some((dir, name)) => (name, dir),
                None => (n.node.as_str(), ""),
            };
            let label = format!(
                "{}\n{} {}\n{}\ntoken {}",
                n.owner.as_deref().unwrap_or("?"),
                if n.holds { "holds" } else { "waits at" },
                dir,
                name,
                n.token
            );
            let style = if n.holds { "" } else { ", style=dashed" };
            let _ = writeln!(
                out,
                "    {} [label={}{style}];",
                dot_string(&n.node),
                dot_string(&label)
            );
        }
        for (j, n) in cycle.iter().enumerate() {
            let next = &cycle[(j + 1) % cycle.len()];
            let why = if n.holds {
                "owner waits at"
            } else {
                "blocked by"
            };
            let _ = writeln!(
                out,
                "    {} -> {} [label={}];",
                dot_string(&n.node),
                dot_string(&next.node),
                dot_string(why)
            );
        }
        out.push_str("  }\n");
    }
    out.push_str("}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_around_a_cycle() {
        let (a, b) = (Some("a"), Some("b"));
        assert_eq!(ring([a, a, b, None]), ["a", "b", "?"]);
        assert_eq!(ring([b, a, a, b]), ["b", "a"]);
        assert_eq!(ring([a, a]), ["a"]);
        assert_eq!(lock_of("/l/a/zkl-1"), "/l/a");
        assert_eq!(dot_string("a\"b\\c\nd"), r#""a\"b\\c\nd""#);
    }
}
