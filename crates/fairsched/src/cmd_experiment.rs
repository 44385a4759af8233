//! `fairsched experiment …`: the papers' experiments, our numbers beside
//! the papers'.

use crate::sweep::{Mode, Plan, SlurmArgs, Stage};
use crate::term::sayln;
use fairsched_report::plot::{BarChart, Series, bar_chart, lines};
use fairsched_report::table::{TABLES_JSON, push_csv_line, tables_json};
use fairsched_report::{OutDir, Table, fixed};
use fairsched_sim::experiments::shapley::{
    self as exp, ALGORITHMS, Config, LoadedTrace, Row, SHARED_LOGS, SharedLog, Stat, UNAVAILABLE, WINDOWS,
};
use fairsched_sim::platform_file::PlatformFile;
use fairsched_sim::{Ownership, TraceInput};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
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
    #[command(verbatim_doc_comment)]
    Pffp(crate::cmd_pffp::PffpArgs),
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
    #[command(verbatim_doc_comment)]
    DietEthic(crate::cmd_diet::DietArgs),
    /// Workflow fairness (the η_u controller): the paper's Experiments 1–3
    /// or your own workflows, Fairness against No-Fairness (FCFS) on
    /// identical simulated grids; σ_s, σ_m, μ, makespans, slowdowns and
    /// η_u over time.
    ///
    /// Examples:
    ///   fairsched experiment workflow-fairness --exp 2
    ///   fairsched experiment workflow-fairness --exp 1 --repetitions 8 --every 180
    ///   fairsched experiment workflow-fairness --workflows gate,simubloch --grid examples/grid.toml
    #[command(verbatim_doc_comment)]
    WorkflowFairness(crate::cmd_workflow::WorkflowArgs),
    /// Write the result files of a `--slurm-array` run (shapley, pffp)
    /// from the parts its array tasks wrote: the files and the table a
    /// local run of the same command gives, byte for byte.
    ///
    /// Example:
    ///   fairsched experiment shapley --table 2 --out results/t2 --slurm-array --partition batch
    ///   # … when `squeue -j JOBID` lists none of its tasks:
    ///   fairsched experiment collect results/t2
    ///
    /// Missing parts are named (exit 1): their tasks are still running or
    /// failed (their logs: DIR/parts/slurm-JOBID_I.out).
    #[command(verbatim_doc_comment)]
    Collect(crate::sweep::CollectArgs),
    /// One array task of a `--slurm-array` run: instance I of the sweep in
    /// DIR, into DIR/parts/instance-I.json.
    #[command(hide = true)]
    RunPart(crate::sweep::RunPartArgs),
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
    /// Random windows per trace.
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
    #[arg(long, value_delimiter = ',', value_name = "NAME,...")]
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
    /// Master seed of every random choice.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Output directory (default: results/shapley-table<N> or
    /// results/shapley-figure1). A folder an earlier run wrote (it holds
    /// .fairsched-out) is cleared of that run's files first; other files stay.
    /// With --slurm-array, the sweep's folder (sweep.json, sweep.sbatch,
    /// parts/), where `experiment collect` writes the results.
    #[arg(long)]
    out: Option<PathBuf>,
    #[command(flatten)]
    force: ForceArg,
    /// Never show a progress bar.
    #[arg(long)]
    no_progress: bool,
    #[command(flatten)]
    slurm: SlurmArgs,
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

pub fn run(cmd: ExperimentCommand) -> anyhow::Result<()> {
    dispatch(cmd, None)
}

