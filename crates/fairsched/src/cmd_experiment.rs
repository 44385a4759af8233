//! `fairsched experiment …`: the papers' experiments, our numbers beside
//! the papers'. Flags only: each experiment is a library
//! `fairsched_sim::Experiment`, run here or as a Slurm array.

use crate::host::Cli;
use crate::term::{say, sayln, usage};
use fairsched_core::{PolicySpec, Registry, Time};
use fairsched_sim::experiment::run_local;
use fairsched_sim::experiments::{diet, pffp, shapley, workflow};
use fairsched_sim::study::{Studied, Study, StudyArgs};
use fairsched_sim::sweep::Submit;
use fairsched_sim::{Experiment, Ownership};
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Subcommand)]
pub enum ExperimentCommand {
    /// Shapley-fair scheduling (Skowron & Rzadca): Δψ/p_tot of each
    /// algorithm against REF on random windows of real logs, beside the
    /// paper's Table 1 or 2, or its Figure 1 (number of organizations).
    ///
    /// Examples:
    ///   fairsched experiment shapley --table 1 --instances 10 --traces LPC-EGEE
    ///   fairsched experiment shapley --table 2 --traces LPC-EGEE --instances 20 --out results/t2
    ///   fairsched experiment shapley --figure 1 --instances 5
    ///   fairsched experiment shapley --trace data/KTH-SP2-1996-2.1-cln.swf.gz:100 --orgs 3 --instances 20
    ///   fairsched experiment shapley --instances 10 --traces LPC-EGEE --with fair-share
    ///   fairsched experiment shapley --instances 10 --traces LPC-EGEE --congested 0.5 --warm-start
    #[command(verbatim_doc_comment)]
    Shapley(ShapleyArgs),
    /// PFFP (allocation under runtime uncertainty): Tests 1–5 of the
    /// paper on Monday–Friday weeks of seven real logs; degradation
    /// tables or φ×ψ grids beside the paper's, performance profiles.
    ///
    /// Examples:
    ///   fairsched experiment pffp --test 2 --instances 5
    ///   fairsched experiment pffp --test 4 --out results/t4
    ///   fairsched experiment pffp --test 3 --instances 4
    ///   fairsched experiment pffp --test 5 --instances 3
    ///   fairsched experiment pffp --test 2 --instances 20 --logs data/KTH-SP2-1996-2.1-cln.swf.gz
    ///   fairsched experiment pffp --test 2 --instances 5 --with least-loaded
    #[command(verbatim_doc_comment)]
    Pffp(PffpArgs),
    /// Diet-ethic (mandatory and optional requests with deadlines): the
    /// paper's scenarios, Diet-ethic against the legacy system over the
    /// legacy clients' n_submit; unhappy users, unfairness, completed
    /// requests (medians over runs).
    ///
    /// Examples:
    ///   fairsched experiment diet-ethic --scenario night-consecutive
    ///   fairsched experiment diet-ethic --scenario day-irregular --runs 20
    ///   fairsched experiment diet-ethic --scenario scalability --n-submit 100,1000
    ///   fairsched experiment diet-ethic --scenario-file examples/diet.toml --runs 5
    ///   fairsched experiment diet-ethic --scenario day-regular --runs 3 --with fcfs
    ///   fairsched experiment diet-ethic --scenario day-regular --submit-latency 20ms --jitter 10ms
    ///   fairsched experiment diet-ethic --scenario day-regular-absolute
    ///   fairsched experiment diet-ethic --scenario scalability --count collected --cleanup-rate 1000
    #[command(verbatim_doc_comment)]
    DietEthic(DietArgs),
    /// Workflow fairness (the η_u controller): the paper's Experiments 1–3
    /// or your own workflows, Fairness against No-Fairness (FCFS) on
    /// identical simulated grids; σ_s, σ_m, μ, makespans, slowdowns and
    /// η_u over time.
    ///
    /// Examples:
    ///   fairsched experiment workflow-fairness --exp 2
    ///   fairsched experiment workflow-fairness --exp 1 --repetitions 8 --every 180
    ///   fairsched experiment workflow-fairness --workflows gate,simubloch --grid examples/grid.toml
    ///   fairsched experiment workflow-fairness --exp 1 --repetitions 2 --with 'age-boost[after=10m]'
    #[command(verbatim_doc_comment)]
    WorkflowFairness(WorkflowArgs),
    /// Write the result files of a `--slurm-array` run from the parts its
    /// array tasks wrote: the files and the table a local run of the same
    /// command gives, byte for byte.
    ///
    /// Example:
    ///   fairsched experiment shapley --table 2 --out results/t2 --slurm-array --partition batch
    ///   # … when `squeue -j JOBID` lists none of its tasks:
    ///   fairsched experiment collect results/t2
    ///
    /// Missing parts are named (exit 1): their tasks are still running or
    /// failed (their logs: DIR/parts/slurm-JOBID_I.out).
    #[command(verbatim_doc_comment)]
    Collect(CollectArgs),
    /// One array task of a `--slurm-array` run: instance I of the sweep in
    /// DIR, into DIR/parts/instance-I.json.
    #[command(hide = true)]
    RunPart(RunPartArgs),
}

