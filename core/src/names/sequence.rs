//! Sequence numbers as the server writes them (`%010d` of an `i32`) and their
//! wrap-aware order: the one part of a node's name every scheme shares.

use std::cmp::Ordering;

/// Formats a sequence number as the server does (`%010d`).
pub fn format_sequence(seq: i32) -> String {
    format!("{seq:010}")
}

/// Parses a sequence suffix written as the server writes it: exactly `%010d` of an
/// `i32` (10 characters, or 11 for values below -999999999).
pub fn parse_sequence(s: &str) -> Option<i32> {
    let b = s.as_bytes();
    let digits = match (b.len(), b.first()) {
        (10, Some(b'-')) | (11, Some(b'-')) => &b[1..],
        (10, _) => b,
        _ => return None,
    };
    if !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let v: i32 = s.parse().ok()?;
    // Only canonical `%010d` spellings: "-000000000" is written "0000000000", and the
    // 11-character form is reserved for values below -999999999.
    let canonical = match b.len() {
        11 => v < -999_999_999,
        _ => !(b[0] == b'-' && v == 0),
    };
    canonical.then_some(v)
}

/// Position of `seq` relative to `reference` in serial-number arithmetic (RFC 1982
/// style over `i32`): negative means created before, positive after. Valid while the
/// two are less than 2^31 creations apart, which holds for any live lock directory.
///
/// ```
/// use lock_core::names::relative_sequence;
/// assert!(relative_sequence(5, 9) < 0);
/// // Across the wrap: 2147483647 came before -2147483648.
/// assert!(relative_sequence(i32::MAX, i32::MIN) < 0);
/// ```
pub fn relative_sequence(seq: i32, reference: i32) -> i32 {
    seq.wrapping_sub(reference)
}

/// Sorts the participants of one directory oldest first, wrap-aware: relative to any
/// member (the first), which orders the set correctly while it spans fewer than 2^31
/// creations, as any live lock directory does.
pub(crate) fn sort_by_sequence<T>(items: &mut [T], seq: impl Fn(&T) -> i32) {
    if let Some(reference) = items.first().map(&seq) {
        items.sort_by_key(|item| relative_sequence(seq(item), reference));
    }
}

/// Wrap-aware comparison of two sequence numbers seen in the same directory.
pub fn compare_sequences(a: i32, b: i32) -> Ordering {
    relative_sequence(a, b).cmp(&0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_widths_round_trip() {
        for v in [
            0,
            1,
            999_999_999,
            i32::MAX,
            -1,
            -5,
            -999_999_999,
            -1_000_000_000,
            i32::MIN,
        ] {
            let s = format_sequence(v);
            assert!(s.len() == 10 || s.len() == 11);
            assert_eq!(parse_sequence(&s), Some(v), "{s}");
        }
        assert_eq!(format_sequence(i32::MIN), "-2147483648");
        assert_eq!(format_sequence(-5), "-000000005");
        for bad in [
            "",
            "123",
            "00000000001",
            "+000000001",
            "000000000a",
            "-00000000001",
            "2147483648",
        ] {
            assert_eq!(parse_sequence(bad), None, "{bad}");
        }
    }

    #[test]
    fn wrap_aware_order() {
        assert_eq!(compare_sequences(i32::MAX, i32::MIN), Ordering::Less);
        assert_eq!(compare_sequences(-1, 0), Ordering::Less);
        assert_eq!(compare_sequences(3, 3), Ordering::Equal);
        assert_eq!(compare_sequences(10, 2), Ordering::Greater);
    }
}
