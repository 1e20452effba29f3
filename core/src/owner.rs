//! Owners in node data: who a participant node is held (or waited) for, and where
//! that owner waits, read back by inspection and by deadlock detection.
//!
//! # The native header (version 1)
//!
//! A native participant node's data is a small header, then the user's data:
//!
//! ```text
//! offset  size  field
//! 0       4     magic  00 'z' 'k' 'l'   (a leading NUL: no text starts with it)
//! 4       1     version = 1
//! 5       2     owner length N (u16, big-endian; 0 = no owner)
//! 7       N     owner (UTF-8)
//! 7+N     1     number W of published waits (0..=255)
//! ...           W times: length L (u16, big-endian), then L bytes: the full path of
//!               a node the owner waits at (see `crate::deadlock`)
//! ...           the user's data, to the end
//! ```
//!
//! Data that does not start with the magic, or whose header does not parse (it is
//! truncated, its version is unknown, an owner is not UTF-8), is headerless: all of
//! it is user data and there is no owner. So nodes written before owners existed,
//! and by other clients, read as "no owner". A node is written with a header when
//! its acquisition has an owner, or when the user's data itself starts with the
//! magic (then with an empty header, so that it reads back unchanged). Otherwise the
//! data is written as given, byte for byte, as before.
//!
//! A reader that finds a version it does not know treats the node as headerless: a
//! later version must keep the magic and bump the version byte.
//!
//! # Foreign schemes
//!
//! * Curator: `LeaderLatch` and `LeaderSelector` read a participant's id from its
//!   node's data, and `InterProcessMutex` users see the client's address there
//!   (Curator's default node data). A header would show up as garbage in both, so
//!   Curator-named nodes carry the user's data unchanged and no owner.
//! * kazoo: `Lock` writes its `identifier` as the node's data (UTF-8) and
//!   `contenders()` returns it. The owner is that identifier: a kazoo-named node of
//!   an acquisition with an owner and no data of its own carries the owner as its
//!   data, and a kazoo-named node's owner reads back as its data when that is
//!   non-empty UTF-8. There is no room for published waits.
//!
//! The header counts toward the data size limit ([`crate::Config::max_packet`]).

use crate::names::NameScheme;

/// The first bytes of a native header.
pub(crate) const MAGIC: [u8; 4] = [0, b'z', b'k', b'l'];
/// The header version this code writes.
pub(crate) const VERSION: u8 = 1;
/// The most waits one header publishes.
pub(crate) const MAX_WAITS: usize = 255;

/// What a participant node says about its owner.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct NodeData {
    /// The owner, if the node names one.
    pub owner: Option<String>,
    /// Full paths of the nodes the owner waits at (published by deadlock detection).
    pub waits: Vec<String>,
    /// Whether the data carried a native header.
    pub header: bool,
    /// The user's data.
    pub user: Vec<u8>,
}

/// The header bytes for `owner` and `waits`, without user data.
pub fn header(owner: Option<&str>, waits: &[String]) -> Vec<u8> {
    let owner = owner.unwrap_or("");
    let owner = &owner.as_bytes()[..owner.len().min(u16::MAX as usize)];
    let waits = &waits[..waits.len().min(MAX_WAITS)];
    let mut out =
        Vec::with_capacity(8 + owner.len() + waits.iter().map(|w| 2 + w.len()).sum::<usize>());
    out.extend_from_slice(&MAGIC);
    out.push(VERSION);
    out.extend_from_slice(&(owner.len() as u16).to_be_bytes());
    out.extend_from_slice(owner);
    out.push(waits.len() as u8);
    for w in waits {
        let w = &w.as_bytes()[..w.len().min(u16::MAX as usize)];
        out.extend_from_slice(&(w.len() as u16).to_be_bytes());
        out.extend_from_slice(w);
    }
    out
}

/// Whether a node of `scheme` is written with a native header.
pub(crate) fn uses_header(scheme: NameScheme, owner: Option<&str>, data: &[u8]) -> bool {
    scheme == NameScheme::Native && (owner.is_some() || data.starts_with(&MAGIC))
}

/// The data a new participant node is created with.
pub fn node_data(scheme: NameScheme, owner: Option<&str>, data: &[u8]) -> Vec<u8> {
    if uses_header(scheme, owner, data) {
        let mut out = header(owner, &[]);
        out.extend_from_slice(data);
        return out;
    }
    match (scheme, owner) {
        // kazoo's identifier is the node's data; go-zookeeper writes none and never
        // reads it, so the owner fits there too.
        (NameScheme::Kazoo | NameScheme::Go, Some(owner)) if data.is_empty() => {
            owner.as_bytes().to_vec()
        }
        _ => data.to_vec(),
    }
}

/// The same data with another set of published waits (owner and user data kept).
pub(crate) fn with_waits(data: &NodeData, waits: &[String]) -> Vec<u8> {
    let mut out = header(data.owner.as_deref(), waits);
    out.extend_from_slice(&data.user);
    out
}

