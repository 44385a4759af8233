//! A small table type rendered as aligned text, CSV or JSON.

use serde_json::{Map, Value};
use std::fmt::Write;

/// Column alignment in text output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// Rows of cells under named columns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    pub title: Option<String>,
    pub columns: Vec<(String, Align)>,
    pub rows: Vec<Vec<String>>,
    /// Lines printed under the text table (sources, caveats).
    pub notes: Vec<String>,
}

impl Table {
    /// Columns named `cols`; the first is left-aligned, the rest right.
    pub fn new<S: Into<String>>(cols: impl IntoIterator<Item = S>) -> Table {
        let columns = cols
            .into_iter()
            .enumerate()
            .map(|(i, c)| (c.into(), if i == 0 { Align::Left } else { Align::Right }))
            .collect();
        Table {
            columns,
            ..Table::default()
        }
    }
    pub fn title(mut self, t: impl Into<String>) -> Table {
        self.title = Some(t.into());
        self
    }
    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        let mut r: Vec<String> = cells.into_iter().map(Into::into).collect();
        r.resize(self.columns.len(), String::new());
        self.rows.push(r);
    }
    pub fn note(&mut self, n: impl Into<String>) {
        self.notes.push(n.into());
    }

    /// Aligned plain text.
    pub fn to_text(&self) -> String {
        let mut w: Vec<usize> = self.columns.iter().map(|(c, _)| c.chars().count()).collect();
        for r in &self.rows {
            for (i, c) in r.iter().enumerate() {
                w[i] = w[i].max(c.chars().count());
            }
        }
        let mut out = String::new();
        if let Some(t) = &self.title {
            let _ = writeln!(out, "{t}");
        }
        let line = |out: &mut String, cells: &mut dyn Iterator<Item = &str>| {
            let mut first = true;
            for (i, c) in cells.enumerate() {
                if !first {
                    out.push_str("  ");
                }
                first = false;
                let pad = w[i] - c.chars().count();
                match self.columns[i].1 {
                    Align::Left if i + 1 == self.columns.len() => out.push_str(c),
                    Align::Left => {
                        out.push_str(c);
                        out.extend(std::iter::repeat_n(' ', pad));
                    }
                    Align::Right => {
                        out.extend(std::iter::repeat_n(' ', pad));
                        out.push_str(c);
                    }
                }
            }
            out.push('\n');
        };
        line(&mut out, &mut self.columns.iter().map(|(c, _)| c.as_str()));
        let rule: Vec<String> = w.iter().map(|&n| "-".repeat(n)).collect();
        line(&mut out, &mut rule.iter().map(String::as_str));
        for r in &self.rows {
            line(&mut out, &mut r.iter().map(String::as_str));
        }
        // Notes are prose: wrapped to 80 columns (the table itself is as
        // wide as its cells), never inside a hyphenated name.
        let wrap = textwrap::Options::new(80).word_splitter(textwrap::WordSplitter::NoHyphenation);
        for n in &self.notes {
            let _ = writeln!(out, "{}", textwrap::fill(n, &wrap));
        }
        out
    }

    /// RFC 4180 CSV (header line, then rows).
    pub fn to_csv(&self) -> String {
        let mut out = String::new();
        let header: Vec<&str> = self.columns.iter().map(|(c, _)| c.as_str()).collect();
        push_csv_line(&mut out, header.iter().copied());
        for r in &self.rows {
            push_csv_line(&mut out, r.iter().map(String::as_str));
        }
        out
    }

    /// The table as printed, for `tables.json` (which `fairsched report`
    /// renders): `{"title", "columns", "rows", "notes"}`, every cell the
    /// string shown.
    pub fn to_doc(&self) -> Value {
        serde_json::json!({
            "title": self.title,
            "columns": self.columns.iter().map(|(c, _)| c.as_str()).collect::<Vec<_>>(),
            "rows": self.rows,
            "notes": self.notes,
        })
    }

    /// Reads back what [`Table::to_doc`] wrote; `None` if `v` is not such
    /// a document.
    pub fn from_doc(v: &Value) -> Option<Table> {
        let strings = |v: &Value| -> Option<Vec<String>> {
            v.as_array()?
                .iter()
                .map(|c| c.as_str().map(str::to_string))
                .collect()
        };
        let mut t = Table::new(strings(v.get("columns")?)?);
        t.title = v.get("title").and_then(Value::as_str).map(str::to_string);
        for r in v.get("rows")?.as_array()? {
            t.row(strings(r)?);
        }
        t.notes = match v.get("notes") {
            None | Some(Value::Null) => Vec::new(),
            Some(n) => strings(n)?,
        };
        Some(t)
    }

    /// An array of objects keyed by column name; numeric-looking cells
    /// become JSON numbers, empty cells `null`.
    pub fn to_json(&self) -> Value {
        Value::Array(
            self.rows
                .iter()
                .map(|r| {
                    let mut m = Map::new();
                    for ((c, _), v) in self.columns.iter().zip(r) {
                        m.insert(c.clone(), cell_value(v));
                    }
                    Value::Object(m)
                })
                .collect(),
        )
    }
}