/// What every experiment takes besides its own flags (no doc comment: a
/// flattened struct's would become the command's description).
#[derive(clap::Args)]
pub struct Common {
    /// A registered policy to run beside the paper's algorithms, under the
    /// paper's protocol, as one more column, row or series (repeatable;
    /// NAME[key=value,...], see `fairsched policies`).
    #[arg(long = "with", value_name = "SPEC")]
    with: Vec<PolicySpec>,
    /// Output directory (default: `results/<experiment>…`). A folder an
    /// earlier run wrote (it holds .fairsched-out) is cleared of that run's
    /// files first; other files stay. With --slurm-array, the sweep's folder
    /// (sweep.json, sweep.sbatch, parts/), where `experiment collect`
    /// writes the results.
    #[arg(long)]
    out: Option<PathBuf>,
    #[command(flatten)]
    force: ForceArg,
    /// Never show a progress bar.
    #[arg(long)]
    no_progress: bool,
    /// Run on a Slurm cluster instead (shapley, pffp, diet-ethic): write
    /// sweep.sbatch in the --out folder, one array task per instance, and
    /// submit it with sbatch; when the tasks are done, `fairsched
    /// experiment collect DIR` writes the files a local run writes.
    #[arg(long)]
    slurm_array: bool,
    /// The Slurm partition of the array tasks (with --slurm-array)
    /// [default: the cluster's].
    #[arg(long, value_name = "P", requires = "slurm_array")]
    partition: Option<String>,
    /// Run the paper's reproduction study instead: its cases under every
    /// reading of the paper's set-up, one row per reading with the
    /// claims' figures, whether each claim holds and the paper's values;
    /// writes study.json, study.csv and a chart per case, study-CASE.svg
    /// (docs/reproduction.md). Sizes,
    /// seed and logs come from this command's flags; a flag that a
    /// reading sets (workflow-fairness: --every, --concurrent, …) is
    /// refused.
    #[arg(long)]
    study: bool,
    /// With --study: the small size the tests use (a minute or less),
    /// and fewer cases (the study's notes list them). It sets every size
    /// itself: --instances, --runs, --repetitions and --n-submit are then
    /// not used.
    #[arg(long, requires = "study")]
    quick: bool,
    /// With --study: only this reading (repeatable; the study lists its
    /// readings).
    #[arg(long = "reading", value_name = "NAME", requires = "study")]
    readings: Vec<String>,
}

// `--force`, shared by every command with `--out` (no doc comment here: a
// flattened struct's would become the command's description).
#[derive(clap::Args, Clone, Copy, Debug, Default)]
pub struct ForceArg {
    /// Write into a non-empty --out folder that no fairsched run wrote
    /// (files of the same name are replaced).
    #[arg(long)]
    pub force: bool,
}

