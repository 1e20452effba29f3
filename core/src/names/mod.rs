//! Node names: the native scheme and the Curator-, kazoo- and go-zookeeper-compatible
//! ones, which children of a lock directory count as participants, and wrap-aware
//! ordering of server sequence numbers.
//!
//! Every scheme carries a random per-attempt id in the name, so that after a
//! connection loss during `create` the client can find the node it may have created
//! (the "protected" create of Curator, the recoverable-error recipe of the seeds).
//!
//! | scheme  | write / exclusive            | read                          | semaphore                  | leader                     |
//! |---------|------------------------------|-------------------------------|----------------------------|----------------------------|
//! | native  | `zkl-<hex32>-write-<seq>`    | `zkl-<hex32>-read-<seq>`      | `zkl-<hex32>-sem<permits>-<seq>` | `zkl-<hex32>-lead-<seq>` |
//! | Curator | `_c_<uuid>-lock-<seq>` (mutex) / `_c_<uuid>-__WRIT__<seq>` (read/write lock) | `_c_<uuid>-__READ__<seq>` | `_c_<uuid>-lease-<seq>` | `_c_<uuid>-latch-<seq>` |
//! | kazoo   | `<hex32>__lock__<seq>`       | `<hex32>__rlock__<seq>`       | lease `<hex32>` (see below) | `<hex32>__lock__<seq>`     |
//! | Go      | `_c_<hex32>-lock-<seq>` (go-zookeeper's `Lock`) | - | - | - |
//!
//! Curator's and kazoo's semaphores keep their nodes in two directories, a queue
//! (an internal mutex, [`semaphore_mutex_dir`]) and a pool of leases
//! ([`semaphore_lease_dir`]): Curator `<path>/locks/_c_<uuid>-lock-<seq>` and
//! `<path>/leases/_c_<uuid>-lease-<seq>`, kazoo `<path>-__lock__/<hex32>__lock__<seq>`
//! and `<path>/<hex32>` ([`parse_kazoo_lease`]).
//!
//! `<seq>` is the server's `%010d` of a signed 32-bit counter: 10 characters, or 11
//! for negative values below -999999999 (`-2147483648`).
//!
//! go-zookeeper (github.com/samuel/go-zookeeper, the snapshot Debian ships) has one
//! recipe, `Lock`, a mutex: `CreateProtectedEphemeralSequential(path + "/lock-")`
//! names the node `_c_` + `fmt.Sprintf("%x", [16]byte)` (32 lowercase hex digits, no
//! dashes: not Curator's UUID) + `-lock-` + the sequence, with empty data. Its `Lock`
//! counts *every* child of the directory as an exclusive participant, its sequence
//! the text after the last `-`, and waits for the next lower one; a child whose text
//! after the last `-` is not a number makes its `Lock` return an error.
//!
//! # Which children are participants
//!
//! [`parse_participant`] decides, for every listing that decides who holds (an
//! acquisition's, an inspection's, an election observer's, a revocation's):
//!
//! 1. A name in a known scheme ([`parse_name`]: native, Curator, kazoo, Go) is a
//!    participant of the kind its name says.
//! 2. Else a name in zklock's own namespace (`zkl-...`, such as the crash-detection
//!    marker `zkl-section` and the lock-delay marker `zkl-delay`) is not one: zklock knows every node it makes, and a
//!    `zkl-` name that is no participant name is one of its markers.
//! 3. Else a name that is exactly 32 hex digits is not one: that is kazoo's
//!    semaphore lease layout (`<path>/<uuid hex>`, no sequence), and a uuid's last
//!    ten hex digits are all decimal about once in a hundred.
//! 4. Else a name ending in a server sequence (`%010d`, read from its last 10
//!    characters) is an *exclusive* participant of an unknown scheme
//!    ([`NameScheme::Other`]), ordered by that sequence: a lock waits for it, a reader
//!    waits for it, a semaphore does not hold beside it. Such nodes are ZooKeeper's
//!    own lock recipe (`x-<session>-<seq>`, the Java and C recipes), go-zookeeper
//!    forks writing other prefixes, and any client whose scheme zklock does not know.
//! 5. Anything else (no sequence: Curator's `leases` and `locks` directories, a
//!    kazoo lease, a user's plain node) is foreign: ignored and counted.
//!
//! Which way this errs, and why that is the safe way: a name that could be one
//! peer's or another's, or a participant's or not, is taken as a *participant that
//! excludes*. Mistaking a non-participant for a participant costs liveness, visibly:
//! the lock waits, `zklock ls` shows the node as the holder (scheme `other`), and
//! deleting the node (or renaming one's own markers) ends the wait. Mistaking a
//! participant for a non-participant costs safety, silently: two holders. Rules 2
//! and 3 are the only exemptions, and each is exact (zklock's own names; kazoo's
//! lease shape, which no sequential create can produce since the server appends
//! 10 characters to a prefix). Known names are never confused: Curator's id is
//! a 36-character UUID with dashes after `_c_`, Go's 32 hex digits without, and a
//! name that fits neither falls to rule 4 (exclusive), never to "ignored".

