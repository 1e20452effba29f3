#![no_main]
//! Node-name parsing and wrap-aware ordering; see `checks/src/names.rs` for the checks.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    lock_fuzz_checks::decode_and_check(data, lock_fuzz_checks::names::check_case);
});