#[derive(clap::Args)]
pub struct ShapleyArgs {
    /// Which table: 1 (windows of 5·10⁴ s) or 2 (5·10⁵ s).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=2))]
    table: u8,
    /// Figure 1 instead: Δψ/p_tot for 2…10 organizations on LPC-EGEE
    /// (windows of the chosen --table).
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=1))]
    figure: Option<u8>,
    /// Random windows per trace (--study: on Table 2, at most 10).
    #[arg(long, default_value_t = 100)]
    instances: u32,
    /// Organizations (users are mapped to them uniformly at random)
    /// [default: 5].
    #[arg(long)]
    orgs: Option<u32>,
    /// How processors are split among organizations: zipf, zipf:S or
    /// uniform [default: zipf:1].
    #[arg(long)]
    ownership: Option<Ownership>,
    /// Shared logs to run, by name (default: all of them):
    /// LPC-EGEE, RICC, CTC-SP2, HPC2N, KTH-SP2, LANL-CM5, SDSC-BLUE, SDSC-DS, SDSC-SP2.
    /// NAME:PROCS runs a log on PROCS processors instead of its stated
    /// count, with the same windows (RICC:1024: RICC's nodes, not cores).
    #[arg(long, value_delimiter = ',', value_name = "NAME[:PROCS],...")]
    traces: Vec<String>,
    /// Any SWF log, with its processor count (repeatable). Given alone, only
    /// these run.
    #[arg(long = "trace", value_name = "FILE:PROCS", value_parser = parse_trace)]
    trace_files: Vec<(PathBuf, u32)>,
    /// Where the shared logs are.
    #[arg(long, default_value = "../shared/data/traces/swf", value_name = "DIR")]
    traces_dir: PathBuf,
    /// Organizations, their processors and users from a TOML file (see
    /// `fairsched simulate --help`) instead of --orgs/--ownership.
    #[arg(long, value_name = "FILE")]
    platform: Option<PathBuf>,
    /// Count only congested windows: REF's schedule has a job released
    /// and waiting for at least this fraction F of the window (0 < F ≤ 1).
    /// Each instance draws candidate windows until one counts, at most 50;
    /// the rejections are counted in the notes and summary.json
    /// [default: every window counts].
    #[arg(long, value_name = "F", allow_negative_numbers = true)]
    congested: Option<f64>,
    /// Replay the window length of the log before each window, scheduled
    /// by the same algorithm, instead of starting on an empty platform;
    /// Δψ and p_tot count only the jobs submitted in the window.
    #[arg(long)]
    warm_start: bool,
    /// Master seed of every random choice.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    #[command(flatten)]
    common: Common,
}

fn parse_trace(s: &str) -> Result<(PathBuf, u32), String> {
    let (file, procs) = s
        .rsplit_once(':')
        .ok_or_else(|| format!("{s:?}: expected FILE:PROCS, e.g. my.swf:128"))?;
    let procs: u32 = procs
        .parse()
        .map_err(|_| format!("{s:?}: PROCS must be a positive whole number, not {procs:?}"))?;
    if file.is_empty() {
        return Err(format!("{s:?}: the FILE part is empty (expected FILE:PROCS)"));
    }
    if procs == 0 || procs > fairsched_sim::MAX_PROCS {
        return Err(format!(
            "{s:?}: PROCS must be between 1 and {}",
            fairsched_sim::MAX_PROCS
        ));
    }
    Ok((PathBuf::from(file), procs))
}