mod parse;
mod sequence;

pub use parse::{parse_kazoo_lease, parse_name, parse_participant};

pub(crate) use sequence::sort_by_sequence;
pub use sequence::{compare_sequences, format_sequence, parse_sequence, relative_sequence};
use std::fmt;

/// Which naming scheme a lock creates its nodes with. All schemes are recognised when
/// listing, whichever one this client creates with.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
#[non_exhaustive]
pub enum NameScheme {
    /// zklock's own: `zkl-<attempt hex32>-<kind>-<seq>`.
    #[default]
    Native,
    /// Apache Curator's protected names: `_c_<uuid>-lock-<seq>`, `__READ__`, `__WRIT__`.
    Curator,
    /// kazoo's: `<uuid hex32>__lock__<seq>`, `__rlock__`.
    Kazoo,
    /// go-zookeeper's `Lock` (a mutex only): `_c_<hex32>-lock-<seq>`, the node
    /// name of its `CreateProtectedEphemeralSequential`. Only an exclusive lock
    /// (`LockSpec::exclusive`, a mutex) can be created with it: go-zookeeper has no
    /// read/write lock, semaphore or election, and acquiring one with this scheme is
    /// refused with [`UsageError::NoLayout`](crate::UsageError::NoLayout).
    Go,
    /// A sequential child that follows no known scheme, counted as an exclusive
    /// participant (see the [module docs](self)). Only ever read from a listing:
    /// acquiring with it is refused with [`UsageError::NoLayout`](crate::UsageError::NoLayout).
    Other,
}

/// What a participant node asks for, as written in its name.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[non_exhaustive]
pub enum NodeKind {
    /// Exclusive / write lock.
    Write,
    /// Shared / read lock.
    Read,
    /// Semaphore permit.
    Semaphore,
    /// Leader-election participant.
    Leader,
}

/// The kind in one word: `write`, `read`, `semaphore`, `leader`.
impl std::fmt::Display for NodeKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NodeKind::Write => "write",
            NodeKind::Read => "read",
            NodeKind::Semaphore => "semaphore",
            NodeKind::Leader => "leader",
        })
    }
}

impl NodeKind {
    /// Whether a participant of this kind excludes others (everything but a read).
    pub fn is_exclusive(self) -> bool {
        !matches!(self, NodeKind::Read)
    }
}

/// The random id of one acquisition attempt, embedded in its node name.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct AttemptId(pub u128);

impl AttemptId {
    /// Forces the RFC 4122 version-4 / variant bits, so the id reads as a random UUID
    /// in Curator's and kazoo's names.
    pub fn as_uuid_v4(self) -> AttemptId {
        let v = (self.0 & !(0xf << 76) & !(0x3 << 62)) | (0x4 << 76) | (0x2 << 62);
        AttemptId(v)
    }
}

impl fmt::Display for AttemptId {
    /// 32 lowercase hex digits, as `{:032x}` writes them, without the formatting
    /// machinery: every acquisition's node name carries one.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut hex = [0u8; 32];
        for (i, digit) in hex.iter_mut().enumerate() {
            *digit = DIGITS[((self.0 >> (4 * (31 - i))) & 0xf) as usize];
        }
        f.write_str(std::str::from_utf8(&hex).map_err(|_| fmt::Error)?)
    }
}