/// Runs an experiment as `mode` says (`None`: as its own command line
/// says, here or `--slurm-array`).
pub(crate) fn dispatch(cmd: ExperimentCommand, mode: Option<Mode>) -> anyhow::Result<()> {
    let mode = |name: &str, s: &SlurmArgs| match mode {
        Some(m) => Ok(m),
        None => Mode::of(name, s),
    };
    match cmd {
        ExperimentCommand::Shapley(a) => {
            let m = mode("shapley", &a.slurm)?;
            shapley(a, m)
        }
        ExperimentCommand::Pffp(a) => {
            let m = mode("pffp", &a.slurm)?;
            crate::cmd_pffp::pffp(a, m)
        }
        ExperimentCommand::DietEthic(a) => {
            local_only(mode("diet-ethic", &a.slurm)?, "diet-ethic")?;
            crate::cmd_diet::diet(a)
        }
        ExperimentCommand::WorkflowFairness(a) => {
            local_only(mode("workflow-fairness", &a.slurm)?, "workflow-fairness")?;
            crate::cmd_workflow::workflow(a)
        }
        ExperimentCommand::Collect(a) => crate::sweep::collect(a),
        ExperimentCommand::RunPart(a) => crate::sweep::run_part(a),
    }
}

/// An experiment that runs here only (see `crate::sweep::SUPPORTED`).
fn local_only(mode: Mode, name: &str) -> anyhow::Result<()> {
    match mode {
        Mode::Local => Ok(()),
        _ => Err(anyhow::anyhow!("experiment {name} does not run as a Slurm sweep")),
    }
}