#[derive(clap::Args)]
pub struct PffpArgs {
    /// Which test of the paper's Table 3: 1 and 3 tune PFFP over the φ×ψ
    /// grid (Workload A; 3 machines of 1, or of 2, 4, 8 processors); 2 and
    /// 4 compare MST, PFFP1, PFFP2, MSTUser, MLp and Rand on the same
    /// machines (Workload B); 5 compares on machines of 50, 100, 150 with
    /// bags of tasks (Workload C). With --study: only this test's cases
    /// (2, 4 or 5; without it, all three).
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=5), required_unless_present = "study")]
    test: Option<u8>,
    /// Test 5 only: run the φ×ψ grid (the paper's Table 9) instead of the
    /// comparison.
    #[arg(long)]
    grid: bool,
    /// Weeks to run (the first N of the workload; default all: A 18,
    /// B 30, C 30). A larger N, or logs with too few weeks, runs fewer:
    /// a warning and summary.json's notes say how many.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    instances: Option<u32>,
    /// SWF logs to draw the weeks from, instead of the paper's seven
    /// (KTH-SP2, CTC-SP2, HPC2N, LANL-CM5, SDSC-BLUE, SDSC-DS, SDSC-SP2).
    #[arg(long, value_delimiter = ',', value_name = "FILE,...")]
    logs: Vec<PathBuf>,
    /// Where the paper's seven logs are.
    #[arg(long, default_value = "../shared/data/traces/swf", value_name = "DIR")]
    traces_dir: PathBuf,
    /// Scale every week's arrivals to this utilisation (0 < U ≤ 1)
    /// [default: as logged; Test 5: drawn per week in 0.2–0.9].
    #[arg(long, value_name = "U", allow_negative_numbers = true)]
    utilization: Option<f64>,
    /// PFFP with the workload's own parameters instead of the paper's
    /// Table 3 (H = 0.78, β = 0.524, S_m = 1320, μ = 5248): Pareto fit,
    /// mean and median Hurst estimate of Workload A's run times.
    #[arg(long)]
    fitted: bool,
    /// Comparisons: also print the degradation of each strategy's mean ρ
    /// and mean t_w over the weeks against the best mean, beside the
    /// spec's mean of per-week ratios.
    #[arg(long)]
    ratio_of_means: bool,
    /// Tests 1–4: run each q-processor job as q sequential tasks (as
    /// Test 5's bags of tasks) instead of one sequential job.
    #[arg(long)]
    q_tasks: bool,
    /// How the weeks are drawn: pool (every log's weeks in one shuffled
    /// pool) or per-log (each log in turn).
    #[arg(long, default_value = "pool", value_name = "HOW")]
    weeks: pffp::WeekDraw,
    /// Comparisons: run one of the paper's strategies as another policy,
    /// keeping its column (repeatable), e.g. `MLp=mlp[n=printed]`,
    /// `PFFP1=pffp1[floor=false]`; `--with` adds a strategy instead.
    #[arg(long, value_name = "LABEL=POLICY", value_parser = pffp::experiment::parse_replace)]
    replace: Vec<(String, PolicySpec)>,
    /// Master seed (the weeks drawn, Rand's choices, Test 5's utilisations).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    seed: u64,
    #[command(flatten)]
    common: Common,
}

