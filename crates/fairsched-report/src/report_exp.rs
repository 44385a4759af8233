//! `fairsched report` sections of experiments, `trace stats` and
//! `trace tau`.
//!
//! Each section shows, in this order: the facts of the run (the tool's
//! command, version and commit, the logs, seed and sizes), the tables the
//! run printed (`tables.json`), the run's notes (`notes` in
//! `summary.json`: sources, caveats, why ours differs from the paper; said
//! once, not under every table), then its figures: the SVG files the run
//! wrote, and charts drawn here from `summary.json` where the run wrote
//! none (degradation bars, ours beside the paper's, slowdown bars), each
//! followed by the values it plots, every cell naming its summary field.
//!
//! A field that is missing or of the wrong type is a problem naming the
//! file and the field ([`RunFolder::num`], [`RunFolder::str`]); whatever
//! else can be read is still shown. A folder of a run from before
//! `tables.json` shows its facts and figures.

use crate::html::{Block, Cell, HtmlTable};
use crate::plot::{BarChart, Series, bar_chart, heatmap};
use crate::report::{Options, RunFolder, lookup, tool_facts};
use crate::table::fixed;
use serde_json::Value;

const SUMMARY: &str = "summary.json";

/// The experiments this module knows, as `summary.json` names them.
pub const EXPERIMENTS: [&str; 8] = [
    "shapley",
    "pffp",
    "diet-ethic",
    "workflow-fairness",
    "shapley-study",
    "pffp-study",
    "diet-ethic-study",
    "workflow-fairness-study",
];

/// An experiment's folder (`summary.json` with `experiment`).
pub fn experiment(f: &mut RunFolder, name: &str, summary: &Value, opts: &Options) -> Vec<Block> {
    let mut facts = vec![("experiment".to_string(), name.to_string())];
    facts.extend(tool_facts(f, summary, SUMMARY));
    let mut figures = Vec::new();
    let mut extra_notes = Vec::new();
    match name {
        "shapley" => shapley(f, summary, &mut facts, &mut figures, opts),
        "pffp" => pffp(f, summary, &mut facts, &mut figures),
        "diet-ethic" => diet(f, summary, &mut facts, &mut figures, &mut extra_notes),
        "workflow-fairness" => workflow(f, summary, &mut facts, &mut figures, opts),
        n if n.ends_with("-study") && EXPERIMENTS.contains(&n) => {
            study(f, summary, &mut facts, &mut extra_notes);
            figures.extend(every_svg(f));
        }
        other => {
            let shown = f.name(SUMMARY);
            f.problem(format!(
                "{shown}: field `experiment`: unknown experiment `{other}` (this fairsched knows {}); \
                 showing what any run has: its facts, the tables it printed, its notes and every SVG \
                 figure in the folder",
                EXPERIMENTS.join(", ")
            ));
            figures.extend(every_svg(f));
        }
    }
    if summary.get("wall_time_s").is_some()
        && let Some(t) = f.num(summary, SUMMARY, "wall_time_s")
    {
        facts.push(("wall time".into(), format!("{} s", fixed(t, 3))));
    }
    // An experiment this version does not know may have no notes.
    let mut notes = if EXPERIMENTS.contains(&name) || summary.get("notes").is_some() {
        strings(f, summary, SUMMARY, "notes")
    } else {
        Vec::new()
    };
    // What the experiment adds (the paper's claim) comes first.
    notes.splice(0..0, extra_notes);
    assemble(f, facts, notes, figures, opts)
}

/// A reproduction study (`experiment PAPER --study`): its size, and per
/// claim the readings under which it holds, before the study's notes; its
/// tables (one per case) come from tables.json.
fn study(f: &mut RunFolder, s: &Value, facts: &mut Vec<(String, String)>, notes: &mut Vec<String>) {
    if let Some(q) = boolean(f, s, SUMMARY, "quick") {
        facts.push((
            "size".into(),
            if q {
                "quick (--quick)".into()
            } else {
                "full".into()
            },
        ));
    }
    let n = array(f, s, SUMMARY, "rows").map_or(0, Vec::len);
    facts.push(("readings run".into(), n.to_string()));
    let claims = array(f, s, SUMMARY, "claims").map_or(0, Vec::len);
    for i in 0..claims {
        let (Some(id), Some(text)) = (
            f.str(s, SUMMARY, &format!("claims.{i}.id")),
            f.str(s, SUMMARY, &format!("claims.{i}.text")),
        ) else {
            continue;
        };
        let under = strings(f, s, SUMMARY, &format!("holds_under.{i}.1"));
        notes.push(if under.is_empty() {
            format!("Claim {id} ({text}): holds under no reading run.")
        } else {
            format!("Claim {id} ({text}): holds under {}.", under.join(", "))
        });
    }
    // Where each reading comes from: the paper's or the spec's words, or
    // the sweep it is a point of; a reading's source is said once, at its
    // first case.
    let mut said: Vec<(String, String)> = Vec::new();
    for i in 0..n {
        let at = |k: &str| format!("rows.{i}.{k}");
        // A study from before sources were written has none.
        if lookup(s, &at("source")).is_none() {
            continue;
        }
        let (Some(case), Some(reading), Some(kind)) = (
            f.str(s, SUMMARY, &at("case")),
            f.str(s, SUMMARY, &at("reading")),
            f.str(s, SUMMARY, &at("source.kind")),
        ) else {
            continue;
        };
        let from = if kind == "sensitivity" {
            let (Some(p), Some(r)) = (
                f.str(s, SUMMARY, &at("source.parameter")),
                f.str(s, SUMMARY, &at("source.range")),
            ) else {
                continue;
            };
            format!("a sweep over {p}: {r}")
        } else {
            let q = array(f, s, SUMMARY, &at("source.quotes")).map_or(0, Vec::len);
            let quotes: Vec<String> = (0..q)
                .filter_map(|k| {
                    let t = f.str(s, SUMMARY, &at(&format!("source.quotes.{k}.text")))?;
                    let w = f.str(s, SUMMARY, &at(&format!("source.quotes.{k}.at")))?;
                    Some(format!("\"{t}\" ({w})"))
                })
                .collect();
            format!("the {kind}: {}", quotes.join("; "))
        };
        match said.iter().find(|(r, t)| *r == reading && *t == from) {
            Some(_) => {}
            None => {
                notes.push(format!("Reading {case}/{reading} — from {from}."));
                said.push((reading, from));
            }
        }
    }
}

/// `trace stats --out`.
pub fn trace_stats(f: &mut RunFolder, summary: &Value, opts: &Options) -> Vec<Block> {
    let mut facts = tool_facts(f, summary, SUMMARY);
    if let Some(p) = f.str(summary, SUMMARY, "trace.path") {
        facts.push(("log".into(), p));
    }
    // Header lines a log may or may not have: shown when there.
    for (key, label) in [
        ("trace.header.installation", "installation"),
        ("trace.header.computer", "computer"),
    ] {
        if let Some(Value::String(s)) = lookup(summary, key) {
            facts.push((label.into(), s.clone()));
        }
    }
    let kept = f.num(summary, SUMMARY, "trace.kept_jobs");
    let raw = f.num(summary, SUMMARY, "trace.raw_jobs");
    if let (Some(k), Some(r)) = (kept, raw) {
        facts.push((
            "jobs".into(),
            format!("{} kept of {} in the log", show(k), show(r)),
        ));
    }
    num_fact(f, summary, SUMMARY, "trace.users", "users", "", &mut facts);
    if let Some(p) = f.num(summary, SUMMARY, "trace.processors") {
        let from = match lookup(summary, "trace.processors_source") {
            Some(Value::String(s)) => format!(" ({s})"),
            _ => String::new(),
        };
        facts.push(("processors".into(), format!("{}{from}", show(p))));
    }
    if let Some(s) = f.num(summary, SUMMARY, "trace.span_seconds") {
        facts.push((
            "submits span".into(),
            format!("{} s ({} days)", show(s), fixed(s / 86400.0, 1)),
        ));
    }
    let jobs = f.num(summary, SUMMARY, "stats.jobs");
    let mut figures = Vec::new();
    match jobs {
        Some(j) if j > 0.0 => figures.extend(f.svg_figure(
            "aggregation.svg",
            "Aggregation of run times: the first points (at most 200) of each level, level k averaging blocks of \
             10^k consecutive jobs (log y axis, seconds; docs/pffp-stats.md) — aggregation.svg",
        )),
        Some(_) => figures.push(Block::Para(
            "No job was left after cleaning: there is nothing to describe, and no chart.".into(),
        )),
        None => {}
    }
    assemble(f, facts, Vec::new(), figures, opts)
}

