//! The inline sizes of an acquisition and its parts, held to a bound: the
//! session keeps one boxed [`Acquisition`] per held lock and waiting
//! acquisition, so a field that grows here grows every lock (see BENCHMARKS.md,
//! "What one held lock is made of"). Raise a bound only for a reason that
//! every lock pays for; box what few locks use.

use super::delay::Delay;
use super::detection::Detection;
use super::holder::Holder;
use super::node::{Node, OwnNode};
use super::queue::Queue;
use super::Acquisition;
use crate::spec::LockSpec;
use std::mem::size_of;

#[test]
fn an_acquisition_stays_under_its_size_bound() {
    let parts = [
        ("LockSpec", size_of::<LockSpec>(), 160),
        // The attempt id (16, a u128), the create path (24), the create's
        // state (16), our node (48: its path, sequence and token), two
        // requests in flight (8 each), the duplicates to delete (24), flags.
        ("Node", size_of::<Node>(), 168),
        ("OwnNode", size_of::<OwnNode>(), 56),
        // The directory (24), the cached lower blockers (24), the watched
        // window (24), the listing in flight (8), the place reported (16).
        ("Queue", size_of::<Queue>(), 112),
        ("Holder", size_of::<Holder>(), 72),
        // A downgrade's names (24) and the boxed rest (8).
        ("Detection", size_of::<Detection>(), 40),
        ("Delay", size_of::<Delay>(), 24),
    ];
    for (name, size, bound) in parts {
        println!("{name}: {size} B (bound {bound})");
        assert!(size <= bound, "{name} grew to {size} B (bound {bound})");
    }
    // The parts as measured (each bound above is its size + 8): 536 B; the id
    // (8), the lease (8, boxed), the state and a flag (2), padded to the
    // u128's 16-byte alignment: 560 B, measured 4 Dec 2026 (880 before
    // detection and the lock-delay's wait were boxed, `InFlight` made 8 bytes
    // and the node's stat cut to its token).
    let size = size_of::<Acquisition>();
    println!("Acquisition: {size} B");
    assert!(size <= 576, "Acquisition grew to {size} B (bound 576)");
}