/// Where a log of the experiment comes from.
enum Source {
    Shared(&'static SharedLog),
    File { name: String, path: PathBuf, procs: u32 },
}

impl Source {
    fn name(&self) -> String {
        match self {
            Source::Shared(l) => l.name.to_string(),
            Source::File { name, .. } => name.clone(),
        }
    }
}

/// The logs to run, loaded (in parallel).
fn load_traces(a: &ShapleyArgs, figure: bool) -> anyhow::Result<Vec<LoadedTrace>> {
    let names: Vec<String> = if figure {
        if !a.traces.is_empty() || !a.trace_files.is_empty() {
            return Err(crate::term::usage(
                "--figure 1 runs on LPC-EGEE (as in the paper): leave out --traces and --trace",
            ));
        }
        vec!["LPC-EGEE".into()]
    } else if a.traces.is_empty() && a.trace_files.is_empty() {
        SHARED_LOGS.iter().map(|l| l.name.to_string()).collect()
    } else {
        a.traces.clone()
    };
    let mut wanted = Vec::new();
    for n in &names {
        let Some(log) = SharedLog::named(n) else {
            let known: Vec<&str> = SHARED_LOGS.iter().map(|l| l.name).collect();
            let hint = if UNAVAILABLE.iter().any(|u| u.eq_ignore_ascii_case(n)) {
                " (the paper's log, not available here)"
            } else {
                ""
            };
            return Err(crate::term::usage(format!(
                "--traces: unknown log {n:?}{hint}; known: {}",
                known.join(", ")
            )));
        };
        wanted.push(Source::Shared(log));
    }
    for (file, procs) in &a.trace_files {
        let name = file
            .file_name()
            .map(|f| {
                f.to_string_lossy()
                    .trim_end_matches(".gz")
                    .trim_end_matches(".swf")
                    .to_string()
            })
            .unwrap_or_else(|| file.display().to_string());
        wanted.push(Source::File {
            name,
            path: file.clone(),
            procs: *procs,
        });
    }
    let mut seen = std::collections::BTreeSet::new();
    for s in &wanted {
        if !seen.insert(s.name()) {
            return Err(crate::term::usage(format!(
                "--traces/--trace: the log {:?} is given twice (names must differ: a log's name seeds its windows)",
                s.name()
            )));
        }
    }
    wanted
        .par_iter()
        .map(|s| match s {
            Source::Shared(log) => Ok(log.load(&a.traces_dir)?),
            Source::File { name, path, procs } => {
                Ok(LoadedTrace::load(name, &TraceInput::Path(path.clone()), *procs)?)
            }
        })
        .collect()
}

fn config(a: &ShapleyArgs, window: i64) -> anyhow::Result<Config> {
    let mut cfg = Config::paper(window);
    cfg.instances = a.instances;
    cfg.seed = a.seed;
    if let Some(p) = &a.platform {
        if a.orgs.is_some() || a.ownership.is_some() {
            return Err(crate::term::usage(
                "--platform gives the organizations and their processors: leave out --orgs and --ownership",
            ));
        }
        cfg.platform = Some(PlatformFile::load(p)?);
    }
    if let Some(k) = a.orgs {
        cfg.orgs = k;
    }
    if let Some(o) = a.ownership {
        cfg.ownership = o;
    }
    cfg.check().map_err(crate::term::usage)?;
    Ok(cfg)
}

pub(crate) fn bar(len: u64, enabled: bool, unit: &str) -> ProgressBar {
    let target = if enabled && std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    };
    let pb = ProgressBar::with_draw_target(Some(len), target);
    pb.set_style(
        ProgressStyle::with_template(&format!(
            "{{prefix}} [{{bar:30}}] {{pos}}/{{len}} {unit} ({{elapsed}}, ETA {{eta}})"
        ))
        .expect("valid template")
        .progress_chars("=> "),
    );
    pb
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

/// Opens an `--out` folder before any work (creating it if missing and
/// checking that it takes files): a folder of other files without `--force`
/// is the command line's mistake (exit 2); a folder another run is writing
/// into (it holds the folder's lock) is refused at once (exit 1). Nothing
/// is deleted yet (see [`begin_out`]); from here on, an interrupt (Ctrl-C,
/// SIGTERM) removes the run's `*.partial` files before the process ends.
pub(crate) fn open_out(dir: &Path, force: ForceArg) -> anyhow::Result<OutDir> {
    // Its refusals exit 2 (`term::finish` knows them), here or later.
    let mut out = OutDir::open(dir, force.force)?;
    if let Some(w) = out.lock_warning() {
        crate::term::note(format_args!("warning: {w}"));
    }
    out.set_commit(env!("FAIRSCHED_GIT_COMMIT"));
    crate::term::clean_up_on_interrupt(out.cleaner());
    Ok(out)
}

/// Before the first result: clears what an earlier fairsched run wrote in
/// the folder (what its manifest lists, and `*.partial` files), writes this
/// run's manifest listing `planned` (`NAME`, or `NAME/` for a folder), and
/// says on standard error which files it left alone.
pub(crate) fn begin_out(out: &mut OutDir, planned: &[&str]) -> anyhow::Result<()> {
    let kept = out.begin(planned)?;
    note_kept(out, &kept);
    Ok(())
}

/// Says on standard error which files [`begin_out`] left alone.
pub(crate) fn note_kept(out: &OutDir, kept: &[String]) {
    if !kept.is_empty() {
        const SHOWN: usize = 5;
        let mut list = kept.iter().take(SHOWN).cloned().collect::<Vec<_>>().join(", ");
        if kept.len() > SHOWN {
            list.push_str(&format!(", … ({} more)", kept.len() - SHOWN));
        }
        crate::term::note(format_args!(
            "{}: kept {} file{} not written by fairsched: {list}",
            out.path().display(),
            kept.len(),
            if kept.len() == 1 { "" } else { "s" }
        ));
    }
}

fn cell(mean: f64, std: f64) -> String {
    if mean.is_nan() {
        return "—".into();
    }
    let d = if mean.abs() >= 100.0 {
        0
    } else if mean.abs() >= 1.0 {
        1
    } else {
        3
    };
    format!("{} ({})", fixed(mean, d), fixed(std, d))
}

#[derive(Serialize)]
struct TraceMeta {
    name: String,
    path: String,
    procs: u32,
    jobs: usize,
    filters: fairsched_trace::FilterCounts,
}

#[derive(Serialize)]
struct Summary<'a> {
    experiment: &'static str,
    table: Option<u8>,
    figure: Option<u8>,
    window_s: i64,
    instances: u32,
    orgs: Vec<u32>,
    ownership: String,
    platform: Option<String>,
    seed: u64,
    reference: String,
    traces: Vec<TraceMeta>,
    unavailable: &'static [&'static str],
    stats: &'a [Stat],
    notes: Vec<String>,
}

