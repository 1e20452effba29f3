//! Input types and checks of zklock's fuzz targets, one module per target. The
//! cargo-fuzz targets (`fuzz/fuzz_targets/`) feed them the fuzzer's bytes, the
//! crate's test replays the committed corpus through them on stable Rust
//! ([`replay`]): the same checks on the same bytes.
#![forbid(unsafe_code)]

pub mod names;
pub mod replay;
pub mod session;
pub mod simulation;

use lock_core::names::{format_sequence, node_prefix};
use lock_core::{AttemptId, NameScheme, NodeKind};

/// The name of the node of `scheme`, `attempt` and `kind` with sequence number `seq`.
pub fn node_name(scheme: NameScheme, attempt: AttemptId, kind: NodeKind, seq: i32) -> String {
    format!(
        "{}{}",
        node_prefix(scheme, attempt, kind),
        format_sequence(seq)
    )
}

/// The item of `items` a fuzzer's number `i` picks (`i` modulo the length), or
/// `None` when there is nothing to pick.
pub fn pick<T>(items: &[T], i: impl Into<usize>) -> Option<&T> {
    (!items.is_empty()).then(|| &items[i.into() % items.len()])
}

/// The containers an administrator creates so that `dir` exists: its ancestors
/// below the root, outermost first, then `dir`.
pub fn dir_and_ancestors(dir: &str) -> impl Iterator<Item = &str> {
    dir.match_indices('/')
        .skip(1)
        .map(|(i, _)| &dir[..i])
        .chain([dir])
}

/// Decodes a case from fuzzer bytes and checks it with `check` (each target's
/// `run`). Returns whether the bytes decoded to a case (the others test nothing).
pub fn decode_and_check<C: for<'a> arbitrary::Arbitrary<'a>, R>(
    data: &[u8],
    check: fn(&C) -> R,
) -> bool {
    match C::arbitrary_take_rest(arbitrary::Unstructured::new(data)) {
        Ok(case) => {
            check(&case);
            true
        }
        Err(_) => false,
    }
}
