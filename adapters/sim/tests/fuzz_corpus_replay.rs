//! Replays the committed corpus of the `simulation` fuzz target
//! (`fuzz/corpus/simulation/`, `fuzz/regressions/simulation/`) through the target's
//! own checks on stable Rust. Replay one file with a trace:
//! `ZKLOCK_FUZZ_FILE=<path> ZKLOCK_FUZZ_TRACE=1 cargo test -p lock-sim --test fuzz_corpus_replay -- --nocapture`.

#[path = "../../../fuzz/src/replay.rs"]
mod replay;
#[path = "../../../fuzz/src/simulation.rs"]
mod simulation;

#[test]
fn simulation_corpus_replays_clean() {
    replay::replay("simulation", 10, simulation::run);
}