fn csv(rows: &[Row]) -> String {
    let mut out = String::new();
    let header = [
        "trace",
        "orgs",
        "instance",
        "window_start",
        "jobs",
        "tasks",
        "algorithm",
        "policy",
        "delta_psi_s2",
        "p_tot_s",
        "ratio_s",
        "psi_s2",
        "psi_ref_s2",
    ];
    push_csv_line(&mut out, header.iter().copied());
    let join = |v: &[f64]| v.iter().map(|x| format!("{x}")).collect::<Vec<_>>().join(";");
    for r in rows {
        let cells = [
            r.trace.clone(),
            r.orgs.to_string(),
            r.instance.to_string(),
            r.window_start.to_string(),
            r.jobs.to_string(),
            r.tasks.to_string(),
            r.algorithm.clone(),
            r.policy.clone(),
            format!("{}", r.delta_psi),
            format!("{}", r.p_tot),
            r.ratio.map(|x| format!("{x}")).unwrap_or_default(),
            join(&r.psi),
            join(&r.psi_ref),
        ];
        push_csv_line(&mut out, cells.iter().map(String::as_str));
    }
    out
}

/// A row of `shapley.csv` as a sweep's part holds it (every field, so
/// that the part gives the row back).
#[derive(Serialize, Deserialize)]
#[serde(remote = "Row")]
struct RowDef {
    trace: String,
    orgs: u32,
    instance: u32,
    window_start: i64,
    jobs: u64,
    tasks: u64,
    algorithm: String,
    policy: String,
    delta_psi: f64,
    p_tot: f64,
    ratio: Option<f64>,
    psi: Vec<f64>,
    psi_ref: Vec<f64>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct ShapleyRow(#[serde(with = "RowDef")] Row);

/// The instances: (organization count, trace, window), in the order of
/// the rows of `shapley.csv`.
struct ShapleyPlan {
    traces: Vec<LoadedTrace>,
    /// One per organization count.
    cfgs: Vec<Config>,
    instances: usize,
}

impl ShapleyPlan {
    fn new(traces: Vec<LoadedTrace>, cfgs: Vec<Config>, instances: u32) -> anyhow::Result<ShapleyPlan> {
        // What `exp::run` checks, before any instance runs.
        for cfg in &cfgs {
            cfg.check()?;
            if cfg.platform.is_none() {
                for t in &traces {
                    if t.procs < cfg.orgs {
                        return Err(fairsched_sim::SimError::Config(format!(
                            "{}: {} processors cannot give each of {} organizations one (lower --orgs)",
                            t.name, t.procs, cfg.orgs
                        ))
                        .into());
                    }
                }
            }
        }
        Ok(ShapleyPlan {
            traces,
            cfgs,
            instances: instances as usize,
        })
    }
}

impl Plan for ShapleyPlan {
    type Part = Vec<ShapleyRow>;

    fn count(&self) -> usize {
        self.cfgs.len() * self.traces.len() * self.instances
    }

    fn run(&self, index: usize) -> anyhow::Result<Self::Part> {
        let per_cfg = self.traces.len() * self.instances;
        let cfg = &self.cfgs[index / per_cfg];
        let t = index % per_cfg / self.instances;
        let i = (index % self.instances) as u32;
        let inst = exp::instance(&self.traces[t], cfg, i)?;
        let rows = exp::run_instance(&inst, cfg, cfg.orgs())?;
        Ok(rows.into_iter().map(ShapleyRow).collect())
    }
}

/// Rank (1 = closest to REF) of each algorithm on one trace, by mean.
fn ranks(means: &[f64]) -> Vec<usize> {
    means
        .iter()
        .map(|&m| 1 + means.iter().filter(|&&o| o < m).count())
        .collect()
}

fn shapley(a: ShapleyArgs, mode: Mode) -> anyhow::Result<()> {
    let started = Instant::now();
    let figure = a.figure.is_some();
    let t = (a.table - 1) as usize;
    let window = WINDOWS[t];
    let base = config(&a, window)?;
    if figure && (a.platform.is_some() || a.orgs.is_some()) {
        return Err(crate::term::usage(
            "--figure 1 sweeps 2…10 organizations: leave out --orgs and --platform",
        ));
    }
    let out = a.out.clone().unwrap_or_else(|| {
        PathBuf::from(if figure {
            "results/shapley-figure1".to_string()
        } else {
            format!("results/shapley-table{}", a.table)
        })
    });
    if !figure && base.orgs() == 1 {
        crate::term::note(format_args!(
            "warning: one organization: every algorithm gives it the whole platform, so its \
             utility equals its Shapley value and every unfairness in the table is 0 \
             (give --orgs 2 or more, or a --platform with several organizations)"
        ));
    }
    let stage = Stage::open(mode, &out, a.force)?;
    let traces = load_traces(&a, figure)?;
    let org_counts: Vec<u32> = if figure {
        (2..=10).collect()
    } else {
        vec![base.orgs()]
    };
    let mut cfgs = Vec::new();
    for &k in &org_counts {
        let mut cfg = base.clone();
        if figure {
            cfg.orgs = k;
            cfg.check().map_err(crate::term::usage)?;
        }
        cfgs.push(cfg);
    }
    let plan = ShapleyPlan::new(traces, cfgs, a.instances)?;
    let prefix = if figure {
        "figure 1".to_string()
    } else {
        format!("table {}", a.table)
    };
    let Some((parts, mut output)) = stage.run(&plan, prefix, "instances", !a.no_progress)? else {
        return Ok(());
    };
    let traces = plan.traces;
    let rows: Vec<Row> = parts.into_iter().flatten().map(|r| r.0).collect();
    let stats = exp::stats(&rows, (!figure).then_some(t));
    let mut notes = vec![format!(
        "Δψ/p_tot in seconds: the average unjustified delay (or speed-up) of a unit of work against REF; mean (sample std) over {} random windows of {} s per trace; \"Δψ=0\": windows where the algorithm gave every organization exactly REF's utility (often: no queue formed).",
        a.instances, window
    )];
    if !figure {
        notes.push(format!(
            "The paper's {} logs are not available here: not run.",
            UNAVAILABLE.join(" and ")
        ));
    }
    if stats.iter().any(|s| s.paper.is_some()) {
        notes.push("Exact numbers differ from the paper's (its seeds, Zipf exponent and log versions are unknown; see docs/shapley.md): compare the orderings (rank columns).".into());
    }
    for t in &traces {
        if t.span() < window {
            notes.push(format!(
                "{}: the log's submits span {} s, less than the window: every instance uses the whole log (only the organizations' draw differs).",
                t.name,
                t.span()
            ));
        }
    }
    if let Some(p) = &base.platform {
        notes.push(format!(
            "Organizations, processors ({} in all) and users from {}: the logs' own processor counts are not used.",
            p.total_procs(),
            p.path.display()
        ));
    }
    let empty: u32 = stats
        .iter()
        .filter(|s| s.algorithm == "REF")
        .map(|s| s.empty)
        .sum();
    if empty > 0 {
        notes.push(format!(
            "{empty} window(s) had no work (p_tot = 0) and are left out of the means."
        ));
    }

    // Files.
    let summary = Summary {
        experiment: "shapley",
        table: (!figure).then_some(a.table),
        figure: a.figure,
        window_s: window,
        instances: a.instances,
        orgs: org_counts.clone(),
        ownership: match &base.platform {
            Some(p) => format!("platform file {}", p.path.display()),
            None => base.ownership.to_string(),
        },
        platform: a.platform.as_ref().map(|p| p.display().to_string()),
        seed: a.seed,
        reference: base.reference.to_string(),
        traces: traces
            .iter()
            .map(|t| TraceMeta {
                name: t.name.clone(),
                path: t.path.clone(),
                procs: base.platform.as_ref().map_or(t.procs, |p| p.total_procs()),
                jobs: t.jobs.len(),
                filters: t.filters,
            })
            .collect(),
        unavailable: &UNAVAILABLE,
        stats: &stats,
        notes: notes.clone(),
    };
    // The table printed on standard output (and kept in tables.json).
    let title = if figure {
        format!("Figure 1 — Δψ/p_tot vs organizations on LPC-EGEE, windows of {window} s")
    } else {
        format!(
            "Table {} — Δψ/p_tot (s), windows of {window} s, {} organization{}, ownership {}",
            a.table,
            base.orgs(),
            if base.orgs() == 1 { "" } else { "s" },
            if base.platform.is_some() {
                "from --platform".to_string()
            } else {
                base.ownership.to_string()
            }
        )
    };
    let mut table = Table::new([
        "trace",
        "orgs",
        "algorithm",
        "ours mean (std)",
        "paper mean (std)",
        "rank ours",
        "rank paper",
        "n",
        "Δψ=0",
    ])
    .title(title);
    for tr in &traces {
        for &k in &org_counts {
            let sel: Vec<&Stat> = stats
                .iter()
                .filter(|s| s.trace == tr.name && s.orgs == k && s.algorithm != "REF")
                .collect();
            let ours = ranks(&sel.iter().map(|s| s.mean).collect::<Vec<_>>());
            let paper_means: Option<Vec<f64>> = sel.iter().map(|s| s.paper.map(|p| p.0)).collect();
            let theirs = paper_means.map(|m| ranks(&m));
            for (i, s) in sel.iter().enumerate() {
                table.row([
                    s.trace.clone(),
                    s.orgs.to_string(),
                    s.algorithm.clone(),
                    cell(s.mean, s.std),
                    s.paper.map(|p| cell(p.0, p.1)).unwrap_or_else(|| "—".into()),
                    ours[i].to_string(),
                    theirs
                        .as_ref()
                        .map(|r| r[i].to_string())
                        .unwrap_or_else(|| "—".into()),
                    s.instances.to_string(),
                    s.zero.to_string(),
                ]);
            }
        }
    }
    for n in &notes {
        table.note(n.clone());
    }

    output.begin(&["summary.json", "shapley.csv", "shapley.svg", TABLES_JSON])?;
    let svg = chart(&stats, &traces, &org_counts, figure, a.table, window).map_err(anyhow::Error::msg)?;
    // Together (the summary renamed last): never one without the others.
    let written = output.dir.write_set(&[
        ("summary.json", &output.summary_json(&summary)),
        ("shapley.csv", csv(&rows).as_bytes()),
        ("shapley.svg", svg.as_bytes()),
        (TABLES_JSON, &tables_json([&table])),
    ])?;
    let shown = output.shown.clone();
    output.finish()?;
    sayln!("{}", table.to_text());
    sayln!(
        "wrote {} ({}) in {:.1} s",
        shown.display(),
        written.join(", "),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn chart(
    stats: &[Stat],
    traces: &[LoadedTrace],
    orgs: &[u32],
    figure: bool,
    table: u8,
    window: i64,
) -> Result<String, String> {
    let algos: Vec<&str> = ALGORITHMS.iter().map(|a| a.label).collect();
    if figure {
        let xs: Vec<f64> = orgs.iter().map(|&k| k as f64).collect();
        let series: Vec<Series> = algos
            .iter()
            .map(|&al| Series {
                name: al.to_string(),
                values: orgs
                    .iter()
                    .map(|&k| {
                        stats
                            .iter()
                            .find(|s| s.orgs == k && s.algorithm == al)
                            .map_or(f64::NAN, |s| s.mean)
                    })
                    .collect(),
            })
            .collect();
        lines(
            &format!("Δψ/p_tot vs organizations, LPC-EGEE, windows of {window} s"),
            "organizations",
            "Δψ/p_tot (s)",
            &xs,
            &series,
        )
    } else {
        let groups: Vec<String> = traces.iter().map(|t| t.name.clone()).collect();
        let series: Vec<Series> = algos
            .iter()
            .map(|&al| Series {
                name: al.to_string(),
                values: traces
                    .iter()
                    .map(|t| {
                        stats
                            .iter()
                            .find(|s| s.trace == t.name && s.algorithm == al)
                            .map_or(f64::NAN, |s| s.mean)
                    })
                    .collect(),
            })
            .collect();
        bar_chart(&BarChart {
            title: &format!("Table {table}: Δψ/p_tot by algorithm (log scale), windows of {window} s"),
            x_label: "log",
            y_label: "Δψ/p_tot (s), mean over windows",
            groups: &groups,
            series: &series,
            log_y: true,
            paired: false,
        })
    }
}
