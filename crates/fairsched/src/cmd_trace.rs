//! `fairsched trace …`: inspect workload logs, and derive τ_u from
//! workflow runs.

use crate::cmd_experiment::ForceArg;
use crate::host::Cli;
use crate::term::{say, sayln};
use anyhow::Context;
use fairsched_core::Time;
use fairsched_report::plot::{Series, lines, steps};
use fairsched_report::table::{TABLES_JSON, tables_json};
use fairsched_report::{OutDir, Table};
use fairsched_sim::experiment::{begin, open_out};
use fairsched_sim::experiments::workflow::Protocol;
use fairsched_sim::experiments::workflow::grid::Grid;
use fairsched_sim::experiments::workflow::tau::{TauRepetition, tau};
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
        /// Write DIR/summary.json (everything), DIR/aggregation.svg and
        /// DIR/tables.json (the tables printed, for `fairsched report`). A
        /// folder an earlier run wrote (it holds .fairsched-out) is cleared of
        /// that run's files first; other files stay.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        #[command(flatten)]
        force: ForceArg,
        /// Skip malformed lines (and count them) instead of stopping.
        #[arg(long)]
        lenient: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// Accepted for scripts that pass it to every command: `trace
        /// stats` shows no progress bar.
        #[arg(long)]
        no_progress: bool,
    },
    /// Derive the workflow-fairness threshold τ_u: replay the workflows
    /// together under No-Fairness (workflow-fcfs, no control), take η_u
    /// after every event, histogram the non-zero values and propose the
    /// threshold in the middle of the emptiest valley between the two highest modes.
    Tau(TauArgs),
}

#[derive(clap::Args)]
pub struct TauArgs {
    /// Workflows, submitted in this order: WfCommons JSON (.json,
    /// .json.gz), TOML profiles, or the built-in profiles gate, simubloch,
    /// field2, pet-sorteo (also comma-separated).
    #[arg(required = true, value_delimiter = ',', value_name = "FILE")]
    files: Vec<String>,
    /// The grid: pilots, failures, background load (TOML; default: the
    /// EGI-like grid of `experiment workflow-fairness`).
    #[arg(long, value_name = "FILE")]
    grid: Option<PathBuf>,
    /// Seconds between two workflow submissions [default: 300, as
    /// `experiment workflow-fairness`].
    #[arg(long, allow_negative_numbers = true)]
    spacing: Option<f64>,
    /// Runs (grids drawn from seeds derived from --seed, as the
    /// experiment's repetitions); their samples are pooled.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1000))]
    repetitions: u32,
    /// Master seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Bin width of the histogram, from 0.001 to 1.
    #[arg(long, default_value_t = 0.05, allow_negative_numbers = true)]
    bin: f64,
    /// Write DIR/tau.json, DIR/tau.svg and DIR/tables.json (the histogram
    /// printed, for `fairsched report`). A folder an earlier run wrote (it
    /// holds .fairsched-out) is cleared of that run's files first; other files
    /// stay.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    #[command(flatten)]
    force: ForceArg,
    /// Print JSON (the content of tau.json).
    #[arg(long)]
    json: bool,
    /// Never show a progress bar.
    #[arg(long)]
    no_progress: bool,
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
                // In `warnings`, and said on standard error (the text
                // lists them among its lines).
                warn_header(&info);
                sayln!("{}", serde_json::to_string_pretty(&info)?);
            } else {
                say!("{info}");
            }
            Ok(())
        }
        TraceCommand::Stats {
            file,
            out,
            force,
            lenient,
            json,
            no_progress: _,
        } => {
            let out_dir = out
                .as_deref()
                .map(|d| open_out(d, force.force, &Cli::new(false)))
                .transpose()?;
            let report = stats_report(&file, lenient)?;
            warn_header(&report.trace);
            let written = match out_dir {
                Some(dir) => write_outputs(dir, &file, &report)?,
                None => Vec::new(),
            };
            // Nothing to describe: said instead of a table of dashes (on
            // standard error with --json, whose output stays JSON). Not an
            // error, as `simulate` on a window without jobs: exit 0.
            let nothing = no_jobs(&file, &report.trace);
            if json {
                sayln!("{}", serde_json::to_string_pretty(&report)?);
                if let Some(n) = &nothing {
                    crate::term::note(format_args!("warning: {n}"));
                }
            } else {
                match &nothing {
                    Some(n) => sayln!("{n}"),
                    None => say!("{}", render(&file, &report.stats)),
                }
                if let Some(dir) = &out {
                    let files: Vec<String> =
                        written.iter().map(|f| format!("{}/{f}", dir.display())).collect();
                    sayln!("wrote {}", files.join(", "));
                }
            }
            Ok(())
        }
        TraceCommand::Tau(a) => trace_tau(a),
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

