//! Reading a child's name: which scheme wrote it, its kind, attempt and sequence,
//! and whether a child no scheme explains still counts as a participant.

use super::sequence::parse_sequence;
use super::{AttemptId, NameScheme, NodeKind, ParsedName};

/// The attempt id of a kazoo semaphore lease node (`<hex32>`: kazoo's
/// `uuid4().hex`, no sequence), or `None` for any other name.
///
/// ```
/// use lock_core::{names::parse_kazoo_lease, AttemptId};
/// assert_eq!(parse_kazoo_lease("000000000000000000000000000000ff"), Some(AttemptId(255)));
/// assert_eq!(parse_kazoo_lease("000000000000000000000000000000ff__lock__0000000001"), None);
/// ```
pub fn parse_kazoo_lease(name: &str) -> Option<AttemptId> {
    parse_hex32(name)
}

/// Parses a child name in any known scheme (native, Curator, kazoo, Go). Other
/// names give `None`; whether such a child still counts as a participant is
/// [`parse_participant`]'s question.
///
/// ```
/// use lock_core::{names::parse_name, NameScheme, NodeKind};
/// let go = parse_name("_c_0123456789abcdef0123456789abcdef-lock-0000000007").unwrap();
/// assert_eq!((go.scheme, go.kind, go.seq), (NameScheme::Go, NodeKind::Write, 7));
/// ```
pub fn parse_name(name: &str) -> Option<ParsedName> {
    if let Some(rest) = name.strip_prefix("zkl-") {
        return parse_native(rest);
    }
    if let Some(rest) = name.strip_prefix("_c_") {
        return parse_curator(rest).or_else(|| parse_go(rest));
    }
    parse_kazoo(name)
}

/// Parses a child of a lock directory as a participant, by the rule of the
/// [module docs](crate::names#which-children-are-participants): a known name as
/// [`parse_name`] reads it; a name that follows no known scheme but ends in a server
/// sequence as an exclusive participant of scheme [`NameScheme::Other`] (its
/// `attempt` is `AttemptId(0)` and means nothing: compare schemes before attempts);
/// zklock's own markers (`zkl-...`), kazoo's semaphore leases (32 hex digits) and
/// names without a sequence give `None` (foreign, ignored).
///
/// ```
/// use lock_core::names::parse_participant;
/// use lock_core::{NameScheme, NodeKind};
/// // ZooKeeper's own lock recipe: an exclusive participant of an unknown scheme.
/// let p = parse_participant("x-72057594037927936-0000000003").unwrap();
/// assert_eq!((p.scheme, p.kind, p.seq), (NameScheme::Other, NodeKind::Write, 3));
/// assert_eq!(parse_participant("leases"), None);
/// assert_eq!(parse_participant("zkl-section"), None);
/// ```
pub fn parse_participant(name: &str) -> Option<ParsedName> {
    if let Some(p) = parse_name(name) {
        return Some(p);
    }
    if name.starts_with("zkl-") || parse_kazoo_lease(name).is_some() {
        return None;
    }
    Some(ParsedName {
        scheme: NameScheme::Other,
        attempt: AttemptId(0),
        kind: NodeKind::Write,
        seq: trailing_sequence(name)?,
        permits: None,
    })
}

/// The sequence number a name of an unknown scheme ends in: its last 10 characters
/// as `%010d` writes them (all digits, or `-` and 9 digits). An 11-character
/// `-2147483648`-style suffix reads as its last 10 digits: for a name of unknown
/// shape the digits before cannot be told from the prefix, and the 10-character
/// reading is the one every value above -1000000000 needs.
fn trailing_sequence(name: &str) -> Option<i32> {
    let start = name.len().checked_sub(10)?;
    parse_sequence(name.get(start..)?)
}

fn parse_hex32(s: &str) -> Option<AttemptId> {
    if s.len() != 32 || !s.bytes().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    u128::from_str_radix(s, 16).ok().map(AttemptId)
}

fn parse_native(rest: &str) -> Option<ParsedName> {
    let attempt = parse_hex32(rest.get(..32)?)?;
    let rest = rest.get(32..)?.strip_prefix('-')?;
    if let Some(sem) = rest.strip_prefix("sem") {
        // `sem<permits>-<seq>`, or `sem-<seq>` from before permits were recorded.
        let (count, seq) = sem.split_once('-')?;
        let permits = match count {
            "" => None,
            c if c.bytes().all(|b| b.is_ascii_digit()) && !c.starts_with('0') => {
                Some(c.parse().ok()?)
            }
            _ => return None,
        };
        return Some(ParsedName {
            scheme: NameScheme::Native,
            attempt,
            kind: NodeKind::Semaphore,
            seq: parse_sequence(seq)?,
            permits,
        });
    }
    let markers = [
        ("write-", NodeKind::Write),
        ("read-", NodeKind::Read),
        ("lead-", NodeKind::Leader),
    ];
    marked(NameScheme::Native, attempt, rest, &markers)
}

