//! Replays the committed fuzz corpus of the `names` target (`fuzz/corpus/names/`)
//! and its minimised crash inputs (`fuzz/regressions/names/`) through the very
//! checks the cargo-fuzz target runs, on stable Rust, so `cargo test` guards
//! against regressions. (The `session` and `simulation` targets serve from lock-sim's
//! ZooKeeper model; adapters/sim/tests/fuzz_corpus_replay.rs replays theirs.)
//!
//! The input types and checks live in `fuzz/src/` and are compiled here unchanged.
//! A failing file is named in the panic message; replay it alone (or a whole
//! directory, e.g. a fuzzer's working corpus) with
//! `ZKLOCK_FUZZ_FILE=<path> ZKLOCK_FUZZ_TRACE=1 cargo test -p lock-core --test fuzz_corpus_replay -- --nocapture`
//! (the path must contain the target's name; `ZKLOCK_FUZZ_TRACE=all` prints the
//! trace of every case, not only of a failing one).

#[path = "../../fuzz/src/names.rs"]
mod names;
#[path = "../../fuzz/src/replay.rs"]
mod replay;

#[test]
fn names_corpus_replays_clean() {
    replay::replay("names", 10, names::run);
}
