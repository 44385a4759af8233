//! `fairsched report` sections of `simulate` runs.
//!
//! A run's section shows its facts (the tool block, policy, trace, seed,
//! platform), the summary's figures (tables of `summary.json`), a Gantt
//! chart of a window, processors busy and tasks waiting over time (from
//! `tasks.csv` and `runs.csv`), and with several organizations their
//! utilities ψ and Shapley values φ over time (`fairness.csv`) and φ − ψ
//! at the end. A comparison (`simulate` with several policies) shows
//! `comparison.json` as a table and bars, every policy's queue and
//! utilization on one chart each, then each policy's run as above.
//!
//! # Data keys
//!
//! Value cells taken from a JSON file carry `data-key` (where the value
//! is) and `data-value` (the JSON value there, `null` included), so a
//! test can compare the page with the files:
//!
//! - in a run's section (`data-kind="simulate"`), `data-key` is the
//!   dotted path of the value in the folder's `summary.json`, array
//!   indices as numbers: `mean_wait_s`, `percentiles.wait_s.p90`,
//!   `outcomes.completed`, `org_shares.1.received_share`,
//!   `fairness.orgs.0.psi`;
//! - in a comparison's section (`data-kind="comparison"`) it is
//!   `FILE#PATH`: the dotted PATH in FILE, a path relative to the
//!   section's folder: `comparison.json#2.mean_wait_s` (the third row of
//!   `comparison.json`'s array) in the comparison table,
//!   `easy/summary.json#percentiles.wait_s.p90` in the part of policy
//!   `easy` (its folder).

use crate::html::{Block, Cell, HtmlTable};
use crate::plot_sim::{self, Bars, Gantt, Stroke, TimeChart, TimeSeries};
use crate::report::{ColorBy, Options, RunFolder, lookup, tool_facts, type_name};
use crate::timeline::{
    self, FairnessRow, GroupBy, LineProblems, RunRow, Sampled, TaskRow, Timeline, human, secs,
};
use serde_json::Value;
use std::io::BufReader;

/// Points of a chart over time (intervals of the run's span).
const TIME_POINTS: usize = 500;
/// Points per policy on the comparison's charts: fewer than one run's, so
/// that five overlaid policies stay apart (500 made a tangle).
const COMPARISON_POINTS: usize = 80;
/// Runs the default Gantt window shows at most.
const WINDOW_RUNS: usize = 200;
/// Runs a Gantt chart draws at most (a window given by hand may hold more).
const MAX_GANTT_RUNS: usize = 1500;
/// Organizations drawn on the charts over time.
const MAX_ORG_LINES: usize = 10;

/// Where a cell's value is: a run's own `summary.json` (`Plain`), or a
/// file under the comparison's folder (`In("easy/summary.json")`).
#[derive(Clone, Debug)]
enum Keys {
    Plain,
    In(String),
}

impl Keys {
    fn key(&self, path: &str) -> String {
        match self {
            Keys::Plain => path.to_string(),
            Keys::In(file) => format!("{file}#{path}"),
        }
    }
}

/// What a run's part of the page needs besides its blocks: its timeline,
/// for the comparison's charts.
struct RunPart {
    blocks: Vec<Block>,
    timeline: Option<(Sampled, Option<f64>)>,
}

/// One `simulate` run (a folder with `summary.json` naming a policy).
pub fn single(f: &mut RunFolder, summary: &Value, opts: &Options) -> Vec<Block> {
    run_part(f, summary, opts, &Keys::Plain, "", TIME_POINTS).blocks
}