#[derive(clap::Args)]
pub struct DietArgs {
    /// The paper's scenario: night-simultaneous, night-consecutive,
    /// day-regular, day-irregular, day-irregular-random or scalability.
    /// Day-time users have 100 s from their own arrival (the spec's
    /// reading); the paper's text as written, one absolute deadline at
    /// 100 s for everyone, is day-regular-absolute, day-irregular-absolute,
    /// day-irregular-random-absolute. With --study: only this scenario's
    /// cases (without it, all the study's).
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(diet::SCENARIOS),
          required_unless_present_any = ["scenario_file", "study"], conflicts_with = "scenario_file")]
    scenario: Option<String>,
    /// A set-up of your own (TOML: servers, `[[user]]` tables with arrival,
    /// deadline, n_min, n_max, duration, count).
    #[arg(long, value_name = "FILE")]
    scenario_file: Option<PathBuf>,
    /// Runs (seeds) per point; each point is their median. --study runs
    /// at least 20, judging each claim over subsets of the paper's 10.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    runs: u32,
    /// The legacy clients' n_submit values to sweep
    /// [default: 3,10,50,100,150,190,250,500,1000].
    #[arg(long, value_delimiter = ',', value_name = "N,...", default_values_t = diet::N_SUBMIT.to_vec(),
          hide_default_value = true, allow_hyphen_values = true)]
    n_submit: Vec<u32>,
    /// Master seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Timing model: a client's submission or cancellation reaches its
    /// server this long after it is sent (50ms, 0.05s, or seconds)
    /// [default: 0].
    #[arg(long, value_name = "D", value_parser = duration, allow_hyphen_values = true)]
    submit_latency: Option<Time>,
    /// Timing model: a client learns that a request ended this long after
    /// it ended [default: 0].
    #[arg(long, value_name = "D", value_parser = duration, allow_hyphen_values = true)]
    complete_latency: Option<Time>,
    /// Timing model: each request keeps its server busy this much longer
    /// than its work [default: 0].
    #[arg(long, value_name = "D", value_parser = duration, allow_hyphen_values = true)]
    overhead: Option<Time>,
    /// Timing model: each message (submission, cancellation, completion
    /// notice) is late by a further draw, uniform in [0, D], from the
    /// run's seed [default: 0].
    #[arg(long, value_name = "D", value_parser = duration, allow_hyphen_values = true)]
    jitter: Option<Time>,
    /// Key 4 of Diet-ethic's server queue, "least allocated on this
    /// server": its finished runs, or those plus its runs in progress
    /// (the same decisions on the paper's single-slot servers).
    #[arg(long, value_name = "READING", default_value = "finished",
          value_parser = clap::builder::PossibleValuesParser::new(diet::Key4::NAMES))]
    key4: String,
    /// Client node: the set-up submissions of every client together
    /// leave one node at this many per second [default: 0, no limit].
    #[arg(long, value_name = "N", default_value_t = 0, hide_default_value = true)]
    setup_rate: u32,
    /// Client node: the clean-up cancellations of every client together
    /// leave it at this many per second [default: 0, no limit].
    #[arg(long, value_name = "N", default_value_t = 0, hide_default_value = true)]
    cleanup_rate: u32,
    /// Client node: clients queuing at the same instant send one message
    /// each in turn (shared) or one client after another (fifo).
    #[arg(long, value_name = "ORDER", default_value = "shared",
          value_parser = clap::builder::PossibleValuesParser::new(diet::NodeOrder::NAMES))]
    node_order: String,
    /// Completed requests: every one that completed on its server
    /// (servers), or only those a client collected before its clean-up
    /// (collected).
    #[arg(long, value_name = "WHICH", default_value = "servers",
          value_parser = clap::builder::PossibleValuesParser::new(diet::Count::NAMES))]
    count: String,
    #[command(flatten)]
    common: Common,
}

/// A duration of the timing model: `50ms`, `0.05s`, `2m`, or seconds.
fn duration(s: &str) -> Result<Time, String> {
    let t = fairsched_core::registry::parse_duration(s.trim()).ok_or_else(|| {
        format!(
            "`{}` is not a duration ≥ 0 (50ms, 0.05s, 2m, or a number of seconds)",
            s.trim()
        )
    })?;
    if t > diet::MAX_TIMING {
        return Err(format!(
            "`{}` is more than {} s",
            s.trim(),
            diet::MAX_TIMING.whole_secs()
        ));
    }
    Ok(t)
}

