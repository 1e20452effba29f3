//! The inline sizes of an acquisition and its parts, held to a bound: the
//! session keeps one boxed [`Acquisition`] per held lock and waiting
//! acquisition, so a field that grows here grows every lock (see BENCHMARKS.md,
//! "What one held lock is made of"). Raise a bound only for a reason that
//! every lock pays for; box what few locks use.

use super::delay::Delay;
use super::detection::Detection;
use super::holder::SectionsAndWrites;
use super::node::{Node, OwnNode};
use super::queue::Queue;
use super::Acquisition;
use crate::spec::LockSpec;
use std::mem::size_of;

#[test]
fn an_acquisition_stays_under_its_size_bound() {
    let parts = [
        // The path (24), the recipe (8), the scheme and five flags, the
        // boxed rare fields (8).
        ("LockSpec", size_of::<LockSpec>(), 56),
        // The attempt id (16, a u128), the create's state (16), our node
        // (40: its path, sequence and token), two requests in flight (8
        // each), the duplicates to delete (24), flags. (The create path is
        // made where needed.)
        ("Node", size_of::<Node>(), 136),
        ("OwnNode", size_of::<OwnNode>(), 56),
        // Boxed, a waiter's only: the cached lower blockers (24), the
        // watched window (24), the listing in flight (8), the place reported
        // (16). (The directory is the acquisition's.)
        ("Queue", size_of::<Queue>(), 88),
        ("SectionsAndWrites", size_of::<SectionsAndWrites>(), 72),
        // A downgrade's names (24) and the boxed rest (8).
        ("Detection", size_of::<Detection>(), 40),
        ("Delay", size_of::<Delay>(), 24),
    ];
    for (name, size, bound) in parts {
        println!("{name}: {size} B (bound {bound})");
        assert!(size <= bound, "{name} grew to {size} B (bound {bound})");
    }
    // The parts inline (the queue boxed, 8), the id (8), the lease (8,
    // boxed), the state and a flag (2), padded to the u128's 16-byte alignment.
    let size = size_of::<Acquisition>();
    println!("Acquisition: {size} B");
    assert!(size <= 320, "Acquisition grew to {size} B (bound 320)");
}
