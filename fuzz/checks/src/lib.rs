//! Input types and checks of zklock's fuzz targets, one module per target.
//!
//! The cargo-fuzz targets (`fuzz/fuzz_targets/`) feed them the fuzzer's bytes; the
//! crate's corpus replay test (`fuzz/checks/tests/corpus_replay.rs`) feeds them the
//! committed corpus on stable Rust ([`replay`]), so the fuzzers and `cargo test`
//! run the very same checks on the same bytes. The crate depends on nothing but `lock_core`,
//! `lock_sim` and `arbitrary`.
#![forbid(unsafe_code)]

pub mod names;
pub mod replay;
pub mod session;
pub mod simulation;

/// Decodes a case from fuzzer bytes and checks it with `check` (each target's
/// `run`). Returns whether the bytes decoded to a case (the others test nothing).
pub fn decode_and_check<C: for<'a> arbitrary::Arbitrary<'a>, R>(
    data: &[u8],
    check: fn(&C) -> R,
) -> bool {
    match C::arbitrary_take_rest(arbitrary::Unstructured::new(data)) {
        Ok(case) => {
            check(&case);
            true
        }
        Err(_) => false,
    }
}
