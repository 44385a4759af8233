//! One self-contained HTML page of results (`fairsched report`): inline
//! CSS and SVG, no script, nothing fetched from anywhere.
//!
//! A [`Page`] holds one [`Section`] per run folder; a section holds
//! [`Block`]s (tables, figures, paragraphs) and the problems met while
//! reading the folder, which the page shows in a box at the section's top
//! (the section still renders what it could read).
//!
//! Table cells can carry the summary key and raw value they show
//! (`data-key`, `data-value`), so a test can compare the page with
//! `summary.json` without parsing formatted numbers.

use crate::table::Table;
use std::fmt::Write;

/// The whole page.
#[derive(Clone, Debug, Default)]
pub struct Page {
    pub title: String,
    /// A line under the title (the command line, the tool's version).
    pub subtitle: String,
    pub sections: Vec<Section>,
}

/// One run folder.
#[derive(Clone, Debug, Default)]
pub struct Section {
    /// Unique among the page's sections (see [`Page::render`], which makes
    /// it so); used as the HTML id.
    pub id: String,
    pub title: String,
    /// What kind of run: `simulate`, `comparison`, `shapley`, `pffp`,
    /// `diet-ethic`, `workflow-fairness`, `trace-stats`, `trace-tau`,
    /// `unknown` (the `data-kind` attribute).
    pub kind: String,
    /// The folder it was read from, as given.
    pub source: String,
    pub blocks: Vec<Block>,
    /// What could not be read (a missing file, a field of the wrong type),
    /// each naming the file and field.
    pub problems: Vec<String>,
}

/// A part of a section.
#[derive(Clone, Debug)]
pub enum Block {
    Heading(String),
    Para(String),
    Table(HtmlTable),
    /// An SVG document (from [`crate::plot`] or a file of the run) shown
    /// inline, with a caption saying what it shows.
    Figure {
        caption: String,
        svg: String,
    },
    /// Key–value facts (trace, seed, command) as a definition list.
    Facts(Vec<(String, String)>),
    /// Lines in small type (sources, caveats, "why ours differs").
    Notes(Vec<String>),
    /// Blocks side by side where the page is wide enough (a set of
    /// figures of one kind, such as performance profiles).
    Gallery(Vec<Block>),
}

/// A table whose cells may carry their source.
#[derive(Clone, Debug, Default)]
pub struct HtmlTable {
    pub caption: String,
    pub head: Vec<String>,
    pub rows: Vec<Vec<Cell>>,
    pub notes: Vec<String>,
    /// Rows not shown (the table was cut to its first rows).
    pub cut: usize,
}

/// One table cell.
#[derive(Clone, Debug, Default)]
pub struct Cell {
    pub text: String,
    /// The summary field it shows (`data-key`).
    pub key: Option<String>,
    /// The raw value, as in the JSON (`data-value`).
    pub value: Option<String>,
    /// Right-aligned (numbers).
    pub num: bool,
}

impl Cell {
    pub fn text(t: impl Into<String>) -> Cell {
        Cell {
            text: t.into(),
            ..Cell::default()
        }
    }
    /// A number shown as `text`, right-aligned.
    pub fn num(t: impl Into<String>) -> Cell {
        Cell {
            text: t.into(),
            num: true,
            ..Cell::default()
        }
    }
    /// A number read from the summary field `key` whose JSON value is
    /// `value` (`null` for none), shown as `text`.
    pub fn field(t: impl Into<String>, key: impl Into<String>, value: &serde_json::Value) -> Cell {
        Cell {
            text: t.into(),
            key: Some(key.into()),
            value: Some(value.to_string()),
            num: true,
        }
    }
}

impl HtmlTable {
    pub fn new<S: Into<String>>(caption: impl Into<String>, head: impl IntoIterator<Item = S>) -> HtmlTable {
        HtmlTable {
            caption: caption.into(),
            head: head.into_iter().map(Into::into).collect(),
            ..HtmlTable::default()
        }
    }
    pub fn row(&mut self, cells: Vec<Cell>) {
        self.rows.push(cells);
    }

    /// A table as printed ([`Table`]): the first column as text, the
    /// others right-aligned where they look like numbers; at most
    /// `max_rows` rows (the rest counted in [`HtmlTable::cut`]).
    pub fn from_table(t: &Table, max_rows: usize) -> HtmlTable {
        let mut h = HtmlTable::new(
            t.title.clone().unwrap_or_default(),
            t.columns.iter().map(|(c, _)| c.clone()),
        );
        for r in t.rows.iter().take(max_rows) {
            h.rows.push(
                r.iter()
                    .enumerate()
                    .map(|(i, c)| {
                        if i > 0 && looks_numeric(c) {
                            Cell::num(c.clone())
                        } else {
                            Cell::text(c.clone())
                        }
                    })
                    .collect(),
            );
        }
        h.cut = t.rows.len().saturating_sub(max_rows);
        h.notes = t.notes.clone();
        h
    }
}

