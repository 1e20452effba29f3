//! How the listing commands print: one [`Format`], chosen with `--format`, or
//! with the older `--json` and `--dot` (documented, so kept as its aliases).
//! Each command offers the formats it has ([`TextOrJson`] for `ls` and
//! `doctor`, [`AnyFormat`] for `deadlocks`) and reads one [`Format`] back.

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, ValueEnum};

/// An output format.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    /// Text for people: tables and sentences.
    Text,
    /// One JSON object, on one line.
    Json,
    /// A Graphviz digraph (`deadlocks` only).
    Dot,
}

impl Format {
    /// A parser of `--format` that accepts only `offered`.
    fn among(offered: &'static [Format]) -> impl TypedValueParser<Value = Format> {
        PossibleValuesParser::new(offered.iter().filter_map(Format::to_possible_value))
            .map(|name| Format::from_str(&name, false).expect("one of the possible values"))
    }

    fn text_or_json() -> impl TypedValueParser<Value = Format> {
        Format::among(&[Format::Text, Format::Json])
    }

    fn any() -> impl TypedValueParser<Value = Format> {
        Format::among(&[Format::Text, Format::Json, Format::Dot])
    }
}

/// The output options of `ls` and `doctor`: text or JSON.
#[derive(Args, Debug)]
pub(crate) struct TextOrJson {
    /// Output format.
    #[arg(long, value_name = "FORMAT", value_parser = Format::text_or_json(),
          conflicts_with = "json")]
    format: Option<Format>,
    /// Print JSON instead of text (the same as --format json).
    #[arg(long)]
    json: bool,
}

impl TextOrJson {
    /// The format asked for.
    pub(crate) fn format(&self) -> Format {
        match (self.format, self.json) {
            (Some(format), _) => format,
            (None, true) => Format::Json,
            (None, false) => Format::Text,
        }
    }
}

/// The output options of `deadlocks`: text, JSON or Graphviz.
#[derive(Args, Debug)]
pub(crate) struct AnyFormat {
    /// Output format.
    #[arg(long, value_name = "FORMAT", value_parser = Format::any(),
          conflicts_with_all = ["json", "dot"])]
    format: Option<Format>,
    /// Print JSON instead of text (the same as --format json).
    #[arg(long, conflicts_with = "dot")]
    json: bool,
    /// Print a Graphviz digraph instead of text (the same as --format dot).
    #[arg(long)]
    dot: bool,
}

impl AnyFormat {
    /// The format asked for.
    pub(crate) fn format(&self) -> Format {
        match (self.format, self.json, self.dot) {
            (Some(format), _, _) => format,
            (None, true, _) => Format::Json,
            (None, false, true) => Format::Dot,
            (None, false, false) => Format::Text,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Ls {
        #[command(flatten)]
        output: TextOrJson,
    }

    #[derive(Parser)]
    struct Deadlocks {
        #[command(flatten)]
        output: AnyFormat,
    }

    fn ls(args: &[&str]) -> Result<Format, clap::Error> {
        let line = [&["ls"][..], args].concat();
        Ls::try_parse_from(line).map(|ls| ls.output.format())
    }

    fn deadlocks(args: &[&str]) -> Result<Format, clap::Error> {
        let line = [&["deadlocks"][..], args].concat();
        Deadlocks::try_parse_from(line).map(|d| d.output.format())
    }

    #[test]
    fn the_flags_are_aliases_of_format() {
        assert_eq!(ls(&[]).unwrap(), Format::Text);
        assert_eq!(ls(&["--json"]).unwrap(), Format::Json);
        assert_eq!(ls(&["--format", "json"]).unwrap(), Format::Json);
        assert_eq!(ls(&["--format", "text"]).unwrap(), Format::Text);
        assert_eq!(deadlocks(&["--dot"]).unwrap(), Format::Dot);
        assert_eq!(deadlocks(&["--json"]).unwrap(), Format::Json);
        assert_eq!(deadlocks(&["--format", "dot"]).unwrap(), Format::Dot);
    }

    #[test]
    fn a_command_offers_only_its_formats_and_one_at_a_time() {
        assert!(ls(&["--format", "dot"]).is_err());
        assert!(ls(&["--format", "json", "--json"]).is_err());
        assert!(deadlocks(&["--json", "--dot"]).is_err());
        assert!(deadlocks(&["--format", "text", "--dot"]).is_err());
    }
}
