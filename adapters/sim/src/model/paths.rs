//! Path handling as the ZooKeeper server does it (`PathUtils.validatePath`).

/// Why the server would reject a path (it answers `BadArguments`).
///
/// ```
/// use zklock::sim::validate_path;
/// assert!(validate_path("/a/b", false).is_ok());
/// assert!(validate_path("/", false).is_ok());
/// assert!(validate_path("/a/", false).is_err());
/// // A sequential create may end in '/': the server appends the sequence number.
/// assert!(validate_path("/a/", true).is_ok());
/// assert!(validate_path("/a/../b", false).is_err());
/// ```
pub fn validate_path(path: &str, sequential: bool) -> Result<(), &'static str> {
    if sequential {
        // The server validates `path + "1"`.
        return validate(&format!("{path}1"));
    }
    validate(path)
}

fn validate(path: &str) -> Result<(), &'static str> {
    if path.is_empty() {
        return Err("path length must be > 0");
    }
    if !path.starts_with('/') {
        return Err("path must start with / character");
    }
    if path.len() == 1 {
        return Ok(());
    }
    if path.ends_with('/') {
        return Err("path must not end with / character");
    }
    for segment in path[1..].split('/') {
        if segment.is_empty() {
            return Err("empty node name specified");
        }
        if segment == "." || segment == ".." {
            return Err("relative paths not allowed");
        }
    }
    if path.chars().any(is_invalid_char) {
        return Err("invalid character");
    }
    Ok(())
}

/// The characters the server rejects. Java sees text as UTF-16 code units, so every
/// character beyond the Basic Multilingual Plane (a surrogate pair) is rejected too.
fn is_invalid_char(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' | '\u{e000}'..='\u{f8ff}' | '\u{fff0}'..)
}

/// Splits `/a/b/name` into (`/a/b`, `name`); the parent of `/name` is `/`.
pub(crate) fn split(path: &str) -> (&str, &str) {
    match path.rfind('/') {
        Some(0) => ("/", &path[1..]),
        Some(i) => (&path[..i], &path[i + 1..]),
        None => ("", path),
    }
}

/// `parent/name` without a doubled slash under the root.
pub(crate) fn join(parent: &str, name: &str) -> String {
    if parent == "/" {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}
