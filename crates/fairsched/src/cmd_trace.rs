//! `fairsched trace …`: inspect workload logs, and derive τ_u from
//! workflow runs (`fairsched_sim::trace_stats`, `…::workflow::tau`).

use crate::cmd_experiment::ForceArg;
use crate::host::Cli;
use crate::term::{say, sayln};
use fairsched_sim::experiment::open_out;
use fairsched_sim::experiments::workflow::tau;
use fairsched_sim::trace_stats::{no_jobs, render, stats_report, warn_header, write_outputs};
use fairsched_trace::{TraceInfo, scan};
use std::path::PathBuf;

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

pub fn run(c: TraceCommand) -> anyhow::Result<()> {
    let host = Cli::new(false);
    match c {
        TraceCommand::Info { file, lenient, json } => {
            // The trace's errors name the file (and line, and field).
            let s = scan(&file, lenient)?;
            let info = TraceInfo::from_scan(&s);
            if json {
                // In `warnings`, and said on standard error (the text
                // lists them among its lines).
                warn_header(&info, &host);
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
                .map(|d| open_out(d, force.force, &host))
                .transpose()?;
            let report = stats_report(&file, lenient)?;
            warn_header(&report.trace, &host);
            let written = match out_dir {
                Some(dir) => write_outputs(dir, &file, &report, &host)?,
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

fn trace_tau(a: TauArgs) -> anyhow::Result<()> {
    let host = Cli::new(!a.no_progress);
    let args = tau::TauArgs {
        files: a.files.clone(),
        grid: a.grid.clone(),
        spacing: a.spacing,
        repetitions: a.repetitions,
        seed: a.seed,
        bin: a.bin,
    };
    let out_dir = a
        .out
        .as_deref()
        .map(|d| open_out(d, a.force.force, &host))
        .transpose()?;
    let pb = crate::host::bar(a.repetitions as u64, !a.no_progress, "runs");
    pb.set_prefix("trace tau");
    let report = tau::report(&args, &|| pb.inc(1))?;
    pb.finish_and_clear();
    // Files first, together, tau.json last.
    if let Some(dir) = out_dir {
        tau::write_report(dir, &report, &host)?;
    }
    if a.json {
        sayln!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        say!("{}", tau::render_tau(&report));
        if let Some(dir) = &a.out {
            // As the experiments say it (the line stays within 80 columns).
            sayln!(
                "wrote {} (tau.json, tau.svg, {})",
                dir.display(),
                fairsched_report::table::TABLES_JSON
            );
        }
    }
    Ok(())
}
