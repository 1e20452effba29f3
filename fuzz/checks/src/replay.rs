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

/// The files of `dir` (none if it is missing), without hidden ones.
fn files_in(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .map(|e| e.expect("readable corpus directory").path())
        .filter(|p| {
            p.is_file()
                && !p
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .collect()
}

/// Every file of `corpus/<target>` and `regressions/<target>`, or of
/// `ZKLOCK_FUZZ_FILE` (a file or a directory) when its path names `target`; sorted.
fn inputs(target: &str) -> Vec<PathBuf> {
    let mut files = match std::env::var_os("ZKLOCK_FUZZ_FILE").map(PathBuf::from) {
        Some(one) if !one.components().any(|c| c.as_os_str() == target) => Vec::new(),
        Some(one) if one.is_dir() => files_in(&one),
        Some(one) => vec![one],
        None => ["corpus", "regressions"]
            .iter()
            .flat_map(|d| files_in(&fuzz_dir().join(d).join(target)))
            .collect(),
    };
    files.sort();
    files
}

/// Decodes every committed input of `target` (`fuzz/corpus/<target>/` and
/// `fuzz/regressions/<target>/`, or only `ZKLOCK_FUZZ_FILE` when set) and runs
/// `check` on it ([`crate::decode_and_check`]); panics naming the first input that
/// fails, when fewer than `min` inputs exist, or when under 90% of them still decode.
pub fn replay<C: for<'a> arbitrary::Arbitrary<'a>, R>(
    target: &str,
    min: usize,
    check: fn(&C) -> R,
) {
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
        // The check's own panic message is printed (by the panic hook) above this one.
        match std::panic::catch_unwind(|| crate::decode_and_check(&data, check)) {
            Ok(case) => decoded += usize::from(case),
            Err(_) => panic!(
                "fuzz input {} fails (the panic above says how)",
                f.display()
            ),
        }
    }
    // Bytes that no longer decode (after a change of the input types) test nothing.
    assert!(
        single || decoded * 10 >= files.len() * 9,
        "only {decoded} of {} `{target}` inputs decode: regenerate the corpus (fuzz/README.md)",
        files.len()
    );
}