/// `trace tau --out`.
pub fn trace_tau(f: &mut RunFolder, tau: &Value, opts: &Options) -> Vec<Block> {
    const FILE: &str = "tau.json";
    let mut facts = tool_facts(f, tau, FILE);
    let workflows = strings(f, tau, FILE, "workflows");
    if !workflows.is_empty() {
        facts.push(("workflows".into(), workflows.join(", ")));
    }
    let inputs = strings(f, tau, FILE, "inputs");
    if !inputs.is_empty() {
        facts.push(("inputs".into(), inputs.join(", ")));
    }
    str_fact(f, tau, FILE, "system", "system", &mut facts);
    str_fact(f, tau, FILE, "grid", "grid", &mut facts);
    num_fact(f, tau, FILE, "spacing_s", "between submissions", " s", &mut facts);
    if let Some(reps) = array(f, tau, FILE, "repetitions") {
        facts.push(("runs".into(), reps.len().to_string()));
    }
    num_fact(f, tau, FILE, "seed", "seed", "", &mut facts);
    num_fact(f, tau, FILE, "bin", "bin width", "", &mut facts);
    let samples = f.num(tau, FILE, "samples");
    let nonzero = f.num(tau, FILE, "nonzero");
    if let (Some(s), Some(n)) = (samples, nonzero) {
        facts.push((
            "η_u samples".into(),
            format!("{} ({} non-zero)", show(s), show(n)),
        ));
    }
    let paper = f.num(tau, FILE, "paper_tau");
    let proposed = match lookup(tau, "threshold") {
        Some(Value::Null) => Some("none (fewer than two modes)".to_string()),
        _ => f.num(tau, FILE, "threshold").map(show),
    };
    if let Some(p) = proposed {
        let paper = paper.map_or(String::new(), |p| format!(" (paper: {})", show(p)));
        facts.push(("proposed τ_u".into(), format!("{p}{paper}")));
    }
    let figures: Vec<Block> = f
        .svg_figure(
            "tau.svg",
            "Histogram of the non-zero η_u samples of the No-Fairness runs (count per bin), with the \
             proposed threshold τ_u (the middle of the emptiest valley between the two highest modes) \
             and the paper's — tau.svg",
        )
        .into_iter()
        .collect();
    assemble(f, facts, Vec::new(), figures, opts)
}

/// Facts, the printed tables, the notes (taken out of the tables they
/// were printed under: said once), the figures.
fn assemble(
    f: &mut RunFolder,
    facts: Vec<(String, String)>,
    notes: Vec<String>,
    figures: Vec<Block>,
    opts: &Options,
) -> Vec<Block> {
    let mut out = vec![Block::Facts(facts)];
    let mut tables = f.printed_tables(opts);
    for b in &mut tables {
        if let Block::Table(t) = b {
            t.notes.retain(|n| !notes.contains(n));
        }
    }
    if !tables.is_empty() {
        out.push(Block::Heading("Tables, as the run printed them".into()));
        out.extend(tables);
    }
    if !notes.is_empty() {
        out.push(Block::Heading("Notes".into()));
        out.push(Block::Notes(notes));
    }
    if !figures.is_empty() {
        out.push(Block::Heading("Figures".into()));
        out.extend(figures);
    }
    out
}

// ---------------------------------------------------------------------------
// Reading fields.

/// A number as the JSON has it: whole numbers without decimals.
fn show(x: f64) -> String {
    if x.is_finite() && x == x.trunc() && x.abs() < 1e15 {
        format!("{x:.0}")
    } else {
        format!("{x}")
    }
}

/// The array at `path`; `null` is `None` without a problem, a missing
/// field or another type is `None` with one.
fn array<'v>(f: &mut RunFolder, doc: &'v Value, file: &str, path: &str) -> Option<&'v Vec<Value>> {
    f.typed(doc, file, path, "an array", Value::as_array)
}

/// The strings of the array at `path` (each element that is not one is a
/// problem naming it).
fn strings(f: &mut RunFolder, doc: &Value, file: &str, path: &str) -> Vec<String> {
    let n = array(f, doc, file, path).map_or(0, Vec::len);
    (0..n)
        .filter_map(|i| f.str(doc, file, &format!("{path}.{i}")))
        .collect()
}

/// A boolean at `path`, with the rules of [`array`].
fn boolean(f: &mut RunFolder, doc: &Value, file: &str, path: &str) -> Option<bool> {
    f.typed(doc, file, path, "true or false", Value::as_bool)
}

fn num_fact(
    f: &mut RunFolder,
    doc: &Value,
    file: &str,
    path: &str,
    label: &str,
    unit: &str,
    facts: &mut Vec<(String, String)>,
) {
    if let Some(x) = f.num(doc, file, path) {
        facts.push((label.into(), format!("{}{unit}", show(x))));
    }
}

fn str_fact(
    f: &mut RunFolder,
    doc: &Value,
    file: &str,
    path: &str,
    label: &str,
    facts: &mut Vec<(String, String)>,
) {
    if let Some(s) = f.str(doc, file, path) {
        facts.push((label.into(), s));
    }
}

/// A cell showing the number at `key` of the summary (with `d` decimals),
/// carrying the field and its raw value; `—` for `null`.
fn field_cell(f: &mut RunFolder, doc: &Value, key: &str, d: usize) -> (Cell, Option<f64>) {
    let x = f.num(doc, SUMMARY, key);
    let raw = lookup(doc, key).cloned().unwrap_or(Value::Null);
    let text = x.map_or_else(|| "—".to_string(), |x| fixed(x, d));
    (Cell::field(text, key, &raw), x)
}

/// A row of a table of plotted values, unless it has `max_rows` already
/// (then counted as cut).
fn push_row(t: &mut HtmlTable, opts: &Options, row: Vec<Cell>) {
    if t.rows.len() < opts.max_rows {
        t.row(row);
    } else {
        t.cut += 1;
    }
}

/// A chart drawn here, or a problem saying why it could not be.
fn chart(f: &mut RunFolder, svg: Result<String, String>, caption: String) -> Option<Block> {
    match svg {
        Ok(svg) => Some(Block::Figure { caption, svg }),
        Err(e) => {
            f.problem(format!("the chart “{caption}” could not be drawn: {e}"));
            None
        }
    }
}

/// Every `*.svg` file of the folder, by name (an experiment this version
/// does not know).
fn every_svg(f: &mut RunFolder) -> Vec<Block> {
    let mut names: Vec<String> = match std::fs::read_dir(&f.dir) {
        Ok(rd) => rd
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".svg"))
            .collect(),
        Err(e) => {
            let shown = f.shown.clone();
            f.problem(format!("{shown}: {e}"));
            Vec::new()
        }
    };
    names.sort();
    names.iter().filter_map(|n| f.svg_figure(n, n.clone())).collect()
}

// ---------------------------------------------------------------------------
// Shapley.

