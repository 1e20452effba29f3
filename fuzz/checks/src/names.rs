//! The `names` fuzz target's input and checks (listed in `fuzz/README.md`):
//! node-name parsing and wrap-aware ordering across the native, Curator, kazoo and
//! go-zookeeper schemes, and the participant rule for names of no known scheme.

use crate::node_name as name;
use arbitrary::Arbitrary;
use lock_core::names::{
    compare_sequences, format_sequence, node_prefix, parse_name, parse_participant, parse_sequence,
    relative_sequence, ParsedName,
};
use lock_core::{AttemptId, NameScheme, NodeKind};
use std::cmp::Ordering;

/// One fuzz case: a list of operations.
#[derive(Arbitrary, Debug, Clone)]
pub struct NamesCase {
    /// The operations.
    pub ops: Vec<NamesOp>,
}

/// One check.
#[derive(Arbitrary, Debug, Clone)]
pub enum NamesOp {
    /// Format then parse.
    RoundTrip {
        /// Scheme.
        scheme: u8,
        /// Kind.
        kind: u8,
        /// Attempt id.
        attempt: u128,
        /// Force the UUID v4 bits (as the core does).
        uuid_v4: bool,
        /// Sequence number.
        seq: SeqPick,
    },
    /// Parse an arbitrary string as a name and as a sequence suffix.
    Parse(String),
    /// Parse a well-formed prefix with an arbitrary suffix glued on.
    PrefixThenJunk {
        /// Scheme.
        scheme: u8,
        /// Kind.
        kind: u8,
        /// Attempt id.
        attempt: u128,
        /// The suffix.
        junk: String,
    },
    /// Order sequence numbers `base + offset` against the offsets' order.
    Order {
        /// The base.
        base: SeqPick,
        /// Offsets (each folded into +-2^30).
        offsets: Vec<i32>,
        /// Schemes and kinds of the names built from them.
        shapes: Vec<(u8, u8)>,
    },
    /// Compare two arbitrary sequence numbers: antisymmetry.
    Pair(i32, i32),
}

/// A sequence number, biased toward the interesting ones.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum SeqPick {
    /// Anything.
    Raw(i32),
    /// Near `i32::MAX` (wraps).
    NearMax(u8),
    /// Near `i32::MIN` (11 characters).
    NearMin(u8),
    /// Around -999999999 / -1000000000 (the 10/11-character boundary).
    NearWidth(i8),
    /// Around 0.
    NearZero(i8),
}

impl SeqPick {
    /// The number.
    pub fn value(self) -> i32 {
        match self {
            SeqPick::Raw(v) => v,
            SeqPick::NearMax(d) => i32::MAX - i32::from(d),
            SeqPick::NearMin(d) => i32::MIN + i32::from(d),
            SeqPick::NearWidth(d) => -1_000_000_000 + i32::from(d),
            SeqPick::NearZero(d) => i32::from(d),
        }
    }
}

fn scheme_of(i: u8) -> NameScheme {
    match i % 4 {
        0 => NameScheme::Native,
        1 => NameScheme::Curator,
        2 => NameScheme::Kazoo,
        _ => NameScheme::Go,
    }
}

fn kind_of(i: u8) -> NodeKind {
    match i % 4 {
        0 => NodeKind::Write,
        1 => NodeKind::Read,
        2 => NodeKind::Semaphore,
        _ => NodeKind::Leader,
    }
}

/// The kind a name written with `kind` in `scheme` reads back as: kazoo has no
/// semaphore or leader marker (both are written as locks), go-zookeeper nothing but
/// its lock.
fn read_back(scheme: NameScheme, kind: NodeKind) -> NodeKind {
    match scheme {
        NameScheme::Kazoo if kind != NodeKind::Read => NodeKind::Write,
        NameScheme::Go => NodeKind::Write,
        _ => kind,
    }
}

fn check_round_trip(scheme: NameScheme, attempt: AttemptId, kind: NodeKind, seq: i32) {
    let s = format_sequence(seq);
    assert!(
        s.len() == 10 || (s.len() == 11 && seq < -999_999_999),
        "format_sequence({seq}) = {s:?}"
    );
    assert_eq!(parse_sequence(&s), Some(seq), "sequence {s:?}");
    let n = name(scheme, attempt, kind, seq);
    let p = parse_name(&n).unwrap_or_else(|| panic!("{n:?} does not parse"));
    assert_eq!(
        p,
        ParsedName {
            scheme,
            attempt,
            kind: read_back(scheme, kind),
            seq,
            permits: None,
        },
        "{n:?}"
    );
}

/// Reference for `parse_sequence`.
fn reference_sequence(s: &str) -> Option<i32> {
    s.parse::<i32>().ok().filter(|v| format_sequence(*v) == s)
}

fn check_parse(s: &str) {
    assert_eq!(
        parse_sequence(s),
        reference_sequence(s),
        "parse_sequence({s:?})"
    );
    check_participant(s);
    let Some(p) = parse_name(s) else { return };
    // The suffix is the canonical spelling of the sequence number.
    let suffix = format_sequence(p.seq);
    assert!(s.ends_with(&suffix), "{s:?} parsed with seq {}", p.seq);
    // Re-formatting gives the same name, up to hex case and Curator's alias for writes.
    let again = name(p.scheme, p.attempt, p.kind, p.seq);
    let canon = |x: &str| x.to_ascii_lowercase().replace("-__writ__", "-lock-");
    assert_eq!(canon(&again), canon(s), "{s:?} parsed as {p:?}");
    // And that re-formatted name parses to the same thing.
    assert_eq!(parse_name(&again), Some(p), "{again:?}");
}