/// The file a run writes its printed tables to, for `fairsched report`.
pub const TABLES_JSON: &str = "tables.json";

/// The bytes of `tables.json`: `{"tables": [doc, ...]}` in printed order.
pub fn tables_json<'a>(tables: impl IntoIterator<Item = &'a Table>) -> Vec<u8> {
    let docs: Vec<Value> = tables.into_iter().map(Table::to_doc).collect();
    crate::files::json_bytes(&serde_json::json!({ "tables": docs }))
}

fn cell_value(v: &str) -> Value {
    if v.is_empty() {
        return Value::Null;
    }
    if let Ok(i) = v.parse::<i64>() {
        return Value::from(i);
    }
    match v.parse::<f64>() {
        Ok(f) if f.is_finite() => Value::from(f),
        _ => Value::from(v),
    }
}

/// Appends one CSV line, quoting cells that need it.
pub fn push_csv_line<'a>(out: &mut String, cells: impl Iterator<Item = &'a str>) {
    for (i, c) in cells.enumerate() {
        if i > 0 {
            out.push(',');
        }
        if c.contains([',', '"', '\n', '\r']) {
            out.push('"');
            out.push_str(&c.replace('"', "\"\""));
            out.push('"');
        } else {
            out.push_str(c);
        }
    }
    out.push('\n');
}

/// A float with `d` decimals, without a negative zero.
pub fn fixed(x: f64, d: usize) -> String {
    let s = format!("{x:.d$}");
    if s.starts_with('-') && s[1..].chars().all(|c| c == '0' || c == '.') {
        s[1..].to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_doc_reads_back_as_the_same_table() {
        let mut t = Table::new(["policy", "mean wait (s)"]).title("Ours");
        t.row(["easy", "12.5"]);
        t.row(["fcfs", ""]);
        t.note("a note");
        let back = Table::from_doc(&t.to_doc()).expect("a table doc");
        assert_eq!(back.to_text(), t.to_text());
        assert_eq!(back.notes, t.notes);
        assert!(Table::from_doc(&serde_json::json!({"columns": [1]})).is_none());
    }

    use super::*;

    #[test]
    fn text_csv_and_json() {
        let mut t = Table::new(["policy", "wait"]).title("T");
        t.row(["fifo", "12.5"]);
        t.row(["a,b", "3"]);
        assert_eq!(
            t.to_text(),
            "T\npolicy  wait\n------  ----\nfifo    12.5\na,b        3\n"
        );
        assert_eq!(t.to_csv(), "policy,wait\nfifo,12.5\n\"a,b\",3\n");
        assert_eq!(t.to_json()[1]["wait"], Value::from(3));
        assert_eq!(fixed(-0.0001, 2), "0.00");
        t.row(["none", ""]);
        assert_eq!(t.to_json()[2]["wait"], Value::Null);
    }
}