/// `simulate` with several policies: `comparison.json` and one folder per
/// policy.
pub fn comparison(f: &mut RunFolder, comparison: &Value, opts: &Options) -> Vec<Block> {
    let mut out = Vec::new();
    let Some(rows) = comparison.as_array() else {
        f.problem(format!(
            "{}: expected an array of rows (one per policy), found {}",
            f.name("comparison.json"),
            type_name(comparison)
        ));
        return out;
    };
    // The folder of each row: the policy's spec as a folder name, or the
    // one a spec given twice names in parentheses.
    let mut folders: Vec<(String, Option<String>)> = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        let label = r.get("policy").and_then(Value::as_str).unwrap_or("").to_string();
        let folder = folder_of(&label);
        if label.is_empty() {
            f.problem(format!(
                "{}: field `{i}.policy` is missing or not a string",
                f.name("comparison.json")
            ));
        } else if folder.is_none() {
            f.problem(format!(
                "{}: field `{i}.policy`: `{label}` names no policy folder",
                f.name("comparison.json")
            ));
        }
        folders.push((label, folder));
    }
    // Folders of runs not in comparison.json (a row lost?) come last.
    let listed: Vec<String> = folders.iter().filter_map(|f| f.1.clone()).collect();
    let mut extra: Vec<String> = std::fs::read_dir(&f.dir)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.path().join("summary.json").is_file())
                .filter_map(|e| e.file_name().to_str().map(str::to_string))
                .filter(|n| !listed.contains(n))
                .collect()
        })
        .unwrap_or_default();
    extra.sort();
    for e in &extra {
        f.problem(format!(
            "{}: a run's folder that comparison.json has no row for",
            f.name(e)
        ));
        folders.push((e.clone(), Some(e.clone())));
    }

    // The facts every run shares, from the first run's summary.
    let first = folders
        .iter()
        .filter_map(|(_, d)| d.as_ref())
        .find(|d| f.dir.join(d).join("summary.json").is_file())
        .and_then(|d| {
            std::fs::read_to_string(f.dir.join(d).join("summary.json"))
                .ok()
                .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        });
    if let Some(s) = &first {
        let mut facts = Vec::new();
        for (k, label) in [
            ("tool.command", "command"),
            ("tool.version", "version"),
            ("tool.commit", "commit"),
        ] {
            if let Some(v) = lookup(s, k).and_then(Value::as_str) {
                facts.push((label.to_string(), v.to_string()));
            }
        }
        facts.extend(run_facts(s, false));
        out.push(Block::Facts(facts));
    }

    // The table.
    const COLUMNS: [(&str, &str); 11] = [
        ("tasks", "tasks"),
        ("makespan_s", "makespan (s)"),
        ("utilization", "utilization"),
        ("mean_wait_s", "mean wait (s)"),
        ("p90_wait_s", "p90 wait"),
        ("p99_wait_s", "p99 wait"),
        ("mean_bsld", "mean bsld"),
        ("p99_bsld", "p99 bsld"),
        ("jain_users_bsld", "Jain users"),
        ("jain_orgs_bsld", "Jain orgs"),
        ("wall_s", "wall (s)"),
    ];
    let keys = Keys::In("comparison.json".to_string());
    let mut t = HtmlTable::new(
        "Policies compared (comparison.json, which has more columns; bsld: bounded slowdown, τ = 10 s; Jain: Jain's index over the users' and the organizations' mean bsld)",
        std::iter::once("policy").chain(COLUMNS.iter().map(|c| c.1)),
    );
    for (i, r) in rows.iter().enumerate().take(opts.max_rows) {
        let mut cells = vec![Cell::text(folders[i].0.clone())];
        for (c, _) in COLUMNS {
            let path = format!("{i}.{c}");
            match r.get(c) {
                Some(v @ (Value::Number(_) | Value::Null)) => {
                    cells.push(Cell::field(show(v), keys.key(&path), v))
                }
                Some(other) => {
                    f.problem(format!(
                        "{}: field `{path}`: expected a number, found {}",
                        f.name("comparison.json"),
                        type_name(other)
                    ));
                    cells.push(Cell::num("?"));
                }
                None => {
                    f.problem(format!(
                        "{}: field `{path}` is missing (a run of an older fairsched?)",
                        f.name("comparison.json")
                    ));
                    cells.push(Cell::num("?"));
                }
            }
        }
        t.row(cells);
    }
    t.cut = rows.len().saturating_sub(opts.max_rows);
    out.push(Block::Table(t));

    // Bars of the main figures.
    let groups: Vec<String> = rows
        .iter()
        .enumerate()
        .map(|(i, _)| folders[i].0.clone())
        .collect();
    let col = |c: &str| -> Vec<f64> {
        rows.iter()
            .map(|r| r.get(c).and_then(Value::as_f64).unwrap_or(f64::NAN))
            .collect()
    };
    if !rows.is_empty() {
        let series = [
            ("mean".to_string(), col("mean_wait_s")),
            ("p90".to_string(), col("p90_wait_s")),
            ("p99".to_string(), col("p99_wait_s")),
        ];
        push_chart(
            f,
            &mut out,
            "comparison wait bars",
            plot_sim::bars(&Bars {
                title: "Wait by policy",
                x_label: "policy",
                y_label: "wait (s)",
                groups: &groups,
                series: &series,
                log_y: true,
            }),
            "Wait (start − submit) of the tasks that started, by policy: the mean and the 90th and 99th \
             percentiles (nearest rank), from comparison.json (log scale: a value of 0 has no bar)."
                .to_string(),
        );
        let series = [
            ("mean".to_string(), col("mean_bsld")),
            ("p90".to_string(), col("p90_bsld")),
        ];
        push_chart(
            f,
            &mut out,
            "comparison slowdown bars",
            plot_sim::bars(&Bars {
                title: "Bounded slowdown by policy",
                x_label: "policy",
                y_label: "bounded slowdown (ratio)",
                groups: &groups,
                series: &series,
                log_y: true,
            }),
            "Bounded slowdown max(1, response / max(run, 10 s)) of the completed tasks, by policy: the mean \
             and the 90th percentile, from comparison.json (log scale)."
                .to_string(),
        );
    }

    // Each policy's run, keeping its timeline for the charts of all.
    let mut parts = Vec::new();
    let mut lines: Vec<(String, Sampled, Option<f64>)> = Vec::new();
    for (label, folder) in &folders {
        let Some(folder) = folder else {
            continue;
        };
        let mut sub = RunFolder::new(&f.dir.join(folder));
        sub.shown = f.name(folder);
        let mut blocks = vec![Block::Heading(format!("Policy {label} ({folder}/)"))];
        if !sub.dir.is_dir() {
            f.problem(format!("policy {label}: {}: no such folder", sub.shown));
            continue;
        }
        match sub.json("summary.json") {
            Some(s) => {
                let keys = Keys::In(format!("{folder}/summary.json"));
                let part = run_part(
                    &mut sub,
                    &s,
                    opts,
                    &keys,
                    label,
                    COMPARISON_POINTS.max(TIME_POINTS),
                );
                blocks.extend(part.blocks);
                if let Some((tl, total)) = part.timeline {
                    lines.push((label.clone(), tl, total));
                }
            }
            None => blocks.push(Block::Para("Nothing of this run could be read.".to_string())),
        }
        for p in sub.problems {
            f.problem(format!("policy {label}: {p}"));
        }
        parts.push(blocks);
    }
    if lines.len() > 1 {
        let resample = |tl: &Sampled| -> Sampled {
            if tl.points.len() <= COMPARISON_POINTS {
                tl.clone()
            } else {
                thin(tl, COMPARISON_POINTS)
            }
        };
        let queue: Vec<TimeSeries> = lines
            .iter()
            .enumerate()
            .map(|(i, (name, tl, _))| TimeSeries {
                name: name.clone(),
                points: step_points(&resample(tl), |p| p.queue),
                color: i,
                stroke: Stroke::Solid,
            })
            .collect();
        push_chart(
            f,
            &mut out,
            "comparison queue",
            plot_sim::time_steps(&TimeChart {
                title: "Tasks waiting, every policy",
                x_label: "time (s, the run's clock)",
                y_label: "tasks waiting (mean over each interval)",
                y_top: None,
                series: &queue,
            }),
            "Tasks submitted and not yet started (again), over time, for every policy: each line is the \
             time-weighted mean over equal intervals of its run (each policy's own chart below has the \
             details)."
                .to_string(),
        );
        let util: Vec<TimeSeries> = lines
            .iter()
            .enumerate()
            .filter_map(|(i, (name, tl, total))| {
                let total = (*total)?;
                Some(TimeSeries {
                    name: name.clone(),
                    points: step_points(&resample(tl), |p| p.busy / total),
                    color: i,
                    stroke: Stroke::Solid,
                })
            })
            .collect();
        if !util.is_empty() {
            push_chart(
                f,
                &mut out,
                "comparison utilization",
                plot_sim::time_steps(&TimeChart {
                    title: "Utilization, every policy",
                    x_label: "time (s, the run's clock)",
                    y_label: "fraction of processors busy",
                    y_top: Some(1.05),
                    series: &util,
                }),
                "Processors held by runs over all processors, over time, for every policy (time-weighted \
                 means over equal intervals of each run)."
                    .to_string(),
            );
        }
    }
    for p in parts {
        out.extend(p);
    }
    out
}

