//! Input types and checks of zklock's fuzz targets.
//!
//! Each module is also compiled, unchanged, into the workspace's corpus replay test
//! (`core/tests/fuzz_corpus_replay.rs` and
//! `adapters/sim/tests/fuzz_corpus_replay.rs`, via `#[path]`), so the fuzzers and
//! `cargo test` run the very same checks on the same bytes. Keep the modules free of
//! dependencies other than `lock_core`, `lock_sim` and `arbitrary`.
pub mod names;
pub mod session;
pub mod simulation;
