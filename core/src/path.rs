//! Validation of lock paths, so that bad input is refused before anything is sent.

use crate::event::UsageError;

/// Checks that `path` can be a lock directory: absolute, no trailing `/`, no empty,
/// `.` or `..` segments, no characters ZooKeeper rejects, not the root and not under
/// the reserved `/zookeeper` tree.
///
/// ```
/// assert!(lock_core::validate_lock_path("/locks/job-42").is_ok());
/// assert!(lock_core::validate_lock_path("locks/job").is_err());
/// assert!(lock_core::validate_lock_path("/locks/").is_err());
/// assert!(lock_core::validate_lock_path("/zookeeper/quota").is_err());
/// ```
pub fn validate_lock_path(path: &str) -> Result<(), UsageError> {
    let bad = |reason: &'static str| {
        Err(UsageError::InvalidPath {
            path: path.to_owned(),
            reason,
        })
    };
    if path == "/" {
        return bad("the root cannot be a lock directory");
    }
    if path == "/zookeeper" || path.starts_with("/zookeeper/") {
        return bad("the /zookeeper tree is reserved by the server");
    }
    validate_node_path(path)
}

/// Checks that `path` is a path ZooKeeper accepts for a node: absolute, no trailing
/// `/` (but the root), no empty, `.` or `..` segments, no characters it rejects.
pub(crate) fn validate_node_path(path: &str) -> Result<(), UsageError> {
    let bad = |reason: &'static str| {
        Err(UsageError::InvalidPath {
            path: path.to_owned(),
            reason,
        })
    };
    if path.is_empty() {
        return bad("empty path");
    }
    if !path.starts_with('/') {
        return bad("must be absolute (start with '/')");
    }
    if path == "/" {
        return Ok(());
    }
    if path.ends_with('/') {
        return bad("must not end with '/'");
    }
    for segment in path[1..].split('/') {
        if segment.is_empty() {
            return bad("empty segment ('//')");
        }
        if segment == "." || segment == ".." {
            return bad("relative segment ('.' or '..')");
        }
    }
    if path.chars().any(is_forbidden_char) {
        return bad("contains a character ZooKeeper rejects");
    }
    Ok(())
}

/// The characters ZooKeeper's `PathUtils.validatePath` rejects.
fn is_forbidden_char(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' | '\u{e000}'..='\u{f8ff}' | '\u{fff0}'..='\u{ffff}')
}

/// The ancestors of `path` from the top down, excluding the root and `path` itself:
/// `/a/b/c` gives `["/a", "/a/b"]`.
pub(crate) fn ancestors(path: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, c) in path.char_indices().skip(1) {
        if c == '/' {
            out.push(path[..i].to_owned());
        }
    }
    out
}

/// Splits `/a/b/name` into (`/a/b`, `name`).
pub(crate) fn split_parent(path: &str) -> (&str, &str) {
    match path.rfind('/') {
        Some(0) => ("/", &path[1..]),
        Some(i) => (&path[..i], &path[i + 1..]),
        None => ("", path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_ordinary_paths_and_rejects_every_malformed_shape() {
        for p in [
            "",
            "relative",
            "/",
            "/a/",
            "/a//b",
            "/a/./b",
            "/a/../b",
            "/zookeeper",
            "/zookeeper/config",
            "/a\u{0}b",
            "/a\u{1}",
        ] {
            assert!(validate_lock_path(p).is_err(), "{p:?} accepted");
        }
        for p in ["/a", "/locks/job", "/zookeeperish", "/a/b.c/d-e_f", "/日本"] {
            assert!(validate_lock_path(p).is_ok(), "{p:?} rejected");
        }
    }

    #[test]
    fn ancestors_top_down() {
        assert_eq!(ancestors("/a/b/c"), vec!["/a", "/a/b"]);
        assert!(ancestors("/a").is_empty());
        assert_eq!(split_parent("/a/b/c"), ("/a/b", "c"));
        assert_eq!(split_parent("/a"), ("/", "a"));
    }
}