/// The folder of a comparison row's policy label: `spec` → the spec's
/// folder name, `spec (folder)` → `folder`; only a plain name (no path).
fn folder_of(label: &str) -> Option<String> {
    let folder = match label.strip_suffix(')').and_then(|i| i.rsplit_once(" (")) {
        Some((_, folder)) => folder.to_string(),
        None => label.parse::<fairsched_core::PolicySpec>().ok()?.slug(),
    };
    let plain = !folder.is_empty() && folder != "." && folder != ".." && !folder.contains(['/', '\\']);
    plain.then_some(folder)
}

/// Every other point of a timeline's chart, merged, until at most `n`.
fn thin(s: &Sampled, n: usize) -> Sampled {
    let k = s.points.len().div_ceil(n.max(1)).max(1);
    let points = s
        .points
        .chunks(k)
        .map(|c| {
            let m = c.len() as f64;
            timeline::SampledPoint {
                t: c[0].t,
                busy: c.iter().map(|p| p.busy).sum::<f64>() / m,
                queue: c.iter().map(|p| p.queue).sum::<f64>() / m,
                queue_max: c.iter().map(|p| p.queue_max).max().unwrap_or(0),
            }
        })
        .collect();
    Sampled {
        points,
        interval_ms: s.interval_ms.map(|w| w * k as i64),
    }
}

/// A chart as a figure, or a problem saying why it is not there.
fn push_chart(
    f: &mut RunFolder,
    out: &mut Vec<Block>,
    what: &str,
    svg: Result<String, String>,
    caption: String,
) {
    match svg {
        Ok(svg) => out.push(Block::Figure { caption, svg }),
        Err(e) => f.problem(format!("{}: the {what} chart could not be drawn: {e}", f.shown)),
    }
}

/// A figure for a table cell: null as a dash, whole numbers whole,
/// others to about four significant digits.
fn show(v: &Value) -> String {
    match v {
        Value::Null => "—".to_string(),
        Value::Number(n) => {
            let raw = n.to_string();
            let raw = raw.strip_suffix(".0").unwrap_or(&raw);
            match (n.as_i64(), n.as_f64()) {
                (Some(i), _) => i.to_string(),
                // As written when short (a figure rounded by the run).
                _ if raw.len() <= 8 && !raw.contains('e') => raw.to_string(),
                (None, Some(x)) => show_f(x),
                _ => n.to_string(),
            }
        }
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        other => type_name(other).to_string(),
    }
}

fn show_f(x: f64) -> String {
    let a = x.abs();
    if x == x.trunc() && a < 1e9 {
        format!("{x:.0}")
    } else if a >= 1e6 {
        format!("{x:.4e}")
    } else if a >= 100.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.3}")
    } else {
        format!("{x:.4}")
    }
}