/// A name of `scheme` whose `rest` is a kind's marker (of `markers`) and a sequence.
fn marked(
    scheme: NameScheme,
    attempt: AttemptId,
    rest: &str,
    markers: &[(&str, NodeKind)],
) -> Option<ParsedName> {
    let (kind, seq) = (markers.iter()).find_map(|(m, k)| rest.strip_prefix(m).map(|s| (*k, s)))?;
    Some(ParsedName {
        scheme,
        attempt,
        kind,
        seq: parse_sequence(seq)?,
        permits: None,
    })
}

fn parse_curator(rest: &str) -> Option<ParsedName> {
    let uuid = rest.get(..36)?;
    let parts: Vec<&str> = uuid.split('-').collect();
    if parts.iter().map(|p| p.len()).collect::<Vec<_>>() != [8, 4, 4, 4, 12] {
        return None;
    }
    let attempt = parse_hex32(&parts.concat())?;
    let rest = rest.get(36..)?.strip_prefix('-')?;
    let markers = [
        ("lock-", NodeKind::Write),
        ("__WRIT__", NodeKind::Write),
        ("__READ__", NodeKind::Read),
        ("lease-", NodeKind::Semaphore),
        ("latch-", NodeKind::Leader),
    ];
    marked(NameScheme::Curator, attempt, rest, &markers)
}

/// go-zookeeper's `_c_<hex32>-lock-<seq>` (after the `_c_`): `%x` of 16 random
/// bytes, lowercase (either case is accepted: a name that is Go's in every other
/// way is Go's).
fn parse_go(rest: &str) -> Option<ParsedName> {
    let attempt = parse_hex32(rest.get(..32)?)?;
    let markers = [("-lock-", NodeKind::Write)];
    marked(NameScheme::Go, attempt, rest.get(32..)?, &markers)
}

