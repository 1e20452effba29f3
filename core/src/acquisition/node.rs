//! [`OwnNode`]: our node, as far as we know it (shared with the lease step).

use crate::proto::Stat;

/// Our node (or lease node): its path, its sequence and, once read, its stat.
#[derive(Clone, Debug)]
pub(super) struct OwnNode {
    pub(super) path: String,
    pub(super) seq: i32,
    pub(super) stat: Option<Stat>,
}