/// The facts of a run's summary besides its tool block.
fn run_facts(s: &Value, policy: bool) -> Vec<(String, String)> {
    let get = |k: &str| lookup(s, k);
    let text = |k: &str| get(k).and_then(Value::as_str).map(str::to_string);
    let mut out = Vec::new();
    if policy {
        if let Some(p) = text("policy") {
            out.push(("policy".to_string(), p));
        }
        if let Some(a) = text("allocate") {
            out.push(("allocate".to_string(), a));
        }
        if let Some(c) = text("control") {
            out.push(("control".to_string(), c));
        }
    }
    if let Some(t) = text("trace") {
        out.push(("trace".to_string(), t));
    }
    if let Some(w) = get("window").and_then(Value::as_array)
        && let [a, l] = w.as_slice()
        && let (Some(a), Some(l)) = (a.as_i64(), l.as_i64())
    {
        out.push((
            "window".to_string(),
            format!(
                "jobs submitted in [{a}, {}) s of the log, re-based to 0 (times below are from the window's start)",
                a.saturating_add(l)
            ),
        ));
    }
    if get("split_parallel").and_then(Value::as_bool) == Some(true) {
        out.push((
            "split".to_string(),
            "each q-processor job split into q sequential tasks".to_string(),
        ));
    }
    if let Some(seed) = get("seed").and_then(Value::as_u64) {
        out.push(("seed".to_string(), seed.to_string()));
    }
    if let Some(total) = get("platform.total").and_then(Value::as_u64) {
        let machines: Vec<String> = get("platform.machines")
            .and_then(Value::as_array)
            .map(|m| m.iter().map(|x| x.to_string()).collect())
            .unwrap_or_default();
        let source = text("platform.source").unwrap_or_default();
        out.push((
            "platform".to_string(),
            if machines.len() > 1 {
                format!(
                    "{total} processors ({source}) as machines of {}",
                    machines.join(", ")
                )
            } else {
                format!("{total} processors ({source}), one machine")
            },
        ));
    }
    if let Some(k) = get("orgs").and_then(Value::as_u64) {
        let own = text("ownership").unwrap_or_default();
        out.push((
            "organizations".to_string(),
            if k > 1 {
                format!("{k} ({own})")
            } else {
                k.to_string()
            },
        ));
    }
    out
}

/// A value cell for `path` of the summary: the figure, or a problem (a
/// missing field, another type) and `None`.
fn field(f: &mut RunFolder, s: &Value, keys: &Keys, path: &str) -> Option<Cell> {
    match lookup(s, path) {
        Some(v @ (Value::Number(_) | Value::Null)) => Some(Cell::field(show(v), keys.key(path), v)),
        Some(other) => {
            let shown = f.name("summary.json");
            f.problem(format!(
                "{shown}: field `{path}`: expected a number, found {}",
                type_name(other)
            ));
            None
        }
        None => {
            let shown = f.name("summary.json");
            f.problem(format!(
                "{shown}: field `{path}` is missing (a run of an older fairsched?)"
            ));
            None
        }
    }
}

