//! A minimal JSON writer for `--json` output (objects, arrays, strings, numbers,
//! null), so that the command needs no serde for a couple of fixed shapes.

use std::fmt::Write;

/// Appends `s` as a JSON string literal (RFC 8259: `"` and `\` escaped, control
/// characters as `\n`, `\t`, ... or `\u00XX`; everything else, non-ASCII
/// included, verbatim since the output is UTF-8).
pub(crate) fn string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Builds one JSON object, field by field, in the order they are added.
pub(crate) struct Object<'a> {
    out: &'a mut String,
    first: bool,
}

impl<'a> Object<'a> {
    /// Opens an object at the end of `out`.
    pub(crate) fn new(out: &'a mut String) -> Self {
        out.push('{');
        Object { out, first: true }
    }

    /// Writes `"name":` and returns the buffer for the value.
    fn key(&mut self, name: &str) -> &mut String {
        if !self.first {
            self.out.push(',');
        }
        self.first = false;
        string(self.out, name);
        self.out.push(':');
        self.out
    }

    /// A string field.
    pub(crate) fn str(&mut self, name: &str, value: &str) -> &mut Self {
        let out = self.key(name);
        string(out, value);
        self
    }

    /// A string field, or `null`.
    pub(crate) fn opt_str(&mut self, name: &str, value: Option<&str>) -> &mut Self {
        match value {
            Some(v) => self.str(name, v),
            None => self.raw(name, "null"),
        }
    }

    /// An integer field.
    pub(crate) fn int(&mut self, name: &str, value: i64) -> &mut Self {
        let out = self.key(name);
        let _ = write!(out, "{value}");
        self
    }

    /// An integer field, or `null`.
    pub(crate) fn opt_int(&mut self, name: &str, value: Option<i64>) -> &mut Self {
        match value {
            Some(v) => self.int(name, v),
            None => self.raw(name, "null"),
        }
    }

    /// A boolean field.
    pub(crate) fn bool(&mut self, name: &str, value: bool) -> &mut Self {
        self.raw(name, if value { "true" } else { "false" })
    }

    /// An array of strings.
    pub(crate) fn strs<S: AsRef<str>>(&mut self, name: &str, values: &[S]) -> &mut Self {
        self.array(name, values, |out, v| string(out, v.as_ref()))
    }

    /// An array whose items `item` writes (each one complete JSON value).
    pub(crate) fn array<T>(
        &mut self,
        name: &str,
        items: &[T],
        mut item: impl FnMut(&mut String, &T),
    ) -> &mut Self {
        let out = self.key(name);
        out.push('[');
        for (i, v) in items.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            item(out, v);
        }
        out.push(']');
        self
    }

    /// A field whose value is already JSON text.
    pub(crate) fn raw(&mut self, name: &str, json: &str) -> &mut Self {
        self.key(name).push_str(json);
        self
    }

    /// Closes the object.
    pub(crate) fn end(&mut self) {
        self.out.push('}');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quoted(s: &str) -> String {
        let mut out = String::new();
        string(&mut out, s);
        out
    }

    #[test]
    fn strings_are_escaped() {
        assert_eq!(quoted("plain"), r#""plain""#);
        assert_eq!(quoted(r#"a"b\c"#), r#""a\"b\\c""#);
        assert_eq!(quoted("l1\nl2\t\r"), r#""l1\nl2\t\r""#);
        assert_eq!(quoted("\u{0}\u{1f}\u{8}\u{c}"), r#""\u0000\u001f\b\f""#);
        // Non-ASCII and DEL stay verbatim (valid in a UTF-8 JSON text).
        assert_eq!(quoted("é→\u{7f}"), "\"é→\u{7f}\"");
    }

    #[test]
    fn objects_and_arrays() {
        let mut out = String::new();
        Object::new(&mut out)
            .str("a", "x")
            .opt_str("b", None)
            .int("c", -3)
            .opt_int("h", None)
            .bool("d", true)
            .strs("e", &["p", "q"])
            .array("f", &[1, 2], |o, n| Object::new(o).int("n", *n).end())
            .strs::<&str>("g", &[])
            .end();
        assert_eq!(
            out,
            r#"{"a":"x","b":null,"c":-3,"h":null,"d":true,"e":["p","q"],"f":[{"n":1},{"n":2}],"g":[]}"#
        );
    }
}