/// A recognised participant name.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ParsedName {
    /// The scheme it was written in.
    pub scheme: NameScheme,
    /// The attempt id it carries.
    pub attempt: AttemptId,
    /// What it asks for.
    pub kind: NodeKind,
    /// The server-assigned sequence number.
    pub seq: i32,
    /// The permit count a semaphore participant declared in its name (native
    /// scheme: `sem<permits>-`), so that participants disagreeing on it are found
    /// from a listing alone. `None` for other kinds and schemes.
    pub permits: Option<u32>,
}

/// The name prefix a node is created with (the server appends the sequence).
///
/// ```
/// use lock_core::{names::{node_prefix, parse_name}, AttemptId, NameScheme, NodeKind};
/// let id = AttemptId(0x1234);
/// let name = format!("{}{:010}", node_prefix(NameScheme::Kazoo, id, NodeKind::Read), 7);
/// assert_eq!(name, "00000000000000000000000000001234__rlock__0000000007");
/// let p = parse_name(&name).unwrap();
/// assert_eq!((p.attempt, p.kind, p.seq), (id, NodeKind::Read, 7));
/// ```
pub fn node_prefix(scheme: NameScheme, attempt: AttemptId, kind: NodeKind) -> String {
    prefix(scheme, attempt, kind, false, None)
}

/// The name prefix of a semaphore participant with `permits` permits. The native
/// scheme writes the count into the name (`zkl-<hex32>-sem<permits>-`), so that a
/// semaphore taken with another count on the same path is refused.
///
/// ```
/// use lock_core::{names::{semaphore_node_prefix, parse_name}, AttemptId, NameScheme};
/// let name = format!("{}0000000001", semaphore_node_prefix(NameScheme::Native, AttemptId(7), 5));
/// assert_eq!(parse_name(&name).unwrap().permits, Some(5));
/// ```
pub fn semaphore_node_prefix(scheme: NameScheme, attempt: AttemptId, permits: u32) -> String {
    prefix(scheme, attempt, NodeKind::Semaphore, false, Some(permits))
}

/// The name prefix of a node of a read/write lock: as [`node_prefix`], except that
/// Curator names its read/write lock's write half `__WRIT__` (its readers count only
/// `__WRIT__` nodes as writers, and sort a `lock-` node behind every other one).
///
/// ```
/// use lock_core::{names::{rwlock_node_prefix, parse_name}, AttemptId, NameScheme, NodeKind};
/// let id = AttemptId(0x1234).as_uuid_v4();
/// let name = format!("{}0000000003", rwlock_node_prefix(NameScheme::Curator, id, NodeKind::Write));
/// assert!(name.contains("-__WRIT__0000000003"), "{name}");
/// assert_eq!(parse_name(&name).unwrap().kind, NodeKind::Write);
/// ```
pub fn rwlock_node_prefix(scheme: NameScheme, attempt: AttemptId, kind: NodeKind) -> String {
    prefix(scheme, attempt, kind, true, None)
}

fn prefix(
    scheme: NameScheme,
    attempt: AttemptId,
    kind: NodeKind,
    rwlock: bool,
    permits: Option<u32>,
) -> String {
    match scheme {
        NameScheme::Native => {
            let k = match kind {
                NodeKind::Write => "write",
                NodeKind::Read => "read",
                NodeKind::Semaphore => "sem",
                NodeKind::Leader => "lead",
            };
            match permits {
                Some(n) => format!("zkl-{attempt}-{k}{n}-"),
                None => format!("zkl-{attempt}-{k}-"),
            }
        }
        NameScheme::Curator => {
            let marker = match kind {
                NodeKind::Write if rwlock => "__WRIT__",
                NodeKind::Write => "lock-",
                NodeKind::Read => "__READ__",
                NodeKind::Semaphore => "lease-",
                NodeKind::Leader => "latch-",
            };
            let h = format!("{attempt}");
            format!(
                "_c_{}-{}-{}-{}-{}-{marker}",
                &h[0..8],
                &h[8..12],
                &h[12..16],
                &h[16..20],
                &h[20..32]
            )
        }
        NameScheme::Kazoo => {
            let marker = match kind {
                NodeKind::Read => "__rlock__",
                _ => "__lock__",
            };
            format!("{attempt}{marker}")
        }
        // go-zookeeper has only its mutex: every kind is written as one (an
        // acquisition of another kind is refused before a name is made). `Other`
        // has no names of its own; it is refused before a name is made, and writes
        // Go's (exclusive to every peer that reads it) should it ever be asked.
        NameScheme::Go | NameScheme::Other => format!("_c_{attempt}-lock-"),
    }
}