fn shapley(
    f: &mut RunFolder,
    s: &Value,
    facts: &mut Vec<(String, String)>,
    figures: &mut Vec<Block>,
    opts: &Options,
) {
    let table = f.num(s, SUMMARY, "table");
    let figure = f.num(s, SUMMARY, "figure");
    let window = f.num(s, SUMMARY, "window_s");
    let what = match (table, figure) {
        (_, Some(n)) => format!("the paper's Figure {}", show(n)),
        (Some(n), None) => format!("the paper's Table {}", show(n)),
        (None, None) => "—".into(),
    };
    facts.push(("reproduces".into(), what));
    if let Some(w) = window {
        facts.push(("window".into(), format!("{} s", show(w))));
    }
    if let Some(n) = f.num(s, SUMMARY, "instances") {
        facts.push(("instances".into(), format!("{} random windows per log", show(n))));
    }
    if let Some(orgs) = array(f, s, SUMMARY, "orgs") {
        let n = orgs.len();
        let list: Vec<String> = (0..n)
            .filter_map(|i| f.num(s, SUMMARY, &format!("orgs.{i}")))
            .map(show)
            .collect();
        facts.push(("organizations".into(), list.join(", ")));
    }
    str_fact(f, s, SUMMARY, "ownership", "ownership", facts);
    if let Some(Value::String(p)) = lookup(s, "platform") {
        facts.push(("platform file".into(), p.clone()));
    }
    str_fact(f, s, SUMMARY, "reference", "reference", facts);
    num_fact(f, s, SUMMARY, "seed", "seed", "", facts);
    let n = array(f, s, SUMMARY, "traces").map_or(0, Vec::len);
    let mut logs = Vec::new();
    for i in 0..n {
        let name = f.str(s, SUMMARY, &format!("traces.{i}.name"));
        let path = f.str(s, SUMMARY, &format!("traces.{i}.path"));
        let procs = f.num(s, SUMMARY, &format!("traces.{i}.procs"));
        let jobs = f.num(s, SUMMARY, &format!("traces.{i}.jobs"));
        logs.push(format!(
            "{} ({} processors, {} jobs; {})",
            name.unwrap_or_default(),
            procs.map_or("?".into(), show),
            jobs.map_or("?".into(), show),
            path.unwrap_or_default()
        ));
    }
    if !logs.is_empty() {
        facts.push(("logs".into(), logs.join("; ")));
    }
    let unavailable = strings(f, s, SUMMARY, "unavailable");
    if !unavailable.is_empty() {
        facts.push(("not available here".into(), unavailable.join(", ")));
    }

    let caption = if figure.is_some() {
        "Δψ/p_tot (s, log scale) of each algorithm against the number of organizations, mean over \
         the windows; a mean of 0 has no point — shapley.svg"
    } else {
        "Δψ/p_tot (s, log scale) per log and algorithm, our means over the windows; a mean of 0 \
         (the algorithm gave every organization REF's utility) has no bar — shapley.svg"
    };
    figures.extend(f.svg_figure("shapley.svg", caption));

    // Ours beside the paper's, per (log, organizations) the paper has.
    struct Stat {
        i: usize,
        trace: String,
        orgs: f64,
        algorithm: String,
        mean: Option<f64>,
        paper: Option<f64>,
    }
    let n = array(f, s, SUMMARY, "stats").map_or(0, Vec::len);
    let mut stats = Vec::new();
    for i in 0..n {
        let (Some(trace), Some(orgs), Some(algorithm)) = (
            f.str(s, SUMMARY, &format!("stats.{i}.trace")),
            f.num(s, SUMMARY, &format!("stats.{i}.orgs")),
            f.str(s, SUMMARY, &format!("stats.{i}.algorithm")),
        ) else {
            continue;
        };
        if algorithm == "REF" {
            continue;
        }
        let mean = f.num(s, SUMMARY, &format!("stats.{i}.mean"));
        let paper = match lookup(s, &format!("stats.{i}.paper")) {
            Some(Value::Null) | None => None,
            _ => f.num(s, SUMMARY, &format!("stats.{i}.paper.0")),
        };
        stats.push(Stat {
            i,
            trace,
            orgs,
            algorithm,
            mean,
            paper,
        });
    }
    let mut keys: Vec<(String, f64)> = Vec::new();
    for st in &stats {
        if st.paper.is_some() && !keys.iter().any(|k| k.0 == st.trace && k.1 == st.orgs) {
            keys.push((st.trace.clone(), st.orgs));
        }
    }
    if keys.is_empty() {
        return;
    }
    let mut plotted = HtmlTable::new(
        "Values plotted above (summary.json `stats`): Δψ/p_tot (s), mean over the windows",
        ["log", "orgs", "algorithm", "ours", "paper"],
    );
    let table_no = table.map_or(String::new(), |t| format!(" Table {}", show(t)));
    for (trace, orgs) in &keys {
        let sel: Vec<&Stat> = stats
            .iter()
            .filter(|st| &st.trace == trace && st.orgs == *orgs)
            .collect();
        let groups: Vec<String> = sel.iter().map(|st| st.algorithm.clone()).collect();
        let series = [
            Series {
                name: "ours".into(),
                values: sel.iter().map(|st| st.mean.unwrap_or(f64::NAN)).collect(),
            },
            Series {
                name: format!("paper{table_no}"),
                values: sel.iter().map(|st| st.paper.unwrap_or(f64::NAN)).collect(),
            },
        ];
        let title = format!(
            "{trace}, {} organizations: Δψ/p_tot, ours beside the paper's",
            show(*orgs)
        );
        let svg = bar_chart(&BarChart {
            title: &title,
            x_label: "algorithm",
            y_label: "Δψ/p_tot (s), mean over windows",
            groups: &groups,
            series: &series,
            log_y: true,
            paired: true,
        });
        let caption = format!(
            "{trace}, {} organizations: Δψ/p_tot (s, log scale) of each algorithm, our mean beside the \
             paper's{table_no}; a mean of 0 has no bar. Exact values differ (seeds, Zipf exponent and log \
             versions unknown): compare the orderings.",
            show(*orgs)
        );
        figures.extend(chart(f, svg, caption));
        for st in sel {
            let (ours, _) = field_cell(f, s, &format!("stats.{}.mean", st.i), 3);
            let paper = if st.paper.is_some() {
                field_cell(f, s, &format!("stats.{}.paper.0", st.i), 0).0
            } else {
                Cell::field("—", format!("stats.{}.paper", st.i), &Value::Null)
            };
            push_row(
                &mut plotted,
                opts,
                vec![
                    Cell::text(trace.clone()),
                    Cell::num(show(*orgs)),
                    Cell::text(st.algorithm.clone()),
                    ours,
                    paper,
                ],
            );
        }
    }
    figures.push(Block::Table(plotted));
}

// ---------------------------------------------------------------------------
// PFFP.

/// The paper's grid table of a test (ours: the same layout).
fn paper_grid_table(test: f64) -> Option<u32> {
    match test as u32 {
        1 => Some(5),
        3 => Some(7),
        5 => Some(9),
        _ => None,
    }
}

