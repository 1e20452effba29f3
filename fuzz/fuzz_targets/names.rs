#![no_main]
//! Node-name parsing and wrap-aware ordering; see `src/names.rs` for the checks.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    zklock_fuzz::names::run(data);
});
