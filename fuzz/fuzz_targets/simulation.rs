#![no_main]
//! An arbitrary fault schedule for several clients in lock-sim, with the simulator's
//! invariant checks after every step; see `src/simulation.rs`.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    zklock_fuzz::simulation::run(data);
});
