//! The comparison table: one row per measured figure, one value per library and
//! round; a cell is the median over rounds, and a row's ratio line gives, per
//! library, the median and the spread of zklock's value divided by that
//! library's in the same round.

use super::peer::Library;
use lock_testkit::measure::median;
use std::collections::BTreeMap;

/// How a row's values print.
#[derive(Clone, Copy)]
pub enum Unit {
    /// Seconds, printed as µs or ms.
    Time,
    /// A plain number with this many decimals.
    Number(usize),
}

pub struct Row {
    pub label: String,
    pub unit: Unit,
    /// Whether zklock / other ratios are printed under the row.
    pub ratios: bool,
    pub values: BTreeMap<&'static str, Vec<f64>>,
}

#[derive(Default)]
pub struct Table {
    pub rows: Vec<Row>,
}

impl Table {
    /// The row labelled `label`, made on first use.
    pub fn row(&mut self, label: &str, unit: Unit, ratios: bool) -> &mut Row {
        if let Some(i) = self.rows.iter().position(|r| r.label == label) {
            return &mut self.rows[i];
        }
        self.rows.push(Row {
            label: label.to_owned(),
            unit,
            ratios,
            values: BTreeMap::new(),
        });
        self.rows.last_mut().unwrap()
    }

    pub fn push(&mut self, label: &str, unit: Unit, ratios: bool, lib: Library, value: f64) {
        self.row(label, unit, ratios)
            .values
            .entry(lib.key())
            .or_default()
            .push(value);
    }

    /// Markdown, with a column per library in `libraries`.
    pub fn markdown(&self, libraries: &[(Library, String)]) -> String {
        let mut out = String::from("| |");
        for (_, name) in libraries {
            out += &format!(" {name} |");
        }
        out += "\n|---|";
        for _ in libraries {
            out += "---|";
        }
        out += "\n";
        for row in &self.rows {
            out += &format!("| {} |", row.label);
            for (lib, _) in libraries {
                let cell = row
                    .values
                    .get(lib.key())
                    .map_or_else(|| "–".into(), |v| format_value(median(v), row.unit));
                out += &format!(" {cell} |");
            }
            out += "\n";
            if row.ratios {
                out += "| ↳ zklock ÷ this, per round: median [min–max] |";
                for (lib, _) in libraries {
                    out += &format!(" {} |", self.ratio_cell(row, *lib));
                }
                out += "\n";
            }
        }
        out
    }

    fn ratio_cell(&self, row: &Row, lib: Library) -> String {
        if lib == Library::Zklock {
            return String::new();
        }
        let (Some(z), Some(o)) = (row.values.get("zklock"), row.values.get(lib.key())) else {
            return String::new();
        };
        let r: Vec<f64> = z.iter().zip(o).map(|(a, b)| a / b).collect();
        if r.is_empty() {
            return String::new();
        }
        let min = r.iter().copied().fold(f64::INFINITY, f64::min);
        let max = r.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if r.len() == 1 {
            format!("{:.2}", r[0])
        } else {
            format!("{:.2} [{min:.2}–{max:.2}]", median(&r))
        }
    }
}

pub fn format_value(v: f64, unit: Unit) -> String {
    if v.is_nan() {
        return "–".into();
    }
    match unit {
        Unit::Time if v < 1e-3 => format!("{:.0} µs", v * 1e6),
        Unit::Time if v < 1.0 => format!("{:.2} ms", v * 1e3),
        Unit::Time => format!("{v:.2} s"),
        Unit::Number(d) => lock_testkit::measure::thousands(format!("{v:.d$}")),
    }
}