/// A cell that reads as a number (with a sign, digits, separators, a unit
/// suffix such as `%` or `×`, or a dash for none).
fn looks_numeric(s: &str) -> bool {
    let s = s.trim();
    !s.is_empty()
        && s.chars().any(|c| c.is_ascii_digit())
        && s.chars()
            .all(|c| c.is_ascii_digit() || " .,-+eE%×±()≈–−".contains(c))
        || s == "—"
        || s == "-"
}

/// `&`, `<`, `>`, `"` and `'` escaped, for text and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// An SVG document made fit to sit inside HTML: the XML declaration and
/// any DOCTYPE removed, scripts and external references refused.
/// `None` if it is not an SVG document or would fetch or run something.
pub fn inline_svg(svg: &str) -> Option<String> {
    let start = svg.find("<svg")?;
    let body = svg[start..].trim_end();
    let lower = body.to_ascii_lowercase();
    let unsafe_bits = [
        "<script",
        "javascript:",
        "<foreignobject",
        "href=\"http",
        "href='http",
        "url(http",
        "@import",
    ];
    if unsafe_bits.iter().any(|b| lower.contains(b)) || !lower.ends_with("</svg>") {
        return None;
    }
    Some(body.to_string())
}

/// A fragment id from a title: lowercase letters, digits and `-`.
pub fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    while out.ends_with('-') {
        out.pop();
    }
    if out.is_empty() { "run".to_string() } else { out }
}

const CSS: &str = include_str!("report.css");

impl Page {
    /// The page as one HTML document. Section ids are made unique
    /// (`id`, `id-2`, …) in page order.
    pub fn render(&self) -> String {
        let mut seen = std::collections::BTreeMap::<String, usize>::new();
        let ids: Vec<String> = self
            .sections
            .iter()
            .map(|s| {
                let base = slug(if s.id.is_empty() { &s.title } else { &s.id });
                let n = seen.entry(base.clone()).or_insert(0);
                *n += 1;
                if *n == 1 { base } else { format!("{base}-{n}") }
            })
            .collect();
        let mut h = String::new();
        let _ = write!(
            h,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
             <title>{}</title>\n<style>\n{CSS}</style>\n</head>\n<body>\n<header>\n<h1>{}</h1>\n",
            escape(&self.title),
            escape(&self.title)
        );
        if !self.subtitle.is_empty() {
            let _ = writeln!(h, "<p class=\"subtitle\">{}</p>", escape(&self.subtitle));
        }
        h.push_str("<nav><ol>\n");
        for (s, id) in self.sections.iter().zip(&ids) {
            let warn = if s.problems.is_empty() {
                ""
            } else {
                " <span class=\"warn\">(incomplete)</span>"
            };
            let _ = writeln!(
                h,
                "<li><a href=\"#{id}\">{}</a> <span class=\"kind\">{}</span>{warn}</li>",
                escape(&s.title),
                escape(&s.kind)
            );
        }
        h.push_str("</ol></nav>\n</header>\n<main>\n");
        for (s, id) in self.sections.iter().zip(&ids) {
            s.render_into(&mut h, id);
        }
        h.push_str("</main>\n</body>\n</html>\n");
        h
    }
}

impl Section {
    fn render_into(&self, h: &mut String, id: &str) {
        let _ = writeln!(
            h,
            "<section id=\"{id}\" class=\"run\" data-kind=\"{}\" data-source=\"{}\">\n<h2>{}</h2>\n\
             <p class=\"source\">{}</p>",
            escape(&self.kind),
            escape(&self.source),
            escape(&self.title),
            escape(&self.source)
        );
        if !self.problems.is_empty() {
            h.push_str(
                "<div class=\"problems\" role=\"alert\"><strong>Not everything could be read:</strong><ul>\n",
            );
            for p in &self.problems {
                let _ = writeln!(h, "<li>{}</li>", escape(p));
            }
            h.push_str("</ul></div>\n");
        }
        for b in &self.blocks {
            b.render_into(h);
        }
        h.push_str("</section>\n");
    }
}

