//! The inline sizes of an acquisition's parts, held to a bound: the session
//! keeps one boxed [`Acquisition`] per held or waiting lock, so a field that
//! grows here grows every lock (see BENCHMARKS.md, "What one held lock is made
//! of").

use super::delay::Delay;
use super::detection::Detection;
use super::holder::Holder;
use super::node::{Node, OwnNode};
use super::queue::Queue;
use super::Acquisition;
use crate::spec::LockSpec;
use std::mem::size_of;

#[test]
fn print_sizes() {
    println!("Acquisition {}", size_of::<Acquisition>());
    println!("LockSpec {}", size_of::<LockSpec>());
    println!("Node {}", size_of::<Node>());
    println!("OwnNode {}", size_of::<OwnNode>());
    println!("Queue {}", size_of::<Queue>());
    println!("Holder {}", size_of::<Holder>());
    println!("Detection {}", size_of::<Detection>());
    println!("Delay {}", size_of::<Delay>());
    println!("Stat {}", size_of::<crate::proto::Stat>());
    println!("Purpose {}", size_of::<crate::requests::Purpose>());
}
