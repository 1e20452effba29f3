//! The inline size of a [`Slot`], held to a bound: the client keeps one boxed
//! slot per held lock and waiting acquisition.

use super::Slot;
use std::mem::size_of;

#[test]
fn print_sizes() {
    println!("Slot {}", size_of::<Slot>());
    println!(
        "events {}",
        size_of::<std::collections::VecDeque<lock_core::LockEvent>>()
    );
    println!("LockEvent {}", size_of::<lock_core::LockEvent>());
    println!("status {}", size_of::<crate::LockStatus>());
    println!(
        "section {}",
        size_of::<crate::section_calls::SectionCalls>()
    );
    println!("span {}", size_of::<tracing::Span>());
    println!(
        "metrics {}",
        size_of::<Option<crate::metrics::AcquisitionMetrics>>()
    );
    println!("queued {}", size_of::<Option<crate::status::Queued>>());
    println!("Error {}", size_of::<crate::Error>());
    println!("LockGuard {}", size_of::<crate::LockGuard>());
}
