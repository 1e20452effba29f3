//! Replays the committed fuzz corpus of the `names` and `session` targets
//! (`fuzz/corpus/<target>/`; the `simulation` target's is replayed by
//! adapters/sim/tests/fuzz_corpus_replay.rs) and the minimised crash inputs (`fuzz/regressions/<target>/`) through the very checks the cargo-fuzz
//! targets run, on stable Rust, so `cargo test` guards against regressions.
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
#[path = "../../fuzz/src/session.rs"]
mod session;

use replay::replay;

#[test]
fn names_corpus_replays_clean() {
    replay("names", 10, names::run);
}

#[test]
fn session_corpus_replays_clean() {
    replay("session", 10, session::run);
}