#[derive(clap::Args)]
pub struct WorkflowArgs {
    /// The paper's experiment: 1 (three GATE), 2 (three GATE then
    /// SimuBloch) or 3 (GATE, FIELD-II, PET-Sorteo, SimuBloch). With
    /// --study: only this experiment's cases (without it, all three).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=3),
          required_unless_present_any = ["workflows", "study"], conflicts_with = "workflows")]
    exp: Option<u32>,
    /// Workflows of your own, submitted in this order: WfCommons JSON
    /// (.json, .json.gz), TOML profiles, or the built-in profiles gate,
    /// simubloch, field2, pet-sorteo.
    #[arg(long, value_delimiter = ',', value_name = "FILE,...")]
    workflows: Vec<String>,
    /// Repetitions (grids drawn from different seeds). --study runs at
    /// least 16, judging each claim over subsets of the paper's 4.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1000))]
    repetitions: u32,
    /// The controller's threshold τ_u, from 0 to below 1 (η_u lies in
    /// [0, 1]).
    #[arg(long, default_value_t = 0.2, allow_negative_numbers = true)]
    tau: f64,
    /// The controller's period in seconds (0: react at every status change;
    /// the paper's DIRAC deployment used 180).
    #[arg(long, default_value_t = 0.0)]
    every: f64,
    /// Seconds between two workflow submissions.
    #[arg(long, default_value_t = 300.0)]
    spacing: f64,
    /// The grid: pilots, failures, background load (TOML; default: an
    /// EGI-like grid, see docs/workflow-fairness.md).
    #[arg(long, value_name = "FILE")]
    grid: Option<PathBuf>,
    /// Do not mirror the Fairness run's priority raises in the No-Fairness
    /// run (the paper mirrored them).
    #[arg(long)]
    no_mirror: bool,
    /// Seconds the grid runs (pilots, background load) before the first
    /// workflow, so that it meets a busy grid and a background queue.
    #[arg(long, default_value_t = 0.0, value_name = "S")]
    warmup: f64,
    /// Pilots at start, instead of the grid's (default grid: 100).
    #[arg(long, value_name = "N")]
    initial_pilots: Option<u32>,
    /// Background tasks per hour, instead of the grid's (default grid: 100).
    #[arg(long, value_name = "R")]
    background_per_hour: Option<f64>,
    /// Algorithm 2 skips the tasks the controller raised before (as
    /// printed, they may be raised again).
    #[arg(long)]
    skip_raised: bool,
    /// Run Fairness and No-Fairness at the same time on one grid,
    /// competing for its pilots, as the paper did (default: one after the
    /// other on identical grids).
    #[arg(long)]
    concurrent: bool,
    /// The workflow engine replicates a running task once it has run F
    /// times the median of its activity's completed tasks; the first copy
    /// to complete wins (MOTEUR's task replication; 0: never, the
    /// default). At most `engine.copies` copies (grid file; default 5).
    #[arg(long, value_name = "F")]
    replicate_after: Option<f64>,
    /// Lift a task by cancelling it and submitting it again S seconds
    /// later at its new priority, as the paper's DIRAC deployment had to
    /// (default: priorities change in place).
    #[arg(long, value_name = "S")]
    resubmit_lifted: Option<f64>,
    /// How pilots are matched to waiting tasks: `strict`, one priority
    /// queue over every user's tasks (the default, the spec's); `dirac`,
    /// DIRAC-like task queues drawn at random weighted by priority,
    /// normalized per owner, so that a lift reorders the workflows' own
    /// tasks and never overtakes other users' (a task queue per
    /// application; `dirac-one-queue`: one for all the workflows' tasks;
    /// both need --concurrent).
    #[arg(long, default_value = "strict", value_name = "M")]
    matching: String,
    /// Master seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    #[command(flatten)]
    common: Common,
}

/// `fairsched experiment collect DIR`.
#[derive(clap::Args)]
pub struct CollectArgs {
    /// The --out folder of a `--slurm-array` run.
    dir: PathBuf,
}

/// `fairsched experiment run-part DIR I` (one array task).
#[derive(clap::Args)]
pub struct RunPartArgs {
    /// The sweep's folder.
    dir: PathBuf,
    /// The instance to run ($SLURM_ARRAY_TASK_ID).
    index: usize,
}