fn pffp(f: &mut RunFolder, s: &Value, facts: &mut Vec<(String, String)>, figures: &mut Vec<Block>) {
    let test = f.num(s, SUMMARY, "test");
    if let Some(t) = test {
        facts.push(("test".into(), show(t)));
    }
    str_fact(f, s, SUMMARY, "workload", "workload", facts);
    if let Some(m) = array(f, s, SUMMARY, "machines") {
        let n = m.len();
        let list: Vec<String> = (0..n)
            .filter_map(|i| f.num(s, SUMMARY, &format!("machines.{i}")))
            .map(show)
            .collect();
        facts.push((
            "machines".into(),
            format!("{} processors, FCFS queues", list.join(", ")),
        ));
    }
    if let Some(b) = boolean(f, s, SUMMARY, "bags_of_tasks") {
        let jobs = if b {
            "bags of tasks (a job of p processors is p sequential tasks)"
        } else {
            "sequential (one task per job, whatever its width)"
        };
        facts.push(("jobs".into(), jobs.into()));
    }
    if let Some(i) = array(f, s, SUMMARY, "instances") {
        facts.push(("instances".into(), format!("{} Monday–Friday weeks", i.len())));
    }
    let n = array(f, s, SUMMARY, "logs").map_or(0, Vec::len);
    let logs: Vec<String> = (0..n)
        .filter_map(|i| f.str(s, SUMMARY, &format!("logs.{i}.name")))
        .collect();
    if !logs.is_empty() {
        facts.push(("logs".into(), logs.join(", ")));
    }
    let n = array(f, s, SUMMARY, "strategies").map_or(0, Vec::len);
    let strategies: Vec<String> = (0..n)
        .filter_map(|i| f.str(s, SUMMARY, &format!("strategies.{i}.0")))
        .collect();
    match strategies.as_slice() {
        [] => {}
        // A grid: one strategy per setting.
        [first, .., last] if strategies.len() > 12 => facts.push((
            "strategies".into(),
            format!("{} settings, {first} … {last}", strategies.len()),
        )),
        _ => facts.push(("strategies".into(), strategies.join(", "))),
    }
    match lookup(s, "fitted") {
        Some(Value::Null) => facts.push(("PFFP parameters".into(), "the paper's Table 3".into())),
        Some(Value::Object(_)) => {
            let p: Vec<String> = [("beta", "β"), ("sm", "S_m"), ("mu", "μ"), ("h", "H")]
                .iter()
                .filter_map(|(k, l)| {
                    f.num(s, SUMMARY, &format!("fitted.{k}"))
                        .map(|x| format!("{l} = {}", show(x)))
                })
                .collect();
            facts.push(("PFFP parameters".into(), format!("fitted: {}", p.join(", "))));
        }
        _ => {
            // Missing or of the wrong type: named.
            let _ = f.num(s, SUMMARY, "fitted");
        }
    }
    num_fact(
        f,
        s,
        SUMMARY,
        "missing_estimates",
        "jobs without an estimate",
        "",
        facts,
    );
    num_fact(f, s, SUMMARY, "seed", "seed", "", facts);
    let t = test.map_or(String::new(), |t| format!("Test {}", show(t)));

    let has = |k: &str| lookup(s, k).is_some_and(|v| !v.is_null());
    if !has("degradation") && !has("grid") {
        let shown = f.name(SUMMARY);
        f.problem(format!(
            "{shown}: fields `degradation` and `grid` are both missing or null: a run that neither \
             compares strategies nor tunes the grid"
        ));
    }
    if has("degradation") {
        degradation(f, s, &t, figures);
        let mut profiles = Vec::new();
        for (metric, what) in [
            ("rho", "ρ, the makespan over its lower bound"),
            ("tw", "t_w, the mean wait"),
            ("mean", "the mean of the two ratios"),
        ] {
            for hi in [2, 5] {
                let name = format!("profile-{metric}-{hi}.svg");
                let caption = format!(
                    "{t}: performance profile of {what}: for each strategy, the fraction p(τ) of weeks \
                     where it is within a factor τ of the week's best strategy, τ ∈ [1, {hi}] \
                     (higher is better) — {name}"
                );
                profiles.extend(f.svg_figure(&name, caption));
            }
        }
        figures.push(Block::Gallery(profiles));
    }
    if has("grid") {
        let paper_table = test.and_then(paper_grid_table);
        figures.extend(f.svg_figure(
            "grid.svg",
            format!(
                "{t}: our mean competitive factor ρ of PFFP over the φ × ψ grid (rows φ, the queue \
                 weight; columns ψ, the residual-runtime weight; both without unit), green for the \
                 lowest, red for the highest, each cell's value written in it{} — grid.svg",
                paper_table.map_or(String::new(), |n| format!("; the paper's Table {n} follows"))
            ),
        ));
        if let Some(n) = paper_table {
            paper_grid(f, s, &t, n, figures);
        }
    }
}

/// Degradation bars: ρ and t_w per strategy, ours beside the paper's.
fn degradation(f: &mut RunFolder, s: &Value, t: &str, figures: &mut Vec<Block>) {
    let n = array(f, s, SUMMARY, "degradation.rows").map_or(0, Vec::len);
    let paper_n = array(f, s, SUMMARY, "paper_degradation").map_or(0, Vec::len);
    let paper_names: Vec<Option<String>> = (0..paper_n)
        .map(|j| f.str(s, SUMMARY, &format!("paper_degradation.{j}.strategy")))
        .collect();
    let mut groups = Vec::new();
    let mut series: Vec<Series> = ["ρ ours", "ρ paper", "t_w ours", "t_w paper"]
        .iter()
        .map(|n| Series {
            name: n.to_string(),
            values: Vec::new(),
        })
        .collect();
    let mut plotted = HtmlTable::new(
        "Values plotted above (summary.json `degradation`, `paper_degradation`): degradation (%), mean over weeks",
        ["strategy", "ρ ours", "ρ paper", "t_w ours", "t_w paper"],
    );
    for i in 0..n {
        let Some(name) = f.str(s, SUMMARY, &format!("degradation.rows.{i}.strategy")) else {
            continue;
        };
        let j = paper_names
            .iter()
            .position(|p| p.as_deref() == Some(name.as_str()));
        let (rho, rho_x) = field_cell(f, s, &format!("degradation.rows.{i}.rho"), 2);
        let (wait, wait_x) = field_cell(f, s, &format!("degradation.rows.{i}.wait"), 2);
        let (p_rho, p_rho_x, p_wait, p_wait_x) = match j {
            Some(j) => {
                let (a, ax) = field_cell(f, s, &format!("paper_degradation.{j}.rho"), 2);
                let (b, bx) = field_cell(f, s, &format!("paper_degradation.{j}.wait"), 2);
                (a, ax, b, bx)
            }
            None => (Cell::num("—"), None, Cell::num("—"), None),
        };
        for (k, x) in [rho_x, p_rho_x, wait_x, p_wait_x].into_iter().enumerate() {
            series[k].values.push(x.unwrap_or(f64::NAN));
        }
        groups.push(name.clone());
        plotted.row(vec![Cell::text(name), rho, p_rho, wait, p_wait]);
    }
    if groups.is_empty() {
        return;
    }
    if paper_n == 0 {
        series.retain(|s| !s.name.ends_with("paper"));
    }
    let title = format!("{t}: degradation against the week's best strategy");
    let svg = bar_chart(&BarChart {
        title: &title,
        x_label: "allocation strategy",
        y_label: "degradation (%), mean over weeks",
        groups: &groups,
        series: &series,
        log_y: true,
        paired: paper_n > 0,
    });
    let caption = format!(
        "{t}: degradation of each strategy against the best one per week (%, log scale; 0 % has no bar), \
         ρ (makespan over its lower bound) and t_w (mean wait), ours solid beside the paper's pale"
    );
    figures.extend(chart(f, svg, caption));
    figures.push(Block::Table(plotted));
}