fn parse_kazoo(name: &str) -> Option<ParsedName> {
    let attempt = parse_hex32(name.get(..32)?)?;
    let markers = [("__lock__", NodeKind::Write), ("__rlock__", NodeKind::Read)];
    marked(NameScheme::Kazoo, attempt, name.get(32..)?, &markers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::{format_sequence, node_prefix};

    #[test]
    fn every_scheme_and_kind_round_trips() {
        let id = AttemptId(0xdead_beef_0123_4567_89ab_cdef_0011_2233).as_uuid_v4();
        for scheme in [
            NameScheme::Native,
            NameScheme::Curator,
            NameScheme::Kazoo,
            NameScheme::Go,
        ] {
            for kind in [
                NodeKind::Write,
                NodeKind::Read,
                NodeKind::Semaphore,
                NodeKind::Leader,
            ] {
                for seq in [0, 42, i32::MAX, i32::MIN, -7] {
                    let name = format!("{}{}", node_prefix(scheme, id, kind), format_sequence(seq));
                    let p = parse_name(&name).unwrap_or_else(|| panic!("{name}"));
                    assert_eq!((p.scheme, p.attempt, p.seq), (scheme, id, seq), "{name}");
                    // kazoo has no semaphore or leader marker: both are written as
                    // locks; go-zookeeper has nothing but its lock.
                    let expect = match scheme {
                        NameScheme::Kazoo if kind != NodeKind::Read => NodeKind::Write,
                        NameScheme::Go => NodeKind::Write,
                        _ => kind,
                    };
                    assert_eq!(p.kind, expect, "{name}");
                }
            }
        }
    }

    #[test]
    fn real_peer_names_parse_go_zookeepers_as_go_mutex_nodes() {
        let c = parse_name("_c_a8a4cbf4-2d5a-4a3b-9f5c-0d1e2f3a4b5c-lock-0000000003").unwrap();
        assert_eq!(
            (c.scheme, c.kind, c.seq),
            (NameScheme::Curator, NodeKind::Write, 3)
        );
        let r = parse_name("_c_a8a4cbf4-2d5a-4a3b-9f5c-0d1e2f3a4b5c-__READ__0000000004").unwrap();
        assert_eq!(r.kind, NodeKind::Read);
        let k = parse_name("3f2504e04f8911d39a0c0305e82c3301__rlock__0000000012").unwrap();
        assert_eq!(
            (k.scheme, k.kind, k.seq),
            (NameScheme::Kazoo, NodeKind::Read, 12)
        );
        // go-zookeeper's `CreateProtectedEphemeralSequential(path + "/lock-")`:
        // `_c_` + `%x` of 16 random bytes + `-lock-` + the sequence.
        let g = parse_name("_c_9f86d081884c7d659a2feaa0c55ad015-lock-0000000042").unwrap();
        assert_eq!(
            (g.scheme, g.kind, g.seq, g.attempt),
            (
                NameScheme::Go,
                NodeKind::Write,
                42,
                AttemptId(0x9f86d081884c7d659a2feaa0c55ad015)
            )
        );
        // All-digit and uppercase guids are still Go's; the server's widths too.
        let d = parse_name("_c_01234567890123456789012345678901-lock-2147483647").unwrap();
        assert_eq!((d.scheme, d.seq), (NameScheme::Go, i32::MAX));
        let u = parse_name("_c_9F86D081884C7D659A2FEAA0C55AD015-lock--2147483648").unwrap();
        assert_eq!((u.scheme, u.seq), (NameScheme::Go, i32::MIN));
        // zklock's own Go-scheme prefix reads back as Go, with its attempt id.
        let id = AttemptId(0xfeed).as_uuid_v4();
        let ours = format!(
            "{}0000000001",
            node_prefix(NameScheme::Go, id, NodeKind::Write)
        );
        assert_eq!(ours, format!("_c_{id}-lock-0000000001"));
        assert_eq!(parse_name(&ours).map(|p| p.attempt), Some(id));
    }

    /// Curator's and Go's protected names differ only in the id's shape: a UUID
    /// with four dashes against 32 bare hex digits. Neither is taken for the other,
    /// and near misses and foreign names are no known name (they fall to the
    /// participant rule).
    #[test]
    fn near_misses_and_foreign_names_are_no_known_name() {
        let curator = "_c_9f86d081-884c-7d65-9a2f-eaa0c55ad015-lock-0000000001";
        assert_eq!(parse_name(curator).unwrap().scheme, NameScheme::Curator);
        for (name, why) in [
            (
                "_c_9f86d081884c7d659a2feaa0c55ad01-lock-0000000001",
                "31 hex digits",
            ),
            (
                "_c_9f86d081884c7d659a2feaa0c55ad0155-lock-0000000001",
                "33 hex digits",
            ),
            (
                "_c_9f86d081884c7d659a2feaa0c55ad0g5-lock-0000000001",
                "a non-hex digit",
            ),
            (
                "_c_9f86d081884c7d659a2feaa0c55ad015-lock-000000001",
                "9-digit sequence",
            ),
            (
                "_c_9f86d081884c7d659a2feaa0c55ad015-lock-00000000001",
                "11 digits",
            ),
            (
                "_c_9f86d081884c7d659a2feaa0c55ad015-lock0000000001",
                "no dash",
            ),
            (
                "_c_9f86d081884c7d659a2feaa0c55ad015-__READ__0000000001",
                "Curator marker",
            ),
            (
                "_c_9f86d081884c7d659a2feaa0c55ad015-latch-0000000001",
                "other prefix",
            ),
            (
                "c_9f86d081884c7d659a2feaa0c55ad015-lock-0000000001",
                "no _c_",
            ),
            ("_c_9f86d081884c7d659a2feaa0c55ad015-lock-", "no sequence"),
            ("lock-0000000001", "no scheme's prefix"),
            ("zkl-xyz-write-0000000001", "not a native id"),
            ("_c_short-lock-0000000001", "a short id"),
            ("readme", "no sequence at all"),
            ("leases", "a layout's directory"),
        ] {
            assert_eq!(parse_name(name), None, "{name}: {why}");
        }
    }

    /// The participant rule of the module docs: unknown sequential children are
    /// exclusive participants; zklock's markers, kazoo's leases and names without a
    /// sequence are not.
    #[test]
    fn unknown_sequential_children_are_exclusive_participants() {
        for (name, seq) in [
            ("lock-0000000001", 1),
            ("x-72057594037927936-0000000007", 7),
            ("0000000012", 12),
            ("_c_9f86d081884c7d659a2feaa0c55ad015-latch-0000000003", 3),
            ("_c_9f86d081884c7d659a2feaa0c55ad01-lock-0000000004", 4),
            (
                "_c_9f86d081-884c-7d65-9a2f-eaa0c55ad015-lease2-0000000005",
                5,
            ),
            ("3f2504e04f8911d39a0c0305e82c3301__party__0000000006", 6),
            ("entry--000000009", -9),
        ] {
            let p = parse_participant(name).unwrap_or_else(|| panic!("{name}"));
            assert_eq!(
                (p.scheme, p.kind, p.seq),
                (NameScheme::Other, NodeKind::Write, seq),
                "{name}"
            );
            assert!(p.kind.is_exclusive());
        }
        for name in [
            "zkl-section",
            "zkl-marker-0000000001",
            "leases",
            "locks",
            "readme",
            "123456789",
            "3f2504e04f8911d39a0c0305e8201234",
            "01234567890123456789012345678901",
            "entry-00000000x1",
        ] {
            assert_eq!(parse_participant(name), None, "{name}");
        }
        // Known names are read as they are, never as `Other`.
        let k = "3f2504e04f8911d39a0c0305e82c3301__rlock__0000000012";
        assert_eq!(parse_participant(k), parse_name(k));
        let g = "_c_9f86d081884c7d659a2feaa0c55ad015-lock-0000000042";
        assert_eq!(parse_participant(g).unwrap().scheme, NameScheme::Go);
    }
}
