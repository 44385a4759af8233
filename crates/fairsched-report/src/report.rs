//! `fairsched report`: a run folder read into a [`Section`] of the page.
//!
//! Which kind of run a folder holds is told by its files: `summary.json`
//! with `experiment` (an experiment), with `stats` (`trace stats`), with
//! `policy` (one `simulate` run); `comparison.json` (`simulate` with
//! several policies, one folder each); `tau.json` (`trace tau`). What
//! cannot be read is recorded in the section's problems, naming the file
//! and the field, and the rest is still shown.

use crate::html::{Block, HtmlTable, Section};
use crate::table::{TABLES_JSON, Table};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Colour of a Gantt chart's tasks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ColorBy {
    #[default]
    User,
    Org,
}

/// What the reader may choose.
#[derive(Clone, Debug)]
pub struct Options {
    /// The Gantt chart's window, seconds of the run's clock (start,
    /// length); `None`: a window chosen from the run (see the simulate
    /// section).
    pub gantt_window: Option<(f64, f64)>,
    pub color_by: ColorBy,
    /// Rows shown per table before it is cut.
    pub max_rows: usize,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            gantt_window: None,
            color_by: ColorBy::User,
            max_rows: 60,
        }
    }
}

/// A run folder being read: where it is and what went wrong so far.
#[derive(Debug)]
pub struct RunFolder {
    pub dir: PathBuf,
    /// The folder as the user named it (for messages).
    pub shown: String,
    pub problems: Vec<String>,
}

/// At most this many bytes of a file are read into the page (a figure or
/// a JSON document); a bigger one is a problem, not an out-of-memory.
const MAX_FILE: u64 = 64 << 20;

impl RunFolder {
    pub fn new(dir: &Path) -> RunFolder {
        RunFolder {
            dir: dir.to_path_buf(),
            shown: dir.display().to_string(),
            problems: Vec::new(),
        }
    }

    /// `name` inside the folder, as shown in messages.
    pub fn name(&self, name: &str) -> String {
        self.dir.join(name).display().to_string()
    }

    pub fn has(&self, name: &str) -> bool {
        self.dir.join(name).is_file()
    }

    pub fn problem(&mut self, p: impl Into<String>) {
        self.problems.push(p.into());
    }

    /// The file's text; `None` (and a problem) when it is missing, too
    /// big or not UTF-8.
    pub fn text(&mut self, name: &str) -> Option<String> {
        let path = self.dir.join(name);
        let shown = self.name(name);
        match std::fs::metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.problem(format!("{shown}: missing"));
                return None;
            }
            Err(e) => {
                self.problem(format!("{shown}: {e}"));
                return None;
            }
            Ok(m) if m.len() > MAX_FILE => {
                self.problem(format!(
                    "{shown}: {} bytes, more than the {} MiB read into a page",
                    m.len(),
                    MAX_FILE >> 20
                ));
                return None;
            }
            Ok(_) => {}
        }
        match std::fs::read_to_string(&path) {
            Ok(s) => Some(s),
            Err(e) => {
                self.problem(format!("{shown}: {e}"));
                None
            }
        }
    }

    /// The file parsed as JSON; `None` (and a problem naming the line and
    /// column) when it cannot be.
    pub fn json(&mut self, name: &str) -> Option<Value> {
        let text = self.text(name)?;
        match serde_json::from_str(&text) {
            Ok(v) => Some(v),
            Err(e) => {
                let shown = self.name(name);
                self.problem(format!("{shown}:{}:{}: not JSON: {e}", e.line(), e.column()));
                None
            }
        }
    }

    /// The field at `path` (`a.b.c`, array indices as numbers) of the
    /// document read from `file`, as `pick` reads it; `null` is `None`
    /// without a problem, a missing field or one `pick` refuses is `None`
    /// with a problem saying it `expected` something else.
    pub fn typed<'v, T>(
        &mut self,
        doc: &'v Value,
        file: &str,
        path: &str,
        expected: &str,
        pick: impl FnOnce(&'v Value) -> Option<T>,
    ) -> Option<T> {
        let found = match lookup(doc, path) {
            Some(Value::Null) => return None,
            Some(v) => match pick(v) {
                Some(t) => return Some(t),
                None => format!("field `{path}`: expected {expected}, found {}", type_name(v)),
            },
            None => format!("field `{path}` is missing (a run of an older fairsched?)"),
        };
        let shown = self.name(file);
        self.problem(format!("{shown}: {found}"));
        None
    }

    /// A number at `path`, with the rules of [`RunFolder::typed`].
    pub fn num(&mut self, doc: &Value, file: &str, path: &str) -> Option<f64> {
        self.typed(doc, file, path, "a number", Value::as_f64)
    }

    /// A string at `path`, with the rules of [`RunFolder::typed`].
    pub fn str(&mut self, doc: &Value, file: &str, path: &str) -> Option<String> {
        self.typed(doc, file, path, "a string", |v| v.as_str().map(str::to_string))
    }

    /// The tables the run printed, from `tables.json`, as blocks; with no
    /// such file, a problem saying so (runs of fairsched before it wrote
    /// one) and no block.
    pub fn printed_tables(&mut self, opts: &Options) -> Vec<Block> {
        if !self.has(TABLES_JSON) {
            let shown = self.name(TABLES_JSON);
            self.problem(format!(
                "{shown}: missing (removed, or the run was written by a fairsched from before \
                 `fairsched report`), so the tables it printed are not shown; running its command \
                 again adds them"
            ));
            return Vec::new();
        }
        let Some(doc) = self.json(TABLES_JSON) else {
            return Vec::new();
        };
        let Some(list) = doc.get("tables").and_then(Value::as_array) else {
            let shown = self.name(TABLES_JSON);
            self.problem(format!("{shown}: field `tables`: expected an array of tables"));
            return Vec::new();
        };
        let mut out = Vec::new();
        for (i, t) in list.iter().enumerate() {
            match Table::from_doc(t) {
                Some(t) => out.push(Block::Table(HtmlTable::from_table(&t, opts.max_rows))),
                None => {
                    let shown = self.name(TABLES_JSON);
                    self.problem(format!(
                        "{shown}: field `tables.{i}`: not a table (title, columns, rows of strings, notes)"
                    ));
                }
            }
        }
        out
    }

    /// An SVG file of the run as a figure; `None` (and a problem) when it
    /// is missing or unreadable.
    pub fn svg_figure(&mut self, name: &str, caption: impl Into<String>) -> Option<Block> {
        let svg = self.text(name)?;
        Some(Block::Figure {
            caption: caption.into(),
            svg,
        })
    }
}