pub fn run(cmd: ExperimentCommand, registry: &Registry) -> anyhow::Result<()> {
    match cmd {
        ExperimentCommand::Shapley(a) => {
            let args = shapley::experiment::Args {
                table: a.table,
                figure: a.figure.is_some(),
                instances: a.instances,
                orgs: a.orgs,
                ownership: a.ownership,
                traces: a.traces,
                trace_files: a.trace_files,
                traces_dir: a.traces_dir,
                platform: a.platform,
                seed: a.seed,
                with: a.common.with.clone(),
                congested: a.congested,
                warm_start: a.warm_start,
            };
            drive_or_study::<shapley::experiment::Shapley>(args, None, &a.common, registry)
        }
        ExperimentCommand::Pffp(a) => {
            let args = pffp::experiment::Args {
                test: a.test.unwrap_or(2),
                grid: a.grid,
                instances: a.instances,
                logs: a.logs,
                traces_dir: a.traces_dir,
                utilization: a.utilization,
                fitted: a.fitted,
                seed: a.seed,
                with: a.common.with.clone(),
                ratio_of_means: a.ratio_of_means,
                q_tasks: a.q_tasks,
                weeks: a.weeks,
                replace: a.replace,
            };
            let case = a.test.map(|t| format!("test{t}"));
            drive_or_study::<pffp::experiment::Pffp>(args, case, &a.common, registry)
        }
        ExperimentCommand::DietEthic(a) => {
            let args = diet::experiment::Args {
                scenario: a.scenario,
                scenario_file: a.scenario_file,
                runs: a.runs,
                n_submit: a.n_submit,
                seed: a.seed,
                with: a.common.with.clone(),
                timing: diet::Timing {
                    submit_latency: a.submit_latency.unwrap_or_default(),
                    complete_latency: a.complete_latency.unwrap_or_default(),
                    overhead: a.overhead.unwrap_or_default(),
                    jitter: a.jitter.unwrap_or_default(),
                },
                key4: a.key4.parse().map_err(|e: String| usage(format!("--key4 {e}")))?,
                node: diet::ClientNode {
                    setup_rate: a.setup_rate,
                    cleanup_rate: a.cleanup_rate,
                    order: a
                        .node_order
                        .parse()
                        .map_err(|e: String| usage(format!("--node-order {e}")))?,
                },
                count: a
                    .count
                    .parse()
                    .map_err(|e: String| usage(format!("--count {e}")))?,
            };
            if a.common.study && args.scenario_file.is_some() {
                return Err(usage(
                    "--study runs the paper's scenarios: run a --scenario-file without --study",
                ));
            }
            let case = args.scenario.clone();
            drive_or_study::<diet::experiment::DietEthic>(args, case, &a.common, registry)
        }
        ExperimentCommand::WorkflowFairness(a) => {
            let args = workflow::experiment::Args {
                exp: a.exp,
                workflows: a.workflows,
                repetitions: a.repetitions,
                tau: a.tau,
                every: a.every,
                spacing: a.spacing,
                grid: a.grid,
                mirror: !a.no_mirror,
                seed: a.seed,
                with: a.common.with.clone(),
                warmup: a.warmup,
                initial_pilots: a.initial_pilots,
                background_per_hour: a.background_per_hour,
                skip_raised: a.skip_raised,
                concurrent: a.concurrent,
                replicate_after: a.replicate_after,
                resubmit_lifted: a.resubmit_lifted,
                matching: a
                    .matching
                    .parse()
                    .map_err(|e: String| usage(format!("--matching {e}")))?,
            };
            drive_or_study::<workflow::experiment::WorkflowFairness>(args, None, &a.common, registry)
        }
        ExperimentCommand::Collect(a) => {
            let started = Instant::now();
            let host = Cli::new(true);
            let c = fairsched_sim::sweep::collect(&a.dir, false, registry, &host)?;
            say!("{}", c.text);
            sayln!(
                "wrote {} ({}) in {:.1} s",
                a.dir.display(),
                c.listed.join(", "),
                started.elapsed().as_secs_f64()
            );
            Ok(())
        }
        ExperimentCommand::RunPart(a) => {
            // The task has the CPUs Slurm gave it: one, or --cpus-per-task.
            let threads = std::env::var("SLURM_CPUS_PER_TASK")
                .ok()
                .and_then(|v| v.parse::<usize>().ok())
                .filter(|&n| n > 0)
                .unwrap_or(1);
            let _ = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build_global();
            Ok(fairsched_sim::sweep::run_part(
                &a.dir,
                a.index,
                registry,
                &Cli::new(false),
            )?)
        }
    }
}

