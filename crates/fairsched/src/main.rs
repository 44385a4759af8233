//! `fairsched`: the one binary. Thin: parses flags, calls the libraries,
//! prints and writes results.

mod cmd_admin;
mod cmd_experiment;
mod cmd_live;
mod cmd_optional;
mod cmd_pilot;
mod cmd_policies;
mod cmd_report;
mod cmd_simulate;
mod cmd_slurm;
mod cmd_slurm_history;
mod cmd_trace;
mod host;
mod progress;
mod term;

use clap::{CommandFactory, FromArgMatches, Subcommand};
use std::process::ExitCode;
use tracing_subscriber::util::SubscriberInitExt;

/// `fairsched --version`: the package version and the git commit it was
/// built from (as `summary.json`'s `tool`).
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("FAIRSCHED_GIT_COMMIT"),
    ")"
);

/// A fair, online, non-clairvoyant scheduler and the trace-driven simulator that evaluates it.
#[derive(clap::Parser)]
#[command(name = "fairsched", version = VERSION, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Replay a workload log under one or more policies (no arguments: a
    /// comparison of the baselines on the bundled KTH-SP2 log).
    Simulate(Box<cmd_simulate::Args>),
    /// Inspect workload logs.
    #[command(subcommand)]
    Trace(cmd_trace::TraceCommand),
    /// List every policy with its parameters and documentation.
    Policies(cmd_policies::Args),
    /// Reproduce a paper's experiment and print our numbers beside the paper's.
    #[command(subcommand)]
    Experiment(cmd_experiment::ExperimentCommand),
    /// Set up and run the live service: `admin init` (the database), then, through the running
    /// broker, `admin org|user|worker-token …`; operate it: `admin quota`, `admin token revoke`,
    /// `admin user rotate|remove|run-as`, `admin worker drain|hold|release|evict`, `admin task requeue|hold|release`;
    /// keep its database: `admin backup`, `admin compact`.
    #[command(subcommand)]
    Admin(cmd_admin::AdminCommand),
    /// Run the live broker: HTTP API, durable log, the core deciding what runs where.
    Serve(cmd_live::ServeArgs),
    /// Lend this machine's processors to a broker: run the tasks it hands out.
    Worker(fairsched_worker::Opts),
    /// Submit tasks to a broker: a bag of tasks (`--count N -- CMD`) or a workflow (`--workflow
    /// FILE`, a DAG of tasks).
    Submit(cmd_live::SubmitArgs),
    /// Your tasks on a broker: counts by state, or every task with `--tasks`; the workers and
    /// slots, and the workers short of disk space (which start no run until space is freed).
    Status(cmd_live::StatusArgs),
    /// Cancel a task of yours (a running one is killed on its worker).
    Cancel(cmd_live::TaskArgs),
    /// Put a waiting task of yours on hold: it does not run until you release it.
    Hold(cmd_live::TaskArgs),
    /// Release a task of yours from hold (a hold the admin put, only the admin releases).
    Release(cmd_live::TaskArgs),
    /// Why a task is not running yet: its place in the queue and the state behind it.
    Explain(cmd_live::ExplainArgs),
    /// A task's output: the end of its stdout (or stderr) as its worker sent it, once its run
    /// ended.
    Output(cmd_live::OutputArgs),
    /// Diet-ethic client: A mandatory requests, optional ones up to B in all, until the deadline.
    #[command(long_about = cmd_optional::LONG_ABOUT)]
    Optional(cmd_optional::OptionalArgs),
    /// Write a broker's history as an SWF log (and its organizations as a platform file).
    Export(cmd_live::ExportArgs),
    /// Grow past one machine: fairsched workers submitted as Slurm jobs (pilots) to a cluster,
    /// their status, their cancellation.
    #[command(subcommand)]
    Pilot(cmd_pilot::PilotCommand),
    /// Steer a Slurm you already run: fairsched's policies as site factors on its queue
    /// (`slurm steer`, `slurm explain`); its accounting as a log (`slurm history`); a log's
    /// window as real jobs (`slurm replay`).
    #[command(subcommand)]
    Slurm(cmd_slurm::SlurmCommand),
    /// One self-contained HTML page (inline SVG and CSS) of the tables and plots of
    /// `simulate`, `experiment` and `trace` output folders.
    Report(cmd_report::Args),
}