impl Block {
    fn render_into(&self, h: &mut String) {
        match self {
            Block::Heading(t) => {
                let _ = writeln!(h, "<h3>{}</h3>", escape(t));
            }
            Block::Para(t) => {
                let _ = writeln!(h, "<p>{}</p>", escape(t));
            }
            Block::Notes(lines) => {
                if !lines.is_empty() {
                    h.push_str("<ul class=\"notes\">\n");
                    for l in lines {
                        let _ = writeln!(h, "<li>{}</li>", escape(l));
                    }
                    h.push_str("</ul>\n");
                }
            }
            Block::Facts(kv) => {
                h.push_str("<dl class=\"facts\">\n");
                for (k, v) in kv {
                    let _ = writeln!(h, "<dt>{}</dt><dd>{}</dd>", escape(k), escape(v));
                }
                h.push_str("</dl>\n");
            }
            Block::Figure { caption, svg } => match inline_svg(svg) {
                Some(svg) => {
                    let _ = writeln!(
                        h,
                        "<figure class=\"plot\">\n{svg}\n<figcaption>{}</figcaption>\n</figure>",
                        escape(caption)
                    );
                }
                None => {
                    let _ = writeln!(
                        h,
                        "<p class=\"problems\">Figure “{}” left out: not an SVG document that can be shown \
                         inline without fetching or running anything.</p>",
                        escape(caption)
                    );
                }
            },
            Block::Table(t) => t.render_into(h),
            Block::Gallery(blocks) => {
                h.push_str("<div class=\"gallery\">\n");
                for b in blocks {
                    b.render_into(h);
                }
                h.push_str("</div>\n");
            }
        }
    }
}

impl HtmlTable {
    fn render_into(&self, h: &mut String) {
        h.push_str("<div class=\"table-wrap\"><table>\n");
        if !self.caption.is_empty() {
            let _ = writeln!(h, "<caption>{}</caption>", escape(&self.caption));
        }
        h.push_str("<thead><tr>");
        for c in &self.head {
            let _ = write!(h, "<th scope=\"col\">{}</th>", escape(c));
        }
        h.push_str("</tr></thead>\n<tbody>\n");
        for r in &self.rows {
            h.push_str("<tr>");
            for c in r {
                h.push_str(if c.num { "<td class=\"num\"" } else { "<td" });
                if let Some(k) = &c.key {
                    let _ = write!(h, " data-key=\"{}\"", escape(k));
                }
                if let Some(v) = &c.value {
                    let _ = write!(h, " data-value=\"{}\"", escape(v));
                }
                let _ = write!(h, ">{}</td>", escape(&c.text));
            }
            h.push_str("</tr>\n");
        }
        h.push_str("</tbody>\n</table>");
        if self.cut > 0 {
            let _ = write!(
                h,
                "<p class=\"cut\">… and {} more row{} (all of them are in the run's CSV).</p>",
                self.cut,
                if self.cut == 1 { "" } else { "s" }
            );
        }
        if !self.notes.is_empty() {
            h.push_str("<ul class=\"notes\">\n");
            for l in &self.notes {
                let _ = writeln!(h, "<li>{}</li>", escape(l));
            }
            h.push_str("</ul>");
        }
        h.push_str("</div>\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_ids_are_unique() {
        let s = Section {
            title: "a <b> & \"c\"".into(),
            kind: "simulate".into(),
            source: "out/x".into(),
            blocks: vec![Block::Para("1 < 2".into())],
            ..Section::default()
        };
        let page = Page {
            title: "T".into(),
            sections: vec![s.clone(), s],
            ..Page::default()
        };
        let h = page.render();
        assert!(h.contains("a &lt;b&gt; &amp; &quot;c&quot;"));
        assert!(h.contains("<p>1 &lt; 2</p>"));
        assert!(h.contains("id=\"a-b-c\""));
        assert!(h.contains("id=\"a-b-c-2\""));
        assert!(!h.contains("<b>"));
    }

    #[test]
    fn svg_is_inlined_only_when_it_fetches_and_runs_nothing() {
        let ok = "<?xml version=\"1.0\"?>\n<svg width=\"1\" height=\"1\"><rect/></svg>\n";
        assert_eq!(
            inline_svg(ok).as_deref(),
            Some("<svg width=\"1\" height=\"1\"><rect/></svg>")
        );
        assert!(inline_svg("<svg><script>alert(1)</script></svg>").is_none());
        assert!(inline_svg("<svg><image href=\"https://x/y.png\"/></svg>").is_none());
        assert!(inline_svg("not svg").is_none());
        assert!(inline_svg("<svg><rect/>").is_none());
    }

    #[test]
    fn cells_carry_their_summary_field() {
        let mut t = HtmlTable::new("Summary", ["metric", "value"]);
        t.row(vec![
            Cell::text("mean wait (s)"),
            Cell::field("12.5", "mean_wait_s", &serde_json::json!(12.5)),
        ]);
        let mut h = String::new();
        t.render_into(&mut h);
        assert!(h.contains("<td class=\"num\" data-key=\"mean_wait_s\" data-value=\"12.5\">12.5</td>"));
    }

    #[test]
    fn printed_tables_keep_their_rows_up_to_the_cut() {
        let mut t = Table::new(["trace", "ours", "paper"]).title("Δψ/p_tot");
        for i in 0..5 {
            t.row([format!("t{i}"), "1.5".into(), "—".into()]);
        }
        let h = HtmlTable::from_table(&t, 3);
        assert_eq!(h.rows.len(), 3);
        assert_eq!(h.cut, 2);
        assert!(h.rows[0][1].num && !h.rows[0][0].num && h.rows[0][2].num);
    }
}