/// The experiment, or with `--study` its reproduction study.
/// `case`: the study's case the experiment's own selector names (`--test
/// 4`, `--scenario S`), run alone.
fn drive_or_study<E: Studied>(
    args: E::Args,
    case: Option<String>,
    c: &Common,
    registry: &Registry,
) -> anyhow::Result<()> {
    if !c.study {
        return drive::<E>(args, c, registry);
    }
    let args = StudyArgs {
        base: args,
        quick: c.quick,
        only: c.readings.clone(),
        case,
    };
    drive::<Study<E>>(args, c, registry)
}

/// Runs experiment `E` here, or submits it as a Slurm array, and prints
/// its tables and what it wrote.
fn drive<E: Experiment>(args: E::Args, c: &Common, registry: &Registry) -> anyhow::Result<()> {
    let started = Instant::now();
    let host = Cli::new(!c.no_progress);
    let out = c.out.clone().unwrap_or_else(|| E::default_out(&args));
    if !c.slurm_array {
        let done = run_local::<E>(&args, &out, c.force.force, registry, &host)?;
        say!("{}", done.text);
        sayln!(
            "wrote {} ({}) in {:.1} s",
            out.display(),
            done.listed.join(", "),
            started.elapsed().as_secs_f64()
        );
        return Ok(());
    }
    let exe =
        std::env::current_exe().map_err(|e| anyhow::anyhow!("the path of this fairsched program: {e}"))?;
    let how = Submit {
        partition: c.partition.clone(),
        part_command: vec![
            exe.to_string_lossy().into_owned(),
            "experiment".into(),
            "run-part".into(),
        ],
        command: sweep_command()?,
    };
    let s = fairsched_sim::sweep::submit::<E>(&args, &out, c.force.force, &how, registry, &host)?;
    let p = |f: &str| out.join(f).display().to_string();
    let n = s.instances;
    sayln!(
        "submitted Slurm job {}: {n} array task{} ({}), one per instance, each writing {}",
        s.job,
        if n == 1 { "" } else { "s" },
        p(fairsched_sim::sweep::SCRIPT),
        p(&format!("{}/instance-<i>.json", fairsched_sim::sweep::PARTS))
    );
    sayln!(
        "when they are done (`squeue -j {}` lists none), write the results with:",
        s.job
    );
    sayln!(
        "  fairsched experiment collect {}",
        fairsched_slurm::shell_quote(&s.dir.to_string_lossy())?
    );
    Ok(())
}

/// The command line a local run's summary.json would show: this one
/// without `--slurm-array` and `--partition P`.
fn sweep_command() -> anyhow::Result<String> {
    let all: Vec<String> = std::env::args_os()
        .map(|a| {
            a.into_string()
                .map_err(|a| usage(format!("--slurm-array: the argument {a:?} is not UTF-8")))
        })
        .collect::<anyhow::Result<_>>()?;
    let mut args = Vec::new();
    let mut rest = all.iter();
    while let Some(a) = rest.next() {
        if a == "--slurm-array" || a.starts_with("--partition=") {
            continue;
        }
        if a == "--partition" {
            rest.next();
            continue;
        }
        args.push(OsString::from(a));
    }
    Ok(fairsched_report::files::format_command_line(args))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Args as _;

    /// `--n-submit`'s default is written in its help by hand (as a comma
    /// list, the form the flag takes): it must be the one used.
    #[test]
    fn the_n_submit_default_shown_is_the_one_used() {
        let cmd = DietArgs::augment_args(clap::Command::new("diet-ethic"));
        let arg = cmd
            .get_arguments()
            .find(|a| a.get_id() == "n_submit")
            .expect("--n-submit");
        let help = arg.get_help().expect("a help text").to_string();
        let list: Vec<String> = diet::N_SUBMIT.iter().map(u32::to_string).collect();
        assert!(help.contains(&format!("[default: {}]", list.join(","))), "{help}");
    }
}