/// Header lines of the log that were not used (`; MaxProcs: abc`), on
/// standard error.
fn warn_header(info: &TraceInfo) {
    for w in &info.warnings {
        crate::term::note(format_args!("warning: {w}"));
    }
}

/// Why there is nothing to describe, if no job was kept.
fn no_jobs(file: &Path, info: &TraceInfo) -> Option<String> {
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
                *n > 0 && matches!(*k, "runtime_unknown" | "runtime_nonpositive" | "procs_unknown")
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
fn write_outputs(mut dir: OutDir, file: &Path, report: &StatsReport) -> anyhow::Result<Vec<String>> {
    let printed = if report.stats.jobs == 0 {
        Vec::new()
    } else {
        stats_tables(file, &report.stats)
    };
    let mut files: Vec<(&str, Vec<u8>)> = vec![("summary.json", crate::term::summary_json(report))];
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
        .map_err(anyhow::Error::msg)?;
        files.push(("aggregation.svg", svg.into_bytes()));
    }
    files.push((TABLES_JSON, tables_json(&printed)));
    let names: Vec<&str> = files.iter().map(|(n, _)| *n).collect();
    begin(&mut dir, &names, &Cli::new(false))?;
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
fn render(file: &Path, s: &WorkloadStats) -> String {
    stats_tables(file, s)
        .iter()
        .map(Table::to_text)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The paper's τ_u.
const PAPER_TAU: f64 = 0.2;

/// One histogram bin, `[lo, hi)`; the last possible one is `[lo, 1]`
/// (η_u ≤ 1: η_u = 1 counts there, and no bin goes past 1).
#[derive(Serialize)]
struct Bin {
    bin: usize,
    lo: f64,
    hi: f64,
    count: u64,
}

/// `tau.json` of `trace tau` (and its `--json`).
#[derive(Serialize)]
struct TauReport {
    command: &'static str,
    /// The FILE arguments, as given.
    inputs: Vec<String>,
    /// The workflows' names.
    workflows: Vec<String>,
    system: &'static str,
    grid: String,
    spacing_s: f64,
    seed: u64,
    bin: f64,
    /// η_u samples (one per instant with a step, until each run's set
    /// makespan), all repetitions.
    samples: u64,
    /// The non-zero ones: the histogram's total.
    nonzero: u64,
    histogram: Vec<Bin>,
    /// The two highest modes, in η_u order (empty if fewer than two).
    modes: Vec<Bin>,
    /// The middle of the emptiest valley between the modes.
    threshold: Option<f64>,
    paper_tau: f64,
    repetitions: Vec<TauRepetition>,
}

/// `x` rounded to 10⁻⁹ (bin edges without binary noise).
fn r9(x: f64) -> f64 {
    (x * 1e9).round() / 1e9
}

/// Decimals that write `bin` exactly (at least 2, at most 6).
fn decimals(bin: f64) -> usize {
    (2..6)
        .find(|&d| {
            let x = bin * 10f64.powi(d as i32);
            (x - x.round()).abs() < 1e-6
        })
        .unwrap_or(6)
}

fn trace_tau(a: TauArgs) -> anyhow::Result<()> {
    if !(a.bin.is_finite() && (0.001..=1.0).contains(&a.bin)) {
        return Err(crate::term::usage(format!(
            "--bin {}: give a width from 0.001 to 1 (η_u lies in [0, 1])",
            a.bin
        )));
    }
    let spacing_s = match a.spacing {
        Some(s) if !(s.is_finite() && (0.0..=1e8).contains(&s)) => {
            return Err(crate::term::usage(format!(
                "--spacing {s}: give seconds from 0 to 10⁸"
            )));
        }
        Some(s) => s,
        None => Protocol::default().spacing.as_secs_f64(),
    };
    let sources = fairsched_sim::experiments::workflow::load_sources(&a.files, false)?;
    let grid = match &a.grid {
        Some(p) => Grid::load(p)?,
        None => Grid::default(),
    };
    let host = Cli::new(!a.no_progress);
    let out_dir = a
        .out
        .as_deref()
        .map(|d| open_out(d, a.force.force, &host))
        .transpose()?;
    let pb = crate::host::bar(a.repetitions as u64, !a.no_progress, "runs");
    pb.set_prefix("trace tau");
    let spacing = Time::from_millis((spacing_s * 1000.0).round() as i64);
    let t = tau(&grid, a.seed, &sources, spacing, a.repetitions, a.bin, &|| {
        pb.inc(1)
    })?;
    pb.finish_and_clear();

    let h = &t.histogram;
    let bin = |k: usize| {
        let (lo, hi) = h.bounds(k);
        Bin {
            bin: k,
            lo: r9(lo),
            hi: r9(hi),
            count: h.counts[k],
        }
    };
    let report = TauReport {
        command: "trace tau",
        inputs: a.files.clone(),
        workflows: sources.iter().map(|s| s.name().to_string()).collect(),
        system: "No-Fairness: workflow-fcfs queue, no control, no mirrored raises",
        grid: match &a.grid {
            Some(p) => format!("{}: {}", p.display(), grid.describe()),
            None => format!("default: {}", grid.describe()),
        },
        spacing_s,
        seed: a.seed,
        bin: a.bin,
        samples: t.samples,
        nonzero: t.nonzero,
        histogram: (0..h.counts.len()).map(bin).collect(),
        modes: h.modes.map_or_else(Vec::new, |(m1, m2)| vec![bin(m1), bin(m2)]),
        threshold: h.threshold.map(r9),
        paper_tau: PAPER_TAU,
        repetitions: t.repetitions.clone(),
    };

    // Files first, together, tau.json last.
    if let Some(mut dir) = out_dir {
        let svg = tau_svg(&report)
            .map_err(anyhow::Error::msg)
            .context("plotting the histogram")?;
        let printed = tau_tables(&report);
        begin(&mut dir, &["tau.json", "tau.svg", TABLES_JSON], &host)?;
        dir.write_set(&[
            (TABLES_JSON, &tables_json(&printed)),
            ("tau.svg", svg.as_bytes()),
            ("tau.json", &crate::term::summary_json(&report)),
        ])?;
        dir.finish()?;
    }
    if a.json {
        sayln!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        say!("{}", render_tau(&report));
        if let Some(dir) = &a.out {
            // As the experiments say it (the line stays within 80 columns).
            sayln!("wrote {} (tau.json, tau.svg, {TABLES_JSON})", dir.display());
        }
    }
    Ok(())
}

/// The histogram as bars of `#` within 80 columns, the modes and the
/// threshold's bin marked, then the proposal.
fn render_tau(r: &TauReport) -> String {
    let mut o = String::new();
    let d = decimals(r.bin);
    let _ = writeln!(
        o,
        "η_u after every event, No-Fairness (workflow-fcfs): {}",
        r.workflows.join(", ")
    );
    let _ = writeln!(
        o,
        "{} run{} (seed {}), submissions {} s apart: {} samples, {} non-zero",
        r.repetitions.len(),
        if r.repetitions.len() == 1 { "" } else { "s" },
        r.seed,
        r.spacing_s,
        r.samples,
        r.nonzero
    );
    if r.nonzero == 0 {
        let _ = writeln!(
            o,
            "\nno non-zero η_u sample: the workflows never ran side by side with unequal W.\nno threshold proposed (paper: {PAPER_TAU})"
        );
        return o;
    }
    // The last bin ends at 1, included.
    let label = |b: &Bin| {
        let close = if b.hi >= 1.0 { ']' } else { ')' };
        format!("[{:.d$}, {:.d$}{close}", b.lo, b.hi)
    };
    let lw = r
        .histogram
        .iter()
        .map(|b| label(b).chars().count())
        .max()
        .unwrap_or(0);
    let max = r.histogram.iter().map(|b| b.count).max().unwrap_or(0);
    let cw = max.to_string().len().max(5);
    const MARK: usize = 7; // " < mode", " < τ_u"
    let width = 80usize.saturating_sub(lw + 1 + cw + 1 + MARK).max(10);
    let valley = r.threshold.map(|t| (t / r.bin).floor() as usize);
    let _ = writeln!(o, "\n{:<lw$} {:>cw$}  (bins of {})", "η_u", "count", r.bin);
    for b in &r.histogram {
        let n = if b.count == 0 {
            0
        } else {
            ((b.count as f64 / max as f64 * width as f64).round() as usize).max(1)
        };
        let bar = "#".repeat(n);
        let mark = if r.modes.iter().any(|m| m.bin == b.bin) {
            " < mode"
        } else if valley == Some(b.bin) {
            " < τ_u"
        } else {
            ""
        };
        let line = format!("{:<lw$} {:>cw$} {bar:<width$}{mark}", label(b), b.count);
        let _ = writeln!(o, "{}", line.trim_end());
    }
    match r.threshold {
        Some(t) => {
            let _ = writeln!(
                o,
                "\nmodes {} and {}; τ_u: middle of the emptiest valley",
                label(&r.modes[0]),
                label(&r.modes[1])
            );
            let _ = writeln!(o, "proposed τ_u = {t:.p$} (paper: {PAPER_TAU})", p = d + 1);
        }
        None => {
            let _ = writeln!(
                o,
                "\nfewer than two modes in the histogram: no threshold proposed (paper: {PAPER_TAU})"
            );
        }
    }
    o
}

/// The table `trace tau` prints (for `tables.json`): the histogram's bins
/// with their counts and marks (the modes, the threshold's bin), the lines
/// around it as title and notes; none when no sample was non-zero (it
/// prints no histogram then).
fn tau_tables(r: &TauReport) -> Vec<Table> {
    if r.nonzero == 0 {
        return Vec::new();
    }
    let text = render_tau(r);
    let mut lines = text.lines();
    let title = lines.next().unwrap_or_default().to_string();
    let mut t = Table::new(["η_u", "count", "mark"]).title(title);
    let d = decimals(r.bin);
    let valley = r.threshold.map(|t| (t / r.bin).floor() as usize);
    for b in &r.histogram {
        let close = if b.hi >= 1.0 { ']' } else { ')' };
        let mark = if r.modes.iter().any(|m| m.bin == b.bin) {
            "mode"
        } else if valley == Some(b.bin) {
            "τ_u"
        } else {
            ""
        };
        t.row([
            format!("[{:.d$}, {:.d$}{close}", b.lo, b.hi),
            b.count.to_string(),
            mark.to_string(),
        ]);
    }
    // The line under the title, and the proposal after the bars.
    if let Some(l) = lines.next() {
        t.note(l);
    }
    let after: Vec<&str> = text
        .rsplit("\n\n")
        .next()
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .collect();
    for l in after {
        t.note(l);
    }
    vec![t]
}

/// The histogram as a step outline, with the proposed and the paper's τ_u.
fn tau_svg(r: &TauReport) -> Result<String, String> {
    let mut bars = vec![(0.0, 0.0)];
    for b in &r.histogram {
        bars.push((b.lo, b.count as f64));
    }
    let end = r.histogram.last().map_or(r.bin, |b| b.hi);
    bars.push((end, 0.0));
    // Room after the last bar, up to η_u = 1.
    bars.push(((end + r.bin).min(1.0), 0.0));
    let top = r.histogram.iter().map(|b| b.count).max().unwrap_or(0).max(1) as f64;
    let mut series = vec![(format!("non-zero η_u samples ({})", r.nonzero), bars)];
    if let Some(t) = r.threshold {
        series.push((format!("proposed τ_u = {t}"), vec![(t, 0.0), (t, top)]));
    }
    series.push((
        format!("paper τ_u = {PAPER_TAU}"),
        vec![(PAPER_TAU, 0.0), (PAPER_TAU, top)],
    ));
    steps(
        &format!(
            "η_u histogram, bins of {} — {} ({} runs, No-Fairness)",
            r.bin,
            r.workflows.join(", "),
            r.repetitions.len()
        ),
        "η_u",
        "samples",
        &series,
    )
}