/// Reads a participant node's data, as written by a node of `scheme`.
pub fn parse(scheme: NameScheme, data: &[u8]) -> NodeData {
    if let Some(d) = parse_header(data) {
        return d;
    }
    let owner = match scheme {
        NameScheme::Kazoo | NameScheme::Go if !data.is_empty() => {
            std::str::from_utf8(data).ok().map(str::to_owned)
        }
        _ => None,
    };
    NodeData {
        owner,
        waits: Vec::new(),
        header: false,
        user: data.to_vec(),
    }
}

/// The user's part of a node's data (the whole of it when headerless).
pub fn user_data(data: &[u8]) -> &[u8] {
    match split_header(data) {
        Some((_, _, rest)) => rest,
        None => data,
    }
}

fn parse_header(data: &[u8]) -> Option<NodeData> {
    let (owner, waits, rest) = split_header(data)?;
    Some(NodeData {
        owner: (!owner.is_empty()).then(|| owner.to_owned()),
        waits,
        header: true,
        user: rest.to_vec(),
    })
}

fn split_header(data: &[u8]) -> Option<(&str, Vec<String>, &[u8])> {
    let rest = data.strip_prefix(&MAGIC)?;
    let (&version, rest) = rest.split_first()?;
    if version != VERSION {
        return None;
    }
    let (owner, rest) = take_field(rest)?;
    let owner = std::str::from_utf8(owner).ok()?;
    let (&count, mut rest) = rest.split_first()?;
    let mut waits = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let (w, r) = take_field(rest)?;
        waits.push(std::str::from_utf8(w).ok()?.to_owned());
        rest = r;
    }
    Some((owner, waits, rest))
}

fn take_field(data: &[u8]) -> Option<(&[u8], &[u8])> {
    let len = u16::from_be_bytes([*data.first()?, *data.get(1)?]) as usize;
    let rest = &data[2..];
    (rest.len() >= len).then(|| rest.split_at(len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_round_trips_owner_waits_and_user_data() {
        let waits = vec!["/l/a/zkl-x-write-0000000001".to_owned()];
        let mut data = header(Some("job-7"), &waits);
        let no_waits = header(Some("job-7"), &[]).len();
        assert_eq!(data.len(), no_waits + 2 + waits[0].len());
        data.extend_from_slice(b"payload");
        let d = parse(NameScheme::Native, &data);
        assert_eq!(d.owner.as_deref(), Some("job-7"));
        assert_eq!(d.waits, waits);
        assert_eq!(d.user, b"payload");
        assert!(d.header);
        assert_eq!(user_data(&data), b"payload");
        let cleared = with_waits(&d, &[]);
        let c = parse(NameScheme::Native, &cleared);
        assert_eq!(
            (c.owner, c.waits, c.user),
            (Some("job-7".into()), vec![], b"payload".to_vec())
        );
    }

    #[test]
    fn headerless_and_malformed_data_is_all_user_data_without_owner() {
        for data in [
            &b""[..],
            b"10.0.0.1",
            b"__REVOKE__",
            b"\0zkl",                        // magic only
            b"\0zkl\x02\0\0\0",              // unknown version
            b"\0zkl\x01\0\x09abc",           // owner longer than the data
            b"\0zkl\x01\0\x01a\x01\0\x05ab", // truncated wait
            b"\0zkl\x01\0\x01\xff\0",        // owner not UTF-8
        ] {
            let d = parse(NameScheme::Native, data);
            assert_eq!(d.owner, None, "{data:?}");
            assert!(!d.header && d.waits.is_empty(), "{data:?}");
            assert_eq!(d.user, data);
            assert_eq!(user_data(data), data);
        }
    }

    #[test]
    fn nodes_get_a_header_only_when_needed_and_foreign_schemes_keep_their_data() {
        assert_eq!(node_data(NameScheme::Native, None, b"id"), b"id");
        let n = node_data(NameScheme::Native, Some("o"), b"id");
        assert_eq!(parse(NameScheme::Native, &n).owner.as_deref(), Some("o"));
        // User data that looks like a header is escaped by an empty header.
        let tricky = header(Some("forged"), &[]);
        let n = node_data(NameScheme::Native, None, &tricky);
        let d = parse(NameScheme::Native, &n);
        assert_eq!((d.owner, d.user), (None, tricky.clone()));
        // Curator: unchanged, no owner.
        assert_eq!(
            node_data(NameScheme::Curator, Some("o"), b"10.1.2.3"),
            b"10.1.2.3"
        );
        assert_eq!(parse(NameScheme::Curator, b"10.1.2.3").owner, None);
        // kazoo: the owner is the identifier.
        assert_eq!(
            node_data(NameScheme::Kazoo, Some("worker-1"), b""),
            b"worker-1"
        );
        assert_eq!(node_data(NameScheme::Kazoo, Some("worker-1"), b"id"), b"id");
        assert_eq!(
            parse(NameScheme::Kazoo, b"worker-1").owner.as_deref(),
            Some("worker-1")
        );
        assert_eq!(parse(NameScheme::Kazoo, b"").owner, None);
    }
}
