//! The inline size of a [`Slot`], held to a bound: the client keeps one boxed
//! slot per held lock and waiting acquisition, so a field that grows here
//! grows every lock. Raise the bound only for a reason that every lock pays
//! for; box what few locks use (as the section calls, fenced writes and
//! tracing span are).

use super::locks::Slot;
use std::mem::size_of;

#[test]
fn a_slot_stays_under_its_size_bound() {
    // The event queue (32), the status and four flags (8), the section calls
    // (8, boxed), the fenced writes (8, boxed), the election (16), the span
    // (8, boxed), the metrics (80: two labels' values, the start, the grant
    // and handoff times as nanoseconds, the stage and a hash of the node
    // waited behind), the queue place (8, boxed), the wakers (24): 192 B.
    let size = size_of::<Slot>();
    println!("Slot: {size} B");
    assert!(size <= 200, "Slot grew to {size} B (bound 200)");
    let metrics = size_of::<Option<crate::metrics::AcquisitionMetrics>>();
    assert!(
        metrics <= 88,
        "AcquisitionMetrics grew to {metrics} B (bound 88)"
    );
}