/// One run's blocks: facts, tables, charts. `label` (a comparison's
/// policy) prefixes the headings.
fn run_part(
    f: &mut RunFolder,
    s: &Value,
    opts: &Options,
    keys: &Keys,
    label: &str,
    points: usize,
) -> RunPart {
    let heading = |h: &str| {
        Block::Heading(if label.is_empty() {
            h.to_string()
        } else {
            format!("{label}: {h}")
        })
    };
    let mut out = Vec::new();
    let mut facts = if matches!(keys, Keys::Plain) {
        tool_facts(f, s, "summary.json")
    } else {
        Vec::new()
    };
    facts.extend(run_facts(s, true));
    out.push(Block::Facts(facts));

    // The summary's figures.
    let mut t = HtmlTable::new("Summary (summary.json)", ["figure", "value"]);
    let row = |f: &mut RunFolder, t: &mut HtmlTable, name: String, path: &str| {
        if let Some(c) = field(f, s, keys, path) {
            t.row(vec![Cell::text(name), c]);
        }
    };
    row(f, &mut t, "tasks".into(), "jobs");
    match lookup(s, "outcomes") {
        Some(Value::Object(m)) => {
            for k in m.keys() {
                row(f, &mut t, format!("tasks {k}"), &format!("outcomes.{k}"));
            }
        }
        _ => {
            let shown = f.name("summary.json");
            f.problem(format!("{shown}: field `outcomes` is missing or not an object"));
        }
    }
    row(
        f,
        &mut t,
        "makespan (s): last end − first submit".into(),
        "makespan_s",
    );
    row(
        f,
        &mut t,
        "mean wait (s), tasks that started".into(),
        "mean_wait_s",
    );
    row(
        f,
        &mut t,
        "mean response (s), completed tasks".into(),
        "mean_response_s",
    );
    row(
        f,
        &mut t,
        "mean bounded slowdown, completed tasks".into(),
        "mean_bounded_slowdown",
    );
    row(
        f,
        &mut t,
        "utilization (processor-time held / present)".into(),
        "utilization",
    );
    for (k, who) in [("jain_users_bsld", "users"), ("jain_orgs_bsld", "organizations")] {
        let n = lookup(s, &format!("{k}.n")).and_then(Value::as_u64);
        let name = match n {
            Some(n) => format!("Jain's index, mean bsld of the {n} {who}"),
            None => format!("Jain's index, mean bsld of the {who}"),
        };
        row(f, &mut t, name, &format!("{k}.index"));
    }
    if lookup(s, "fairness").is_some_and(|v| !v.is_null()) {
        row(
            f,
            &mut t,
            "Σ|φ − ψ| / p_tot (s): distance from contributions".into(),
            "fairness.phi_gap_per_work_s",
        );
    }
    if lookup(s, "wall_time_s").is_some() {
        row(f, &mut t, "wall time of the run (s)".into(), "wall_time_s");
    }
    out.push(Block::Table(t));

    let mut t = HtmlTable::new(
        "Percentiles (nearest rank: pP is the ⌈P·n/100⌉-th smallest of n)",
        ["measure", "n", "p50", "p90", "p99", "max"],
    );
    for (k, name) in [
        ("wait_s", "wait (s)"),
        ("response_s", "response (s)"),
        ("bounded_slowdown", "bounded slowdown"),
    ] {
        let mut cells = vec![Cell::text(name)];
        for q in ["n", "p50", "p90", "p99", "max"] {
            match field(f, s, keys, &format!("percentiles.{k}.{q}")) {
                Some(c) => cells.push(c),
                None => cells.push(Cell::num("?")),
            }
        }
        t.row(cells);
    }
    out.push(Block::Table(t));

    // Organizations.
    let shares = lookup(s, "org_shares")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let fairness = lookup(s, "fairness").filter(|v| !v.is_null());
    let org_names: Vec<String> = (0..shares)
        .map(|i| {
            lookup(s, &format!("org_shares.{i}.name"))
                .and_then(Value::as_str)
                .map_or_else(|| format!("org{i}"), str::to_string)
        })
        .collect();
    if shares > 1 || fairness.is_some() {
        let fair_orgs = fairness
            .and_then(|v| v.get("orgs"))
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        let mut head = vec!["org", "name", "processors", "owned share", "received share"];
        if fair_orgs > 0 {
            head.extend(["ψ (s²)", "φ (s²)", "φ − ψ (s²)"]);
        }
        let at = fairness.and_then(|v| v.get("at_s")).and_then(Value::as_f64);
        let mut t = HtmlTable::new(
            match at {
                Some(at) => format!(
                    "Organizations (summary.json: org_shares; fairness seen at t = {} s)",
                    show_f(at)
                ),
                None => "Organizations (summary.json: org_shares)".to_string(),
            },
            head,
        );
        for i in 0..shares.max(fair_orgs).min(opts.max_rows) {
            let mut cells = vec![
                Cell::num(i.to_string()),
                Cell::text(org_names.get(i).cloned().unwrap_or_default()),
            ];
            for k in ["procs", "owned_share", "received_share"] {
                let path = format!("org_shares.{i}.{k}");
                cells.push(if i < shares {
                    field(f, s, keys, &path).unwrap_or_else(|| Cell::num("?"))
                } else {
                    Cell::num("")
                });
            }
            if fair_orgs > 0 {
                for k in ["psi", "phi", "phi_minus_psi"] {
                    let path = format!("fairness.orgs.{i}.{k}");
                    cells.push(if i < fair_orgs {
                        field(f, s, keys, &path).unwrap_or_else(|| Cell::num("?"))
                    } else {
                        Cell::num("")
                    });
                }
            }
            t.row(cells);
        }
        t.cut = shares.max(fair_orgs).saturating_sub(opts.max_rows);
        if let Some(n) = fairness.and_then(|v| v.get("note")).and_then(Value::as_str) {
            t.notes.push(n.to_string());
        }
        t.notes.push(
            "ψ: the organization's utility (every second of processing started at s is worth t − s at t); \
             φ: its Shapley value in the game where each coalition schedules its own jobs on its own \
             processors; φ − ψ > 0: it contributed more than it got (docs/shapley.md)."
                .to_string(),
        );
        out.push(Block::Table(t));
    }

    // The per-task files.
    let machines: Option<Vec<u32>> = lookup(s, "platform.machines")
        .and_then(Value::as_array)
        .map(|m| m.iter().filter_map(|x| x.as_u64().map(|x| x as u32)).collect());
    let total = lookup(s, "platform.total")
        .and_then(Value::as_f64)
        .filter(|t| *t > 0.0);
    let mut tasks = read_file(f, "tasks.csv", timeline::read_tasks);
    // A run's first processor and its count must fit its machine (a slot
    // past it would stretch the Gantt chart over processors that do not
    // exist). tasks.csv gives only the first processor, not always the
    // lowest: the others may lie below it.
    if let (Some(ts), Some(m)) = (&mut tasks, &machines) {
        let mut bad = Vec::new();
        ts.retain(|t| {
            let (Some(mi), Some(slot)) = (t.machine, t.slot) else {
                return true;
            };
            let why = match m.get(mi as usize) {
                Some(&size) if slot < size && t.slots <= size => return true,
                Some(&size) => format!(
                    "task {}: slot {slot} and {} slots on machine {mi}, which has {size} (summary.json's \
                     platform.machines): left out",
                    t.task, t.slots
                ),
                None => format!(
                    "task {}: machine {mi} is not in summary.json's platform.machines: left out",
                    t.task
                ),
            };
            bad.push(why);
            false
        });
        let shown = f.name("tasks.csv");
        let n = bad.len();
        for b in bad.into_iter().take(timeline::MAX_LINE_PROBLEMS) {
            f.problem(format!("{shown}: {b}"));
        }
        if n > timeline::MAX_LINE_PROBLEMS {
            f.problem(format!(
                "{shown}: … and {} more such tasks left out",
                n - timeline::MAX_LINE_PROBLEMS
            ));
        }
    }
    let runs = if tasks.is_some() {
        if f.has("runs.csv") {
            read_file(f, "runs.csv", timeline::read_runs).unwrap_or_default()
        } else {
            let shown = f.name("runs.csv");
            f.problem(format!(
                "{shown}: missing (a run of a fairsched from before runs.csv): runs that were interrupted \
                 and requeued are neither drawn nor counted"
            ));
            Vec::new()
        }
    } else {
        Vec::new()
    };
    let mut timeline_out = None;
    if let Some(tasks) = &tasks {
        let tl = Timeline::of(tasks, &runs);
        let sampled = tl.sampled(points);
        out.push(heading("Schedule"));
        gantt_block(
            f,
            &mut out,
            &tl,
            tasks,
            &runs,
            opts,
            &org_names,
            machines.as_deref(),
        );
        out.push(heading("Over time"));
        over_time_blocks(f, &mut out, &tl, &sampled, total);
        timeline_out = Some((sampled, total));
    }
    if shares > 1 || fairness.is_some() {
        out.push(heading("Fairness between organizations"));
        fairness_blocks(f, &mut out, s, fairness.is_some());
    }
    RunPart {
        blocks: out,
        timeline: timeline_out,
    }
}