/// Parses the command line. Every option that takes a value accepts one
/// that starts with `-`, so `--seed -1` is refused by the flag's own parser
/// ("invalid value '-1' for '--seed \<SEED\>'") instead of clap's "unexpected
/// argument '-1'", and `--priority -1` is a priority. No option has a
/// numeric short name, so nothing else reads as a number.
fn parse_cli() -> Cli {
    let matches = negatives(Cli::command()).get_matches();
    Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}

/// `cmd` with every option that takes a value accepting one that starts
/// with `-` (see [`parse_cli`]).
fn negatives(cmd: clap::Command) -> clap::Command {
    cmd.mut_args(|a| {
        if a.get_action().takes_values() && !a.is_positional() {
            a.allow_negative_numbers(true)
        } else {
            a
        }
    })
    .mut_subcommands(negatives)
}

/// Standard error for the log lines: one that cannot be written (a pipe
/// whose reader is gone, `2>&1 | head`) is dropped, not a panic of the
/// broker or the worker, which go on.
struct QuietStderr;

impl std::io::Write for QuietStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match std::io::stderr().write(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(buf.len()),
            r => r,
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match std::io::stderr().flush() {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            r => r,
        }
    }
}

fn main() -> ExitCode {
    // `fairsched worker` runs each task under a guard, this binary started
    // again with a hidden first argument: that process stops here.
    fairsched_worker::guard_hook();
    // FAIRSCHED_LOG: `LEVEL` and `TARGET=LEVEL` directives, comma-separated
    // (`warn,fairsched_broker=info`); unset or unreadable, the default below.
    // A `Targets` filter, not an `EnvFilter`: the same directives without
    // span and field matching, and no regex engine in the build.
    let filter: tracing_subscriber::filter::Targets = std::env::var("FAIRSCHED_LOG")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            "warn,fairsched_worker=info,fairsched_broker=info"
                .parse()
                .expect("the default log filter parses")
        });
    tracing_subscriber::layer::SubscriberExt::with(
        tracing_subscriber::fmt()
            // Every level through; the filter below decides.
            .with_max_level(tracing::level_filters::LevelFilter::TRACE)
            .with_writer(|| QuietStderr)
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .finish(),
        filter,
    )
    .init();
    let cli = parse_cli();
    // fairsched's own policies; a program of one's own adds its policies
    // to this value (docs/extending.md).
    let registry = fairsched_core::Registry::builtin();
    let result = match cli.command {
        Command::Simulate(a) => cmd_simulate::run(*a, &registry),
        Command::Trace(t) => cmd_trace::run(t),
        Command::Policies(a) => cmd_policies::run(a, &registry),
        Command::Experiment(c) => cmd_experiment::run(c, &registry),
        Command::Admin(c) => cmd_admin::run(c),
        Command::Serve(a) => cmd_live::serve_cmd(a, &registry),
        Command::Worker(o) => cmd_live::worker_cmd(o),
        Command::Submit(a) => cmd_live::submit_cmd(a),
        Command::Status(a) => cmd_live::status_cmd(a),
        Command::Cancel(a) => cmd_live::task_cmd(a, "cancel"),
        Command::Hold(a) => cmd_live::task_cmd(a, "hold"),
        Command::Release(a) => cmd_live::task_cmd(a, "release"),
        Command::Explain(a) => cmd_live::explain_cmd(a),
        Command::Output(a) => cmd_live::output_cmd(a),
        Command::Optional(a) => cmd_optional::optional_cmd(a),
        Command::Export(a) => cmd_live::export_cmd(a),
        Command::Report(a) => cmd_report::run(a),
        Command::Pilot(c) => cmd_pilot::run(c),
        Command::Slurm(c) => cmd_slurm::run(c, &registry),
    };
    // Exit 0, 1 (the run failed) or 2 (the command line is wrong).
    term::finish(result)
}
