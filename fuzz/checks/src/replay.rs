//! Corpus replay on stable Rust, for the crate's test
//! (`fuzz/checks/tests/corpus_replay.rs`); the fuzzers themselves do not use it.

use std::path::{Path, PathBuf};

/// The `fuzz/` directory of the repository (found upwards from this crate).
fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .map(|p| p.join("fuzz"))
        .find(|p| p.join("corpus").is_dir())
        .expect("the repository's fuzz/corpus directory")
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

/// Runs `run` on every committed input of `target` (`fuzz/corpus/<target>/` and
/// `fuzz/regressions/<target>/`, or only `ZKLOCK_FUZZ_FILE` when set); panics
/// naming the first input that fails, when fewer than `min` inputs exist, or when
/// under 90% of them still decode (`run` returns whether its input decoded).
pub fn replay(target: &str, min: usize, run: fn(&[u8]) -> bool) {
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