/// The directory of the internal mutex that a semaphore on `path` queues in under
/// `scheme`'s layout: Curator's `InterProcessSemaphoreV2` keeps it at
/// `<path>/locks`, kazoo's `Semaphore` at `<path>-__lock__`. `None` for the native
/// scheme, whose semaphore nodes queue in `path` itself.
///
/// ```
/// use lock_core::{names::semaphore_mutex_dir, NameScheme};
/// assert_eq!(semaphore_mutex_dir(NameScheme::Curator, "/s").as_deref(), Some("/s/locks"));
/// assert_eq!(semaphore_mutex_dir(NameScheme::Kazoo, "/s").as_deref(), Some("/s-__lock__"));
/// assert_eq!(semaphore_mutex_dir(NameScheme::Native, "/s"), None);
/// ```
pub fn semaphore_mutex_dir(scheme: NameScheme, path: &str) -> Option<String> {
    match scheme {
        NameScheme::Curator => Some(format!("{path}/locks")),
        NameScheme::Kazoo => Some(format!("{path}-__lock__")),
        NameScheme::Native | NameScheme::Go | NameScheme::Other => None,
    }
}

/// The directory of the lease nodes of a semaphore on `path` under `scheme`'s
/// layout: `<path>/leases` (Curator, nodes `_c_<uuid>-lease-<seq>`) or `path`
/// itself (kazoo, nodes `<hex32>` without a sequence, the permit count in
/// `path`'s data). `None` for the native scheme (see [`semaphore_mutex_dir`]).
///
/// ```
/// use lock_core::{names::semaphore_lease_dir, NameScheme};
/// assert_eq!(semaphore_lease_dir(NameScheme::Curator, "/s").as_deref(), Some("/s/leases"));
/// assert_eq!(semaphore_lease_dir(NameScheme::Kazoo, "/s").as_deref(), Some("/s"));
/// ```
pub fn semaphore_lease_dir(scheme: NameScheme, path: &str) -> Option<String> {
    match scheme {
        NameScheme::Curator => Some(format!("{path}/leases")),
        NameScheme::Kazoo => Some(path.to_owned()),
        NameScheme::Native | NameScheme::Go | NameScheme::Other => None,
    }
}

// zklock's own node names in a lock directory, beside the participants' names:
// the acquisition writes the markers, inspection and the break read them, and
// this module is the leaf all three import.

/// Name of the break record in a lock directory: a persistent node saying which
/// node an operator broke last, written in the `multi` of the break's delete
/// ([`crate::LastBreak`]).
pub(crate) const BREAK_RECORD: &str = "zkl-broken";

/// Name of the crash-detection marker inside a lock directory (a persistent node
/// that exists while a holder is inside a critical section).
pub(crate) const SECTION_MARKER: &str = "zkl-section";

/// Name of the lock-delay marker inside a lock directory (a persistent node naming
/// the node of the lock-delay holder that holds, or last held without a clean
/// release: see `acquisition/delay.rs`).
pub(crate) const DELAY_MARKER: &str = "zkl-delay";

/// Whether `name` is one of zklock's markers (or the break record) in a lock
/// directory.
pub(crate) fn is_marker(name: &str) -> bool {
    name == SECTION_MARKER || name == DELAY_MARKER || name == BREAK_RECORD
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attempt_ids_print_as_32_hex_digits() {
        for v in [
            0,
            1,
            0xabc,
            u128::MAX,
            0x0123_4567_89ab_cdef_fedc_ba98_7654_3210,
        ] {
            assert_eq!(AttemptId(v).to_string(), format!("{v:032x}"));
        }
    }
}