/// A CSV file of the run read line by line with `read`, its problems
/// merged; `None` (and a problem) when it is missing or cannot be opened.
fn read_file<T>(
    f: &mut RunFolder,
    name: &str,
    read: impl FnOnce(BufReader<std::fs::File>, &mut LineProblems) -> Vec<T>,
) -> Option<Vec<T>> {
    let shown = f.name(name);
    let file = match std::fs::File::open(f.dir.join(name)) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let why = match name {
                "tasks.csv" => "no Gantt chart, utilization or queue length",
                "fairness.csv" => "no ψ or φ over time (a run of a fairsched from before fairness.csv?)",
                _ => "not shown",
            };
            f.problem(format!("{shown}: missing: {why}"));
            return None;
        }
        Err(e) => {
            f.problem(format!("{shown}: {e}"));
            return None;
        }
    };
    let mut p = LineProblems::new(&shown);
    let rows = read(BufReader::with_capacity(256 * 1024, file), &mut p);
    for m in p.into_messages() {
        f.problem(m);
    }
    Some(rows)
}

#[allow(clippy::too_many_arguments)]
fn gantt_block(
    f: &mut RunFolder,
    out: &mut Vec<Block>,
    tl: &Timeline,
    tasks: &[TaskRow],
    runs: &[RunRow],
    opts: &Options,
    org_names: &[String],
    machines: Option<&[u32]>,
) {
    let window = match opts.gantt_window {
        Some((a, l)) => Some(timeline::Window {
            start: (a * 1000.0).round() as i64,
            len: ((l * 1000.0).round() as i64).max(1),
            why: "asked for with --gantt-window".to_string(),
        }),
        None => timeline::default_window(tl, tasks, runs, WINDOW_RUNS),
    };
    let Some(w) = window else {
        out.push(Block::Para("No task ran: no Gantt chart.".to_string()));
        return;
    };
    let group_by = match opts.color_by {
        ColorBy::User => GroupBy::User,
        ColorBy::Org => GroupBy::Org,
    };
    let l = timeline::gantt_layout(
        tasks,
        runs,
        (w.start, w.len),
        group_by,
        org_names,
        machines,
        MAX_GANTT_RUNS,
    );
    let (a, b) = (w.start, w.start + w.len);
    if l.runs_in_window == 0 && opts.gantt_window.is_some() {
        let span = tl.span().map_or("no run at all".to_string(), |(x, y)| {
            format!("runs in [{}, {}] s", secs(x), secs(y))
        });
        f.problem(format!(
            "{}: --gantt-window [{}, {}) s holds no run of this run ({span}, on the run's clock: \
             from the window's start for `simulate --window`)",
            f.shown,
            secs(a),
            secs(b)
        ));
    }
    let title = format!("Gantt chart, {} from t = {} s", human(w.len), secs(a));
    let machine_note = if l.machines.len() > 1 {
        " Machines are stacked from the bottom, split by black lines."
    } else {
        ""
    };
    let svg = plot_sim::gantt(&Gantt {
        title: &title,
        x_label: "time (s, the run's clock)",
        y_label: if l.exact_rows {
            "processor (slot number)"
        } else {
            "processors (rows assigned for drawing)"
        },
        x_range: (a as f64 / 1000.0, b as f64 / 1000.0),
        rows: l.rows,
        machines: &l.machines,
        legend: &l.legend,
        stopped_label: (l.stopped > 0)
            .then_some("work lost: interrupted, killed, failed or cancelled while running"),
        bars: &l.bars,
    });
    let colour = match group_by {
        GroupBy::User => "user",
        GroupBy::Org => "organization",
    };
    let rows_note = if l.exact_rows {
        "Each run holds one processor, drawn on its own row (its slot number in tasks.csv)."
    } else {
        "A run is drawn on as many rows as processors it held; tasks.csv records only a run's first \
         processor and the core hands out free processors in no particular order, so rows are assigned \
         for the drawing (in start order, the lowest free rows), not the processors' numbers."
    };
    let cap_note = if l.runs_drawn < l.runs_in_window {
        format!(
            " Only the first {} of the {} runs in the window (by start) are drawn; choose a shorter \
             --gantt-window to see them all.",
            l.runs_drawn, l.runs_in_window
        )
    } else {
        String::new()
    };
    let caption = format!(
        "Runs in [{}, {}) s: {}. {} run(s) drawn, coloured by {colour} (the {} holding the most \
         processor-time in the window named, the others grey); outlined in red and struck through: {} \
         run(s) whose work was lost (interrupted and requeued, from runs.csv, or the last run of a task \
         that did not complete). {rows_note}{machine_note}{cap_note}",
        secs(a),
        secs(b),
        w.why,
        l.runs_drawn,
        l.legend.len().min(timeline::GANTT_GROUPS),
        l.stopped
    );
    push_chart(f, out, "Gantt", svg, caption);
}

