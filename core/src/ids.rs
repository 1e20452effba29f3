//! The identifiers everything else speaks of: an acquisition's [`LockId`] and a
//! holder's [`FencingToken`].

use std::fmt;

/// Identifies one acquisition within a [`Session`](crate::Session).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct LockId(pub u64);

impl fmt::Display for LockId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "lock{}", self.0)
    }
}

/// A fencing token: the `czxid` of the holder's lock node.
///
/// ZooKeeper's zxids grow with every write, across parent re-creation, so tokens of
/// successive exclusive holders of a lock strictly increase. Pass it to the resource
/// you protect and reject writes carrying a lower token than one already seen.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct FencingToken(pub i64);

impl fmt::Display for FencingToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}