/// The value at a dotted path.
pub fn lookup<'a>(doc: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(doc, |v, k| match v {
        Value::Array(a) => a.get(k.parse::<usize>().ok()?),
        Value::Object(m) => m.get(k),
        _ => None,
    })
}

pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The run's `tool` block as facts (version, commit, command).
pub fn tool_facts(f: &mut RunFolder, doc: &Value, file: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if lookup(doc, "tool").is_none() {
        let shown = f.name(file);
        f.problem(format!(
            "{shown}: field `tool` is missing (a run of an older fairsched?)"
        ));
        return out;
    }
    for (k, label) in [
        ("tool.command", "command"),
        ("tool.version", "version"),
        ("tool.commit", "commit"),
    ] {
        if let Some(v) = f.str(doc, file, k) {
            out.push((label.to_string(), v));
        }
    }
    out
}

/// The section for one folder.
pub fn section(dir: &Path, opts: &Options) -> Section {
    let mut f = RunFolder::new(dir);
    let mut s = Section {
        id: String::new(),
        title: dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| f.shown.clone()),
        kind: "unknown".to_string(),
        source: f.shown.clone(),
        ..Section::default()
    };
    if !dir.is_dir() {
        let why = if dir.exists() {
            "not a folder"
        } else {
            "no such folder"
        };
        f.problem(format!("{}: {why}", f.shown));
        s.problems = f.problems;
        return s;
    }
    let (kind, blocks) = if f.has("summary.json") {
        match f.json("summary.json") {
            Some(summary) => {
                if let Some(e) = summary.get("experiment").and_then(Value::as_str) {
                    let e = e.to_string();
                    (
                        e.clone(),
                        crate::report_exp::experiment(&mut f, &e, &summary, opts),
                    )
                } else if summary.get("stats").is_some() {
                    (
                        "trace-stats".to_string(),
                        crate::report_exp::trace_stats(&mut f, &summary, opts),
                    )
                } else if summary.get("policy").is_some() {
                    (
                        "simulate".to_string(),
                        crate::report_sim::single(&mut f, &summary, opts),
                    )
                } else {
                    f.problem(format!(
                        "{}: neither `experiment`, `stats` nor `policy`: not the summary of a fairsched run",
                        f.name("summary.json")
                    ));
                    ("unknown".to_string(), Vec::new())
                }
            }
            None => ("unknown".to_string(), Vec::new()),
        }
    } else if f.has("comparison.json") {
        match f.json("comparison.json") {
            Some(c) => (
                "comparison".to_string(),
                crate::report_sim::comparison(&mut f, &c, opts),
            ),
            None => ("comparison".to_string(), Vec::new()),
        }
    } else if f.has("tau.json") {
        match f.json("tau.json") {
            Some(t) => (
                "trace-tau".to_string(),
                crate::report_exp::trace_tau(&mut f, &t, opts),
            ),
            None => ("trace-tau".to_string(), Vec::new()),
        }
    } else {
        f.problem(format!(
            "{}: not the output of a fairsched run: it has no summary.json, comparison.json or tau.json",
            f.shown
        ));
        ("unknown".to_string(), Vec::new())
    };
    s.kind = kind;
    s.blocks = blocks;
    s.problems = f.problems;
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_that_is_no_run_says_which_files_it_lacks() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("notes.txt"), "x").unwrap();
        let s = section(d.path(), &Options::default());
        assert_eq!(s.kind, "unknown");
        assert_eq!(s.problems.len(), 1, "{:?}", s.problems);
        assert!(s.problems[0].contains("no summary.json, comparison.json or tau.json"));
        let s = section(&d.path().join("nope"), &Options::default());
        assert!(s.problems[0].ends_with("no such folder"), "{:?}", s.problems);
    }

    #[test]
    fn a_broken_summary_is_named_with_its_line() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("summary.json"), "{\n  \"policy\": \n").unwrap();
        let s = section(d.path(), &Options::default());
        assert!(
            s.problems
                .iter()
                .any(|p| p.contains("summary.json:3:") && p.contains("not JSON")),
            "{:?}",
            s.problems
        );
    }

    #[test]
    fn fields_of_the_wrong_type_are_named() {
        let mut f = RunFolder::new(Path::new("run"));
        let doc = serde_json::json!({"a": {"b": "x"}, "n": null, "arr": [1, 2]});
        assert_eq!(f.num(&doc, "summary.json", "a.b"), None);
        assert_eq!(f.num(&doc, "summary.json", "n"), None);
        assert_eq!(f.num(&doc, "summary.json", "arr.1"), Some(2.0));
        assert_eq!(f.num(&doc, "summary.json", "gone"), None);
        assert_eq!(f.problems.len(), 2, "{:?}", f.problems);
        assert!(f.problems[0].contains("field `a.b`: expected a number, found a string"));
        assert!(f.problems[1].contains("field `gone` is missing"));
    }
}
