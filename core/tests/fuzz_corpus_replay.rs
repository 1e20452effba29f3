//! Replays the committed fuzz corpus (`fuzz/corpus/<target>/`) and the minimised
//! crash inputs (`fuzz/regressions/<target>/`) through the very checks the cargo-fuzz
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
#[path = "../../fuzz/src/session.rs"]
mod session;
#[path = "../../fuzz/src/simulation.rs"]
mod simulation;

use std::path::{Path, PathBuf};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz")
}

/// Every file of `corpus/<target>` and `regressions/<target>`, sorted.
fn inputs(target: &str) -> Vec<PathBuf> {
    if let Some(one) = std::env::var_os("ZKLOCK_FUZZ_FILE") {
        let one = PathBuf::from(one);
        let in_target = one.components().any(|c| c.as_os_str() == target);
        if !in_target {
            return Vec::new();
        }
        return match std::fs::read_dir(&one) {
            // A directory: every file in it.
            Ok(entries) => {
                let mut v: Vec<PathBuf> = entries.map(|e| e.expect("readable").path()).collect();
                v.sort();
                v
            }
            Err(_) => vec![one],
        };
    }
    let mut files = Vec::new();
    for dir in ["corpus", "regressions"] {
        let dir = fuzz_dir().join(dir).join(target);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries {
            let path = e.expect("readable corpus directory").path();
            if path.is_file()
                && !path
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with('.'))
            {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

fn replay(target: &str, min: usize, run: fn(&[u8]) -> bool) {
    let files = inputs(target);
    let single = std::env::var_os("ZKLOCK_FUZZ_FILE").is_some();
    if !single {
        assert!(
            files.len() >= min,
            "expected a seed corpus of at least {min} files for `{target}` under {}, found {}",
            fuzz_dir().display(),
            files.len()
        );
    }
    let mut decoded = 0;
    for f in &files {
        let data = std::fs::read(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        match std::panic::catch_unwind(|| run(&data)) {
            Ok(true) => decoded += 1,
            Ok(false) => {}
            Err(e) => {
                let msg = e
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                panic!("fuzz input {} fails: {msg}", f.display());
            }
        }
    }
    // Bytes that no longer decode (after a change of the input types) test nothing.
    assert!(
        single || decoded * 10 >= files.len() * 9,
        "only {decoded} of {} `{target}` inputs decode: regenerate the corpus (fuzz/README.md)",
        files.len()
    );
}

#[test]
fn names_corpus_replays_clean() {
    replay("names", 10, names::run);
}

#[test]
fn session_corpus_replays_clean() {
    replay("session", 10, session::run);
}

#[test]
fn simulation_corpus_replays_clean() {
    replay("simulation", 10, simulation::run);
}
