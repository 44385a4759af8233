//! `fairsched trace stats`: the workload statistics of a log's cleaned
//! jobs (the PFFP paper's appendices) as tables, a chart of the
//! aggregation series and `summary.json`.

use crate::SimError;
use crate::experiment::{Host, begin, summary_json};
use fairsched_report::plot::{Series, lines};
use fairsched_report::table::{TABLES_JSON, tables_json};
use fairsched_report::{OutDir, Table};
use fairsched_trace::stats::{Descriptive, WorkloadStats, workload_stats};
use fairsched_trace::{JobStream, StreamOptions, TraceInfo, scan};
use serde::Serialize;
use std::path::Path;

/// `summary.json` of `trace stats`.
#[derive(Serialize)]
pub struct StatsReport {
    pub trace: TraceInfo,
    pub stats: WorkloadStats,
}

/// Reads `file` (its scan, then its cleaned jobs) and describes it.
pub fn stats_report(file: &Path, lenient: bool) -> Result<StatsReport, SimError> {
    let s = scan(file, lenient)?;
    let options = StreamOptions {
        lenient,
        ..StreamOptions::default()
    };
    let stream = JobStream::open_with_scan(file, options, &s)?;
    let (mut runtimes, mut submits) = (Vec::new(), Vec::new());
    for job in stream {
        let job = job?;
        runtimes.push(job.runtime as f64);
        submits.push(job.submit);
    }
    Ok(StatsReport {
        trace: TraceInfo::from_scan(&s),
        stats: workload_stats(&runtimes, &submits),
    })
}

/// Header lines of the log that were not used (`; MaxProcs: abc`), said.
pub fn warn_header(info: &TraceInfo, host: &dyn Host) {
    for w in &info.warnings {
        host.note(&format!("warning: {w}"));
    }
}

/// Why there is nothing to describe, if no job was kept.
pub fn no_jobs(file: &Path, info: &TraceInfo) -> Option<String> {
    if info.kept_jobs > 0 {
        return None;
    }
    let why = if info.raw_jobs == 0 {
        "the log has no job line".to_string()
    } else {
        let dropped: Vec<String> = info
            .filters
            .rows()
            .iter()
            .filter(|(k, n, _)| {
                *n > 0
                    && matches!(
                        *k,
                        "submit_unknown" | "runtime_unknown" | "runtime_nonpositive" | "procs_unknown"
                    )
            })
            .map(|(k, n, _)| format!("{k} {n}"))
            .collect();
        format!(
            "the cleaning filters dropped every job line: {} of {} ({})",
            info.filters.dropped(),
            info.raw_jobs,
            dropped.join(", ")
        )
    };
    let skipped = match info.filters.bad_lines_skipped {
        0 => String::new(),
        n => format!("; {n} malformed line(s) skipped (--lenient)"),
    };
    Some(format!(
        "{}: no jobs: nothing to describe ({why}{skipped})",
        file.display()
    ))
}

/// Writes `summary.json`, `tables.json` (the tables printed: none
/// without jobs) and, when there are jobs, `aggregation.svg`, together
/// (`summary.json` renamed last); returns the names written.
pub fn write_outputs(
    mut dir: OutDir,
    file: &Path,
    report: &StatsReport,
    host: &dyn Host,
) -> Result<Vec<String>, SimError> {
    let printed = if report.stats.jobs == 0 {
        Vec::new()
    } else {
        stats_tables(file, &report.stats)
    };
    let mut files: Vec<(&str, Vec<u8>)> = vec![("summary.json", summary_json(host.tool(), report))];
    if report.stats.jobs > 0 {
        let levels = &report.stats.aggregation;
        let points = levels.iter().map(|l| l.values.len()).max().unwrap_or(0);
        let xs: Vec<f64> = (1..=points).map(|i| i as f64).collect();
        let series: Vec<Series> = levels
            .iter()
            .map(|l| Series {
                name: format!("mean of {}", l.factor),
                values: l.values.clone(),
            })
            .collect();
        let svg = lines(
            &format!("Aggregation of run times (first {points} points per level)"),
            "point (level k covers 10× the jobs of level k − 1)",
            "run time (s)",
            &xs,
            &series,
        )
        .map_err(SimError::Plot)?;
        files.push(("aggregation.svg", svg.into_bytes()));
    }
    files.push((TABLES_JSON, tables_json(&printed)));
    let names: Vec<&str> = files.iter().map(|(n, _)| *n).collect();
    begin(&mut dir, &names, host)?;
    let set: Vec<(&str, &[u8])> = files.iter().map(|(n, b)| (*n, b.as_slice())).collect();
    let written = dir.write_set(&set)?;
    dir.finish()?;
    Ok(written)
}

fn num(v: f64) -> String {
    if !v.is_finite() {
        "-".into()
    } else if v.abs() >= 1e7 {
        format!("{v:.4e}")
    } else {
        format!("{v:.2}")
    }
}

fn opt(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |h| format!("{h:.2}"))
}

/// The tables `trace stats` prints: the descriptive statistics of run
/// times and inter-arrival times (the Pareto fit under them), then the
/// Hurst estimates (the aggregation levels under them).
fn stats_tables(file: &Path, s: &WorkloadStats) -> Vec<Table> {
    let mut desc = Table::new(["statistic", "run time (s)", "inter-arrival (s)"]).title(format!(
        "{}: {} jobs",
        file.display(),
        s.jobs
    ));
    type Get = fn(&Descriptive) -> f64;
    let rows: [(&str, Get); 13] = [
        ("mean", |d| d.mean),
        ("standard error", |d| d.std_error),
        ("median", |d| d.median),
        ("mode", |d| d.mode),
        ("standard deviation", |d| d.std),
        ("sample variance", |d| d.variance),
        ("kurtosis (excess)", |d| d.kurtosis),
        ("skewness", |d| d.skewness),
        ("range", |d| d.range),
        ("minimum", |d| d.min),
        ("maximum", |d| d.max),
        ("sum", |d| d.sum),
        ("count", |d| d.count as f64),
    ];
    for (name, get) in rows {
        let cell = |d: &Option<Descriptive>| d.as_ref().map_or_else(|| "-".into(), |d| num(get(d)));
        desc.row([name.to_string(), cell(&s.runtime), cell(&s.interarrival)]);
    }
    desc.note(match &s.pareto {
        Some(p) => format!(
            "Pareto I fit: S_m = {}, β = {:.3}, KS D = {:.4}, tail {} of {} positive run times ({} candidate scales)",
            num(p.scale),
            p.shape,
            p.ks,
            p.tail,
            p.n,
            p.candidates
        ),
        None => "Pareto I fit: too few positive run times".into(),
    });
    let mut hurst = Table::new(["Hurst", "raw", "linear", "poly 10"])
        .title("Hurst exponent of the run times: raw, linearly detrended, order-10 detrended");
    for r in &s.hurst {
        hurst.row([r.name.to_string(), opt(r.raw), opt(r.linear), opt(r.poly)]);
    }
    let levels: Vec<String> = s
        .aggregation
        .iter()
        .map(|l| format!("×{} ({} points)", l.factor, l.len))
        .collect();
    hurst.note(format!("aggregation levels: {}", levels.join(", ")));
    vec![desc, hurst]
}

/// What `trace stats` prints: its tables, a blank line between them.
pub fn render(file: &Path, s: &WorkloadStats) -> String {
    stats_tables(file, s)
        .iter()
        .map(Table::to_text)
        .collect::<Vec<_>>()
        .join("\n")
}