/// `(t, y)` points of a step chart from sampled points, ending at the
/// last interval's end.
fn step_points(s: &Sampled, y: impl Fn(&timeline::SampledPoint) -> f64) -> Vec<(f64, f64)> {
    let mut pts: Vec<(f64, f64)> = s.points.iter().map(|p| (p.t as f64 / 1000.0, y(p))).collect();
    if let (Some(w), Some(last)) = (s.interval_ms, s.points.last()) {
        pts.push(((last.t + w) as f64 / 1000.0, y(last)));
    }
    pts
}

fn over_time_blocks(f: &mut RunFolder, out: &mut Vec<Block>, tl: &Timeline, s: &Sampled, total: Option<f64>) {
    if s.points.is_empty() {
        out.push(Block::Para("No task: nothing over time.".to_string()));
        return;
    }
    let how = match s.interval_ms {
        None => "exact: every change is drawn".to_string(),
        Some(w) => format!(
            "time-weighted means over {} intervals of {} each",
            s.points.len(),
            human(w)
        ),
    };
    let peak_busy = tl.peak_busy().unwrap_or((0, 0));
    let (total, total_note) = match total {
        Some(t) => (t, format!("{t} processors (summary.json's platform.total)")),
        None => {
            let t = (peak_busy.1 as f64).max(1.0);
            (
                t,
                format!("the most processors ever busy ({t}): summary.json gives no platform.total"),
            )
        }
    };
    let util = [TimeSeries {
        name: "busy / all processors".to_string(),
        points: step_points(s, |p| p.busy / total),
        color: 0,
        stroke: Stroke::Solid,
    }];
    push_chart(
        f,
        out,
        "utilization",
        plot_sim::time_steps(&TimeChart {
            title: "Utilization",
            x_label: "time (s, the run's clock)",
            y_label: "fraction of processors busy",
            y_top: Some(1.05),
            series: &util,
        }),
        format!(
            "Processors held by runs (every run, interrupted ones included) over {total_note}, from \
             tasks.csv and runs.csv by a sweep over starts and ends ({how}). At most {} busy, first at \
             t = {} s.",
            peak_busy.1,
            secs(peak_busy.0)
        ),
    );
    let mut queue = vec![TimeSeries {
        name: if s.interval_ms.is_some() {
            "mean over the interval".to_string()
        } else {
            "tasks waiting".to_string()
        },
        points: step_points(s, |p| p.queue),
        color: 1,
        stroke: Stroke::Solid,
    }];
    if s.interval_ms.is_some() {
        queue.push(TimeSeries {
            name: "most in the interval".to_string(),
            points: step_points(s, |p| p.queue_max as f64),
            color: 3,
            stroke: Stroke::Faint,
        });
    }
    let (qt, qn) = tl.peak_queue().unwrap_or((0, 0));
    push_chart(
        f,
        out,
        "queue length",
        plot_sim::time_steps(&TimeChart {
            title: "Queue length",
            x_label: "time (s, the run's clock)",
            y_label: "tasks waiting",
            y_top: None,
            series: &queue,
        }),
        format!(
            "Tasks submitted and not yet started, or requeued and not yet started again ({how}). Longest \
             queue: {qn} tasks, first at t = {} s.",
            secs(qt)
        ),
    );
}

/// `n` with superscript digits (for `10¹²`).
fn superscript(n: i32) -> String {
    n.to_string()
        .chars()
        .map(|c| match c {
            '-' => '⁻',
            '0' => '⁰',
            '1' => '¹',
            '2' => '²',
            '3' => '³',
            '4' => '⁴',
            '5' => '⁵',
            '6' => '⁶',
            '7' => '⁷',
            '8' => '⁸',
            _ => '⁹',
        })
        .collect()
}

/// A power of 1000 to divide values of magnitude `max` by, and its label.
fn scale(max: f64) -> (f64, String) {
    if !(max.is_finite() && max >= 1e4) {
        return (1.0, String::new());
    }
    let e = ((libm::log10(max) / 3.0).floor() as i32) * 3;
    (10f64.powi(e), format!("10{} ", superscript(e)))
}

