//! The server's request size limit, checked before anything is sent.
//!
//! A ZooKeeper server drops the connection of a client that sends a request larger
//! than its `jute.maxbuffer` ([`Config::max_packet`](crate::Config::max_packet)). Sent anyway, such a request
//! fails every other request in flight with it, and after the reconnect whatever
//! re-sends it (a recovery, a cleanup) cuts the connection again: one bad input
//! poisons the whole client. So input that could make a request too large is
//! refused up front with a typed error, and nothing is sent.

use crate::event::UsageError;
use crate::proto::{Op, ACL_ALLOWANCE};

/// Room kept for a participant's name under its lock path: the longest name any
/// scheme creates is Curator's `_c_<uuid>-__WRIT__` (48 characters) plus an
/// 11-character sequence number.
const NAME_ROOM: usize = 64;

/// The largest participant data a node under `lock_path` can hold: what is left of
/// the packet once the create request's header, path, flags and ACLs are counted.
/// A path too long to leave room for even an empty node is an invalid path.
pub(crate) fn room_for_data(max_packet: usize, lock_path: &str) -> Result<usize, UsageError> {
    let node_path = lock_path.len() + 1 + NAME_ROOM;
    let empty_create = Op::Create {
        path: String::new(),
        data: Vec::new(),
        mode: crate::CreateMode::EphemeralSequential,
    }
    .encoded_len()
        + node_path
        + ACL_ALLOWANCE;
    max_packet
        .checked_sub(empty_create)
        .ok_or_else(|| UsageError::InvalidPath {
            path: truncated(lock_path),
            reason: "too long to fit in one ZooKeeper request (Config::max_packet)",
        })
}

/// Refuses a request that would not fit in one packet.
pub(crate) fn check_request(max_packet: usize, op: &Op) -> Result<(), UsageError> {
    let len = op.encoded_len() + ACL_ALLOWANCE;
    if len > max_packet {
        return Err(UsageError::RequestTooLarge {
            len,
            max: max_packet,
        });
    }
    Ok(())
}

/// An error message need not carry a megabyte of path.
fn truncated(path: &str) -> String {
    const KEEP: usize = 64;
    match path.char_indices().nth(KEEP) {
        Some((i, _)) => format!("{}… ({} bytes)", &path[..i], path.len()),
        None => path.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Config;

    #[test]
    fn room_shrinks_with_the_path_and_runs_out() {
        let config = Config::default();
        let short = room_for_data(config.max_packet, "/a").unwrap();
        let long = room_for_data(config.max_packet, &format!("/a{}", "a".repeat(1000))).unwrap();
        assert_eq!(short - long, 1000);
        assert!(short < config.max_packet && short > config.max_packet - 1024);
        let huge = format!("/{}", "a".repeat(config.max_packet));
        let err = room_for_data(config.max_packet, &huge).unwrap_err();
        assert!(
            matches!(&err, UsageError::InvalidPath { path, .. } if path.len() < 100),
            "{err:?}"
        );
    }

    #[test]
    fn a_create_at_the_room_fits_and_one_byte_more_does_not() {
        let config = Config::default();
        let path = "/locks/job";
        let room = room_for_data(config.max_packet, path).unwrap();
        let create = |len: usize| Op::Create {
            path: format!("{path}/{}", "n".repeat(NAME_ROOM)),
            data: vec![0; len],
            mode: crate::CreateMode::EphemeralSequential,
        };
        assert!(check_request(config.max_packet, &create(room)).is_ok());
        assert!(matches!(
            check_request(config.max_packet, &create(room + 1)),
            Err(UsageError::RequestTooLarge { .. })
        ));
    }
}
