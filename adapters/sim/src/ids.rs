//! The simulator's vocabulary at the bottom of the crate: the name of a simulated
//! client, which the invariant checker (`check/`) and the scheduler (`sim/`) both
//! use, so neither imports the other for it.

use std::fmt;

/// Identifies a client of a [`Sim`](crate::Sim) (its index, in the order added).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct ClientId(pub usize);

impl fmt::Display for ClientId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "c{}", self.0)
    }
}