fn fairness_blocks(f: &mut RunFolder, out: &mut Vec<Block>, s: &Value, expected: bool) {
    let rows: Vec<FairnessRow> = if f.has("fairness.csv") || expected {
        read_file(f, "fairness.csv", timeline::read_fairness).unwrap_or_default()
    } else {
        Vec::new()
    };
    let instants = rows
        .iter()
        .map(|r| r.at)
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    if instants == 1 {
        out.push(Block::Para(
            "fairness.csv holds a single instant (no task ran): no utility over time.".to_string(),
        ));
    }
    if instants > 1 {
        // Organizations by their last ψ (the most first), at most ten.
        let last_at = rows.iter().map(|r| r.at).max().unwrap_or(0);
        let mut orgs: Vec<(u32, String, f64)> = rows
            .iter()
            .filter(|r| r.at == last_at)
            .map(|r| (r.org, r.name.clone(), r.psi))
            .collect();
        orgs.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.0.cmp(&b.0)));
        let all = orgs.len();
        orgs.truncate(MAX_ORG_LINES);
        orgs.sort_by_key(|o| o.0);
        let with_phi = rows.iter().any(|r| r.phi.is_some());
        let max = rows
            .iter()
            .flat_map(|r| [Some(r.psi), r.phi])
            .flatten()
            .fold(0.0f64, |m, v| m.max(v.abs()));
        let (div, unit) = scale(max);
        let mut series = Vec::new();
        for (org, name, _) in orgs.iter() {
            let mine = || rows.iter().filter(move |r| r.org == *org);
            series.push(TimeSeries {
                name: format!("ψ {name}"),
                points: mine().map(|r| (r.at as f64 / 1000.0, r.psi / div)).collect(),
                color: *org as usize,
                stroke: Stroke::Solid,
            });
            if with_phi {
                series.push(TimeSeries {
                    name: format!("φ {name}"),
                    points: mine()
                        .filter_map(|r| Some((r.at as f64 / 1000.0, r.phi? / div)))
                        .collect(),
                    color: *org as usize,
                    stroke: Stroke::Dashed,
                });
            }
        }
        push_chart(
            f,
            out,
            "ψ and φ over time",
            plot_sim::time_lines(&TimeChart {
                title: if with_phi {
                    "Utility ψ (solid) and Shapley value φ (dashed) per organization"
                } else {
                    "Utility ψ per organization"
                },
                x_label: "time (s, the run's clock)",
                y_label: &format!("{}({unit}s²)", if with_phi { "ψ, φ " } else { "ψ " }),
                y_top: None,
                series: &series,
            }),
            format!(
                "From fairness.csv: each organization's utility ψ{} at {instants} instants, evenly spaced from \
                 the first submit to t = {} s, where summary.json's fairness is seen (its last values are \
                 the table's).{}{}",
                if with_phi {
                    " (solid) and Shapley value φ (dashed, same colour)"
                } else {
                    " (φ was not computed: `simulate --phi` adds it)"
                },
                secs(last_at),
                if all > orgs.len() {
                    format!(
                        " The {} organizations with the largest final ψ of {all}.",
                        orgs.len()
                    )
                } else {
                    String::new()
                },
                if unit.is_empty() {
                    String::new()
                } else {
                    format!(" Values in units of {unit}s².")
                }
            ),
        );
    }
    // φ − ψ at the end, from summary.json.
    let Some(list) = lookup(s, "fairness.orgs").and_then(Value::as_array) else {
        return;
    };
    let gaps: Vec<(String, f64)> = list
        .iter()
        .enumerate()
        .filter_map(|(i, o)| {
            let name = o
                .get("name")
                .and_then(Value::as_str)
                .map_or_else(|| format!("org{i}"), str::to_string);
            Some((name, o.get("phi_minus_psi")?.as_f64()?))
        })
        .collect();
    if gaps.is_empty() || gaps.len() > 40 {
        return;
    }
    let max = gaps.iter().fold(0.0f64, |m, g| m.max(g.1.abs()));
    let (div, unit) = scale(max);
    let groups: Vec<String> = gaps.iter().map(|g| g.0.clone()).collect();
    let series = [(
        "φ − ψ".to_string(),
        gaps.iter().map(|g| g.1 / div).collect::<Vec<f64>>(),
    )];
    let at = lookup(s, "fairness.at_s")
        .and_then(Value::as_f64)
        .unwrap_or(f64::NAN);
    push_chart(
        f,
        out,
        "φ − ψ",
        plot_sim::bars(&Bars {
            title: "Contribution minus utility, φ − ψ, per organization",
            x_label: "organization",
            y_label: &format!("φ − ψ ({unit}s²)"),
            groups: &groups,
            series: &series,
            log_y: false,
        }),
        format!(
            "summary.json's fairness.orgs.*.phi_minus_psi at t = {} s: above 0, the organization \
             contributed more than it received; Σ|φ − ψ| / p_tot is in the summary table.",
            show_f(at),
        ),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rows_policy_names_its_folder_and_nothing_outside() {
        assert_eq!(folder_of("fcfs").as_deref(), Some("fcfs"));
        assert_eq!(
            folder_of("fair-share[decay=1h]").as_deref(),
            Some(fairsched_core::PolicySpec::slug(&"fair-share[decay=1h]".parse().unwrap()).as_str())
        );
        assert_eq!(folder_of("fcfs (fcfs@2)").as_deref(), Some("fcfs@2"));
        assert_eq!(folder_of("x (../../etc)"), None);
        assert_eq!(folder_of("x (..)"), None);
        assert_eq!(folder_of("not a [policy"), None);
    }

    #[test]
    fn figures_are_shown_short_and_keys_name_their_file() {
        assert_eq!(show(&serde_json::json!(null)), "—");
        assert_eq!(show(&serde_json::json!(28467)), "28467");
        assert_eq!(show(&serde_json::json!(0.701)), "0.701");
        assert_eq!(show(&serde_json::json!(390092.0)), "390092");
        assert_eq!(show(&serde_json::json!(12064.146341463415)), "12064.1");
        assert_eq!(show(&serde_json::json!(0.13165246116)), "0.1317");
        assert_eq!(show(&serde_json::json!(55307230755.5)), "5.5307e10");
        assert_eq!(show(&serde_json::json!(55307230755.0)), "5.5307e10");
        assert_eq!(show(&serde_json::json!(28781494.0)), "28781494");
        assert_eq!(Keys::Plain.key("a.b"), "a.b");
        assert_eq!(
            Keys::In("easy/summary.json".into()).key("a.0"),
            "easy/summary.json#a.0"
        );
        assert_eq!(scale(3.2e12), (1e12, "10¹² ".to_string()));
        assert_eq!(scale(999.0), (1.0, String::new()));
    }
}