/// The participant rule: a known name reads as `parse_name` reads it; any other
/// name is an exclusive `Other` participant exactly when it is outside zklock's
/// namespace, not a kazoo lease, and ends in a canonical sequence.
fn check_participant(s: &str) {
    let got = parse_participant(s);
    if let Some(p) = parse_name(s) {
        assert_eq!(got, Some(p), "{s:?}");
        return;
    }
    let tail = s
        .len()
        .checked_sub(10)
        .and_then(|i| s.get(i..))
        .and_then(reference_sequence);
    let lease = s.len() == 32 && s.bytes().all(|b| b.is_ascii_hexdigit());
    let expect = tail.filter(|_| !s.starts_with("zkl-") && !lease);
    match got {
        None => assert_eq!(
            expect, None,
            "{s:?} ends in a sequence but is not a participant"
        ),
        Some(p) => {
            assert_eq!(Some(p.seq), expect, "{s:?}");
            assert_eq!(
                (p.scheme, p.kind),
                (NameScheme::Other, NodeKind::Write),
                "{s:?}"
            );
        }
    }
}

fn check_pair(a: i32, b: i32) {
    let ab = compare_sequences(a, b);
    let ba = compare_sequences(b, a);
    assert_eq!(ab == Ordering::Equal, a == b, "compare({a}, {b})");
    if a.wrapping_sub(b) != i32::MIN {
        // Exactly 2^31 apart is the one ambiguous distance of serial arithmetic.
        assert_eq!(ab, ba.reverse(), "compare({a}, {b}) vs compare({b}, {a})");
    }
    assert_eq!(relative_sequence(a, a), 0);
}

fn check_order(base: i32, offsets: &[i32], shapes: &[(u8, u8)]) {
    const WINDOW: i64 = (1 << 30) - 1;
    // Offsets folded into [-(2^30 - 1), 2^30 - 1]: any two are less than 2^31 apart.
    let offs: Vec<i64> = offsets
        .iter()
        .take(64)
        .map(|&o| i64::from(o).rem_euclid(2 * WINDOW + 1) - WINDOW)
        .collect();
    let seqs: Vec<i32> = offs
        .iter()
        .map(|&o| (i64::from(base) + o).rem_euclid(1 << 32) as u32 as i32)
        .collect();
    for (i, &a) in seqs.iter().enumerate() {
        // Relative positions against a reference agree with the offsets too.
        assert_eq!(
            i64::from(relative_sequence(a, base)),
            offs[i],
            "relative_sequence({a}, {base})"
        );
        for (j, &b) in seqs.iter().enumerate() {
            assert_eq!(
                compare_sequences(a, b),
                offs[i].cmp(&offs[j]),
                "compare({a}, {b}) with offsets {} and {} from base {base}",
                offs[i],
                offs[j]
            );
        }
    }
    // Names of every scheme, sorted by the wrap-aware order of their parsed
    // sequence numbers, come out in the reference order.
    let mut named: Vec<(i64, String)> = offs
        .iter()
        .zip(&seqs)
        .enumerate()
        .map(|(i, (&o, &s))| {
            let (sc, k) = shapes.get(i).copied().unwrap_or((i as u8, i as u8));
            let attempt = AttemptId(0x5eed_u128 << 64 | i as u128);
            (o, name(scheme_of(sc), attempt, kind_of(k), s))
        })
        .collect();
    let mut by_core = named.clone();
    let reference = seqs.first().copied().unwrap_or(base);
    by_core.sort_by(|(_, x), (_, y)| {
        let px = parse_name(x).expect("built names parse");
        let py = parse_name(y).expect("built names parse");
        relative_sequence(px.seq, reference).cmp(&relative_sequence(py.seq, reference))
    });
    named.sort_by_key(|(o, _)| *o);
    let a: Vec<i64> = by_core.iter().map(|(o, _)| *o).collect();
    let b: Vec<i64> = named.iter().map(|(o, _)| *o).collect();
    assert_eq!(
        a, b,
        "wrap-aware sort of names disagrees with the reference"
    );
}

/// Runs one case; panics on a violation.
pub fn check_case(case: &NamesCase) {
    for op in &case.ops {
        match op {
            NamesOp::RoundTrip {
                scheme,
                kind,
                attempt,
                uuid_v4,
                seq,
            } => {
                let mut a = AttemptId(*attempt);
                if *uuid_v4 {
                    a = a.as_uuid_v4();
                }
                check_round_trip(scheme_of(*scheme), a, kind_of(*kind), seq.value());
            }
            NamesOp::Parse(s) => check_parse(s),
            NamesOp::PrefixThenJunk {
                scheme,
                kind,
                attempt,
                junk,
            } => {
                let s = format!(
                    "{}{junk}",
                    node_prefix(scheme_of(*scheme), AttemptId(*attempt), kind_of(*kind))
                );
                check_parse(&s);
                if let Some(seq) = reference_sequence(junk) {
                    let p = parse_name(&s).unwrap_or_else(|| panic!("{s:?} does not parse"));
                    assert_eq!(p.seq, seq);
                } else {
                    assert_eq!(parse_name(&s), None, "{s:?} parses with a bad suffix");
                }
            }
            NamesOp::Order {
                base,
                offsets,
                shapes,
            } => check_order(base.value(), offsets, shapes),
            NamesOp::Pair(a, b) => check_pair(*a, *b),
        }
    }
}