/// The paper's grid table as a heat map beside ours, from the grid cells'
/// `paper` values.
fn paper_grid(f: &mut RunFolder, s: &Value, t: &str, table_no: u32, figures: &mut Vec<Block>) {
    let n = array(f, s, SUMMARY, "grid").map_or(0, Vec::len);
    let mut cells: Vec<(f64, f64, f64)> = Vec::new();
    let mut h0 = None;
    for i in 0..n {
        let Some(h) = f.num(s, SUMMARY, &format!("grid.{i}.h")) else {
            continue;
        };
        let h0 = *h0.get_or_insert(h);
        if h != h0 {
            continue;
        }
        let (Some(phi), Some(psi)) = (
            f.num(s, SUMMARY, &format!("grid.{i}.phi")),
            f.num(s, SUMMARY, &format!("grid.{i}.psi")),
        ) else {
            continue;
        };
        if let Some(p) = f.num(s, SUMMARY, &format!("grid.{i}.paper")) {
            cells.push((phi, psi, p));
        }
    }
    let mut phis: Vec<f64> = cells.iter().map(|c| c.0).collect();
    let mut psis: Vec<f64> = cells.iter().map(|c| c.1).collect();
    for v in [&mut phis, &mut psis] {
        v.sort_by(f64::total_cmp);
        v.dedup();
    }
    if phis.is_empty() || psis.is_empty() {
        return;
    }
    let values: Vec<Vec<f64>> = phis
        .iter()
        .map(|&phi| {
            psis.iter()
                .map(|&psi| {
                    cells
                        .iter()
                        .find(|c| c.0 == phi && c.1 == psi)
                        .map_or(f64::NAN, |c| c.2)
                })
                .collect()
        })
        .collect();
    let labels = |v: &[f64]| v.iter().map(|x| show(*x)).collect::<Vec<_>>();
    let h = h0.map_or(String::new(), |h| format!(" (H = {})", show(h)));
    let svg = heatmap(
        &format!("The paper's Table {table_no}: mean ρ of PFFP{h}"),
        "φ (queue)",
        "ψ (residual runtime)",
        &labels(&phis),
        &labels(&psis),
        &values,
    );
    let caption = format!(
        "{t}: the paper's Table {table_no}, mean competitive factor ρ of PFFP over the same φ × ψ grid \
         (summary.json `grid.*.paper`): green for its lowest, red for its highest (each map spans its own \
         range: compare the values written in the cells)"
    );
    figures.extend(chart(f, svg, caption));
}

// ---------------------------------------------------------------------------
// Diet-ethic.

fn diet(
    f: &mut RunFolder,
    s: &Value,
    facts: &mut Vec<(String, String)>,
    figures: &mut Vec<Block>,
    notes: &mut Vec<String>,
) {
    str_fact(f, s, SUMMARY, "scenario", "scenario", facts);
    if let Some(Value::String(p)) = lookup(s, "scenario_file") {
        facts.push(("scenario file".into(), p.clone()));
    }
    num_fact(f, s, SUMMARY, "runs", "runs per point", " (medians)", facts);
    num_fact(f, s, SUMMARY, "seed", "seed", "", facts);
    let n = array(f, s, SUMMARY, "points").map_or(0, Vec::len);
    let mut n_submit = Vec::new();
    for i in 0..n {
        let key = format!("points.{i}.n_submit");
        if lookup(s, &key).is_some_and(|v| !v.is_null())
            && let Some(x) = f.num(s, SUMMARY, &key)
        {
            n_submit.push(show(x));
        }
    }
    if !n_submit.is_empty() {
        facts.push(("legacy n_submit".into(), n_submit.join(", ")));
    }
    // The paper's claim, first among the notes.
    if let Some(p) = f.str(s, SUMMARY, "paper")
        && !p.is_empty()
    {
        notes.push(p);
    }
    figures.extend(f.svg_figure(
        "diet.svg",
        "Diet-ethic against the legacy system over the legacy clients' n_submit (log x): unhappy users \
         (count), unfairness (max − min satisfaction) and completed requests (count), medians over the \
         runs; Diet-ethic does not guess n_submit, so its value is one flat line — diet.svg",
    ));
}

// ---------------------------------------------------------------------------
// Workflow fairness.

fn workflow(
    f: &mut RunFolder,
    s: &Value,
    facts: &mut Vec<(String, String)>,
    figures: &mut Vec<Block>,
    opts: &Options,
) {
    match lookup(s, "exp") {
        Some(Value::Null) => facts.push((
            "experiment of the paper".into(),
            "none (workflows of your own)".into(),
        )),
        _ => num_fact(f, s, SUMMARY, "exp", "experiment of the paper", "", facts),
    }
    let workflows = strings(f, s, SUMMARY, "workflows");
    if !workflows.is_empty() {
        facts.push(("workflows".into(), workflows.join(", ")));
    }
    str_fact(f, s, SUMMARY, "grid", "grid", facts);
    num_fact(f, s, SUMMARY, "tau", "τ_u", "", facts);
    if let Some(e) = f.num(s, SUMMARY, "every_s") {
        let every = if e == 0.0 {
            "at every status change".to_string()
        } else {
            format!("every {} s", show(e))
        };
        facts.push(("controller".into(), every));
    }
    num_fact(f, s, SUMMARY, "spacing_s", "between submissions", " s", facts);
    if let Some(m) = boolean(f, s, SUMMARY, "mirror") {
        let m = if m {
            "yes: each raise of the Fairness run is matched in the No-Fairness run"
        } else {
            "no"
        };
        facts.push(("raises mirrored".into(), m.into()));
    }
    num_fact(f, s, SUMMARY, "seed", "seed", "", facts);
    if let Some(Value::Object(_)) = lookup(s, "paper") {
        let mut p = Vec::new();
        if let Some(x) = f.num(s, SUMMARY, "paper.sigma_s_up_to") {
            p.push(format!("σ_s reduced up to {}×", show(x)));
        }
        if let Some(x) = f.num(s, SUMMARY, "paper.mu_about") {
            p.push(format!("μ by about {}×", show(x)));
        }
        if let Some(Value::Number(_)) = lookup(s, "paper.sigma_m_up_to")
            && let Some(x) = f.num(s, SUMMARY, "paper.sigma_m_up_to")
        {
            p.push(format!("σ_m up to {}×", show(x)));
        }
        facts.push(("paper (production grid)".into(), p.join(", ")));
    }
    let n = array(f, s, SUMMARY, "repetitions").map_or(0, Vec::len);
    facts.push(("repetitions".into(), n.to_string()));
    let tau = f
        .num(s, SUMMARY, "tau")
        .map_or(String::new(), |t| format!(", τ_u = {}", show(t)));

    slowdowns(f, s, n, figures, opts);
    for i in 0..n {
        let Some(r) = f.num(s, SUMMARY, &format!("repetitions.{i}.repetition")) else {
            continue;
        };
        let name = format!("eta-rep{}.svg", show(r));
        let caption = format!(
            "η_u over time (s), repetition {}: the Fairness run (η_u controller{tau}) and the No-Fairness \
             run (FCFS) on the same grid; η_u = W_max − W_min, the spread of the active workflows' W_i \
             (0: all alike) — {name}",
            show(r)
        );
        figures.extend(f.svg_figure(&name, caption));
    }
}

