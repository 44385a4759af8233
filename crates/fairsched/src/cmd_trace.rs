//! `fairsched trace …`: inspect workload logs.

use crate::term::{say, sayln};
use anyhow::Context;
use fairsched_report::files::{json_bytes, write_atomic};
use fairsched_report::plot::{Series, lines};
use fairsched_trace::stats::{Descriptive, WorkloadStats, workload_stats};
use fairsched_trace::{JobStream, StreamOptions, TraceInfo, scan};
use serde::Serialize;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

#[derive(clap::Subcommand)]
pub enum TraceCommand {
    /// Header, job count, users, span, processors, every filter count.
    Info {
        /// An SWF log, plain or gzip.
        file: PathBuf,
        /// Skip malformed lines (and count them) instead of stopping.
        #[arg(long)]
        lenient: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Workload statistics of the cleaned jobs' run times (PFFP paper appendices):
    /// descriptive statistics, Pareto I fit, Hurst estimates (raw and detrended),
    /// aggregation series.
    Stats {
        /// An SWF log, plain or gzip.
        file: PathBuf,
        /// Write DIR/summary.json (everything) and DIR/aggregation.svg.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Skip malformed lines (and count them) instead of stopping.
        #[arg(long)]
        lenient: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// `summary.json` of `trace stats`.
#[derive(Serialize)]
struct StatsReport {
    trace: TraceInfo,
    stats: WorkloadStats,
}

pub fn run(c: TraceCommand) -> anyhow::Result<()> {
    match c {
        TraceCommand::Info { file, lenient, json } => {
            // The trace's errors name the file (and line, and field).
            let s = scan(&file, lenient)?;
            let info = TraceInfo::from_scan(&s);
            if json {
                sayln!("{}", serde_json::to_string_pretty(&info)?);
            } else {
                say!("{info}");
            }
            Ok(())
        }
        TraceCommand::Stats {
            file,
            out,
            lenient,
            json,
        } => {
            let report = stats_report(&file, lenient)?;
            if let Some(dir) = &out {
                write_outputs(dir, &report)?;
            }
            if json {
                sayln!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                say!("{}", render(&file, &report.stats));
                if let Some(dir) = &out {
                    sayln!("wrote {0}/summary.json, {0}/aggregation.svg", dir.display());
                }
            }
            Ok(())
        }
    }
}

fn stats_report(file: &Path, lenient: bool) -> anyhow::Result<StatsReport> {
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

fn write_outputs(dir: &Path, report: &StatsReport) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    write_atomic(&dir.join("summary.json"), &json_bytes(report))?;
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
    .map_err(anyhow::Error::msg)?;
    write_atomic(&dir.join("aggregation.svg"), svg.as_bytes())?;
    Ok(())
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

fn render(file: &Path, s: &WorkloadStats) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "{}: {} jobs", file.display(), s.jobs);
    let _ = writeln!(
        o,
        "\n{:<22} {:>16} {:>16}",
        "statistic", "run time (s)", "inter-arrival (s)"
    );
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
        let _ = writeln!(
            o,
            "{:<22} {:>16} {:>16}",
            name,
            cell(&s.runtime),
            cell(&s.interarrival)
        );
    }
    match &s.pareto {
        Some(p) => {
            let _ = writeln!(
                o,
                "\nPareto I fit: S_m = {}, β = {:.3}, KS D = {:.4}, tail {} of {} positive run times ({} candidate scales)",
                num(p.scale),
                p.shape,
                p.ks,
                p.tail,
                p.n,
                p.candidates
            );
        }
        None => {
            let _ = writeln!(o, "\nPareto I fit: too few positive run times");
        }
    }
    let _ = writeln!(
        o,
        "\n{:<14} {:>6} {:>8} {:>8}",
        "Hurst", "raw", "linear", "poly 10"
    );
    for r in &s.hurst {
        let _ = writeln!(
            o,
            "{:<14} {:>6} {:>8} {:>8}",
            r.name,
            opt(r.raw),
            opt(r.linear),
            opt(r.poly)
        );
    }
    let levels: Vec<String> = s
        .aggregation
        .iter()
        .map(|l| format!("×{} ({} points)", l.factor, l.len))
        .collect();
    let _ = writeln!(o, "\naggregation levels: {}", levels.join(", "));
    o
}
