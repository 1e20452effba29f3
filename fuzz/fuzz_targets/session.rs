#![no_main]
//! Arbitrary user calls, replies, watch firings, session changes and time steps into
//! one `lock_core::Session`; see `checks/src/session/` for the checks.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    lock_fuzz_checks::decode_and_check(data, lock_fuzz_checks::session::check_case);
});