/// Slowdown bars per workflow (mean over repetitions): No-Fairness and
/// Fairness, and the paper's where summary.json has them (SimuBloch in
/// Experiment 2, `paper_table3`).
fn slowdowns(f: &mut RunFolder, s: &Value, reps: usize, figures: &mut Vec<Block>, opts: &Options) {
    if reps == 0 {
        return;
    }
    let k = array(f, s, SUMMARY, "repetitions.0.no_fairness.workflows").map_or(0, Vec::len);
    let names: Vec<String> = (0..k)
        .map(|j| {
            f.str(
                s,
                SUMMARY,
                &format!("repetitions.0.no_fairness.workflows.{j}.name"),
            )
            .unwrap_or_else(|| format!("workflow {}", j + 1))
        })
        .collect();
    // Names given twice (three GATE) are numbered in submission order.
    let groups: Vec<String> = names
        .iter()
        .enumerate()
        .map(|(j, n)| {
            if names.iter().filter(|m| *m == n).count() > 1 {
                let nth = names[..=j].iter().filter(|m| *m == n).count();
                format!("{n} #{nth}")
            } else {
                n.clone()
            }
        })
        .collect();
    let mut plotted = HtmlTable::new(
        "Values plotted above (summary.json `repetitions.*.{no_fairness,fairness}.workflows.*.slowdown`): \
         slowdown per repetition",
        ["rep", "workflow", "No-Fairness (FCFS)", "Fairness (η_u control)"],
    );
    let mut sums = vec![[0.0f64; 2]; k];
    let mut counts = vec![[0usize; 2]; k];
    for i in 0..reps {
        let rep = f
            .num(s, SUMMARY, &format!("repetitions.{i}.repetition"))
            .map_or_else(|| (i + 1).to_string(), show);
        for (j, group) in groups.iter().enumerate() {
            let mut row = vec![Cell::num(rep.clone()), Cell::text(group.clone())];
            for (m, run) in ["no_fairness", "fairness"].iter().enumerate() {
                let (cell, x) = field_cell(f, s, &format!("repetitions.{i}.{run}.workflows.{j}.slowdown"), 2);
                if let Some(x) = x.filter(|x| x.is_finite()) {
                    sums[j][m] += x;
                    counts[j][m] += 1;
                }
                row.push(cell);
            }
            push_row(&mut plotted, opts, row);
        }
    }
    let mean = |j: usize, m: usize| {
        if counts[j][m] > 0 {
            sums[j][m] / counts[j][m] as f64
        } else {
            f64::NAN
        }
    };
    // The paper's runs (SimuBloch in Experiment 2): their mean slowdown.
    let mut paper = [f64::NAN; 2];
    let mut paper_of = None;
    if let Some(Value::Array(p)) = lookup(s, "paper_table3") {
        let runs = p.len();
        let mut acc = [(0.0, 0usize); 2];
        for r in 0..runs {
            for (m, key) in ["slowdown_nf", "slowdown_f"].iter().enumerate() {
                if let Some(x) = f.num(s, SUMMARY, &format!("paper_table3.{r}.{key}")) {
                    acc[m].0 += x;
                    acc[m].1 += 1;
                }
            }
        }
        for m in 0..2 {
            if acc[m].1 > 0 {
                paper[m] = acc[m].0 / acc[m].1 as f64;
            }
        }
        paper_of = names.iter().position(|n| n == "SimuBloch");
    }
    let with_paper = paper_of.is_some() && paper.iter().any(|x| x.is_finite());
    let mut series = Vec::new();
    for (m, name) in ["No-Fairness (FCFS)", "Fairness (η_u control)"]
        .iter()
        .enumerate()
    {
        series.push(Series {
            name: name.to_string(),
            values: (0..k).map(|j| mean(j, m)).collect(),
        });
        if with_paper {
            series.push(Series {
                name: format!("paper {name}"),
                values: (0..k)
                    .map(|j| if Some(j) == paper_of { paper[m] } else { f64::NAN })
                    .collect(),
            });
        }
    }
    if k == 0 {
        return;
    }
    let title = format!(
        "Slowdown per workflow, mean of {reps} repetition{}",
        if reps == 1 { "" } else { "s" }
    );
    // A log axis only when the slowdowns span more than a factor 20: most
    // lie between 1 and 2, which a log axis flattens.
    let (lo, hi) = series
        .iter()
        .flat_map(|s| s.values.iter().copied())
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold((f64::INFINITY, 0.0f64), |(a, b), v| (a.min(v), b.max(v)));
    let log_y = hi / lo > 20.0;
    let svg = bar_chart(&BarChart {
        title: &title,
        x_label: "workflow (in submission order)",
        y_label: "slowdown (makespan / M_own)",
        groups: &groups,
        series: &series,
        log_y,
        paired: with_paper,
    });
    let caption = format!(
        "Slowdown of each workflow (its makespan over M_own, the critical path of its measured task times; \
         {} scale), mean over the {reps} repetition{}: No-Fairness (FCFS) and Fairness (the η_u controller){}",
        if log_y { "log" } else { "linear" },
        if reps == 1 { "" } else { "s" },
        if with_paper {
            "; pale: the paper's Table 3 (SimuBloch, mean of its 4 runs on the production grid)"
        } else {
            ""
        }
    );
    figures.extend(chart(f, svg, caption));
    figures.push(Block::Table(plotted));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::{TABLES_JSON, Table, tables_json};
    use serde_json::json;

    const SVG: &str = "<svg xmlns=\"http://www.w3.org/2000/svg\"><text>x</text></svg>\n";

    /// A folder holding `summary` as `file`, the given SVG files and a
    /// tables.json of one table.
    fn folder(file: &str, summary: &Value, svgs: &[&str]) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join(file), summary.to_string()).unwrap();
        for s in svgs {
            std::fs::write(d.path().join(s), SVG).unwrap();
        }
        let mut t = Table::new(["strategy", "ρ %"]).title("Printed");
        t.row(["MST", "0.03"]);
        t.note("Why ours differs: a note.");
        std::fs::write(d.path().join(TABLES_JSON), tables_json([&t])).unwrap();
        d
    }

    fn tool() -> Value {
        json!({"name": "fairsched", "version": "0.1.0", "commit": "abc", "command": "fairsched experiment x"})
    }

    /// Every figure's caption, those of galleries included.
    fn figures(blocks: &[Block]) -> Vec<&str> {
        blocks
            .iter()
            .flat_map(|b| match b {
                Block::Figure { caption, .. } => vec![caption.as_str()],
                Block::Gallery(inner) => figures(inner),
                _ => Vec::new(),
            })
            .collect()
    }

    fn facts(blocks: &[Block]) -> Vec<(String, String)> {
        match &blocks[0] {
            Block::Facts(f) => f.clone(),
            other => panic!("facts first, not {other:?}"),
        }
    }

    fn tables(blocks: &[Block]) -> Vec<&HtmlTable> {
        blocks
            .iter()
            .filter_map(|b| match b {
                Block::Table(t) => Some(t),
                _ => None,
            })
            .collect()
    }

    fn run(name: &str, s: &Value, svgs: &[&str]) -> (Vec<Block>, Vec<String>) {
        let d = folder(SUMMARY, s, svgs);
        let mut f = RunFolder::new(d.path());
        let blocks = experiment(&mut f, name, s, &Options::default());
        (blocks, f.problems)
    }

    fn shapley_doc() -> Value {
        json!({
            "tool": tool(), "experiment": "shapley", "table": 1, "figure": null, "window_s": 50000,
            "instances": 3, "orgs": [5], "ownership": "zipf:1", "platform": null, "seed": 0,
            "reference": "ref",
            "traces": [{"name": "LPC-EGEE", "path": "x.swf.gz", "procs": 70, "jobs": 10}],
            "unavailable": ["PIK-IPLEX"],
            "stats": [
                {"trace": "LPC-EGEE", "orgs": 5, "algorithm": "REF", "mean": 0.0, "paper": null},
                {"trace": "LPC-EGEE", "orgs": 5, "algorithm": "ROUNDROBIN", "mean": 0.49, "paper": [238.0, 353.0]},
                {"trace": "LPC-EGEE", "orgs": 5, "algorithm": "FAIRSHARE", "mean": 0.011, "paper": [16.0, 25.0]},
                {"trace": "LPC-EGEE", "orgs": 5, "algorithm": "RAND", "mean": 0.0, "paper": null}
            ],
            "notes": ["Why ours differs: a note."],
            "wall_time_s": 0.1
        })
    }

    #[test]
    fn shapley_shows_its_bars_and_ours_beside_the_papers() {
        let (b, problems) = run("shapley", &shapley_doc(), &["shapley.svg"]);
        assert!(problems.is_empty(), "{problems:?}");
        let facts = facts(&b);
        assert!(
            facts.contains(&("reproduces".into(), "the paper's Table 1".into())),
            "{facts:?}"
        );
        assert!(
            facts
                .iter()
                .any(|(k, v)| k == "logs" && v.starts_with("LPC-EGEE (70 processors"))
        );
        let figs = figures(&b);
        assert_eq!(figs.len(), 2, "{figs:?}");
        assert!(figs[0].ends_with("shapley.svg"));
        assert!(figs[1].starts_with("LPC-EGEE, 5 organizations"));
        let Block::Figure { svg, .. } = b
            .iter()
            .find(|x| matches!(x, Block::Figure { caption, .. } if caption.starts_with("LPC")))
            .unwrap()
        else {
            unreachable!()
        };
        for label in [
            "ROUNDROBIN",
            "FAIRSHARE",
            "ours",
            "paper Table 1",
            "algorithm",
            "Δψ/p_tot (s)",
        ] {
            assert!(svg.contains(label), "{label}");
        }
        assert!(!svg.contains(">REF<"), "REF is the reference, not a bar");
        let t = tables(&b);
        // The printed table (its note taken out: it is among the notes),
        // then the plotted values, each naming its field.
        assert_eq!(t.len(), 2);
        assert!(t[0].notes.is_empty(), "{:?}", t[0].notes);
        let rr = &t[1].rows[0];
        assert_eq!(rr[2].text, "ROUNDROBIN");
        assert_eq!(rr[3].key.as_deref(), Some("stats.1.mean"));
        assert_eq!(rr[3].value.as_deref(), Some("0.49"));
        assert_eq!(rr[4].key.as_deref(), Some("stats.1.paper.0"));
        // An algorithm the paper has no value for: a dash, naming the null.
        let rand = &t[1].rows[2];
        assert_eq!(
            (rand[4].text.as_str(), rand[4].key.as_deref()),
            ("—", Some("stats.3.paper"))
        );
        assert_eq!(rand[4].value.as_deref(), Some("null"));
        assert!(
            b.iter()
                .any(|x| matches!(x, Block::Notes(n) if n == &["Why ours differs: a note."]))
        );
    }

    #[test]
    fn a_field_of_the_wrong_type_is_named_and_the_rest_still_shown() {
        let mut s = shapley_doc();
        s["stats"][1]["mean"] = json!("0.49");
        s["instances"] = json!([3]);
        let (b, problems) = run("shapley", &s, &["shapley.svg"]);
        assert!(
            problems
                .iter()
                .any(|p| p.contains("field `stats.1.mean`: expected a number, found a string")),
            "{problems:?}"
        );
        assert!(
            problems
                .iter()
                .any(|p| p.contains("field `instances`: expected a number, found an array")),
            "{problems:?}"
        );
        assert!(
            problems.iter().all(|p| p.contains("summary.json")),
            "{problems:?}"
        );
        assert_eq!(figures(&b).len(), 2);
    }

    fn pffp_doc(test: u32) -> Value {
        let compare = test == 2;
        json!({
            "tool": tool(), "experiment": "pffp", "test": test, "workload": "B", "machines": [1, 1, 1],
            "bags_of_tasks": false, "seed": 0, "strategies": [["MST", "mst"], ["Rand", "rand"]],
            "logs": [{"name": "KTH-SP2"}], "instances": [{}, {}],
            "degradation": if compare { json!({"rows": [
                {"strategy": "MST", "rho": 0.03, "wait": 0.4, "mean": 0.2},
                {"strategy": "Rand", "rho": 12.5, "wait": 3.8, "mean": 8.2}
            ]}) } else { Value::Null },
            "paper_degradation": if compare { json!([
                {"strategy": "MST", "rho": 0.0, "wait": 0.0, "mean": 0.0, "rank": 1},
                {"strategy": "Rand", "rho": 47.71, "wait": 19.4, "mean": 33.55, "rank": 5}
            ]) } else { Value::Null },
            "grid": if compare { Value::Null } else { json!([
                {"h": 0.78, "phi": 0.001, "psi": 0.001, "rho": 1.3, "paper": 1.049},
                {"h": 0.78, "phi": 0.001, "psi": 0.002, "rho": 1.1, "paper": 1.099},
                {"h": 0.78, "phi": 0.002, "psi": 0.001, "rho": 1.2, "paper": 1.0},
                {"h": 0.78, "phi": 0.002, "psi": 0.002, "rho": 1.0, "paper": 1.035}
            ]) },
            "missing_estimates": 0, "fitted": null, "notes": ["n"], "wall_time_s": 0.3
        })
    }

    const PROFILES: [&str; 6] = [
        "profile-rho-2.svg",
        "profile-rho-5.svg",
        "profile-tw-2.svg",
        "profile-tw-5.svg",
        "profile-mean-2.svg",
        "profile-mean-5.svg",
    ];

    #[test]
    fn pffp_comparisons_show_degradation_bars_and_every_profile() {
        let (b, problems) = run("pffp", &pffp_doc(2), &PROFILES);
        assert!(problems.is_empty(), "{problems:?}");
        let figs = figures(&b);
        assert_eq!(figs.len(), 7, "{figs:?}");
        assert!(figs[0].starts_with("Test 2: degradation"));
        for (cap, file) in figs[1..].iter().zip(PROFILES) {
            assert!(cap.ends_with(file), "{cap}");
        }
        let t = tables(&b);
        let plotted = t.last().unwrap();
        assert_eq!(plotted.rows[1][0].text, "Rand");
        assert_eq!(plotted.rows[1][2].key.as_deref(), Some("paper_degradation.1.rho"));
        assert_eq!(plotted.rows[1][2].text, "47.71");
        // A profile missing: named, the others still there.
        let d = folder(SUMMARY, &pffp_doc(2), &PROFILES[1..]);
        let mut f = RunFolder::new(d.path());
        let b = experiment(&mut f, "pffp", &pffp_doc(2), &Options::default());
        assert_eq!(figures(&b).len(), 6);
        assert_eq!(f.problems.len(), 1, "{:?}", f.problems);
        assert!(f.problems[0].contains("profile-rho-2.svg: missing"));
    }

    #[test]
    fn pffp_grids_show_ours_and_the_papers_table() {
        let (b, problems) = run("pffp", &pffp_doc(3), &["grid.svg"]);
        assert!(problems.is_empty(), "{problems:?}");
        let figs = figures(&b);
        assert_eq!(figs.len(), 2, "{figs:?}");
        assert!(figs[0].ends_with("grid.svg") && figs[1].contains("the paper's Table 7"));
        let Block::Figure { svg, .. } = b.iter().rfind(|x| matches!(x, Block::Figure { .. })).unwrap() else {
            unreachable!()
        };
        for label in ["1.049", "1.099", "1.000", "1.035", "φ (queue)", "0.002"] {
            assert!(svg.contains(label), "{label}");
        }
    }

    #[test]
    fn diet_shows_its_panels_and_the_papers_claim_first_among_the_notes() {
        let s = json!({
            "tool": tool(), "experiment": "diet-ethic", "scenario": "night-consecutive",
            "scenario_file": null, "runs": 10, "seed": 0,
            "points": [{"system": "diet-ethic", "n_submit": null}, {"system": "legacy", "n_submit": 3},
                       {"system": "legacy", "n_submit": 100}],
            "paper": "Paper: 0 unhappy users.", "notes": ["Why ours differs: a note."], "wall_time_s": 0.06
        });
        let (b, problems) = run("diet-ethic", &s, &["diet.svg"]);
        assert!(problems.is_empty(), "{problems:?}");
        assert!(facts(&b).contains(&("legacy n_submit".into(), "3, 100".into())));
        assert_eq!(figures(&b).len(), 1);
        assert!(
            b.iter()
                .any(|x| matches!(x, Block::Notes(n) if n[0] == "Paper: 0 unhappy users."))
        );
        // summary.json's `paper` of the wrong type: named.
        let mut bad = s.clone();
        bad["paper"] = json!(3);
        let (_, problems) = run("diet-ethic", &bad, &["diet.svg"]);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("field `paper`: expected a string, found a number"));
    }

    fn wf_doc() -> Value {
        let run = |a: f64, b: f64| json!({"workflows": [{"name": "GATE", "slowdown": a}, {"name": "SimuBloch", "slowdown": b}]});
        json!({
            "tool": tool(), "experiment": "workflow-fairness", "exp": 2, "workflows": ["gate", "simubloch"],
            "grid": "g", "tau": 0.2, "every_s": 0.0, "spacing_s": 300.0, "mirror": true, "seed": 0,
            "repetitions": [
                {"repetition": 1, "fairness": run(1.5, 40.0), "no_fairness": run(1.2, 50.0)},
                {"repetition": 2, "fairness": run(2.5, 20.0), "no_fairness": run(1.0, 30.0)}
            ],
            "paper": {"sigma_s_up_to": 7.0, "mu_about": 2.0, "sigma_m_up_to": null},
            "paper_table3": [{"slowdown_nf": 196.15, "slowdown_f": 38.43}, {"slowdown_nf": 210.48, "slowdown_f": 94.25}],
            "notes": [], "wall_time_s": 0.1
        })
    }

    #[test]
    fn workflow_shows_slowdown_bars_and_eta_per_repetition() {
        let (b, problems) = run("workflow-fairness", &wf_doc(), &["eta-rep1.svg", "eta-rep2.svg"]);
        assert!(problems.is_empty(), "{problems:?}");
        let figs = figures(&b);
        assert_eq!(figs.len(), 3, "{figs:?}");
        assert!(figs[0].starts_with("Slowdown") && figs[0].contains("paper's Table 3"));
        assert!(figs[1].ends_with("eta-rep1.svg") && figs[2].ends_with("eta-rep2.svg"));
        let Block::Figure { svg, .. } = &b.iter().find(|x| matches!(x, Block::Figure { .. })).unwrap() else {
            unreachable!()
        };
        for label in [
            "GATE",
            "SimuBloch",
            "No-Fairness (FCFS)",
            "paper Fairness (η_u control)",
            "slowdown",
        ] {
            assert!(svg.contains(label), "{label}");
        }
        let t = tables(&b);
        let plotted = t.last().unwrap();
        assert_eq!(plotted.rows.len(), 4);
        assert_eq!(
            plotted.rows[3][3].key.as_deref(),
            Some("repetitions.1.fairness.workflows.1.slowdown")
        );
        assert_eq!(plotted.rows[3][3].text, "20.00");
        assert!(facts(&b).contains(&(
            "paper (production grid)".into(),
            "σ_s reduced up to 7×, μ by about 2×".into()
        )));
        // Repeated names are numbered.
        let mut s = wf_doc();
        s["repetitions"][0]["no_fairness"]["workflows"][1]["name"] = json!("GATE");
        let (b, _) = run("workflow-fairness", &s, &["eta-rep1.svg", "eta-rep2.svg"]);
        assert_eq!(tables(&b).last().unwrap().rows[1][1].text, "GATE #2");
    }

    #[test]
    fn a_study_shows_its_size_and_where_each_claim_holds() {
        let s = json!({
            "tool": tool(), "experiment": "pffp-study", "quick": true,
            "claims": [{"id": "mst_best", "text": "MST first"}, {"id": "mlp_last", "text": "MLp last"}],
            "rows": [
                {"case": "test2", "reading": "default"},
                {"case": "test2", "reading": "stated", "source": {"kind": "paper", "quotes": [{"at": "§4", "text": "as said"}]}},
                {"case": "test4", "reading": "stated", "source": {"kind": "paper", "quotes": [{"at": "§4", "text": "as said"}]}},
                {"case": "test4", "reading": "u-0.1", "source": {"kind": "sensitivity", "parameter": "utilization", "range": "0.1 and 0.2"}}
            ],
            "holds_under": [["mst_best", ["test2/default"]], ["mlp_last", []]],
            "notes": ["n1"]
        });
        let (b, problems) = run("pffp-study", &s, &["study-test2.svg"]);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(figures(&b), ["study-test2.svg"]);
        let f = facts(&b);
        assert!(f.contains(&("size".into(), "quick (--quick)".into())), "{f:?}");
        assert!(f.contains(&("readings run".into(), "4".into())), "{f:?}");
        let notes: Vec<&String> = b
            .iter()
            .flat_map(|x| match x {
                Block::Notes(n) => n.iter().collect(),
                _ => Vec::new(),
            })
            .collect();
        assert!(
            notes[0].contains("mst_best") && notes[0].contains("test2/default"),
            "{notes:?}"
        );
        assert!(notes[1].contains("holds under no reading"), "{notes:?}");
        // Each reading's source once, quoted or as its sweep.
        assert_eq!(
            notes[2],
            "Reading test2/stated — from the paper: \"as said\" (§4)."
        );
        assert_eq!(
            notes[3],
            "Reading test4/u-0.1 — from a sweep over utilization: 0.1 and 0.2."
        );
        assert_eq!(notes[4], "n1");
        assert_eq!(tables(&b).len(), 1);
    }

    #[test]
    fn an_unknown_experiment_says_so_and_shows_every_svg() {
        let s = json!({"tool": tool(), "experiment": "new-one", "notes": ["n1"]});
        let (b, problems) = run("new-one", &s, &["b.svg", "a.svg"]);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].contains("unknown experiment `new-one`"),
            "{problems:?}"
        );
        assert_eq!(figures(&b), ["a.svg", "b.svg"]);
        assert_eq!(tables(&b).len(), 1, "tables.json is still shown");
        assert!(facts(&b).iter().any(|(k, _)| k == "command"));
    }

    #[test]
    fn a_run_without_tables_json_still_shows_facts_and_figures() {
        let d = folder(SUMMARY, &pffp_doc(2), &PROFILES);
        std::fs::remove_file(d.path().join(TABLES_JSON)).unwrap();
        let mut f = RunFolder::new(d.path());
        let b = experiment(&mut f, "pffp", &pffp_doc(2), &Options::default());
        assert_eq!(f.problems.len(), 1, "{:?}", f.problems);
        assert!(f.problems[0].contains("tables.json: missing"));
        assert_eq!(figures(&b).len(), 7);
        assert!(facts(&b).contains(&("test".into(), "2".into())));
    }

    #[test]
    fn trace_stats_and_tau_show_facts_tables_and_their_chart() {
        let s = json!({
            "tool": tool(),
            "trace": {"path": "kth.swf.gz", "header": {"computer": "IBM SP2"}, "kept_jobs": 9, "raw_jobs": 10,
                      "users": 3, "processors": 100, "processors_source": "header MaxProcs", "span_seconds": 86400},
            "stats": {"jobs": 9}
        });
        let d = folder(SUMMARY, &s, &["aggregation.svg"]);
        let mut f = RunFolder::new(d.path());
        let b = trace_stats(&mut f, &s, &Options::default());
        assert!(f.problems.is_empty(), "{:?}", f.problems);
        let facts_ = facts(&b);
        assert!(facts_.contains(&("jobs".into(), "9 kept of 10 in the log".into())));
        assert!(facts_.contains(&("computer".into(), "IBM SP2".into())));
        assert_eq!(figures(&b).len(), 1);
        assert_eq!(tables(&b).len(), 1);

        let t = json!({
            "tool": tool(), "command": "trace tau", "inputs": ["gate"], "workflows": ["GATE"], "system": "NF",
            "grid": "g", "spacing_s": 300.0, "seed": 0, "bin": 0.05, "samples": 10, "nonzero": 4,
            "threshold": null, "paper_tau": 0.2, "repetitions": [{}]
        });
        let d = folder("tau.json", &t, &["tau.svg"]);
        let mut f = RunFolder::new(d.path());
        let b = trace_tau(&mut f, &t, &Options::default());
        assert!(f.problems.is_empty(), "{:?}", f.problems);
        assert!(facts(&b).contains(&(
            "proposed τ_u".into(),
            "none (fewer than two modes) (paper: 0.2)".into()
        )));
        assert_eq!(figures(&b).len(), 1);
        // A wrong type in tau.json is named with its file.
        let mut bad = t.clone();
        bad["samples"] = json!("10");
        let mut f = RunFolder::new(d.path());
        trace_tau(&mut f, &bad, &Options::default());
        assert_eq!(f.problems.len(), 1, "{:?}", f.problems);
        assert!(f.problems[0].contains("tau.json: field `samples`: expected a number, found a string"));
    }
}
