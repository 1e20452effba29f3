#![no_main]
//! An arbitrary fault schedule for several clients in lock-sim, with the simulator's
//! invariant checks after every step; see `checks/src/simulation/`.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    lock_fuzz_checks::decode_and_check(data, lock_fuzz_checks::simulation::check_case);
});
